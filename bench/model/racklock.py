"""One session at a time on a rack: an inter-process lock keyed by the rack file's resolved path.

Two sessions that open the same devices conflict for real: a PDU driver binds the rack's one
SNMP trap port, a serial sideband has one reader. Whoever opens the devices of a rack file itself
(the pytest plugin's `rack_drivers` and `calibration` on a lab rack, the suite's `*_with_device`
tests) holds `rack_lock(rack_file)` for as long as they are open; a second session on the same
machine waits for it until its deadline and then fails naming the holder (pid, command, since).
A simulated rack needs no lock: every session serves its own copy on fresh ports.

`fcntl.flock` on `/run/lock/rackclock-racks/<hash of the path>.lock` (bench.ports.lock_dir, the
same for every TMPDIR): the kernel drops the lock when its holder exits however it exits, so a
killed session never leaves a rack locked. The lock is re-entrant within a process (a session
holding it for its drivers may run a test that takes it again). It covers one machine; sessions
on two hosts sharing one rack are not seen.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Iterator

from bench.errors import RackclockError
from bench.ports import lock_dir

DEFAULT_WAIT_S = 600.0


class RackBusy(RackclockError, TimeoutError):
    """Another session held the rack for longer than the wait allowed. One line: the rack file,
    the holder, the wait and the lock file."""


def lock_path(rack_file: str | os.PathLike) -> Path:
    """The lock file of a rack file (its resolved path's hash, in bench.ports.lock_dir)."""
    key = hashlib.sha256(str(Path(rack_file).resolve()).encode()).hexdigest()[:24]
    return lock_dir("rackclock-racks") / f"{key}.lock"


_held: dict[Path, list] = {}          # lock file -> [fd, depth]: re-entrant within the process
_held_guard = threading.Lock()


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)


class _Waiter:
    """A blocking flock in a daemon thread; the caller waits on a condition with its deadline.
    A waiter given up on releases the lock itself as soon as the kernel grants it."""

    def __init__(self, path: Path):
        self.path = path
        self.cond = threading.Condition()
        self.fd: int | None = None
        self.error: OSError | None = None
        self.abandoned = False
        threading.Thread(target=self._run, name=f"rack-lock-{path.stem}", daemon=True).start()

    def _run(self) -> None:
        try:
            fd = _open(self.path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            with self.cond:
                self.error = exc
                self.cond.notify_all()
            return
        with self.cond:
            if self.abandoned:
                os.close(fd)
                return
            self.fd = fd
            self.cond.notify_all()

    def wait(self, timeout_s: float) -> int | None:
        with self.cond:
            self.cond.wait_for(lambda: self.fd is not None or self.error is not None, timeout_s)
            if self.error is not None:
                raise self.error
            if self.fd is None:
                self.abandoned = True
            return self.fd


def _holder(path: Path) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        text = ""
    return text or "a session that has not written its name yet"


def _acquire(path: Path, rack_file: Path, wait_s: float) -> int:
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
    fd = _Waiter(path).wait(wait_s)
    if fd is None:
        raise RackBusy(f"rack file {rack_file} is in use by another session ({_holder(path)}); "
                       f"waited {wait_s:g} s for it (lock {path})")
    return fd


def _sign(fd: int, what: str) -> None:
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    cmd = " ".join(sys.argv)[:200]
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, {what or cmd}, since {since}\n"
              .encode(), 0)


@contextlib.contextmanager
def rack_lock(rack_file: str | os.PathLike, wait_s: float = DEFAULT_WAIT_S,
              what: str = "") -> Iterator[Path]:
    """Hold the rack of `rack_file` for the block; wait up to `wait_s` seconds for another
    session to let it go, else raise RackBusy. `what` names the holder for whoever waits.
    Yields the lock file's path."""
    path = lock_path(rack_file)
    with _held_guard:
        entry = _held.get(path)
        if entry is not None:
            entry[1] += 1
    if entry is None:
        fd = _acquire(path, Path(rack_file).resolve(), wait_s)
        _sign(fd, what)
        with _held_guard:
            entry = _held[path] = [fd, 1]
    try:
        yield path
    finally:
        with _held_guard:
            entry[1] -= 1
            last = entry[1] == 0
            if last:
                del _held[path]
        if last:
            os.close(entry[0])          # closing the descriptor releases the flock
