"""One session at a time on a rack: an inter-process lock keyed by the rack file's resolved path.

Two sessions that open the same devices conflict for real: a PDU driver binds the rack's one
SNMP trap port, a serial sideband has one reader. Whoever opens the devices of a rack file itself
(the pytest plugin's `rack_drivers` and `calibration` on a lab rack, the suite's `*_with_device`
tests) holds `rack_lock(rack_file)` for as long as they are open; a second session on the same
machine, of any user, waits for it until its deadline and then fails naming the holder (pid,
user, command, since).
A simulated rack needs no lock: every session serves its own copy on fresh ports.

`fcntl.flock` on `<lock base>/rackclock-racks/<hash of the path>.lock` (bench.lockdir: the shared
/run/lock, the same for every TMPDIR and user; its folder and files are checked so that no other
user can redirect a write). The kernel drops the lock when its holder exits however it exits, so
a killed session never leaves a rack locked; a session that lets go removes its file, and a file
left by a killed one is replaced by the next. The holder is named from /proc/locks, so a process
that only holds the file (not a rackclock session) is named too; it is broken by removing the
lock file (its owner or root): later sessions lock a new file. The lock is re-entrant within a
process. It covers one machine; sessions on two hosts sharing one rack are not seen.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import itertools
import logging
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, overload

from bench.errors import RackclockError
from bench.lockdir import (
    LockFolderError,
    flock_holders,
    lock_dir,
    open_existing,
    open_lock,
    process,
    same_file,
)

DEFAULT_WAIT_S = 600.0
log = logging.getLogger(__name__)


class RackBusy(RackclockError, TimeoutError):
    """Another session held the rack for longer than the wait allowed. One line: the rack file,
    the holder, the wait and the lock file."""


class RackLockUnsafe(RackBusy):
    """The rack's lock folder or file could be controlled by another user: refused, naming it."""


def lock_path(rack_file: str | os.PathLike[str]) -> Path:
    """The lock file of a rack file (its resolved path's hash, in bench.lockdir.lock_dir)."""
    key = hashlib.sha256(str(Path(rack_file).resolve()).encode()).hexdigest()[:24]
    try:
        return lock_dir("rackclock-racks") / f"{key}.lock"
    except LockFolderError as exc:
        raise RackLockUnsafe(f"rack file {rack_file}: {exc}") from None


_held: dict[Path, list[int]] = {}          # lock file -> [fd, depth]: re-entrant within the process
_held_guard = threading.Lock()


@overload
def _take(path: Path, block: Literal[True]) -> int: ...
@overload
def _take(path: Path, block: bool) -> int | None: ...


def _take(path: Path, block: bool) -> int | None:
    """The flock of the lock file at `path` (None: held elsewhere and not `block`). A file left by
    a killed session is replaced by one of ours where we may remove it."""
    for attempt in itertools.count():     # each turn follows a change made by another session
        if not block and attempt == 50:
            break
        fd, made = open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, BlockingIOError):
                return None
            raise
        if not same_file(fd, path):       # removed by its holder as we waited: take the new one
            os.close(fd)
            continue
        if not made and _remove(path):
            log.info("rack lock %s: removed the file its last holder left", path)
            os.close(fd)
            continue
        return fd
    raise RackLockUnsafe(f"lock file {path} keeps changing: refused")


def _remove(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:                       # another user's, in a sticky folder: held as it is
        return False


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
            fd = _take(self.path, block=True)
        except OSError as exc:
            with self.cond:
                self.error = exc
                self.cond.notify_all()
            return
        with self.cond:
            if self.abandoned:
                _release(self.path, fd)
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
    """Who holds the lock: the holder's own line where the process /proc/locks names wrote it,
    else that process (pid, user, command) and what the file says."""
    fd = open_existing(path)
    if fd is None:
        return "a session that has let go meanwhile"
    try:
        text = os.pread(fd, 512, 0).decode(errors="replace").strip()
        pids = flock_holders(fd)
    finally:
        os.close(fd)
    if pids and text.startswith(f"pid {pids[0]} "):
        return f"{text}; {process(pids[0])}"
    if pids:
        return (f"{process(pids[0])}, not a rackclock session's lock"
                f"{f' (its file says: {text})' if text else ''}; to break it, stop that process "
                f"or remove {path} (its owner or root)")
    return text or "a session that has not written its name yet"


def _acquire(path: Path, rack_file: Path, wait_s: float) -> int:
    fd = _take(path, block=False)
    if fd is None:
        fd = _Waiter(path).wait(wait_s)
    if fd is None:
        raise RackBusy(f"rack file {rack_file} is in use by another session ({_holder(path)}); "
                       f"waited {wait_s:g} s for it (lock {path})")
    return fd


def _sign(fd: int, what: str) -> None:
    """Our line in the lock file we made (O_EXCL, the only kind open for writing); a file
    another user left is held unsigned (its holder is then named from /proc/locks)."""
    since = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    cmd = " ".join(sys.argv)[:200]
    with contextlib.suppress(OSError):    # read-only: another user's file
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, {what or cmd}, "
                      f"since {since}\n".encode(), 0)


def _release(path: Path, fd: int) -> None:
    """Remove the lock file if it is still ours, then let go (closing drops the flock)."""
    try:
        if same_file(fd, path):
            _remove(path)
    finally:
        os.close(fd)


@contextlib.contextmanager
def rack_lock(rack_file: str | os.PathLike[str], wait_s: float = DEFAULT_WAIT_S,
              what: str = "") -> Iterator[Path]:
    """Hold the rack of `rack_file` for the block; wait up to `wait_s` seconds for another
    session to let it go, else raise RackBusy (RackLockUnsafe: a lock another user could
    control). `what` names the holder for whoever waits. Yields the lock file's path."""
    path = lock_path(rack_file)
    with _held_guard:
        entry = _held.get(path)
        if entry is not None:
            entry[1] += 1
    if entry is None:
        try:
            fd = _acquire(path, Path(rack_file).resolve(), wait_s)
        except LockFolderError as exc:
            raise RackLockUnsafe(f"rack file {rack_file}: {exc}") from None
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
            _release(path, entry[0])
