"""A log file read bounded: only a regular file (opened without blocking, so a FIFO or a device
is refused at once, never read), line by line, each line capped at a stated length (a longer
line is skipped to its end without being held, and counted), a whole-document format capped at
a stated size. Memory does not grow with the file; the timeline keeps only its entries.
"""
from __future__ import annotations

import os
import stat
from array import array
from dataclasses import dataclass, field
from itertools import accumulate, islice

import numpy as np

from bench.errors import RackclockError
from bench.model.lognames import LINE_LIMIT

DOC_LIMIT = 64 * 2**20          # bytes of a whole-document log (a Redfish LogEntryCollection)
BATCH_BYTES = 1 << 20         # bytes read at a time, cut into whole lines
STORE_CHUNK = 4096


class LogError(RackclockError, ValueError):
    """A log file or a log option the timeline cannot use (one line: which, and why)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path) -> os.PathLike:
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
    first_over: list = field(default_factory=list)

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

    def __init__(self, n0: int, text: str | None, lines: list | None = None):
        self.n0, self.text, self._lines = n0, text, lines

    @property
    def lines(self) -> list:
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines


class _Batcher:
    """Cuts a binary file into batches of whole lines (see line_batches)."""

    def __init__(self, f, stats: LineStats, block: int):
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
        out: list = []
        for k, b in enumerate(raw):
            if len(b) > limit:
                self.over(n0 + k)
                out.append(None)
            else:
                out.append(b.decode("utf-8", "replace").rstrip("\r"))
        return LineBatch(n0, None, out)

    def __iter__(self):
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


def _longest_line(part: bytes) -> int:
    """Bytes of the longest line of `part` (lines split at b"\\n", which is not counted)."""
    ends = np.flatnonzero(np.frombuffer(part, np.uint8) == 10)
    if not len(ends):
        return len(part)
    return int(max(ends[0], len(part) - ends[-1] - 1, np.diff(ends).max(initial=1) - 1))


def line_batches(f, stats: LineStats, block: int = BATCH_BYTES):
    """Batches (first line number, lines) of a binary file's lines, read `block` bytes at a time:
    each line decoded as UTF-8 (bad bytes replaced), its line end removed; a line over
    `stats.limit` bytes is None in its batch, counted and never held (memory: a block and one
    line at most)."""
    return iter(_Batcher(f, stats, block))


def numbered(batches):
    """(line number, text) of each line of the batches, the lines over the limit left out."""
    for b in batches:
        for k, line in enumerate(b.lines, b.n0):
            if line is not None:
                yield k, line


def lines(f, stats: LineStats):
    """(line number, text) of each line of a binary file (line_batches, a line at a time)."""
    return numbered(line_batches(f, stats))


def read_document(f, limit: int = DOC_LIMIT) -> str:
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


class TextStore:
    """Many short strings kept as joined chunks of STORE_CHUNK strings and their end offsets:
    about a third of the memory of a list of str, and one cheap append each."""

    def __init__(self):
        self._chunks: list[str] = []
        self._pending: list[str] = []
        self._end = array("l")
        self._pos = 0

    def append(self, s: str) -> None:
        self._pending.append(s)
        self._pos += len(s)
        self._end.append(self._pos)
        if len(self._pending) == STORE_CHUNK:
            self._chunks.append("".join(self._pending))
            self._pending, self._pos = [], 0

    def extend(self, items: list[str]) -> None:
        """append() of each string, a chunk at a time."""
        i = 0
        while i < len(items):
            take = items[i:i + STORE_CHUNK - len(self._pending)]
            self._end.extend(islice(accumulate(map(len, take), initial=self._pos), 1, None))
            self._pos = self._end[-1]
            self._pending += take
            i += len(take)
            if len(self._pending) == STORE_CHUNK:
                self._chunks.append("".join(self._pending))
                self._pending, self._pos = [], 0

    def pop(self) -> str:
        if not self._pending:            # reopen the last chunk
            last = self._chunks.pop()
            ends = self._end[-STORE_CHUNK:]
            self._pending = [last[(ends[k - 1] if k else 0):ends[k]] for k in range(len(ends))]
        s = self._pending.pop()
        self._end.pop()
        self._pos = self._end[-1] if self._pending else 0
        return s

    def __len__(self) -> int:
        return len(self._end)

    def many(self, idx) -> list[str]:
        """The strings at indices `idx` (a chunk of rows: one call, not one each)."""
        idx = np.asarray(idx, np.int64)
        end = np.frombuffer(self._end, dtype=np.dtype("l")) if len(self._end) else np.zeros(0)
        chunk, r = np.divmod(idx, STORE_CHUNK)
        stop = end[idx]
        start = np.where(r > 0, end[idx - 1], 0)
        del end                          # the array's buffer is free again
        chunks = self._chunks + ["".join(self._pending)] if self._pending else self._chunks
        return [chunks[c][a:b] for c, a, b in zip(chunk.tolist(), start.tolist(), stop.tolist())]

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += len(self._end)
        c, r = divmod(i, STORE_CHUNK)
        if c == len(self._chunks):
            return self._pending[r]
        return self._chunks[c][(self._end[i - 1] if r else 0):self._end[i]]
