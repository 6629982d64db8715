"""A log's stamps: the records a parser fills (Stamp, the Stamps columns, ParsedLog), what a
zone-less or year-less stamp is read with (Context), and the shared calendar and zone arithmetic
(a local time in the device's zone, an ISO 8601 stamp), used by every format's parser."""
from __future__ import annotations

import datetime as dt
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from os import PathLike
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt

from bench.errors import RackclockError
from bench.logs.logfile import (
    LineStats,
    LogError,
    TextStore,
)

NS = 1_000_000_000
US = 1_000
MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


@dataclass(frozen=True)
class Stamp:
    """One log line's device stamp: the device's reading lay in [value_ns, value_ns + resolution_ns)
    (`value_ns` in Unix-epoch ns for `kind` "wall", ns since the device's boot for "monotonic")."""
    line: int                  # 1-based line (or record) number in the file
    value_ns: int
    resolution_ns: int
    kind: str                  # wall | monotonic
    raw: str                   # the timestamp exactly as written
    text: str                  # the rest of the entry (its first TEXT_KEEP characters)
    order: int | None = None   # the log's own order (entry id, sequence number), if it has one
    notes: Notes = ()          # assumptions made reading this stamp
    src: str = ""              # which clock stamped it, where the line says (logsources)


TEXT_KEEP = 200                 # characters of a line's text (and of an unparsed line) kept
UNPARSED_KEEP = 1000            # unparsed lines listed with their number; the rest counted
INT64_MAX = 2**63 - 1
NO_ORDER = -(2**63)
KINDS = ("wall", "monotonic")
Notes = tuple[str, ...]                 # assumptions made reading a stamp
Parsed = tuple[int, int, str, str, str, int | None, Notes]   # a line parser's stamp: value_ns,
                                        # resolution_ns, kind, raw, text, order, notes
KIND_IX = {k: i for i, k in enumerate(KINDS)}


class Stamps:
    """A log's stamps as columns (arrays of int64 and two text stores): a million lines cost
    tens of MB, not a frozen dataclass each. Indexing gives a Stamp."""

    def __init__(self) -> None:
        self.line, self.value, self.res, self.order = (array("q") for _ in range(4))
        self.kind = bytearray()
        self.src = bytearray()             # index into src_names: which clock stamped the line
        self.src_names: list[str] = [""]   # "" = the format's own (bench.logs.logsources)
        self._src_ix: dict[str, int] = {"": 0}
        self.note_id = array("i")
        self.note_sets: list[Notes] = []
        self._note_ix: dict[Notes, int] = {}
        self.raw, self.text = TextStore(), TextStore()
        self._lines: tuple[int, int] | None = None     # see keep_texts
        self._bind()

    def add(self, n: int, value: int, res: int, kind: str, raw: str, text: str,
            order: int | None = None, notes: Notes = (), src: str = "") -> None:
        if not (-INT64_MAX <= value and value + res <= INT64_MAX and 0 <= res):
            raise Unparsed("stamp outside the int64 ns range (years 1678-2262)")
        if order is None or not -INT64_MAX <= order <= INT64_MAX:
            order = NO_ORDER
        k = self._note_k(notes)
        self._line(n)
        self._value(value)
        self._res(res)
        self._order(order)
        self._kind(KIND_IX[kind])
        self.src.append(self._src_k(src))
        self._note(k)
        self._raw(raw[:TEXT_KEEP])
        self._text(text[:TEXT_KEEP])

    def extend(self, line0: int, value: npt.ArrayLike, res: npt.ArrayLike, kind: str,
               raws: list[str], texts: list[str]) -> None:
        """add() of consecutive lines from `line0` at once: stamps (int64 columns, in the int64
        range) with no order key and no notes, raws and texts already cut to TEXT_KEEP."""
        n = len(raws)
        self.line.frombytes(np.arange(line0, line0 + n, dtype=np.int64).tobytes())
        self.value.frombytes(np.ascontiguousarray(value, np.int64).tobytes())
        self.res.frombytes(np.ascontiguousarray(res, np.int64).tobytes())
        self.order.extend(array("q", [NO_ORDER]) * n)
        self.kind.extend(bytes([KIND_IX[kind]]) * n)
        self.src.extend(bytes(n))
        self.note_id.extend(array("i", [self._note_k(())]) * n)
        self.raw.extend(raws)
        self.text.extend(texts)

    def _src_k(self, src: str) -> int:
        k = self._src_ix.get(src)
        if k is None:
            if len(self.src_names) >= 255:
                raise Unparsed("more than 254 distinct stamping sources in one log")
            k = self._src_ix[src] = len(self.src_names)
            self.src_names.append(src)
        return k

    def _note_k(self, notes: Notes) -> int:
        k = self._note_ix.get(notes)
        if k is None:
            k = self._note_ix[notes] = len(self.note_sets)
            self.note_sets.append(notes)
        return k

    def _bind(self) -> None:
        """Bound appends, looked up once (a million lines)."""
        self._line, self._value, self._res, self._order = (c.append for c in (
            self.line, self.value, self.res, self.order))
        self._kind, self._note = self.kind.append, self.note_id.append
        self._raw, self._text = self.raw.append, self.text.append

    def keep_texts(self) -> None:
        """Once a log's stamps are mapped: free the columns only mapping reads (values,
        resolutions, order keys, kinds, sources, notes; a million lines: ~34 MB), keeping the
        line numbers and the two text stores a timeline's rows are written from. The stamps can
        no longer be indexed or added to."""
        self.value, self.res, self.order = array("q"), array("q"), array("q")
        self.note_id = array("i")
        self.kind, self.src = bytearray(), bytearray()
        self._bind()
        ln = np.frombuffer(self.line, np.int64)
        if len(ln) and int(ln[-1]) - int(ln[0]) == len(ln) - 1 and bool((np.diff(ln) == 1).all()):
            self._lines = (int(ln[0]), len(ln))     # consecutive lines: their first and count
            del ln
            self.line = array("q")

    def lines_at(self, ks: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The line numbers of stamps `ks` (after keep_texts too)."""
        if self._lines is not None:
            return np.asarray(ks, np.int64) + self._lines[0]
        out: npt.NDArray[np.int64] = np.frombuffer(self.line, np.int64)[np.asarray(ks)]
        return out

    def stream(self, folder: str | PathLike[str] | None) -> None:
        """While the log is parsed: its raw stamps and texts moved into temporary files in
        `folder` as they grow (bench.logs.logfile.TextStore.stream); `spill` ends them."""
        self.raw.stream(folder)
        self.text.stream(folder)

    def spill(self, folder: str | PathLike[str] | None = None) -> None:
        """Once a log is parsed: a big log's raw stamps and texts moved into temporary files in
        `folder` (bench.logs.logfile.TextStore.spill), read back by span when rows are
        written; the stamps can no longer be added to."""
        self.raw.spill(folder)
        self.text.spill(folder)

    def pop(self) -> Stamp:
        st = self[len(self) - 1]
        for col in (self.line, self.value, self.res, self.order, self.note_id):
            col.pop()
        self.kind.pop()
        self.src.pop()
        self.raw.pop()
        self.text.pop()
        return st

    def __len__(self) -> int:
        return len(self.line) if self._lines is None else self._lines[1]

    def __getitem__(self, i: int) -> Stamp:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        o = self.order[i]
        return Stamp(self.line[i], self.value[i], self.res[i], KINDS[self.kind[i]], self.raw[i],
                     self.text[i], None if o == NO_ORDER else o, self.note_sets[self.note_id[i]],
                     self.src_names[self.src[i]])

    def __iter__(self) -> Iterator[Stamp]:
        return (self[i] for i in range(len(self)))

    def kinds(self) -> set[str]:
        return {KINDS[k] for k in set(self.kind)}


@dataclass
class ParsedLog:
    format: str
    detected: str              # "given" or "detected: 98 of 100 sampled lines"
    stamps: Stamps = field(default_factory=Stamps)
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)   # (line, text, why): 1000
    notes: list[str] = field(default_factory=list)   # file-wide assumptions, said once
    unparsed_count: int = 0
    over: LineStats = field(default_factory=LineStats)

    @property
    def lines(self) -> int:
        return len(self.stamps) + self.unparsed_count + self.over.over

    def reject(self, n: int, line: str, why: str) -> None:
        self.unparsed_count += 1
        if len(self.unparsed) < UNPARSED_KEEP:
            self.unparsed.append((n, line[:TEXT_KEEP], why))


@dataclass(frozen=True)
class Context:
    """What a zone-less or year-less stamp is read with, each use said in the output."""
    zone: str = ""             # IANA zone of the file's local times ("": none, refused)
    year: int | None = None    # year of RFC 3164 / year-less stamps (from the run)
    near_ns: int | None = None # a reference instant the log is near (the run), to pick the year
    boot_ns: int | None = None # dmesg -> wall: the host's boot instant in its own wall time
    stamp: str = "auto"        # journald/snmptrapd: "wall" or "monotonic" stamp; syslog: "relay"
    zone_from: str = "given"   # where the zone came from, said in the notes
    field: str = "auto"        # Kubernetes events / Redfish: the stamp field read
    clocks: tuple[str, ...] = ()   # the device's clocks (a Kubernetes event's field by them)


class Unparsed(RackclockError, ValueError):
    """This line is not a stamp of the format (the message says why)."""


# -- shared pieces -----------------------------------------------------------------------------

def _frac(frac: str | None) -> tuple[int, int]:
    """ns of a ".123" or ",123" fraction and the resolution its digits give."""
    if not frac:
        return 0, NS
    digits = frac[1:]
    d = min(len(digits), 9)
    return int(digits[:9].ljust(9, "0")), 10 ** (9 - d)


def _zone(ctx: Context) -> dt.tzinfo:
    if not ctx.zone or ctx.zone.upper() == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(ctx.zone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise LogError(f"unknown time zone {ctx.zone!r}") from exc


NO_ZONE = ("a zone-less stamp and no zone for this device: give tz=ZONE (or log_timezone in "
           "the rack file); it is never read as UTC by default")


def local_to_ns(naive: datetime, ctx: Context, res_ns: int) -> tuple[int, int, Notes]:
    """A zone-less wall time read in the file's zone: (value_ns, resolution_ns, notes); refused
    (Unparsed) when no zone is known, never read as UTC by default. In a DST
    fold (the hour that happens twice) the value covers both readings; in a DST gap (a time that
    never happened) both offsets too, flagged."""
    if not ctx.zone:
        raise Unparsed(NO_ZONE)
    tz = _zone(ctx)
    if tz is dt.UTC:
        return _ns(naive.replace(tzinfo=dt.UTC)), res_ns, (f"zone: UTC ({ctx.zone_from})",)
    a = naive.replace(tzinfo=tz, fold=0)
    b = naive.replace(tzinfo=tz, fold=1)
    va, vb = _ns(a), _ns(b)
    note = f"zone: {ctx.zone} ({ctx.zone_from})"
    if va == vb:
        return va, res_ns, (note,)
    lo, hi = min(va, vb), max(va, vb)
    exists = a.astimezone(dt.UTC).astimezone(tz).replace(tzinfo=None) == naive
    why = "DST fold: the hour happened twice" if exists \
        else "DST gap: a local time that never happened"
    return lo, hi - lo + res_ns, (note, f"{why}; both readings kept")


def _ns(d: datetime) -> int:
    """Exact Unix-epoch ns of an aware datetime (whole seconds + microseconds, no float)."""
    delta = d - datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * US


ISO = re.compile(r"(?<![\d.])(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})([.,]\d+)?)?"
                 r"(Z|[+-]\d{2}(?::?\d{2})?)?(?![\d])")


@lru_cache(maxsize=4096)
def _minute(y: str, mo: str, d: str, h: str, mi: str, tz: str | None, zone: str,
            zone_from: str = "given") -> tuple[int, int, Notes]:
    """(ns, widening, notes) of a minute's start: zone changes fall on whole minutes, so a log's
    lines share few of these (cached: a million lines parse in seconds, not minutes)."""
    base = datetime(int(y), int(mo), int(d), int(h), int(mi))
    if tz:
        if tz == "Z":
            off = timedelta(0)
        else:
            sign = -1 if tz[0] == "-" else 1
            digits = tz[1:].replace(":", "")
            off = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        return _ns(base.replace(tzinfo=timezone(off))), 0, ()
    v, r, zn = local_to_ns(base, Context(zone=zone, zone_from=zone_from), 0)
    return v, r, zn


def iso_stamp(m: re.Match[str], ctx: Context) -> tuple[int, int, Notes]:
    """(value_ns, resolution_ns, notes) of an ISO 8601 match (comma or dot fraction, optional
    seconds, optional zone)."""
    y, mo, d, h, mi, s, frac, tz = m.groups()
    frac_ns, res = _frac(frac)
    notes: Notes = ()
    if s is None:
        res, notes = 60 * NS, ("no seconds in the stamp: resolution 1 min",)
    try:
        v, widen, zn = _minute(y, mo, d, h, mi, tz, ctx.zone, ctx.zone_from)
    except Unparsed:
        raise
    except (ValueError, OverflowError) as exc:
        raise Unparsed(f"no such date and time: {exc}") from None
    if int(s or 0) > 59:
        raise Unparsed(f"second {s} out of range")
    return v + int(s or 0) * NS + frac_ns, res + widen, notes + zn


BAD_INPUT = (ValueError, OverflowError, RecursionError, TypeError)   # Unparsed is a ValueError


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc)[:200] or type(exc).__name__
