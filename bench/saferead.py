"""The one way the bench reads a file of a run folder (docs/DESIGN.md, "Files on a shared
host"): a regular file only (opened with O_NOFOLLOW | O_NONBLOCK, then checked by fstat: a
symlink, FIFO, device or folder is refused without reading a byte), no larger than the cap of
its kind, whole documents read within that cap and large files (samples, journals) streamed in
lines no longer than LINE_LIMIT. JSON is refused when it holds NaN or Infinity (naming the
field) or nests deeper than MAX_DEPTH. An archive (`.tar.gz`) is read the same way and then
member by member (open_archive): a member is streamed into memory within its own kind's cap,
never unpacked to disk, and only a regular file with a plain relative name is read (a link,
device, folder, absolute or `..` name is refused). Every fault is a FileFault: one line naming
the file and what is wrong. Base layer: the standard library only.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
import tarfile
import zlib
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from bench.errors import RackclockError

MiB = 1 << 20
CAPS = {"manifest.json": 16 * MiB, "summary.json": 64 * MiB, "truth.json": 32 * MiB,
        "incident.json": 16 * MiB, "measurements.json": 16 * MiB, "timeline.json": 64 * MiB,
        "json": 16 * MiB, "samples": 8 << 30, "csv": 2 << 30, "text": 16 * MiB,
        "archive": 8 << 30}
LINE_LIMIT = 64 << 10           # bytes of one CSV line; a longer one is a bad row, skipped
MAX_DEPTH = 64                  # nesting of a JSON document
MAX_MEMBERS = 100_000           # members of one archive (each costs a header kept in memory)
ARCHIVES = (".tar.gz", ".tgz")
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


class FileFault(RackclockError, ValueError):
    """A file the bench cannot read as what it should be: one line naming it and the fault."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def cap_of(path: Path) -> int:
    name = path.name
    if name in CAPS:
        return CAPS[name]
    if path.parent.name == "samples" and name.endswith(".csv"):
        return CAPS["samples"]
    if name.endswith(ARCHIVES):
        return CAPS["archive"]
    return CAPS["csv" if name.endswith(".csv") else "json" if name.endswith(".json") else "text"]


def open_regular(path: str | os.PathLike[str], cap: int | None = None) -> IO[bytes]:
    """`path` opened for binary reading: a regular file within `cap` bytes (its kind's)."""
    p = Path(path)
    try:
        fd = os.open(p, _FLAGS)
    except OSError as exc:
        why = "a symlink, not followed" if exc.errno == 40 else (exc.strerror or str(exc))
        raise FileFault(f"{p}: {why}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileFault(f"{p}: {_kind(st.st_mode)}, not a regular file")
        limit = cap_of(p) if cap is None else cap
        if st.st_size > limit:
            raise FileFault(f"{p}: {st.st_size:,} bytes, over the {limit:,}-byte cap for "
                            f"this kind of file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], cap: int | None = None) -> bytes:
    p = Path(path)
    limit = cap_of(p) if cap is None else cap
    with open_regular(p, limit) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise FileFault(f"{p}: {exc.strerror or exc}") from None
    if len(data) > limit:                 # grew since fstat
        raise FileFault(f"{p}: over the {limit:,}-byte cap for this kind of file")
    return data


def read_text(path: str | os.PathLike[str], cap: int | None = None) -> str:
    data = read_bytes(path, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFault(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def tail_text(path: str | os.PathLike[str], size: int) -> str:
    """The last `size` bytes of a log as text (any size of log: only the tail is read)."""
    try:
        with open_regular(path, cap=1 << 62) as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - size))
            return f.read(size).decode("utf-8", "replace")
    except (FileFault, OSError) as exc:
        return f"({exc})"


class _Refused:
    def __init__(self, text: str):
        self.text = text


def _float(s: str) -> Any:
    v = float(s)
    return v if math.isfinite(v) else _Refused(s)


def _check(path: Path, doc: Any) -> None:
    """Depth within MAX_DEPTH and no NaN/Infinity, walked without recursion."""
    todo: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    while todo:
        x, where = todo.pop()
        if len(where) > MAX_DEPTH:
            raise FileFault(f"{path}: JSON nested deeper than {MAX_DEPTH} levels: refused")
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for k, v in items:
            if isinstance(v, (dict, list)):
                todo.append((v, (*where, str(k))))
            elif isinstance(v, _Refused):
                field = ".".join((*where, str(k)))
                raise FileFault(f"{path}: field {field} is {v.text}: refused (JSON has no "
                                f"NaN or Infinity)")


def load_json(path: str | os.PathLike[str], cap: int | None = None) -> Any:
    """A JSON document, or FileFault naming the file and its fault."""
    p = Path(path)
    text = read_text(p, cap)
    try:
        doc = json.loads(text, parse_constant=_Refused, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise FileFault(f"{p}: not JSON ({exc.msg} at line {exc.lineno} column "
                        f"{exc.colno})") from None
    except RecursionError:
        raise FileFault(f"{p}: JSON nested deeper than {MAX_DEPTH} levels: refused") from None
    except ValueError as exc:             # an integer of more digits than Python converts
        raise FileFault(f"{p}: not JSON the bench reads ({exc})") from None
    if isinstance(doc, _Refused):
        raise FileFault(f"{p}: the document is {doc.text}: refused")
    if isinstance(doc, (dict, list)):
        _check(p, doc)
    return doc


def load_object(path: str | os.PathLike[str], cap: int | None = None) -> dict[str, Any]:
    """A JSON document that must be an object (of its kind's SHAPES where declared)."""
    doc = load_json(path, cap)
    if not isinstance(doc, dict):
        raise FileFault(f"{path}: a JSON {type(doc).__name__}, not an object")
    shape = SHAPES.get(Path(path).name)
    if shape is not None:
        check_shape(Path(path), doc, shape)
    return doc


NUM = (int, float)
# the parts of a document whose readers index it as they find it (the others go through
# bench.model.documents, which takes any type): a dict maps keys (`*`: every key) to their
# shapes, a one-item list is a list of that shape, a type or tuple the leaf's; a missing key or
# a null leaf is allowed
_TRUTH_CLOCK = {"t_ns": [int], "offset_ns": [NUM], "drift_ppm": [NUM], "resolution_ns": int,
                "breaks": [{"kind": str, "t_ns": int}]}
SHAPES: dict[str, Any] = {
    "truth.json": {"t0_ns": int, "devices": {"*": {"clocks": {"*": _TRUTH_CLOCK},
                                                   "events": [{"t_ns": int, "kind": str}]}}},
}


def _type_name(x: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(x), type(x).__name__)


def check_shape(path: Path, doc: Any, shape: Any) -> None:
    """FileFault naming the first field of `doc` that is not of `shape` (walked without
    recursion)."""
    todo: list[tuple[Any, Any, str]] = [(doc, shape, "")]
    while todo:
        x, sh, where = todo.pop()
        inner = _shape_inner(x, sh, where)
        if inner is None:
            raise FileFault(f"{path}: field {where or '(the document)'} is {_type_name(x)}, "
                            f"not of the shape its readers take")
        todo += inner


def _shape_inner(x: Any, sh: Any, where: str) -> list[tuple[Any, Any, str]] | None:
    """The fields of `x` to check next, each with its shape and its name; None where `x`
    itself is not of shape `sh`."""
    if isinstance(sh, dict):
        return _object_fields(x, sh, where) if isinstance(x, dict) else None
    if isinstance(sh, list):
        return [(v, sh[0], f"{where}[{i}]") for i, v in enumerate(x)] if isinstance(x, list) else None
    ok = isinstance(x, sh) and not (isinstance(x, bool) and sh is not bool)
    return [] if ok else None


def _object_fields(x: dict[str, Any], sh: dict[str, Any], where: str) -> list[tuple[Any, Any, str]]:
    """The fields of object `x` that `sh` shapes (by name, else "*"); a null leaf is allowed."""
    out = []
    for k, v in x.items():
        sub = sh.get(k, sh.get("*"))
        if sub is not None and (v is not None or isinstance(sub, (dict, list))):
            out.append((v, sub, f"{where}.{k}" if where else str(k)))
    return out


class LineCount:
    """Lines a stream skipped for being longer than its limit (or holding NUL bytes)."""

    def __init__(self) -> None:
        self.skipped = 0


def lines(f: IO[bytes], count: LineCount | None = None, limit: int = LINE_LIMIT,
          block: int = 1 << 20) -> Iterator[str]:
    """The lines of a binary stream as text (newline kept), memory bounded by `limit`: a
    longer line, or one with NUL bytes (a crash's tail), is skipped and counted. A hole of a
    sparse file (NUL bytes that were never written) is skipped without reading it."""
    count = count if count is not None else LineCount()
    part, over = b"", False
    while True:
        if _past_hole(f):
            part, over = b"", True
        chunk = f.read(block)
        if not chunk:
            break
        part, over = yield from _chunk_lines(chunk, part, over, limit, count)
    if over or b"\0" in part:
        count.skipped += 1
    elif part:
        yield part.decode("utf-8", "replace")


def _chunk_lines(chunk: bytes, part: bytes, over: bool, limit: int,
                 count: LineCount) -> Generator[str, None, tuple[bytes, bool]]:
    """The lines a chunk ends (the first continuing `part`, the line so far; `over`: that line
    is already too long), a longer line or one with NUL bytes skipped and counted; returns the
    (part, over) of the line it leaves open."""
    start = 0
    while True:
        nl = chunk.find(b"\n", start)
        if nl < 0:
            if not over:
                part += chunk[start:]
                if len(part) > limit:
                    part, over = b"", True
            return part, over
        line, start = part + chunk[start:nl + 1], nl + 1
        part = b""
        if over or len(line) > limit or b"\0" in line:
            count.skipped += 1
            over = False
            continue
        yield line.decode("utf-8", "replace")


def _past_hole(f: IO[bytes]) -> bool:
    """Whether the stream stood at a hole (now skipped to the next data, or to the end)."""
    seek_data, peek = getattr(os, "SEEK_DATA", None), getattr(f, "peek", None)
    if seek_data is None or peek is None:
        return False
    try:
        here = f.tell()
        if peek(1)[:1] != b"\0":
            return False
        fd = f.fileno()
        raw = os.lseek(fd, 0, os.SEEK_CUR)     # the buffer's own position, put back below
        try:
            nxt = os.lseek(fd, here, seek_data)
        except OSError:                   # ENXIO: a hole to the end
            nxt = os.fstat(fd).st_size
        finally:
            os.lseek(fd, raw, os.SEEK_SET)
        if nxt <= here:
            return False
        f.seek(nxt)
        return True
    except (OSError, ValueError):
        return False


def csv_rows(path: str | os.PathLike[str], count: LineCount | None = None,
             cap: int | None = None) -> Iterator[dict[str, str]]:
    """The rows of a CSV file with a header line, streamed, as dicts; a line that is not a row
    of the header's width (cut short, garbage, NUL bytes, over-long) is skipped and counted."""
    with open_regular(path, cap) as f:
        yield from csv_rows_of(f, count)


def csv_rows_of(f: IO[bytes], count: LineCount | None = None) -> Iterator[dict[str, str]]:
    """csv_rows of a binary stream already opened through this module (an archive's member)."""
    count = count if count is not None else LineCount()
    head: list[str] | None = None
    for line in lines(f, count):
        try:
            cells = next(csv.reader([line]), [])
        except csv.Error:
            count.skipped += 1
            continue
        if head is None:
            head = cells
        elif len(cells) == len(head):
            yield dict(zip(head, cells))
        else:
            count.skipped += 1


def csv_lines(path: str | os.PathLike[str], count: LineCount | None = None,
              cap: int | None = None) -> Iterator[str]:
    """The lines of a CSV file of a run folder, streamed (for csv.reader)."""
    with open_regular(path, cap) as f:
        yield from lines(f, count)


# -- archives: a .tar.gz read member by member, in memory, never unpacked --------------------

class _Member(io.RawIOBase):
    """An archive member's bytes (tarfile's stream, `size` of them), a fault of the compressed
    stream under them a FileFault naming the archive and the member."""

    def __init__(self, f: IO[bytes], label: str):
        super().__init__()
        self._f, self._label = f, label

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            data = self._f.read(len(b))
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise FileFault(f"{self._label}: unreadable ({exc})") from None
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._f.close()
        super().close()


class Archive:
    """A .tar.gz opened by open_archive: its members found by one forward scan as they are asked
    for (in the archive's order, each member costs no second pass), each read as a stream."""

    def __init__(self, path: Path, tar: tarfile.TarFile):
        self.path, self._tar = path, tar
        self._seen: dict[str, tarfile.TarInfo] = {}
        self._count, self._done = 0, False

    def _next(self) -> tarfile.TarInfo | None:
        try:
            m = self._tar.next()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise FileFault(f"{self.path}: not an archive the bench reads ({exc})") from None
        if m is None:
            self._done = True
            return None
        self._count += 1
        if self._count > MAX_MEMBERS:
            raise FileFault(f"{self.path}: more than {MAX_MEMBERS:,} members: refused")
        self._seen.setdefault(m.name, m)        # the first of a name, as a forward scan meets it
        return m

    def names(self) -> list[str]:
        """The names of the members it would read (regular files with plain relative names),
        in the archive's order (the whole archive scanned)."""
        while not self._done:
            self._next()
        return [n for n, m in self._seen.items() if _member_fault(m) is None]

    def member(self, name: str, cap: int | None = None) -> IO[bytes] | None:
        """The member `name` as a binary stream (None when the archive has none): FileFault when
        it is no regular file with a plain relative name, or over `cap` (its kind's). One
        member at a time: the stream shares the archive's, so read it before asking for the
        next."""
        while name not in self._seen and not self._done:
            self._next()
        m = self._seen.get(name)
        if m is None:
            return None
        label = f"{self.path}: member {name}"
        why = _member_fault(m)
        if why is not None:
            raise FileFault(f"{label}: {why}: refused, not read")
        limit = cap_of(Path(name)) if cap is None else cap
        if m.size > limit:
            raise FileFault(f"{label}: {m.size:,} bytes, over the {limit:,}-byte cap for this "
                            f"kind of file")
        try:
            f = self._tar.extractfile(m)
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise FileFault(f"{label}: unreadable ({exc})") from None
        if f is None:
            raise FileFault(f"{label}: not a regular file: refused, not read")
        return io.BufferedReader(_Member(f, label), 1 << 20)

    def read_bytes(self, name: str, cap: int | None = None) -> bytes | None:
        """The member `name` whole (within its cap), or None when the archive has none."""
        f = self.member(name, cap)
        if f is None:
            return None
        with f:
            return f.read()


def _member_fault(m: tarfile.TarInfo) -> str | None:
    """Why a member is not read, or None: only a regular file with a plain relative name."""
    parts = m.name.split("/")
    if m.name.startswith("/") or ".." in parts or "\0" in m.name or not m.name:
        return "not a plain relative name"
    if m.issym() or m.islnk():
        return "a link"
    if m.isdir():
        return "a folder"
    if not m.isreg():
        return "not a regular file"
    return None


@contextmanager
def open_archive(path: str | os.PathLike[str], cap: int | None = None) -> Iterator[Archive]:
    """`path`, a .tar.gz, opened as open_regular opens a file (a regular file within `cap`, its
    kind's by default), for its members to be read in memory (Archive.member), never unpacked."""
    p = Path(path)
    with open_regular(p, cap) as f:
        try:
            tar = tarfile.open(fileobj=f, mode="r:gz")
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise FileFault(f"{p}: not an archive the bench reads ({exc})") from None
        with tar:
            yield Archive(p, tar)
