"""Operators' log formats, read into device stamps: each line's raw timestamp, its value in the
device's own timescale (Unix-epoch ns as the device wrote it, or ns since boot), the resolution it
was written with, the log's own order key where the format has one, and every assumption made
(year taken from the run, zone taken from the file's declared zone, a DST fold). Nothing is
guessed from "any leading number": a format is given (`--format`) or detected from a sample of
lines with the share that matched it, and every line that does not parse is kept, counted and
reported with its number.

Library use: datetime/zoneinfo for calendar and zone arithmetic (DST folds and gaps included),
json for journald and Redfish, csv for CSV, email.utils for RFC 2822-style dates. The line
patterns themselves are hand-written regular expressions because no well-kept library parses
RFC 3164/5424 headers, dmesg, `ipmitool sel` or snmptrapd output into stamps and positions:
syslog libraries on PyPI emit, not parse, and python-dateutil's fuzzy parser would accept
exactly the "404 not a timestamp" lines this module must refuse.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import json
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from os import PathLike
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt

from bench.errors import RackclockError
from bench.model import lognames
from bench.model.logfile import (
    LineBatch,
    LineStats,
    LogError,
    TextStore,
    line_batches,
    numbered,
    open_regular,
    read_document,
)
from bench.model.rfc3339 import rfc3339_ns

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
        self.src_names: list[str] = [""]   # "" = the format's own (bench.model.logsources)
        self._src_ix: dict[str, int] = {"": 0}
        self.note_id = array("l")
        self.note_sets: list[Notes] = []
        self._note_ix: dict[Notes, int] = {}
        self.raw, self.text = TextStore(), TextStore()
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
        self.note_id.extend(array("l", [self._note_k(())]) * n)
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
        self.note_id = array("l")
        self.kind, self.src = bytearray(), bytearray()
        self._bind()

    def spill(self, folder: str | PathLike[str] | None = None) -> None:
        """Once a log is parsed: a big log's raw stamps and texts moved into temporary files in
        `folder` (bench.model.logfile.TextStore.spill), read back by span when rows are
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
        return len(self.line)

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


# -- formats: each parse(line, ctx) -> (value_ns, resolution_ns, kind, raw, text, order, notes),
# raising Unparsed (a tuple, not a record per line: a million lines parse in seconds)

RFC5424 = re.compile(r"^<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) ?(.*)$")
# the common case in one match: RFC 3339 with seconds and a zone, no second regex on the stamp
RFC5424_FAST = re.compile(r"<\d{1,3}>\d{1,2} ((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})"
                          r"(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})) (\S+) (\S+) \S+ \S+ ?")


@lru_cache(maxsize=4096)
def _minute_3339(minute: str, tz: str) -> int:
    return _minute(minute[:4], minute[5:7], minute[8:10], minute[11:13], minute[14:16], tz,
                   "")[0]


def parse_rfc5424(line: str, ctx: Context) -> Parsed:
    m = RFC5424_FAST.match(line)
    if m is not None:
        ts, minute, s, frac, tz, host, app = m.groups()
        msg = line[m.end():]
        if int(s) > 59:
            raise Unparsed(f"second {s} out of range")
        try:
            v = _minute_3339(minute, tz)
        except (ValueError, OverflowError) as exc:
            raise Unparsed(f"no such date and time: {exc}") from None
        if frac:            # ".d" to ".ddddddddd"
            res = 10 ** (10 - len(frac))
            v += int(frac[1:]) * res
        else:
            res = NS
        return (v + int(s) * NS, res, "wall", ts, f"{host} {app}: {msg}".strip(), None, ())
    m = RFC5424.match(line)
    if not m:
        raise Unparsed("not an RFC 5424 header (<PRI>VERSION TIMESTAMP HOST APP PROCID MSGID)")
    ts = m.group(3)
    if ts == "-":
        raise Unparsed("RFC 5424 NILVALUE timestamp: the device gave no time")
    im = ISO.fullmatch(ts)
    if not im or "T" not in ts or not im.group(8):
        raise Unparsed(f"RFC 5424 timestamp {ts!r} is not RFC 3339 with a zone")
    v, q, notes = iso_stamp(im, ctx)
    return (v, q, "wall", ts, f"{m.group(4)} {m.group(5)}: {m.group(8)}".strip(), None, notes)


# a batch of lines in one match each (MULTILINE): RFC 3339 with ASCII digits, seconds and a zone
RFC5424_BATCH = re.compile(r"^<\d{1,3}>\d{1,2} ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                           r"(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})) (\S+ \S+) \S+ \S+ ?(.*)$",
                           re.MULTILINE)


def rfc5424_batch(batch: LineBatch, out: Stamps) -> bool:
    """A batch of lines read at once, when every line is an RFC 5424 line with a plain RFC 3339
    stamp (bench/model/rfc3339.py): the stamps and texts parse_rfc5424 gives, added to `out`;
    False (nothing added) when one line is not, to read them a line at a time."""
    if batch.text is None:
        return False
    found = RFC5424_BATCH.findall(batch.text)
    if len(found) != batch.text.count("\n") + 1:
        return False
    raws = [f[0] for f in found]
    cols = rfc3339_ns(raws)
    if cols is None:
        return False
    texts = [f"{hostapp}: {msg}".rstrip() for _, hostapp, msg in found]
    if texts and max(map(len, texts)) > TEXT_KEEP:
        texts = [t[:TEXT_KEEP] for t in texts]
    out.extend(batch.n0, cols[0], cols[1], "wall", raws, texts)
    return True


RFC3164 = re.compile(r"^(?:<(\d{1,3})>)?([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2})"
                     r"([.,]\d+)? (.*)$")


def pick_year(month: int, day: int, ctx: Context) -> tuple[int, str]:
    """The year of a year-less stamp: the given one, else the one that puts it nearest the run."""
    if ctx.year:
        return ctx.year, f"year {ctx.year} (given)"
    if ctx.near_ns is None:
        raise Unparsed("year-less stamp and no run to take the year from")
    near = datetime.fromtimestamp(ctx.near_ns // NS, dt.UTC)
    best = None
    for y in (near.year - 1, near.year, near.year + 1):
        try:
            d = abs((datetime(y, month, day, tzinfo=dt.UTC) - near).total_seconds())
        except ValueError:         # Feb 29 in a common year
            continue
        if best is None or d < best[0]:
            best = (d, y)
    if best is None:
        raise Unparsed("no year around the run has this date")
    return best[1], f"year {best[1]} taken from the run"


def parse_rfc3164(line: str, ctx: Context) -> Parsed:
    m = RFC3164.match(line)
    if not m or m.group(2) not in MONTHS:
        raise Unparsed("not an RFC 3164 header ([<PRI>]Mmm dd hh:mm:ss HOST ...)")
    _, mon, day, h, mi, s, frac, rest = m.groups()
    month = MONTHS[mon]
    year, ynote = pick_year(month, int(day), ctx)
    try:
        base = datetime(year, month, int(day), int(h), int(mi), int(s))
    except ValueError as exc:
        raise Unparsed(f"no such date: {exc}") from None
    frac_ns, res = _frac(frac)
    v, q, zn = local_to_ns(base, ctx, res)
    raw = line[m.start(2):m.end(7) if frac else m.end(6)]
    return (v + frac_ns, q, "wall", raw, rest, None, (ynote,) + zn)


DMESG = re.compile(r"^(?:<\d{1,3}>)?\[\s*(\d+)\.(\d{3,9})\] ?(.*)$")


def parse_dmesg(line: str, ctx: Context) -> Parsed:
    m = DMESG.match(line)
    if not m:
        raise Unparsed("not a kernel log line ([seconds.micro] since boot)")
    frac_ns, res = _frac("." + m.group(2))
    mono = int(m.group(1)) * NS + frac_ns
    raw = line[:m.start(3)].strip()
    if ctx.boot_ns is not None:      # through the boot instant, in the host's wall time
        return (ctx.boot_ns + mono, max(res, NS), "wall", raw, m.group(3), None,
                ("monotonic since boot + the boot instant given (1 s as /proc/stat has it)",))
    return (mono, res, "monotonic", raw, m.group(3), None, ("monotonic since boot",))


SEL = re.compile(r"^\s*([0-9a-fA-F]+) \| (\d{2})/(\d{2})/(\d{4}) \| (\d{2}):(\d{2}):(\d{2})"
                 r"(?: ?(AM|PM))? \| (.*)$")
SEL_PREINIT = re.compile(r"^\s*([0-9a-fA-F]+) \| (Pre-Init.*?)\s*\|\s*(\S+)\s*\| (.*)$")


def parse_ipmi_sel(line: str, ctx: Context) -> Parsed:
    """`ipmitool sel list` / `sel elist`: the BMC's SEL time, local, no zone; the record id
    (hex, as ipmitool prints it) is the log's own order."""
    m = SEL.match(line)
    if not m:
        p = SEL_PREINIT.match(line)
        if p:
            return _sel_preinit(p, line)
        raise Unparsed("not an `ipmitool sel list` line (id | mm/dd/yyyy | hh:mm:ss | ...)")
    rid, mo, d, y, h, mi, s, ampm, rest = m.groups()
    hour = int(h)
    if ampm:
        hour = hour % 12 + (12 if ampm == "PM" else 0)
    try:
        base = datetime(int(y), int(mo), int(d), hour, int(mi), int(s))
    except ValueError as exc:
        raise Unparsed(f"no such date: {exc}") from None
    v, q, zn = local_to_ns(base, ctx, NS)
    return (v, q, "wall", line[m.start(2):m.end(8) if ampm else m.end(7)], rest.strip(),
            int(rid, 16), ("SEL time is the BMC's local time",) + zn)


# the transport holds brackets of its own: [UDP: [10.0.0.9]:161->[10.0.0.1]:162]
PREINIT_NOTE = ("pre-init SEL time: seconds since the BMC's init, its counter (sel_init)",)


def _sel_preinit(p: re.Match[str], line: str) -> Parsed:
    """A pre-init SEL line: the BMC's seconds since its init (ipmitool prints them in the time
    column, decimal or 0x hex), a counter stamp mapped through the measured `sel_init` clock."""
    rid, raw, rest = p.group(1), p.group(3), p.group(4)
    try:
        secs = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
    except ValueError:
        raise Unparsed(f"pre-init SEL time {raw[:40]!r} is not a number of seconds") from None
    return (secs * NS, NS, "monotonic", f"{p.group(2).strip()} {raw}", rest.strip(), int(rid, 16),
            PREINIT_NOTE)


SNMPTRAPD = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (\S+) "
                       r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]:?\s*(.*)$")
UPTIME_VB = re.compile(r"(?:sysUpTime(?:Instance)?|1\.3\.6\.1\.2\.1\.1\.3\.0)\S* = Timeticks: "
                       r"\((\d{1,12})\)")
UPTIME_NOTE = ("the agent's sysUpTime varbind (10 ms ticks)",)


def parse_snmptrapd(line: str, ctx: Context) -> Parsed:
    """snmptrapd's default log line (`%y-%m-%l %h:%j:%k %B [%b]:` then the varbinds): the
    receiver's local time to the second (stamped by the trap receiver's clock, not the agent's),
    or the agent's sysUpTime varbind where the trap carries one (stamp "auto"; "monotonic": only
    that; "wall": only the receiver's time)."""
    m = SNMPTRAPD.match(line)
    if not m:
        raise Unparsed("not an snmptrapd line (yyyy-mm-dd hh:mm:ss HOST [TRANSPORT]: ...)")
    text = m.group(4)
    up = UPTIME_VB.search(text)
    if ctx.stamp in ("monotonic", "auto") and up:   # (else its varbind lines may still carry it)
        return (int(up.group(1)) * 10_000_000, 10_000_000, "monotonic", up.group(0),
                f"{m.group(2)} {trap_text(text)}".strip(), None, UPTIME_NOTE)
    if not ctx.zone and ctx.stamp != "wall":     # its varbind line may still give the uptime
        return (0, NS, "wall", m.group(1), f"{m.group(2)} {trap_text(text)}".strip(), None,
                (PENDING,))
    try:
        v, q, zn = local_to_ns(datetime.fromisoformat(m.group(1)), ctx, NS)
    except Unparsed:
        raise
    except (ValueError, OverflowError) as exc:
        raise Unparsed(f"no such date: {exc}") from None
    return (v, q, "wall", m.group(1), f"{m.group(2)} {trap_text(text)}".strip(), None, zn)


PENDING = "a zone-less receive time: the trap's varbind lines may give the agent's uptime"


def parse_iso(line: str, ctx: Context) -> Parsed:
    """A line holding an ISO 8601 date and time anywhere (first one wins)."""
    m = ISO.search(line)
    if not m:
        raise Unparsed("no ISO 8601 date and time in the line")
    v, q, notes = iso_stamp(m, ctx)
    text = (line[:m.start()] + line[m.end():]).strip()
    return (v, q, "wall", m.group(0), text, None, notes)


RFC2822 = re.compile(r"^((?:[A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}"
                     r" (?:[+-]\d{4}|GMT|UTC|UT))\s*(.*)$")


def parse_rfc2822(line: str, ctx: Context) -> Parsed:
    """`Mon, 30 Nov 2026 09:51:14 +0000` at the start of a line (mail-style, via email.utils)."""
    m = RFC2822.match(line)
    if not m:
        raise Unparsed("no RFC 2822 date at the start of the line")
    try:
        d = parsedate_to_datetime(m.group(1))
    except (TypeError, ValueError, OverflowError) as exc:
        raise Unparsed(f"bad RFC 2822 date: {exc}") from None
    return (_ns(d), NS, "wall", m.group(1), m.group(2), None, ())


LINE_FORMATS = {"rfc5424": parse_rfc5424, "rfc3164": parse_rfc3164, "dmesg": parse_dmesg,
                "ipmi-sel": parse_ipmi_sel, "snmptrapd": parse_snmptrapd, "iso8601": parse_iso,
                "rfc2822": parse_rfc2822}
BAD_INPUT = (ValueError, OverflowError, RecursionError, TypeError)   # Unparsed is a ValueError


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc)[:200] or type(exc).__name__


# -- whole-file formats ----------------------------------------------------------------------

def parse_journald(src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """`journalctl -o json`: __REALTIME_TIMESTAMP (µs, wall) or __MONOTONIC_TIMESTAMP (µs since
    that boot), __SEQNUM as the log's own order. The raw stamp is the integer as written."""
    use_mono = ctx.stamp == "monotonic"
    key = "__MONOTONIC_TIMESTAMP" if use_mono else "__REALTIME_TIMESTAMP"
    for n, line in src:
        if not line.strip():
            continue
        try:
            _journald_record(n, json.loads(line), key, use_mono, out)
        except BAD_INPUT as exc:
            out.reject(n, line, _why(exc))


def _journald_record(n: int, r: Any, key: str, use_mono: bool, out: ParsedLog) -> None:
    """Line n's record (decoded JSON) as a stamp: its `key` in µs, wall or monotonic."""
    if not isinstance(r, dict):
        raise Unparsed("not a JSON object")
    if key not in r:
        raise Unparsed(f"no {key}")
    raw = str(r[key])[:40]
    us = int(r[key])
    seq = r.get("__SEQNUM")
    msg = r.get("MESSAGE", "")
    if isinstance(msg, list):              # journald writes non-UTF-8 as a byte list
        msg = bytes(msg[:4 * TEXT_KEEP]).decode(errors="replace")
    out.stamps.add(n, us * US, US, "monotonic" if use_mono else "wall", raw, str(msg)[:TEXT_KEEP],
                   int(seq) if seq is not None else None,
                   (f"boot {str(r.get('_BOOT_ID', '?'))[:40]}",) if use_mono else ())


REDFISH_FIELDS = ("Created", "EventTimestamp")


def parse_redfish(text: str, ctx: Context, out: ParsedLog) -> None:
    """A Redfish LogEntryCollection (or a list of LogEntry), or an Event's `Events`: `Created`
    (when the service logged the entry) or `EventTimestamp` (when the event occurred), RFC 3339
    (without seconds or an offset read as such and said so); field "auto": Created where the
    record has one. Id as the log's order."""
    doc = _json_document(text, out)
    if doc is None:
        return
    members = (doc.get("Members", doc.get("Events", [])) if isinstance(doc, dict) else doc)
    if not isinstance(members, list):
        out.reject(1, text, "no Members list")
        return
    for n, m in enumerate(members, 1):
        try:
            _redfish_member(n, m, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, _member_text(m), _why(exc))


def _redfish_member(n: int, m: Any, ctx: Context, out: ParsedLog) -> None:
    """Member n (a LogEntry or an Event record) as a stamp."""
    if not isinstance(m, dict):
        raise Unparsed("member is not an object")
    key = _redfish_field(m, ctx)
    created = m.get(key)
    if not isinstance(created, str):
        raise Unparsed(f"no {key}")
    im = ISO.fullmatch(created.strip())
    if not im:
        raise Unparsed(f"{key} {created[:60]!r} is not ISO 8601")
    v, q, notes = iso_stamp(im, ctx)
    rid = str(m.get("Id", m.get("EventId", "")))[:40]
    msg = " ".join(str(x) for x in (rid, m.get("MessageId"), m.get("Message"))
                   if x)[:TEXT_KEEP]
    out.stamps.add(n, v, q, "wall", created, msg.strip(),
                   int(rid) if rid.isdigit() else None, notes, f"origin|{key}")


def _redfish_field(m: dict[str, Any], ctx: Context) -> str:
    """The member's stamp field: the one given, else the first of REDFISH_FIELDS it holds as
    text, else Created."""
    if ctx.field in REDFISH_FIELDS:
        return ctx.field
    return next((k for k in REDFISH_FIELDS if isinstance(m.get(k), str)), "Created")


def _json_document(text: str, out: ParsedLog) -> Any:
    """A whole-file JSON document, or None with the reason said as an unparsed line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        ln = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        out.reject(exc.lineno, ln, f"not JSON: {exc.msg}")
    except RecursionError:
        out.reject(1, text, "JSON nested too deeply to read")
    return None


K8S_FIELDS = ("creationTimestamp", "eventTime", "firstTimestamp", "lastTimestamp")


def k8s_component(ev: dict[str, Any]) -> str:
    """The clock name of the component that reported a Kubernetes event ("default-scheduler"
    -> "scheduler"), "" when the event names none."""
    src = ev.get("source") if isinstance(ev.get("source"), dict) else {}
    name = ev.get("reportingComponent") or ev.get("reportingController") or \
        (src or {}).get("component") or ""
    name = str(name).lower().rsplit("/", 1)[-1]
    for pre in ("default-", "kube-"):
        name = name.removeprefix(pre)
    return name[:40]


def k8s_field(ev: dict[str, Any], ctx: Context) -> tuple[str, str]:
    """(field, stamping source) of one event: the field given, else eventTime where the event has
    one and the device has the reporting component's clock, else creationTimestamp."""
    comp = k8s_component(ev)
    key = ctx.field
    if key not in K8S_FIELDS:
        has_own = bool(ev.get("eventTime")) and (not ctx.clocks or comp in ctx.clocks)
        key = "eventTime" if has_own else "creationTimestamp"
    role = "apiserver" if key == "creationTimestamp" else f"component:{comp or '?'}"
    return key, f"{role}|{key}"


def parse_k8s_events(text: str, ctx: Context, out: ParsedLog) -> None:
    """Kubernetes events: an EventList (`kubectl get events -o json`), a list, or JSON lines (one
    Event, or a watch's {"type", "object"}, per line). `metadata.creationTimestamp` is the API
    server's (whole seconds); `eventTime` (µs) and first/lastTimestamp the reporting
    component's own clock (a scheduler on another host). resourceVersion as the log's order."""
    doc = _one_json(text)
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        records: Iterable[tuple[int, Any]] = enumerate(doc["items"], 1)
    elif isinstance(doc, list):
        records = enumerate(doc, 1)
    else:
        records = ((n, _one_json(ln)) for n, ln in enumerate(text.splitlines(), 1) if ln.strip())
    for n, ev in records:
        try:
            _k8s_event(n, ev, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, _member_text(ev), _why(exc))


def _k8s_event(n: int, ev: Any, ctx: Context, out: ParsedLog) -> None:
    """Record n (an Event, or a watch's {"type", "object"}) as a stamp."""
    ev = _watched_object(ev)
    if not isinstance(ev, dict):
        raise Unparsed("not a Kubernetes Event object")
    meta: dict[str, Any] = ev["metadata"] if isinstance(ev.get("metadata"), dict) else {}
    key, src = k8s_field(ev, ctx)
    stamp = meta.get(key) if key == "creationTimestamp" else ev.get(key)
    if not isinstance(stamp, str):
        raise Unparsed(f"no {key}")
    im = ISO.fullmatch(stamp.strip())
    if not im:
        raise Unparsed(f"{key} {stamp[:60]!r} is not ISO 8601")
    v, q, notes = iso_stamp(im, ctx)
    rv = str(meta.get("resourceVersion", ""))
    out.stamps.add(n, v, q, "wall", stamp, _k8s_text(ev),
                   int(rv) if rv.isdigit() else None, notes, src)


def _watched_object(ev: Any) -> Any:
    """A watch's {"type", "object"} as its object; anything else as it is."""
    if isinstance(ev, dict) and isinstance(ev.get("object"), dict):
        return ev["object"]
    return ev


def _k8s_text(ev: dict[str, Any]) -> str:
    """An event's text: its reason, the object it is about (kind/name) and its message."""
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    what = f"{obj.get('kind', '')}/{obj.get('name', '')}" if isinstance(obj, dict) else ""
    msg = f"{ev.get('reason', '')} {what}: {ev.get('message', ev.get('note', ''))}"
    return msg.strip()[:TEXT_KEEP]


def _member_text(m: Any) -> str:
    try:
        return json.dumps(m)[:TEXT_KEEP]
    except (ValueError, TypeError, RecursionError):
        return "(a member nested too deeply to show)"


CSV_TIME = ("timestamp", "time", "ts", "date", "datetime", "created", "@timestamp")


def parse_csv(src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """A CSV with a header: the first column named like a timestamp (ISO 8601 values) and the
    rest joined as text. A quoted field may span lines; a row csv refuses is one unparsed row."""
    where = [0]

    def feed() -> Iterator[str]:
        for n, line in src:
            where[0] = n
            yield line + "\n"
    rows = csv.reader(feed())
    header = _csv_header(rows, out, where)
    if not header:
        return
    tcol = _time_column(header)
    if tcol is None:
        out.reject(where[0], ",".join(header), f"no timestamp column (one of {CSV_TIME})")
        return
    while (row := _csv_row(rows, out, where)) is not None:
        n = where[0]
        if not row:
            continue
        try:
            _csv_record(n, row, tcol, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, ",".join(row), _why(exc))


def _csv_header(rows: Iterator[list[str]], out: ParsedLog, where: list[int]) -> list[str] | None:
    """The first row csv takes (rows it refused before it said as unparsed); None at the end."""
    header = _csv_row(rows, out, where)
    while header == []:
        header = _csv_row(rows, out, where)
    return header


def _time_column(header: list[str]) -> int | None:
    """The index of the first column named like a timestamp (CSV_TIME), None if none is."""
    cols = [h.strip().lower() for h in header]
    return next((i for i, h in enumerate(cols) if h in CSV_TIME), None)


def _csv_record(n: int, row: list[str], tcol: int, ctx: Context, out: ParsedLog) -> None:
    """Row n as a stamp: column tcol's ISO 8601 instant, the other columns joined as text."""
    if tcol >= len(row):
        raise Unparsed("row has no timestamp column")
    m = ISO.fullmatch(row[tcol].strip())
    if not m:
        raise Unparsed(f"{row[tcol][:60]!r} is not ISO 8601")
    v, q, notes = iso_stamp(m, ctx)
    text_ = " ".join(x for i, x in enumerate(row) if i != tcol)
    out.stamps.add(n, v, q, "wall", row[tcol], text_, None, notes)


def _csv_row(rows: Iterator[list[str]], out: ParsedLog, where: list[int]) -> list[str] | None:
    """The next row ([] for a row csv refused, said as unparsed; None at the end)."""
    try:
        return next(rows)
    except StopIteration:
        return None
    except csv.Error as exc:
        out.reject(where[0], "", f"CSV: {exc}")
        return []


FILE_FORMATS = {"journald": parse_journald, "redfish": parse_redfish, "csv": parse_csv,
                "k8s-events": parse_k8s_events}
StreamParser = Callable[[Iterable[tuple[int, str]], Context, ParsedLog], None]
DOC_FORMATS: dict[str, Callable[[str, Context, ParsedLog], None]] = {
    "redfish": parse_redfish, "k8s-events": parse_k8s_events}
STREAM_FORMATS: dict[str, StreamParser] = {"journald": parse_journald, "csv": parse_csv}
BATCH_FORMATS = {"rfc5424": rfc5424_batch}        # a fast path for a batch of lines
FORMATS = tuple(FILE_FORMATS) + tuple(LINE_FORMATS)
assert FORMATS == lognames.FORMATS, "bench/model/lognames.py names the formats the parsers read"
# detection tries the most specific first; iso8601 last (it matches inside other formats' lines)
DETECT_ORDER = ("rfc5424", "ipmi-sel", "snmptrapd", "dmesg", "rfc3164", "rfc2822", "iso8601")
SNMPTRAPD_CONT = re.compile(r"^\s+\S|^[A-Za-z][\w-]*::|^\.?\d+(\.\d+)+ = ")


def _parse_lines(fmt: str, batches: Iterable[LineBatch], ctx: Context, out: ParsedLog) -> None:
    """A line format's batches (bench.model.logfile.line_batches): a whole batch at once where
    the format has a fast path and every line of it takes it, else a line at a time."""
    fast = BATCH_FORMATS.get(fmt)
    trapd_mono = fmt == "snmptrapd" and ctx.stamp == "monotonic"
    for batch in batches:
        if fast is None or not fast(batch, out.stamps):
            _parse_each(fmt, numbered((batch,)), ctx, out)
    if trapd_mono:
        _drop_wall_trap(out)
    if fmt == "snmptrapd":
        _drop_pending(out)
        out.unparsed.sort()


def _parse_each(fmt: str, src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """Lines (number, text) one at a time: each a stamp, or an unparsed line with why (an
    snmptrapd varbind line joins the trap above it)."""
    fn = LINE_FORMATS[fmt]
    add = out.stamps.add
    trapd, mono = fmt == "snmptrapd", ctx.stamp == "monotonic"
    for n, line in src:
        if not line.strip():
            continue
        try:
            st = fn(line, ctx)
            if trapd and mono:      # a new trap: the one above is done
                _drop_wall_trap(out)
            elif trapd:
                _drop_pending(out)
            add(n, *st)
        except BAD_INPUT as exc:
            if trapd and len(out.stamps) and SNMPTRAPD_CONT.match(line):
                _with_varbind(out.stamps, line, ctx)      # a varbind line of the trap above
                continue
            out.reject(n, line, _why(exc))


def _drop_wall_trap(out: ParsedLog) -> None:
    """stamp=monotonic: the trap above, if no varbind gave it the agent's uptime, is unparsed."""
    st = out.stamps
    if len(st) and st.kind[-1] != KINDS.index("monotonic"):
        last = st.pop()
        out.reject(last.line, last.text, "trap without a sysUpTime varbind")


def _drop_pending(out: ParsedLog) -> None:
    """The trap above, if it is still a zone-less receive time (no varbind gave the agent's
    uptime), is unparsed: no zone to read it in."""
    st = out.stamps
    if len(st) and st.note_sets[st.note_id[-1]] == (PENDING,):
        last = st.pop()
        out.reject(last.line, last.text, NO_ZONE)


UPTIME_TEXT = re.compile(r"\S*(?:sysUpTime|1\.3\.6\.1\.2\.1\.1\.3\.0)\S* = Timeticks: "
                         r"\(\d+\)[^\t]*")
TRAP_OID = re.compile(r"\S*snmpTrapOID\.0 = OID: ")


def trap_text(varbinds: str) -> str:
    """A trap's varbinds as a label reads them: the trap's OID first, the uptime left out (it
    is the stamp), the rest joined by "; "."""
    parts = [p.strip() for p in UPTIME_TEXT.sub("", varbinds).split("\t") if p.strip()]
    oid = [TRAP_OID.sub("trap ", p) for p in parts if TRAP_OID.search(p)]
    return "; ".join(oid + [p for p in parts if not TRAP_OID.search(p)])


def _with_varbind(st: Stamps, line: str, ctx: Context) -> None:
    last = st.pop()
    more = trap_text(line)
    text = f"{last.text}: {more}" if last.text.count(" ") == 0 else \
        (f"{last.text}; {more}" if more else last.text)
    up = UPTIME_VB.search(line)
    if ctx.stamp in ("monotonic", "auto") and up and last.kind != "monotonic":
        st.add(last.line, int(up.group(1)) * 10_000_000, 10_000_000, "monotonic", up.group(0),
               text, None, UPTIME_NOTE)
    else:
        st.add(last.line, last.value_ns, last.resolution_ns, last.kind, last.raw, text,
               last.order, last.notes, last.src)


def _first_batches(batches: Iterator[LineBatch], sample: int) -> list[LineBatch]:
    """The batches holding the first `sample` non-empty lines (all of them in a shorter file)."""
    out, seen = [], 0
    for b in batches:
        out.append(b)
        seen += sum(1 for ln in b.lines if ln is not None and ln.strip())
        if seen >= sample:
            break
    return out


def _one_json(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _is_redfish(doc: Any) -> bool:
    if isinstance(doc, list):
        doc = doc[0] if doc else {}
    if not isinstance(doc, dict):
        return False
    ev = doc.get("Events")
    return "Members" in doc or "Created" in doc or (
        isinstance(ev, list) and bool(ev) and isinstance(ev[0], dict) and "EventTimestamp" in ev[0])


def _is_k8s(doc: Any) -> bool:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        doc = doc["items"]
    if isinstance(doc, list):
        doc = doc[0] if doc else {}
    if isinstance(doc, dict) and isinstance(doc.get("object"), dict):
        doc = doc["object"]
    return isinstance(doc, dict) and (doc.get("kind") == "Event" or "involvedObject" in doc
                                      or "regarding" in doc)


def detect(head: list[str], document: Callable[[], str] | None = None) -> tuple[str, str]:
    """(format, how sure) from the file's first non-empty lines (and, for a JSON document that
    spans lines, `document()` giving it whole), or raise LogError naming what was tried."""
    if not head:
        raise LogError("empty log: nothing to read")
    if head[0].lstrip().startswith(("{", "[")):
        got = _detect_json(head, document)
        if got is not None:
            return got
    try:
        cells = [c.strip().lower() for c in next(csv.reader([head[0]]), [])]
    except csv.Error:
        cells = []
    if len(cells) > 1 and any(c in CSV_TIME for c in cells):
        return "csv", f"detected: CSV header with a timestamp column ({head[0][:60]!r})"
    return _detect_lines(head)


def _detect_json(head: list[str], document: Callable[[], str] | None) -> tuple[str, str] | None:
    """redfish or journald, from a log whose first line opens JSON; None if neither."""
    first = head[0].lstrip()
    doc = _first_document(head, document)
    if _is_redfish(doc):
        return "redfish", "detected: a JSON document with Redfish LogEntry members"
    if _is_k8s(doc if doc is not None else _one_json(first)):
        return "k8s-events", "detected: Kubernetes Event objects"
    ok = sum(isinstance(r, dict) and "__REALTIME_TIMESTAMP" in r for r in map(_one_json, head))
    if ok >= 0.5 * len(head):
        return "journald", f"detected: {ok} of {len(head)} sampled lines are journald JSON"
    return None


def _first_document(head: list[str], document: Callable[[], str] | None) -> Any:
    """The JSON of the first line, else (where the line opens a list or more lines follow) of
    the whole document; None where neither is JSON."""
    first = head[0].lstrip()
    doc = _one_json(first)
    if doc is None and document is not None and (first.startswith("[") or len(head) > 1):
        doc = _one_json(document())
    return doc


def _lines_matched(fmt: str, head: list[str], ctx: Context) -> int:
    """How many of the sampled lines line format `fmt` reads (a trap's varbind lines count with
    the header above them)."""
    fn = LINE_FORMATS[fmt]
    ok, prev = 0, False
    for ln in head:
        try:
            fn(ln, ctx)
            ok, prev = ok + 1, True
        except BAD_INPUT:      # a trap's varbind lines belong to the header above them
            cont = fmt == "snmptrapd" and prev and bool(SNMPTRAPD_CONT.match(ln))
            ok += cont
            prev = cont
    return ok


def _detect_lines(head: list[str]) -> tuple[str, str]:
    ctx = Context(year=2000, zone="UTC")      # the shape of a line, not its instant
    scores = [(_lines_matched(fmt, head, ctx), fmt) for fmt in DETECT_ORDER]
    best_ok = max(k for k, _ in scores)
    best = next(f for k, f in scores if k == best_ok)    # ties: the earlier (more specific) wins
    if best_ok < 0.5 * len(head):
        tried = ", ".join(f"{f} {k}/{len(head)}" for k, f in scores)
        raise LogError(f"log format not recognised (lines matched: {tried}); give it with "
                       f"format=NAME (one of {', '.join(FORMATS)})")
    return best, f"detected: {best_ok} of {len(head)} sampled lines match {best}"


def parse_file(f: BinaryIO, fmt: str = "auto", ctx: Context = Context(), line_limit: int | None = None,
               sample: int = 200) -> ParsedLog:
    """Every line of a log (a binary file object, read from its start, bounded as
    bench/model/logfile.py says): its stamps, and each line that did not parse with its number."""
    stats = LineStats(line_limit) if line_limit else LineStats()
    batches = line_batches(f, stats)
    first = _first_batches(batches, sample)
    head = list(itertools.islice(((n, ln) for n, ln in numbered(first) if ln.strip()), sample))
    fmt, how = _format_of(f, fmt, [ln for _, ln in head], stats)
    out = ParsedLog(fmt, how, over=stats)
    whole = itertools.chain(first, batches)
    if fmt in DOC_FORMATS:
        DOC_FORMATS[fmt](read_document(f), ctx, out)
    elif fmt in STREAM_FORMATS:
        STREAM_FORMATS[fmt](numbered(whole), ctx, out)
    else:
        _parse_lines(fmt, whole, ctx, out)
    out.notes = _used_notes(out)
    return out


def _used_notes(out: ParsedLog) -> list[str]:
    """The notes the stamps use, each once, in order (a boot's name is not a note)."""
    used = [out.stamps.note_sets[k] for k in sorted(set(out.stamps.note_id))]
    return list(dict.fromkeys(nt for notes in used for nt in notes
                              if not nt.startswith("boot ")))


def _format_of(f: BinaryIO, fmt: str | None, head: list[str], stats: LineStats) -> tuple[str, str]:
    """The log's format and how it was known (given, or detected from `head`)."""
    if fmt not in ("auto", "", None):
        if fmt not in FORMATS:
            raise LogError(f"unknown log format {fmt!r} (one of {', '.join(FORMATS)})")
        if not head and stats.over and fmt != "redfish":
            raise LogError(f"no line to read: {stats.note()}")
        return fmt, "given"
    if not head and stats.over:
        if _is_redfish(_one_json(read_document(f))):
            return "redfish", "detected: a one-line JSON document with Redfish members"
        raise LogError(f"no line to read: {stats.note()}")
    return detect(head, lambda: read_document(f))


def parse_path(path: str | PathLike[str], fmt: str = "auto", ctx: Context = Context(),
               line_limit: int | None = None) -> ParsedLog:
    """A log file by path: a regular file only (bench.model.logfile.open_regular)."""
    with open_regular(path) as f:
        return parse_file(f, fmt, ctx, line_limit)


def parse_log(text: str, fmt: str = "auto", ctx: Context = Context()) -> ParsedLog:
    """A log given as text (tests, notebooks): as parse_file reads a file."""
    return parse_file(io.BytesIO(text.encode("utf-8", "surrogatepass")), fmt, ctx)


# -- IPMI SEL stamps: local wall seconds in the BMC's zone (drivers/ipmi_bmc.py, bench/sim/ipmi_bmc_emu.py)
def sel_zone(name: str | None) -> dt.tzinfo | None:
    """The zone SEL wall-time stamps are read in; None for "unknown" (read as UTC, reported)."""
    if name is None or str(name).lower() == "unknown":
        return None
    if str(name).upper() == "UTC":
        return dt.UTC
    return ZoneInfo(str(name))


def sel_seconds_to_ns(seconds: int, zone: dt.tzinfo | None) -> int:
    """A SEL wall-time stamp (local seconds in `zone`) as Unix-epoch ns (UTC)."""
    if zone is None or zone is dt.UTC:
        return seconds * NS
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    off = local.replace(tzinfo=zone).utcoffset() or dt.timedelta(0)
    return (seconds - int(off.total_seconds())) * NS


def ns_to_sel_seconds(t_ns: int, zone: dt.tzinfo | None) -> int:
    """The SEL seconds a BMC keeping local time in `zone` shows at Unix instant t_ns."""
    s = t_ns // NS
    if zone is None or zone is dt.UTC:
        return s
    off = dt.datetime.fromtimestamp(s, dt.UTC).astimezone(zone).utcoffset() or dt.timedelta(0)
    return s + int(off.total_seconds())
