"""Loopback ports for servers started apart from whoever picks the port (an emulator's trap
receiver, a test's sshd or Ray head) or meant to stay closed.

A port found by binding port 0 and closing the socket is free only for that instant: until the
server binds it, any port-0 bind or outgoing connection on the machine (the other xdist worker,
another suite) may be handed the same number. So `free_port` picks below the kernel's ephemeral
range (/proc/sys/net/ipv4/ip_local_port_range), which the kernel never hands out by itself,
checks it is free, and reserves it for this process's life with a flock on a lock file, so that no
other caller of this helper on the machine, of any user, gets it. The lock files are opened as
bench.lockdir says (checked folder, O_NOFOLLOW, never written): a port whose file another user
planted or made unreadable is skipped. The files are removed at exit. Base layer: the standard
library and bench.lockdir.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import random
import socket
from pathlib import Path

from bench.lockdir import lock_dir, open_lock, same_file

LOW = 20000                   # below it: ports that servers (Ray's workers: 10002-19999) pick
_reserved: list[tuple[int, Path]] = []   # lock files' descriptors, open for the process's life


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _let_go() -> None:
    """At exit: remove the reservations' files that are still ours (the flocks go with the
    process anyway; a taker that opened a removed file sees it is gone and moves on)."""
    for fd, path in _reserved:
        try:
            if same_file(fd, path):
                os.unlink(path)
        except OSError:
            pass


def reservations() -> Path:
    """The folder of the reservations' lock files (one per port)."""
    return lock_dir("rackclock-ports")


def free_port(kind: int = socket.SOCK_STREAM, host: str = "127.0.0.1") -> int:
    """A port on `host` (TCP by default, `socket.SOCK_DGRAM` for UDP) that nothing holds and no
    other caller of this helper on the machine will get."""
    high = _ephemeral_low()
    folder = reservations()
    for port in random.sample(range(LOW if high > LOW + 1000 else 1024, high), 200):
        path = folder / f"{port}.lock"
        try:
            fd, _ = open_lock(path)
        except OSError:                    # planted by another user: not ours to use
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not same_file(fd, path):    # let go and removed as we opened it: not the lock
                raise BlockingIOError
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind((host, port))
        except OSError:
            os.close(fd)
            continue
        if not _reserved:
            atexit.register(_let_go)
        _reserved.append((fd, path))
        return port
    raise RuntimeError(f"no free loopback port below {high} after 200 tries")
