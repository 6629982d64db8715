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

from bench.errors import RackclockError

LINE_LIMIT = 65_536             # bytes of one line (its newline not counted)
DOC_LIMIT = 64 * 2**20          # bytes of a whole-document log (a Redfish LogEntryCollection)
SKIP_CHUNK = 1 << 16
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


def lines(f, stats: LineStats):
    """(line number, text) of each line of a binary file, decoded as UTF-8 (bad bytes replaced),
    its line end removed; a line over `stats.limit` bytes is counted and skipped."""
    limit = stats.limit
    readline = f.readline
    n = 0
    while True:
        b = readline(limit + 1)
        if not b:
            return
        n += 1
        if len(b) > limit and b[-1:] != b"\n":
            stats.over += 1
            if len(stats.first_over) < 10:
                stats.first_over.append(n)
            while True:                  # the rest of the line, a chunk at a time, dropped
                b = readline(SKIP_CHUNK)
                if not b or b[-1:] == b"\n":
                    break
            continue
        yield n, b.decode("utf-8", "replace").rstrip("\r\n")


def read_document(f, limit: int = DOC_LIMIT) -> str:
    """The whole (small) document from the start of the file, or LogError past `limit` bytes."""
    f.seek(0)
    data = f.read(limit + 1)
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
        chunks, end, pend, n = self._chunks, self._end, self._pending, len(self._chunks)
        out = []
        for i in idx:
            c, r = divmod(i, STORE_CHUNK)
            out.append(pend[r] if c == n else chunks[c][(end[i - 1] if r else 0):end[i]])
        return out

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += len(self._end)
        c, r = divmod(i, STORE_CHUNK)
        if c == len(self._chunks):
            return self._pending[r]
        return self._chunks[c][(self._end[i - 1] if r else 0):self._end[i]]
