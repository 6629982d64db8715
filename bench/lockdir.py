"""Lock folders and lock files that every session on this machine shares, safe from the other
local users (docs/DESIGN.md, "Locks on a shared host").

A lock folder is `<base>/<name>`. The base is $RACKCLOCK_LOCK_DIR if set, else /run/lock (FHS:
root's, mode 1777, shared by every user), else a per-user folder ($XDG_RUNTIME_DIR, or
`<tmp>/rackclock-<uid>` made 0700) that excludes only this user's own sessions. The base and the
folder must be real folders (no symlink) owned by root or by this user, and sticky if group or
others may write them (no one then removes or renames another's file); anything else is refused
(LockFolderError) naming the owner. A missing folder is made 1777 in a shared base, 0700 in a
per-user one.

Lock files are opened with O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK, and only checked regular files are
kept (fstat); a new one is made with O_EXCL and only such a file is ever written. An existing one
is opened read-only (flock needs no write access); a symlink, FIFO, device or folder in its place
is removed where this user may (its owner or root), else refused naming its owner. Base layer:
the standard library only.
"""
from __future__ import annotations

import logging
import os
import pwd
import stat
import tempfile
from pathlib import Path

from bench.errors import RackclockError

log = logging.getLogger(__name__)
SHARED_BASE = Path("/run/lock")
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class LockFolderError(RackclockError, PermissionError):
    """A lock folder or lock file that another user could control: refused, one line naming it,
    its owner and the remedy."""


def user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _check_dir(path: Path, st: os.stat_result) -> None:
    fix = "remove it (its owner or root) and let the bench make it again"
    if not stat.S_ISDIR(st.st_mode):
        raise LockFolderError(f"lock folder {path} is not a folder but a "
                              f"{'symlink' if stat.S_ISLNK(st.st_mode) else 'file'} of "
                              f"{user(st.st_uid)}: refused; {fix}")
    if st.st_uid not in (0, os.geteuid()):
        raise LockFolderError(f"lock folder {path} belongs to {user(st.st_uid)}, neither root nor "
                              f"you: refused (its owner could replace the locks in it); {fix}")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise LockFolderError(f"lock folder {path} is writable by others without the sticky bit "
                              f"(mode {stat.S_IMODE(st.st_mode):o}): refused; chmod 1777 it or "
                              f"{fix}")


def checked_dir(path: Path, mode: int | None = None) -> Path:
    """`path` once checked (the module's rules); made with `mode` if missing and `mode` given."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if mode is None:
            raise
        try:
            os.mkdir(path, 0o700)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
            try:
                os.fchmod(fd, mode)        # past the umask: a shared folder is 1777
            finally:
                os.close(fd)
        except FileExistsError:
            pass                           # another session made it: checked below
        st = os.lstat(path)
    _check_dir(path, st)
    return path


def _base(name: str) -> tuple[Path, bool]:
    """The base folder for lock folder `name`, and whether other users share it."""
    env = os.environ.get("RACKCLOCK_LOCK_DIR")
    if env:
        return Path(env), True
    if SHARED_BASE.is_dir() and (os.access(SHARED_BASE, os.W_OK | os.X_OK)
                                 or (SHARED_BASE / name).is_dir()):
        return SHARED_BASE, True
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg), False
    tmp = Path(tempfile.gettempdir())
    checked_dir(tmp)
    return checked_dir(tmp / f"rackclock-{os.geteuid()}", 0o700), False


def lock_dir(name: str) -> Path:
    """The checked lock folder `name`, made on first use (LockFolderError if unsafe)."""
    base, shared = _base(name)
    checked_dir(base)
    return checked_dir(base / name, 0o1777 if shared else 0o700)


def _describe(st: os.stat_result) -> str:
    kind = ("a symlink" if stat.S_ISLNK(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
            else "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file" if not
            stat.S_ISREG(st.st_mode) else "a file with other names (hard links)"
            if st.st_nlink > 1 else "a file you may not open")
    return f"{kind} of {user(st.st_uid)}"


def _clear(path: Path, st: os.stat_result) -> None:
    """Remove what is in the place of a lock file, where this user may; else refuse."""
    if st.st_uid in (0, os.geteuid()) or os.geteuid() == 0:
        try:
            (os.rmdir if stat.S_ISDIR(st.st_mode) else os.unlink)(path)
            log.warning("lock file %s was %s: removed, not followed", path, _describe(st))
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            why = exc.strerror
    else:
        why = "not yours to remove"
    raise LockFolderError(f"lock file {path} is {_describe(st)} ({why}): refused; its owner or "
                          f"root must remove it")


def open_lock(path: Path) -> tuple[int, bool]:
    """A descriptor of the regular lock file at `path` and whether this call made it (O_EXCL,
    mode 0644, written by no one else). An existing file is opened read-only."""
    for _ in range(20):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
            os.fchmod(fd, 0o644)          # others open it to wait, whatever the umask
            return fd, True
        except FileExistsError:
            pass
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            continue                      # let go meanwhile: make it
        except OSError as exc:            # ELOOP: a symlink; EACCES: another user's 0600 file
            st = _lstat(path)
            if st is None:
                continue
            if stat.S_ISREG(st.st_mode) and not isinstance(exc, PermissionError):
                raise
            _clear(path, st)
            continue
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            return fd, False
        os.close(fd)
        _clear(path, st)
    raise LockFolderError(f"lock file {path} keeps being replaced: refused")


def open_existing(path: Path) -> int | None:
    """A read-only descriptor of the regular file at `path`, or None (absent, or anything else)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file open as `fd` (not removed or replaced meanwhile)."""
    st, now = os.fstat(fd), _lstat(path)
    return now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def flock_holders(fd: int) -> list[int]:
    """The pids holding a flock on the file open as `fd` (/proc/locks), where the kernel says."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        f = line.split()
        if len(f) > 5 and f[1] == "FLOCK" and f[5] == dev and f[4].isdigit():
            pids.append(int(f[4]))
    return pids


def process(pid: int) -> str:
    """`pid N (user, command)` from /proc, as far as it tells."""
    words = []
    try:
        words.append(user(os.stat(f"/proc/{pid}").st_uid))
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()[:160].replace(b"\0", b" ")
        words.append(cmd.decode(errors="replace").strip())
    except OSError:
        pass
    return f"pid {pid}" + (f" ({', '.join(w for w in words if w)})" if words else "")
