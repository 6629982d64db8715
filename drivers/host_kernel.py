"""Host kernel plane: the kernel log's clock read through the log itself, the host's clocks, and the
kernel log (GPU Xid and PCIe errors land there) as the device log; locally or over SSH.

The kernel stamps each `/dev/kmsg` record with `local_clock()` (ns since boot, shown in µs): not
CLOCK_MONOTONIC (the kernel's sched clock against the NTP-disciplined timekeeper: ms apart and
drifting; docs/PLANES.md, "Served racks and real counterparts"). So the `kmsg` clock is read by
writing a marker line to /dev/kmsg and reading its record back: the kernel stamped it during the
`write`, so the bracket is the write (locally: reference stamps around `os.write`; over SSH: around
the round trip of the remote `printf > /dev/kmsg`). It is a counter from boot (µs), so its fitted
offset is minus the boot instant of the log's clock, with bounds: what `dmesg` stamps are mapped
through.
Also read: `realtime` (CLOCK_REALTIME: locally between two reference reads, 1 ns; over SSH
`date +%s%N`) and, locally, `monotonic` (CLOCK_MONOTONIC, a counter from boot).

Writing to /dev/kmsg needs root and puts lines into the host's kernel log, so it is opt-in:
`write_kmsg = true` in the rack entry; without it only the host clocks and the log are read.
Each marker is written through a freshly opened /dev/kmsg (the kernel rate-limits each open
file to 10 lines per 5 s). Markers are left out of the log entries.

Addresses: `local://` (this host), `ssh://user@host:port` (asyncssh; key from `key_file`, or the
password from `password_env`; host key checked against `known_hosts`, or not when
`known_hosts = "none"`). Over SSH two sessions stay open: a shell for the writes and `date`, and
`cat /dev/kmsg` streaming records back. Inventory keys: `write_kmsg`, `kmsg` (path, default
/dev/kmsg), `key_file`, `known_hosts`, `timeout_s` (default 3).
"""
from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from bench.config.inventory import DeviceConfig, Key
from drivers.base import (
    TIMEOUT_KEY,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    Read,
    Stimulated,
    Stimulus,
    split_address,
)

if TYPE_CHECKING:                # imported where used: only an ssh:// host needs it
    import asyncssh

NS = 1_000_000_000
US = 1000
MARKER = "rackclock-marker"
_RECORD = re.compile(r"^(\d+),(\d+),(\d+),([^;,]*)[^;]*;(.*)$")


def parse_record(line: str) -> tuple[int, int, str] | None:
    """A /dev/kmsg record `prio,seq,ts_us,flags[,...];text` -> (seq, ts_ns, text); None for the
    continuation lines (` KEY=value`) and anything else."""
    m = _RECORD.match(line.rstrip("\n"))
    if not m:
        return None
    return int(m[2]), int(m[3]) * US, m[5]


class HostKernel(Stimulated, Driver):
    OPTIONS = {"write_kmsg": Key("bool"),
               "kmsg": Key("str", pattern=r"/dev/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*", exists="chardev",
                           hint="a character device such as /dev/kmsg"),
               "key_file": Key("path", exists="file"),
               "known_hosts": Key("str"), "timeout_s": TIMEOUT_KEY}
    LOG_LINE = "log_line"

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.write_kmsg = o.get("write_kmsg", False) is True
        self.kmsg = str(o.get("kmsg", "/dev/kmsg"))
        self.timeout_s = float(o.get("timeout_s", 3.0))
        self.scheme, self.host, self.port, _ = split_address(config.address)
        if self.scheme not in ("local", "ssh"):
            raise self.error("error", f"address {config.address!r}: use local:// or "
                                      f"ssh://user@host:port")
        self.run_id = uuid.uuid4().hex[:8]      # this driver's, in its markers and test events
        self.tag = f"{MARKER} {self.run_id}"
        self._n = 0
        self._pending: deque[tuple[int, int, str]] = deque()    # records read, not yet logged
        self._markers: dict[str, int] = {}
        self._reader: int | None = None                         # local: O_NONBLOCK fd
        self._conn: asyncssh.SSHClientConnection | None = None   # ssh
        self._shell: asyncssh.SSHClientProcess[str] | None = None
        self._cat: asyncssh.SSHClientProcess[str] | None = None
        self._cat_task: asyncio.Task[None] | None = None
        self._records: asyncio.Queue[str | None] | None = None
        self._sent = 0
        self._uname = ""
        self._after_seq = -1
        self.user = self.config.username

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        if self.scheme == "local":
            try:
                self._reader = os.open(self.kmsg, os.O_RDONLY | os.O_NONBLOCK)
                os.lseek(self._reader, 0, os.SEEK_END)
            except PermissionError as exc:
                raise self.error("auth", f"cannot read {self.kmsg}: {exc.strerror}") from None
            except OSError as exc:
                if self._reader is not None and exc.errno == 29:       # ESPIPE: a FIFO
                    pass
                else:
                    raise self.error("unreachable", f"cannot open {self.kmsg}: {exc}") from None
            self._uname = " ".join(os.uname()[i] for i in (0, 1, 2))
            return
        await self._open_ssh()

    async def _open_ssh(self) -> None:
        import asyncssh
        kw = self._ssh_options()
        try:
            self._conn = await asyncio.wait_for(asyncssh.connect(self.host, **kw),
                                                self.timeout_s * 2)
            self._shell = await self._conn.create_process("sh", encoding="utf-8")
            self._cat = await self._conn.create_process(f"cat {self.kmsg}", encoding="utf-8")
        except BaseException as exc:
            await self.close()
            if isinstance(exc, Exception):
                raise self._map_ssh(exc, "connect") from None
            raise
        self._records = asyncio.Queue()
        self._cat_task = asyncio.get_running_loop().create_task(self._pump(self._cat, self._records))
        self._uname = (await self._sh("uname -snr"))[0].strip()
        # `cat` starts at the oldest record: log only those after the last one present now
        last, *_ = await self._sh(f"dd if={self.kmsg} iflag=nonblock bs=8192 2>/dev/null "
                                  f"| tail -n 1")
        rec = parse_record(last)
        self._after_seq = rec[0] if rec else -1

    def _ssh_options(self) -> dict:
        """asyncssh.connect's keywords from the rack file: user, port, key, password, hosts."""
        from urllib.parse import urlsplit
        o = self.config.options
        self.user = self.config.username or urlsplit(self.config.address).username or "root"
        kw: dict = {"username": self.user, "port": self.port or 22,
                    "connect_timeout": self.timeout_s,
                    "client_keys": [str(o["key_file"])] if o.get("key_file") else None}
        pw = self.config.secret()
        if pw:
            kw["password"] = pw
        kh = o.get("known_hosts")
        if kh is not None:
            kw["known_hosts"] = None if str(kh).lower() == "none" else str(kh)
        return kw

    def _map_ssh(self, exc: BaseException, what: str) -> DeviceError:
        import asyncssh
        if isinstance(exc, DeviceError):
            return exc
        where = f"{self.host}:{self.port or 22}"
        if isinstance(exc, asyncssh.PermissionDenied):
            return self.error("auth", f"{what}: {where} refused the credentials of user "
                                      f"{self.user!r}")
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            return self.error("auth", f"{what}: host key of {where} not verifiable: {exc}")
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return self.error("timeout", f"{what}: no answer from {where} within "
                                         f"{self.timeout_s:g} s")
        if isinstance(exc, (ConnectionRefusedError, OSError)):
            return self.error("unreachable", f"{what}: cannot connect to {where}: {exc}")
        if isinstance(exc, asyncssh.Error):
            return self.error("protocol", f"{what}: {where}: {exc}")
        return self.error("error", f"{what}: {exc!r}")

    async def close(self) -> None:
        if self._reader is not None:
            try:
                os.close(self._reader)
            except OSError:
                pass
            self._reader = None
        if self._cat_task is not None:
            self._cat_task.cancel()
            self._cat_task = None
        for p in (self._shell, self._cat):
            if p is not None:
                try:
                    p.close()
                except Exception:
                    pass
        self._shell = self._cat = None
        if self._conn is not None:
            try:
                self._conn.close()
                await asyncio.wait_for(self._conn.wait_closed(), 2)
            except Exception:
                pass
            self._conn = None

    # -- SSH plumbing ----------------------------------------------------------------------------
    @staticmethod
    async def _pump(cat: asyncssh.SSHClientProcess[str], records: asyncio.Queue[str | None]) -> None:
        async for line in cat.stdout:
            await records.put(line)
        await records.put(None)

    async def _sh(self, command: str) -> tuple[str, int, int]:
        """(output line, s_ns, e_ns): one command in the shell session; the bracket is from
        writing the command line to receiving its answer line."""
        if self._shell is None:
            raise self.error("error", "not open")
        end = f"__rc_{uuid.uuid4().hex[:6]}"
        line = f"{command} 2>&1; echo \"{end} $?\"\n"
        try:
            s = self.now_ns()
            self._shell.stdin.write(line)
            out = []
            while True:
                got = await asyncio.wait_for(self._shell.stdout.readline(), self.timeout_s)
                e = self.now_ns()
                if not got:
                    raise self.error("reset", f"{command.split()[0]}: the remote shell ended")
                if got.startswith(end):
                    rc = got.split()[-1]
                    break
                out.append(got)
        except Exception as exc:
            raise self._map_ssh(exc, command.split()[0]) from None
        if rc != "0":
            text = " ".join(x.strip() for x in out)[:200]
            kind = "auth" if "ermission denied" in text else "protocol"
            raise self.error(kind, f"{command.split()[0]}: exit {rc}: {text}")
        return "".join(out), s, e

    # -- records ---------------------------------------------------------------------------------
    def _read_local_records(self) -> None:
        """Move every record the reader can read now into `_pending` (never blocks)."""
        if self._reader is None:
            raise self.error("error", "not open")
        while True:
            try:
                raw = os.read(self._reader, 8192)
            except BlockingIOError:
                return
            except BrokenPipeError:          # records overwritten before we read them
                continue
            if not raw:
                return
            self._take(raw.decode("utf-8", "replace"))

    def _take(self, line: str) -> None:
        rec = parse_record(line)
        if rec is None:
            if line.strip() and not line.startswith(" "):
                raise self.error("malformed", f"not a kernel log record: {line[:120]!r}")
            return
        seq, ts, text = rec
        if text.startswith(self.tag):
            self._markers[text] = ts
        elif seq > self._after_seq and not text.startswith(MARKER):   # others' markers too
            self._pending.append(rec)

    async def _await_marker(self, text: str) -> int:
        deadline = time.monotonic() + self.timeout_s
        while text not in self._markers:
            if time.monotonic() > deadline:
                raise self.error("timeout", f"marker {text!r} not read back from {self.kmsg} "
                                            f"within {self.timeout_s:g} s")
            if self.scheme == "local":
                self._read_local_records()
                if text not in self._markers:
                    await asyncio.sleep(0.0005)
            elif self._records is None:
                raise self.error("error", "not open")
            else:
                try:
                    line = await asyncio.wait_for(self._records.get(),
                                                  max(0.001, deadline - time.monotonic()))
                except TimeoutError:
                    continue
                if line is None:
                    raise self.error("reset", f"cat {self.kmsg} ended on the host")
                self._take(line)
        return self._markers.pop(text)

    async def _write_line(self, text: str) -> tuple[int, int]:
        """Write one line to the kernel log; (s_ns, e_ns) around the write."""
        if not self.write_kmsg:
            raise self.error("refused", "writing to the kernel log is not allowed: set "
                                        "write_kmsg = true in the rack entry")
        if self.scheme == "ssh":
            quoted = text.replace("'", "")
            _, s, e = await self._sh(f"printf '%s\\n' '{quoted}' > {self.kmsg}")
            return s, e
        try:
            fd = os.open(self.kmsg, os.O_WRONLY)         # a fresh file: its own rate limit
        except PermissionError as exc:
            raise self.error("auth", f"cannot write {self.kmsg}: {exc.strerror}") from None
        try:
            data = text.encode() + b"\n"     # without it the record stays open for more
            s = self.now_ns()
            os.write(fd, data)
            e = self.now_ns()
        except OSError as exc:
            raise self.error("protocol", f"write to {self.kmsg}: {exc}") from None
        finally:
            os.close(fd)
        return s, e

    # -- the contract ----------------------------------------------------------------------------
    async def identity(self) -> Identity:
        return Identity(vendor="Linux", model=self._uname, serial=self.host or os.uname()[1],
                        firmware=self._uname.split()[-1] if self._uname else "",
                        extra={"kmsg": self.kmsg, "write_kmsg": self.write_kmsg,
                               "via": self.scheme})

    def clocks(self) -> list[ClockSpec]:
        out = [ClockSpec("kmsg", US, counter=True)] if self.write_kmsg else []
        out.append(ClockSpec("realtime", 1))
        if self.scheme == "local":
            out.append(ClockSpec("monotonic", 1, counter=True))
        return out

    async def read_clock(self, clock: str) -> Read:
        if clock == "kmsg":
            self._n += 1
            text = f"{self.tag} {self._n}"
            s, e = await self._write_line(text)
            ts = await self._await_marker(text)
            return Read("kmsg", s, e, ts, US, stamp="user", raw=f"[{ts / NS:.6f}] {text}")
        if clock == "realtime":
            if self.scheme == "local":
                s = self.now_ns()
                v = time.clock_gettime_ns(time.CLOCK_REALTIME)
                e = self.now_ns()
                return Read("realtime", s, e, v, 1, stamp="user", raw=str(v))
            out, s, e = await self._sh("date +%s%N")
            if not out.strip().isdigit():
                raise self.error("malformed", f"date +%s%N answered {out.strip()[:80]!r}")
            return Read("realtime", s, e, int(out), 1, stamp="user", raw=out.strip())
        if clock == "monotonic" and self.scheme == "local":
            s = self.now_ns()
            v = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            e = self.now_ns()
            return Read("monotonic", s, e, v, 1, stamp="user", raw=str(v))
        raise self.error("error", f"no clock {clock!r} ({[c.name for c in self.clocks()]})")

    def stimuli(self) -> list[str]:
        return [self.LOG_LINE]

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name != self.LOG_LINE:
            return await super()._stimulate(name, target)
        self._sent += 1
        # the kernel log is the host's: another run or a watch on it writes test events too, so
        # each names this driver, and the stimulus says which line it asked for (`kmsg ` + it)
        text = f"rackclock test event {self.run_id}-{self._sent}"
        s, e = await self._write_line(text)
        return Stimulus(name, None, s, e, sent=True, stamp="user", raw=f"kmsg {text}")

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Kernel log records since open (or since `cursor`, a record sequence number)."""
        s = self.now_ns()
        if self.scheme == "local":
            self._read_local_records()
        else:
            while self._records is not None and not self._records.empty():
                line = self._records.get_nowait()
                if line is None:
                    raise self.error("reset", f"cat {self.kmsg} ended on the host")
                self._take(line)
        e = self.now_ns()
        after = int(cursor) if cursor and cursor.isdigit() else -1
        out = []
        while self._pending:
            seq, ts, text = self._pending.popleft()
            if seq > after:
                out.append(LogEntry(str(seq), "kmsg", ts, US, s, e, text, f"[{ts / NS:.6f}] {text}"))
        return out, (out[-1].cursor if out else cursor)


DRIVER = HostKernel
