"""Loopback ports for servers started apart from whoever picks the port (an emulator's trap
receiver, a test's sshd or Ray head) or meant to stay closed.

A port found by binding port 0 and closing the socket is free only for that instant: until the
server binds it, any port-0 bind or outgoing connection on the machine (the other xdist worker,
another suite) may be handed the same number. So `free_port` picks below the kernel's ephemeral
range (/proc/sys/net/ipv4/ip_local_port_range), which the kernel never hands out by itself,
checks it is free, and reserves it for this process's life with a lock file, so that no other
caller of this helper on the machine gets it. Base layer: the standard library only.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

LOW = 20000                   # below it: ports that servers (Ray's workers: 10002-19999) pick
_reserved: list[int] = []     # lock file descriptors, kept open for the process's life


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def lock_dir(name: str) -> Path:
    """A folder for lock files that every process on this machine sees, whatever its TMPDIR:
    under /run/lock (FHS), or the temporary folder where that is not writable. Made on use."""
    base = Path("/run/lock")
    if not (base.is_dir() and os.access(base, os.W_OK | os.X_OK)):
        base = Path(tempfile.gettempdir())
    folder = base / name
    folder.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):        # other users' processes share the folder
        os.chmod(folder, 0o1777)
    return folder


def reservations() -> Path:
    """The folder of the reservations' lock files (one per port)."""
    return lock_dir("rackclock-ports")


def free_port(kind: int = socket.SOCK_STREAM, host: str = "127.0.0.1") -> int:
    """A port on `host` (TCP by default, `socket.SOCK_DGRAM` for UDP) that nothing holds and no
    other caller of this helper on the machine will get."""
    high = _ephemeral_low()
    folder = reservations()
    for port in random.sample(range(LOW if high > LOW + 1000 else 1024, high), 200):
        fd = os.open(folder / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind((host, port))
        except OSError:
            os.close(fd)
            continue
        _reserved.append(fd)
        return port
    raise RuntimeError(f"no free loopback port below {high} after 200 tries")
