"""The one way the bench writes a file or makes a folder (docs/DESIGN.md, "Files on a shared
host"); reading is bench/saferead.py.

Every write is relative to a directory descriptor the bench opened and checked: the folder is
reached from `/` one name at a time with O_NOFOLLOW, a symlink on the way followed only when it
lies in a checked folder and belongs to root or this user, and every folder on the way must
belong to root or this user and be writable by no one else unless sticky (then only what this
user owns beneath it is entered). Anything else is refused (UnsafeFolder) in one line naming the
folder and its owner. A file is created exclusively under a fresh temporary name (O_EXCL |
O_NOFOLLOW), flushed, fsynced and renamed into place: a name planted in the folder (a symlink,
another's file) is replaced, never written through, and a reader never sees half a file. An
append stream (samples, journal, logs) is opened with O_NOFOLLOW and kept only if it is a regular
file of this user with one name. Base layer: the standard library only.
"""
from __future__ import annotations

import io
import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TextIO

from bench.errors import RackclockError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_HOPS = 40                   # symlinks followed on the way to one folder (as the kernel's)


class UnsafeFolder(RackclockError, PermissionError):
    """A folder (or file) another user could redirect: refused, one line naming it and why."""


def owner(uid: int) -> str:
    import pwd
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def check_folder(path: Path, st: os.stat_result) -> None:
    """A folder the bench may write in: root's or this user's, writable by no one else unless
    sticky."""
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolder(f"{path} is not a folder: refused")
    if not _trusted(st.st_uid):
        raise UnsafeFolder(f"folder {path} belongs to {owner(st.st_uid)}, neither root nor you: "
                           f"refused (its owner could redirect what the bench writes); choose "
                           f"a folder of your own")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UnsafeFolder(f"folder {path} is writable by others (mode "
                           f"{stat.S_IMODE(st.st_mode):o}, not sticky): refused; choose a "
                           f"folder of your own")


def _step(fd: int, name: str, here: Path, create: bool, mode: int) -> int | str:
    """The checked folder `name` in `fd` (a new descriptor), or a symlink's target to follow."""
    for _ in range(3):
        try:
            nfd = os.open(name, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except FileExistsError:
                pass
            continue
        except OSError:                      # ELOOP or ENOTDIR: what is it?
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode) and _trusted(st.st_uid):
                return os.readlink(name, dir_fd=fd)
            what = "a symlink of " + owner(st.st_uid) if stat.S_ISLNK(st.st_mode) else \
                "not a folder"
            raise UnsafeFolder(f"{here / name} is {what}: refused, not followed") from None
        try:
            check_folder(here / name, os.fstat(nfd))
        except BaseException:
            os.close(nfd)
            raise
        return nfd
    raise UnsafeFolder(f"{here / name} keeps being replaced: refused")


def _walk(path: Path, create: bool, mode: int) -> tuple[int, Path]:
    todo = list(reversed(Path(os.path.abspath(path)).parts[1:]))
    fd, here, hops = os.open("/", _DIR), Path("/"), 0
    try:
        check_folder(here, os.fstat(fd))
        while todo:
            name = todo.pop()
            got = _step(fd, name, here, create, mode)
            if isinstance(got, str):
                hops += 1
                if hops > MAX_HOPS:
                    raise UnsafeFolder(f"{path}: too many symlinks on the way: refused")
                target = Path(os.path.normpath(here / got))
                todo += list(reversed(target.parts[1:]))
                os.close(fd)
                fd, here = os.open("/", _DIR), Path("/")
                continue
            os.close(fd)
            fd, here = got, here / name
        return fd, here
    except BaseException:
        os.close(fd)
        raise


class Folder:
    """An open, checked folder: every file in it is made through its descriptor."""

    def __init__(self, fd: int, path: Path):
        self.fd, self.path = fd, path

    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = False, mode: int = 0o755
             ) -> Folder:
        """The folder at `path` (made, with its missing parents, when `create`), checked all
        the way from `/`; UnsafeFolder when another user could redirect it."""
        fd, _ = _walk(Path(path), create, mode)
        return cls(fd, Path(path))

    def sub(self, name: str, create: bool = True, mode: int = 0o755) -> Folder:
        """The checked folder `name` in this one (made when missing and `create`)."""
        got = _step(self.fd, _one(name), self.path, create, mode)
        if isinstance(got, str):
            raise UnsafeFolder(f"{self.path / name} is a symlink: refused, not followed")
        return Folder(got, self.path / name)

    def new_sub(self, name: str, mode: int = 0o755) -> Folder:
        """A folder this call makes (FileExistsError when the name is taken)."""
        os.mkdir(_one(name), mode, dir_fd=self.fd)
        return self.sub(name, create=False)

    @contextmanager
    def atomic(self, name: str, mode: int = 0o644) -> Iterator[IO[bytes]]:
        """A binary file object; on success its bytes replace `name` at once (fsynced)."""
        tmp = f".{_one(name)}.{secrets.token_hex(4)}.part"
        fd = os.open(tmp, _NEW, 0o600, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.unlink(tmp)
            raise

    def write_bytes(self, name: str, data: bytes, mode: int = 0o644) -> Path:
        with self.atomic(name, mode) as f:
            f.write(data)
        return self.path / name

    def write_text(self, name: str, text: str, mode: int = 0o644) -> Path:
        return self.write_bytes(name, text.encode("utf-8"), mode)

    def write_json(self, name: str, data: Any, indent: int | None = 1) -> Path:
        return self.write_text(name, json.dumps(data, indent=indent, default=str))

    def append(self, name: str, mode: int = 0o644) -> IO[bytes]:
        """`name` opened for appending (made if missing): only a regular file of this user
        with one name is kept, anything else refused."""
        fd = os.open(_one(name), _APPEND, mode, dir_fd=self.fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not _trusted(st.st_uid):
                raise UnsafeFolder(f"{self.path / name} is not a regular file of yours with one "
                                   f"name: refused, not written")
            os.set_blocking(fd, True)
            return os.fdopen(fd, "ab")
        except BaseException:
            os.close(fd)
            raise

    def append_text(self, name: str, encoding: str = "utf-8") -> TextIO:
        return io.TextIOWrapper(self.append(name), encoding=encoding, newline="",
                                line_buffering=False, write_through=True)

    def check_writable(self) -> None:
        """OSError when no file can be made here (read-only, full); leaves nothing behind."""
        try:
            with self.atomic(f"probe-{secrets.token_hex(4)}") as f:
                f.write(b"")
                raise _Probed
        except _Probed:
            pass
    def unlink(self, name: str) -> None:
        try:
            os.unlink(_one(name), dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def rename(self, src: str, dst: str) -> None:
        os.rename(_one(src), _one(dst), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


class _Probed(RackclockError):
    """Raised inside check_writable's probe so that its temporary file is removed."""


def _one(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not one file name: {name!r}")
    return name


# -- by path: the folder opened and checked for each call ------------------------------------

def folder(path: str | os.PathLike[str], create: bool = True) -> Folder:
    return Folder.open(path, create=create)


@contextmanager
def atomic(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[IO[bytes]]:
    p = Path(path)
    with Folder.open(p.parent, create=True) as d, d.atomic(p.name, mode) as f:
        yield f


def write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> Path:
    p = Path(path)
    with Folder.open(p.parent, create=True) as d:
        d.write_bytes(p.name, data, mode)
    return p


def write_text(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> Path:
    return write_bytes(path, text.encode("utf-8"), mode)


def write_json(path: str | os.PathLike[str], data: Any, indent: int | None = 1) -> Path:
    return write_text(path, json.dumps(data, indent=indent, default=str))


def append(path: str | os.PathLike[str]) -> IO[bytes]:
    p = Path(path)
    with Folder.open(p.parent, create=True) as d:
        return d.append(p.name)


def append_text(path: str | os.PathLike[str], encoding: str = "utf-8") -> TextIO:
    p = Path(path)
    with Folder.open(p.parent, create=True) as d:
        return d.append_text(p.name, encoding)


def new_part(folder: str | os.PathLike[str], name: str) -> Path:
    """A new empty temporary file beside `name` in the checked `folder` (O_EXCL, 0600), to be
    filled (open_part) and renamed into place (commit_part)."""
    with Folder.open(folder) as d:
        tmp = f".{_one(name)}.{secrets.token_hex(4)}.part"
        os.close(os.open(tmp, _NEW, 0o600, dir_fd=d.fd))
    return Path(folder) / tmp


def open_part(path: str | os.PathLike[str]) -> IO[bytes]:
    """A file new_part made, opened to write (no-follow; a regular file of this user only)."""
    p = Path(path)
    with Folder.open(p.parent) as d:
        fd = os.open(_one(p.name), os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=d.fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not _trusted(st.st_uid):
            raise UnsafeFolder(f"{p} is not a regular file of yours with one name: refused")
        f = os.fdopen(fd, "wb")
        f.raw.name = str(p)          # type: ignore[attr-defined]  # as open(path) names it
        return f
    except BaseException:
        os.close(fd)
        raise


def commit_part(tmp: str | os.PathLike[str], dest: str | os.PathLike[str], mode: int = 0o644
                ) -> None:
    """A filled part fsynced and renamed to `dest` (the same folder)."""
    t, d = Path(tmp), Path(dest)
    with open_part_keep(t) as f:
        os.fchmod(f.fileno(), mode)
        os.fsync(f.fileno())
    with Folder.open(d.parent) as folder:
        folder.rename(t.name, d.name)


def open_part_keep(path: Path) -> IO[bytes]:
    with Folder.open(path.parent) as d:
        fd = os.open(_one(path.name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=d.fd)
    return os.fdopen(fd, "rb")


def make_folder(path: str | os.PathLike[str], mode: int = 0o755) -> Path:
    """`path` and its missing parents made, each checked (UnsafeFolder else)."""
    Folder.open(path, create=True, mode=mode).close()
    return Path(path)
