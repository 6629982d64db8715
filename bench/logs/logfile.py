"""A log file read bounded: only a regular file (opened without blocking, so a FIFO or a device
is refused at once, never read), line by line, each line capped at a stated length (a longer
line is skipped to its end without being held, and counted), a whole-document format capped at
a stated size. Memory does not grow with the file; the timeline keeps only its entries.
"""
from __future__ import annotations

import os
import stat
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from bench.errors import RackclockError
from bench.logs.lognames import LINE_LIMIT

DOC_LIMIT = 64 * 2**20          # bytes of a whole-document log (a Redfish LogEntryCollection)
BATCH_BYTES = 1 << 20         # bytes read at a time, cut into whole lines


class LogError(RackclockError, ValueError):
    """A log file or a log option the timeline cannot use (one line: which, and why)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """The file at `path` opened for binary reading, if it is a regular file; else LogError.
    O_NONBLOCK: opening a FIFO with no writer returns at once (then refused by fstat)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LogError(f"log {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LogError(f"log {path}: {_kind(mode)}: the timeline reads only regular files")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


@dataclass
class LineStats:
    """Lines over the limit: how many, and the numbers of the first few."""
    limit: int = LINE_LIMIT
    over: int = 0
    first_over: list[int] = field(default_factory=list)

    def note(self) -> str | None:
        if not self.over:
            return None
        at = ", ".join(map(str, self.first_over)) + (" ..." if self.over > len(self.first_over)
                                                      else "")
        return f"lines over {self.limit} bytes: {self.over} (skipped, not read; line {at})"


class LineBatch:
    """Whole lines from line `n0` on: `lines` (None for a line over the limit), and `text`, the
    decoded block they were cut from when it is exactly their join (None otherwise)."""
    __slots__ = ("n0", "text", "_lines")

    def __init__(self, n0: int, text: str | None, lines: list[str | None] | None = None) -> None:
        self.n0, self.text, self._lines = n0, text, lines

    @property
    def lines(self) -> list[str | None]:
        if self._lines is None:
            lines: list[str | None] = list(self.text.split("\n")) if self.text is not None else []
            self._lines = lines
        return self._lines


class _Batcher:
    """Cuts a binary file into batches of whole lines (see line_batches)."""

    def __init__(self, f: BinaryIO, stats: LineStats, block: int) -> None:
        self.f, self.stats, self.block = f, stats, block
        self.n = 0                      # lines numbered so far
        self.carry = b""                # the start of a line the last block cut
        self.skipping = False           # inside a line over the limit: drop to its end

    def over(self, n: int) -> None:
        self.stats.over += 1
        if len(self.stats.first_over) < 10:
            self.stats.first_over.append(n)

    def batch(self, part: bytes) -> LineBatch:
        """The whole lines of `part` (their newlines cut)."""
        n0, limit = self.n + 1, self.stats.limit
        if _longest_line(part) <= limit:
            text = part.decode("utf-8", "replace")
            self.n += text.count("\n") + 1
            return LineBatch(n0, text if "\r" not in text else None, None if "\r" not in text
                             else [x.rstrip("\r") for x in text.split("\n")])
        raw = part.split(b"\n")
        self.n += len(raw)
        out: list[str | None] = []
        for k, b in enumerate(raw):
            if len(b) > limit:
                self.over(n0 + k)
                out.append(None)
            else:
                out.append(b.decode("utf-8", "replace").rstrip("\r"))
        return LineBatch(n0, None, out)

    def __iter__(self) -> Iterator[LineBatch]:
        while True:
            data = self.f.read(self.block)
            if not data:
                break
            if self.skipping:
                k = data.find(b"\n")
                if k < 0:
                    continue
                data, self.skipping = data[k + 1:], False
            buf = self.carry + data
            cut = buf.rfind(b"\n")
            part, self.carry = (buf[:cut], buf[cut + 1:]) if cut >= 0 else (None, buf)
            if part is not None:
                yield self.batch(part)
            if len(self.carry) > self.stats.limit:
                self.carry, self.skipping = b"", True
                self.n += 1
                self.over(self.n)
        if self.carry:
            yield self.batch(self.carry)


def _temporary(folder: str | os.PathLike[str] | None) -> BinaryIO:
    """An unlinked temporary file in `folder` ("" or None, or one that cannot be written: the
    temporary directory)."""
    import tempfile
    try:
        return tempfile.TemporaryFile(dir=folder or None)
    except OSError:
        return tempfile.TemporaryFile()


def _longest_line(part: bytes) -> int:
    """Bytes of the longest line of `part` (lines split at b"\\n", which is not counted)."""
    ends = np.flatnonzero(np.frombuffer(part, np.uint8) == 10)
    if not len(ends):
        return len(part)
    return int(max(ends[0], len(part) - ends[-1] - 1, np.diff(ends).max(initial=1) - 1))


def line_batches(f: BinaryIO, stats: LineStats, block: int = BATCH_BYTES) -> Iterator[LineBatch]:
    """Batches (first line number, lines) of a binary file's lines, read `block` bytes at a time:
    each line decoded as UTF-8 (bad bytes replaced), its line end removed; a line over
    `stats.limit` bytes is None in its batch, counted and never held (memory: a block and one
    line at most)."""
    return iter(_Batcher(f, stats, block))


def numbered(batches: Iterable[LineBatch]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of the batches, the lines over the limit left out."""
    for b in batches:
        for k, line in enumerate(b.lines, b.n0):
            if line is not None:
                yield k, line


def lines(f: BinaryIO, stats: LineStats) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a binary file (line_batches, a line at a time)."""
    return numbered(line_batches(f, stats))


def read_document(f: BinaryIO, limit: int = DOC_LIMIT) -> str:
    """The whole (small) document from the start of the file, or LogError past `limit` bytes;
    the file's position is kept (a line reader goes on where it was)."""
    pos = f.tell()
    f.seek(0)
    data = f.read(limit + 1)
    f.seek(pos)
    if len(data) > limit:
        raise LogError(f"a JSON document over {limit} bytes is not read whole (a Redfish log "
                       f"page is far smaller; give journald-style one record a line instead)")
    return data.decode("utf-8", "replace")


SPILL_BYTES = 1 << 20     # a text store larger than this moves to a temporary file (spill)
READ_GAP = 1 << 16        # bytes between wanted strings read through rather than skipped


class TextStore:
    """Many short strings kept as one UTF-8 buffer and their end offsets: about a third of the
    memory of a list of str, one cheap append each, and any of them gathered into an Arrow-style
    large string array's buffers (`take`). Once written (`spill`), a large store's bytes move to
    an unlinked temporary file with their offsets and are read back, by span, only for the
    strings asked for: a million log lines' texts cost a file, not memory. A store told where
    (`stream`) moves its bytes there while it is filled, SPILL_BYTES at a time, so a big log's
    texts are never all in memory at once. A lone surrogate is stored as '?'."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._end = array("q", [0])          # offsets: string k is bytes _end[k]:_end[k + 1]
        self._file: BinaryIO | None = None   # where the bytes are once spilled
        self._out: BinaryIO | None = None    # where they go while streamed (stream)
        self._folder: str | os.PathLike[str] | None = None
        self._flushed = 0                    # bytes already there: _data holds those after

    def stream(self, folder: str | os.PathLike[str] | None) -> None:
        """Move the bytes into a temporary file in `folder` as the store grows past
        SPILL_BYTES (None: the temporary directory); `spill` then adds the offsets."""
        self._folder = folder if folder is not None else ""

    def append(self, s: str) -> None:
        self._writable()
        self._data += s.encode("utf-8", "replace")
        self._end.append(self._flushed + len(self._data))
        if self._folder is not None and len(self._data) > SPILL_BYTES:
            self._flush()

    def extend(self, items: Sequence[str], joined: str | None = None,
               lens: np.ndarray | None = None) -> None:
        """append() of each string, in one encode where all are ASCII (`joined`: the strings
        already joined, `lens`: their lengths, where the caller has them)."""
        self._writable()
        joined = "".join(items) if joined is None else joined
        b = joined.encode("utf-8", "replace")
        if len(b) != len(joined):                # not ASCII: each string's bytes
            lens = np.fromiter((len(s.encode("utf-8", "replace")) for s in items), np.int64,
                               len(items))
        elif lens is None:
            lens = np.fromiter(map(len, items), np.int64, len(items))
        ends = np.cumsum(lens, dtype=np.int64) + self._flushed + len(self._data)
        self._end.frombytes(ends.tobytes())
        self._data += b
        if self._folder is not None and len(self._data) > SPILL_BYTES:
            self._flush()

    def _flush(self) -> None:
        """The bytes in memory written after those in the stream's file (a disk with no room:
        all of them read back, and the store stays in memory)."""
        try:
            if self._out is None:
                self._out = _temporary(self._folder)
            os.pwrite(self._out.fileno(), self._data, self._flushed)
        except OSError:
            self._unstream()
            return
        self._flushed += len(self._data)
        self._data = bytearray()

    def _unstream(self) -> None:
        """Back to memory: the streamed bytes read back, the stream's file closed."""
        if self._out is not None:
            if self._flushed:
                self._data = bytearray(os.pread(self._out.fileno(), self._flushed, 0)) + \
                    self._data
            self._out.close()
        self._out, self._folder, self._flushed = None, None, 0

    def _read(self, a: int, b: int) -> bytes:
        """Bytes [a, b) of a store not spilled: from the stream's file and memory."""
        fl = self._flushed
        if a >= fl:
            return bytes(self._data[a - fl:b - fl])
        assert self._out is not None
        return os.pread(self._out.fileno(), min(b, fl) - a, a) + bytes(self._data[:max(0, b - fl)])

    def pop(self) -> str:
        self._writable()
        s = self[len(self) - 1]
        self._end.pop()
        cut = self._end[-1]
        if cut >= self._flushed:
            del self._data[cut - self._flushed:]
        else:                                   # it began in the stream's file
            assert self._out is not None
            os.ftruncate(self._out.fileno(), cut)
            self._data, self._flushed = bytearray(), cut
        return s

    def _writable(self) -> None:
        if self._file is not None:
            raise ValueError("a spilled text store is read-only")

    def spill(self, folder: str | os.PathLike[str] | None = None) -> None:
        """No more strings will be added: a store over SPILL_BYTES moves its bytes into an
        unlinked temporary file in `folder` (one that cannot be written: the temporary
        directory; a disk with no room for them: kept in memory), its offsets after them, both
        read back by span (`take`). A streamed store's file gets the rest and the offsets."""
        if self._file is not None:
            return
        if self._out is None and len(self._data) <= SPILL_BYTES:
            self._folder = None
            return
        self._folder = folder if self._out is None else self._folder
        try:
            self._flush()
            if self._out is None:
                return                          # no room: in memory
            os.pwrite(self._out.fileno(), self._end, self._flushed)   # the offsets after them
        except OSError:                     # no room: the store stays in memory
            self._unstream()
            return
        self._n, self._at = len(self._end) - 1, self._flushed
        self._file, self._out, self._folder = self._out, None, None
        self._data, self._end, self._flushed = bytearray(), array("q"), 0

    def __len__(self) -> int:
        return len(self._end) - 1 if self._file is None else self._n

    def _ends(self, ix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where strings `ix` start and end in the bytes (spilled: read from the file)."""
        if self._file is None:
            ends = np.frombuffer(self._end, dtype=np.int64)
            return ends[ix], ends[ix + 1]
        buf, at = self._spans(self._at + 8 * ix, self._at + 8 * ix + 16)
        pos = at[:, None] + np.arange(16)
        pair = buf[pos].view(np.int64)
        return pair[:, 0], pair[:, 1]

    def many(self, idx: Sequence[int] | np.ndarray) -> list[str]:
        """The strings at indices `idx` (a chunk of rows: one call, not one each)."""
        off, data = self.take(idx)
        return [data[a:b].decode() for a, b in zip(off[:-1].tolist(), off[1:].tolist())]

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += len(self)
        if self._file is None:
            return self._read(self._end[i], self._end[i + 1]).decode()
        return self.many([i])[0]

    def take(self, idx: Sequence[int] | np.ndarray) -> tuple[np.ndarray, bytes]:
        """The strings at indices `idx`, in that order, as the offsets (int64, one more than
        the strings) and UTF-8 bytes of a large string array. Spilled: the file read in spans
        (strings less than READ_GAP apart read through), a chunk of nearby rows one read."""
        ix = np.asarray(idx, np.int64)
        if not len(ix):
            return np.zeros(1, np.int64), b""
        a, b = self._ends(ix)
        lens = b - a
        off = np.zeros(len(ix) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        if not len(ix) or not off[-1]:
            return off, b""
        if self._file is None:
            buf, at = np.frombuffer(self._read(0, self._end[-1]) if self._flushed
                                    else self._data, np.uint8), a
        else:
            buf, at = self._spans(a, a + lens)
        pos = np.repeat(at - off[:-1], lens) + np.arange(int(off[-1]), dtype=np.int64)
        return off, buf[pos].tobytes()

    def _spans(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The spilled bytes of strings [a, b): the spans that hold them read one after the
        other into one buffer, and where each string starts in it."""
        assert self._file is not None
        order = np.argsort(a, kind="stable")
        sa, reach = a[order], np.maximum.accumulate(b[order])
        new = np.ones(len(sa), bool)
        new[1:] = sa[1:] > reach[:-1] + READ_GAP
        group = np.cumsum(new) - 1
        starts = sa[new]
        stops = np.append(reach[np.flatnonzero(new)[1:] - 1], reach[-1])
        base = np.zeros(len(starts), np.int64)
        np.cumsum((stops - starts)[:-1], out=base[1:])
        fd = self._file.fileno()
        buf = np.frombuffer(b"".join(os.pread(fd, int(e - s), int(s))
                                     for s, e in zip(starts.tolist(), stops.tolist())), np.uint8)
        at = np.empty(len(a), np.int64)
        at[order] = base[group] + sa - starts[group]
        return buf, at
