"""A PTP hardware clock (PHC, /dev/ptpN) read directly, and related to system time.

Written by hand with `fcntl.ioctl` and `struct` because no Python library exposes the kernel's
PTP character device: the clock is read through its dynamic POSIX clock id
(`((~fd) << 3) | 3`, as linuxptp's `phc_open` does), and related to CLOCK_REALTIME as linuxptp's
`sysoff` does: `PTP_SYS_OFFSET_EXTENDED` (each PHC read bracketed by two system reads taken by the
driver next to the device access; the shortest of n brackets wins), falling back to
`PTP_SYS_OFFSET` (the same interleaving done by the PTP core) and then to a plain
clock_gettime sandwich from user space. Layouts are from <linux/ptp_clock.h>.
"""
from __future__ import annotations

import errno
import fcntl
import glob
import os
import struct
import time
from dataclasses import dataclass

from bench.errors import RackclockError

NS = 1_000_000_000
PTP_MAX_SAMPLES = 25
_CLOCK_TIME = struct.Struct("=qII")          # struct ptp_clock_time: s64 sec, u32 nsec, u32 reserved
_IOC_WRITE, _IOC_READ = 1, 2


def _ioc(direction: int, nr: int, size: int) -> int:
    return (direction << 30) | (size << 16) | (ord("=") << 8) | nr


# struct ptp_sys_offset: u32 n_samples, u32 rsv[3], ptp_clock_time ts[2*25+1]
_SYS_OFFSET_SIZE = 16 + _CLOCK_TIME.size * (2 * PTP_MAX_SAMPLES + 1)
# struct ptp_sys_offset_extended: u32 n_samples, u32 rsv[3] (clockid in new kernels), ts[25][3]
_SYS_OFFSET_EXTENDED_SIZE = 16 + _CLOCK_TIME.size * 3 * PTP_MAX_SAMPLES
PTP_SYS_OFFSET = _ioc(_IOC_WRITE, 5, _SYS_OFFSET_SIZE)
PTP_SYS_OFFSET_EXTENDED = _ioc(_IOC_READ | _IOC_WRITE, 9, _SYS_OFFSET_EXTENDED_SIZE)


class PhcError(RackclockError, OSError):
    """The PHC cannot be opened or read; the message names the device and the reason."""


@dataclass(frozen=True)
class SysOffset:
    """One PHC read bracketed by two CLOCK_REALTIME reads: sys_before <= (PHC read) <= sys_after."""

    phc_ns: int
    sys_before_ns: int
    sys_after_ns: int
    method: str                      # extended | sys_offset | sandwich
    samples: int

    @property
    def bracket_ns(self) -> int:
        return self.sys_after_ns - self.sys_before_ns

    @property
    def offset_ns(self) -> int:
        """PHC minus CLOCK_REALTIME at the bracket's midpoint (error at most bracket_ns / 2)."""
        return self.phc_ns - (self.sys_before_ns + self.sys_after_ns) // 2


def _ts_ns(buf: bytes | bytearray, index: int, base: int = 16) -> int:
    sec, nsec, _ = _CLOCK_TIME.unpack_from(buf, base + index * _CLOCK_TIME.size)
    return sec * NS + nsec


def fd_to_clockid(fd: int) -> int:
    return ((~fd) << 3) | 3


class Phc:
    """An open PHC. `now_ns()` is a bare clock_gettime on its dynamic clock id."""

    def __init__(self, path: str):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            have = sorted(glob.glob("/dev/ptp[0-9]*"))
            raise PhcError(errno.ENOENT, f"{path}: no such PTP hardware clock "
                           f"(this machine has: {', '.join(have) or 'none'})") from None
        except PermissionError:
            raise PhcError(errno.EACCES, f"{path}: permission denied (needs read access to the "
                           f"device; run as root or add the user to its group)") from None
        except OSError as exc:
            raise PhcError(exc.errno, f"{path}: cannot open: {exc.strerror}") from None
        self.clockid = fd_to_clockid(self.fd)
        try:
            time.clock_gettime_ns(self.clockid)
        except OSError as exc:
            self.close()
            raise PhcError(exc.errno, f"{path}: opened, but it does not read as a POSIX clock "
                           f"({exc.strerror}); is it a PTP clock device?") from None
        self._method: str | None = None

    def now_ns(self) -> int:
        return time.clock_gettime_ns(self.clockid)

    def close(self) -> None:
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Phc:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- relating the PHC to CLOCK_REALTIME ------------------------------------------------------
    def sys_offset(self, n: int = 9) -> SysOffset:
        """The shortest of `n` bracketed reads, by the best method this device supports."""
        n = max(1, min(int(n), PTP_MAX_SAMPLES))
        methods = ([self._method] if self._method else
                   ["extended", "sys_offset", "sandwich"])
        for m in methods:
            try:
                result = getattr(self, f"_{m}")(n)
            except OSError as exc:
                if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL):
                    continue
                raise PhcError(exc.errno, f"{self.path}: {m} read failed: {exc.strerror}") from None
            self._method = m
            return result
        raise PhcError(errno.EOPNOTSUPP, f"{self.path}: no way to relate it to system time")

    def _extended(self, n: int) -> SysOffset:
        buf = bytearray(_SYS_OFFSET_EXTENDED_SIZE)
        struct.pack_into("=I", buf, 0, n)
        fcntl.ioctl(self.fd, PTP_SYS_OFFSET_EXTENDED, buf, True)
        got = struct.unpack_from("=I", buf, 0)[0] or n
        best = min(((_ts_ns(buf, 3 * i), _ts_ns(buf, 3 * i + 1), _ts_ns(buf, 3 * i + 2))
                    for i in range(got)), key=lambda t: t[2] - t[0])
        return SysOffset(best[1], best[0], best[2], "extended", got)

    def _sys_offset(self, n: int) -> SysOffset:
        buf = bytearray(_SYS_OFFSET_SIZE)
        struct.pack_into("=I", buf, 0, n)
        fcntl.ioctl(self.fd, PTP_SYS_OFFSET, buf, True)
        best = min(((_ts_ns(buf, 2 * i), _ts_ns(buf, 2 * i + 1), _ts_ns(buf, 2 * i + 2))
                    for i in range(n)), key=lambda t: t[2] - t[0])
        return SysOffset(best[1], best[0], best[2], "sys_offset", n)

    def _sandwich(self, n: int) -> SysOffset:
        rt, cid = time.CLOCK_REALTIME, self.clockid

        def read() -> tuple[int, int, int]:
            a = time.clock_gettime_ns(rt)
            p = time.clock_gettime_ns(cid)
            return a, p, time.clock_gettime_ns(rt)
        best = min((read() for _ in range(n)), key=lambda t: t[2] - t[0])
        return SysOffset(best[1], best[0], best[2], "sandwich", n)


def phc_of_interface(interface: str) -> str | None:
    """/dev/ptpN of a network interface's hardware clock, from sysfs (None if it has none)."""
    hits = sorted(glob.glob(f"/sys/class/net/{interface}/device/ptp/ptp[0-9]*"))
    return f"/dev/{os.path.basename(hits[0])}" if hits else None


def available() -> list[str]:
    return sorted(glob.glob("/dev/ptp[0-9]*"))
