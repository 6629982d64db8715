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
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bench.errors import RackclockError

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
    text: str                  # the rest of the entry
    order: int | None = None   # the log's own order (entry id, sequence number), if it has one
    notes: tuple = ()          # assumptions made reading this stamp


@dataclass
class ParsedLog:
    format: str
    detected: str              # "given" or "detected: 98 of 100 sampled lines"
    stamps: list = field(default_factory=list)
    unparsed: list = field(default_factory=list)     # (line number, line, why)
    notes: list = field(default_factory=list)        # file-wide assumptions, said once

    @property
    def lines(self) -> int:
        return len(self.stamps) + len(self.unparsed)


@dataclass(frozen=True)
class Context:
    """What a zone-less or year-less stamp is read with, each use said in the output."""
    zone: str = ""             # IANA zone of the file's local times ("" = UTC, said so)
    year: int | None = None    # year of RFC 3164 / year-less stamps (from the run)
    near_ns: int | None = None # a reference instant the log is near (the run), to pick the year
    boot_ns: int | None = None # dmesg -> wall: the host's boot instant in its own wall time
    stamp: str = "auto"        # journald/snmptrapd: "wall" or "monotonic" stamp


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


def _zone(ctx: Context):
    if not ctx.zone or ctx.zone.upper() == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(ctx.zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise SystemExit(f"unknown time zone {ctx.zone!r}") from exc


def local_to_ns(naive: datetime, ctx: Context, res_ns: int) -> tuple[int, int, tuple]:
    """A zone-less wall time read in the file's zone: (value_ns, resolution_ns, notes). In a DST
    fold (the hour that happens twice) the value covers both readings; in a DST gap (a time that
    never happened) both offsets too, flagged."""
    tz = _zone(ctx)
    if tz is timezone.utc:
        return _ns(naive.replace(tzinfo=timezone.utc)), res_ns, ("zone: UTC assumed (none given)",) \
            if not ctx.zone else ("zone: UTC (given)",)
    a = naive.replace(tzinfo=tz, fold=0)
    b = naive.replace(tzinfo=tz, fold=1)
    va, vb = _ns(a), _ns(b)
    note = f"zone: {ctx.zone} (given)"
    if va == vb:
        return va, res_ns, (note,)
    lo, hi = min(va, vb), max(va, vb)
    exists = a.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) == naive
    why = "DST fold: the hour happened twice" if exists \
        else "DST gap: a local time that never happened"
    return lo, hi - lo + res_ns, (note, f"{why}; both readings kept")


def _ns(d: datetime) -> int:
    """Exact Unix-epoch ns of an aware datetime (whole seconds + microseconds, no float)."""
    delta = d - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * US


ISO = re.compile(r"(?<![\d.])(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})([.,]\d+)?)?"
                 r"(Z|[+-]\d{2}(?::?\d{2})?)?(?![\d])")


@lru_cache(maxsize=4096)
def _minute(y: str, mo: str, d: str, h: str, mi: str, tz: str | None, zone: str):
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
    v, r, zn = local_to_ns(base, Context(zone=zone), 0)
    return v, r, zn


def iso_stamp(m: re.Match, ctx: Context) -> tuple[int, int, tuple]:
    """(value_ns, resolution_ns, notes) of an ISO 8601 match (comma or dot fraction, optional
    seconds, optional zone)."""
    y, mo, d, h, mi, s, frac, tz = m.groups()
    frac_ns, res = _frac(frac)
    notes: tuple = ()
    if s is None:
        res, notes = 60 * NS, ("no seconds in the stamp: resolution 1 min",)
    try:
        v, widen, zn = _minute(y, mo, d, h, mi, tz, ctx.zone)
    except ValueError as exc:
        raise Unparsed(f"no such date and time: {exc}") from None
    if int(s or 0) > 59:
        raise Unparsed(f"second {s} out of range")
    return v + int(s or 0) * NS + frac_ns, res + widen, notes + zn


# -- formats: each parse(line_no, line, ctx) -> Stamp, raising Unparsed ---------------------------

RFC5424 = re.compile(r"^<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) ?(.*)$")


def parse_rfc5424(n: int, line: str, ctx: Context) -> Stamp:
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
    return Stamp(n, v, q, "wall", ts, f"{m.group(4)} {m.group(5)}: {m.group(8)}".strip(), None,
                 notes)


RFC3164 = re.compile(r"^(?:<(\d{1,3})>)?([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2})"
                     r"([.,]\d+)? (.*)$")


def pick_year(month: int, day: int, ctx: Context) -> tuple[int, str]:
    """The year of a year-less stamp: the given one, else the one that puts it nearest the run."""
    if ctx.year:
        return ctx.year, f"year {ctx.year} (given)"
    if ctx.near_ns is None:
        raise Unparsed("year-less stamp and no run to take the year from")
    near = datetime.fromtimestamp(ctx.near_ns / NS, timezone.utc)
    best = None
    for y in (near.year - 1, near.year, near.year + 1):
        try:
            d = abs((datetime(y, month, day, tzinfo=timezone.utc) - near).total_seconds())
        except ValueError:         # Feb 29 in a common year
            continue
        if best is None or d < best[0]:
            best = (d, y)
    if best is None:
        raise Unparsed("no year around the run has this date")
    return best[1], f"year {best[1]} taken from the run"


def parse_rfc3164(n: int, line: str, ctx: Context) -> Stamp:
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
    return Stamp(n, v + frac_ns, q, "wall", raw, rest, None, (ynote,) + zn)


DMESG = re.compile(r"^(?:<\d{1,3}>)?\[\s*(\d+)\.(\d{3,9})\] ?(.*)$")


def parse_dmesg(n: int, line: str, ctx: Context) -> Stamp:
    m = DMESG.match(line)
    if not m:
        raise Unparsed("not a kernel log line ([seconds.micro] since boot)")
    frac_ns, res = _frac("." + m.group(2))
    mono = int(m.group(1)) * NS + frac_ns
    raw = line[:m.start(3)].strip()
    if ctx.boot_ns is not None:      # through the boot instant, in the host's wall time
        return Stamp(n, ctx.boot_ns + mono, max(res, NS), "wall", raw, m.group(3), None,
                     ("monotonic since boot + the boot instant given (1 s as /proc/stat has it)",))
    return Stamp(n, mono, res, "monotonic", raw, m.group(3), None, ("monotonic since boot",))


SEL = re.compile(r"^\s*([0-9a-fA-F]+) \| (\d{2})/(\d{2})/(\d{4}) \| (\d{2}):(\d{2}):(\d{2})"
                 r"(?: ?(AM|PM))? \| (.*)$")
SEL_PREINIT = re.compile(r"^\s*([0-9a-fA-F]+) \| (Pre-Init.*?)\s*\|\s*(\S+)\s*\| (.*)$")


def parse_ipmi_sel(n: int, line: str, ctx: Context) -> Stamp:
    """`ipmitool sel list` / `sel elist`: the BMC's SEL time, local, no zone; the record id
    (hex, as ipmitool prints it) is the log's own order."""
    m = SEL.match(line)
    if not m:
        p = SEL_PREINIT.match(line)
        if p:
            raise Unparsed(f"pre-init SEL time ({p.group(3)}): stamped before the BMC's clock "
                           f"was set, no wall time")
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
    return Stamp(n, v, q, "wall", line[m.start(2):m.end(8) if ampm else m.end(7)], rest.strip(),
                 int(rid, 16), ("SEL time is the BMC's local time",) + zn)


SNMPTRAPD = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (\S+) \[(.*?)\]:?\s*(.*)$")
UPTIME_VB = re.compile(r"(?:sysUpTime(?:Instance)?|1\.3\.6\.1\.2\.1\.1\.3\.0)\S* = Timeticks: "
                       r"\((\d+)\)")


def parse_snmptrapd(n: int, line: str, ctx: Context) -> Stamp:
    """snmptrapd's default log line (`%y-%m-%l %h:%j:%k %B [%b]:` then the varbinds): the
    receiver's local time to the second, or (stamp "monotonic") the agent's sysUpTime varbind."""
    m = SNMPTRAPD.match(line)
    if not m:
        raise Unparsed("not an snmptrapd line (yyyy-mm-dd hh:mm:ss HOST [TRANSPORT]: ...)")
    text = m.group(4)
    up = UPTIME_VB.search(text)
    if ctx.stamp == "monotonic" and up:      # (else its varbind lines may still carry it)
        return Stamp(n, int(up.group(1)) * 10_000_000, 10_000_000, "monotonic", up.group(0), text,
                     None, ("the agent's sysUpTime varbind (10 ms ticks)",))
    v, q, zn = local_to_ns(datetime.fromisoformat(m.group(1)), ctx, NS)
    return Stamp(n, v, q, "wall", m.group(1), f"{m.group(2)} {text}".strip(), None,
                 ("the trap receiver's clock, not the agent's",) + zn)


def parse_iso(n: int, line: str, ctx: Context) -> Stamp:
    """A line holding an ISO 8601 date and time anywhere (first one wins)."""
    m = ISO.search(line)
    if not m:
        raise Unparsed("no ISO 8601 date and time in the line")
    v, q, notes = iso_stamp(m, ctx)
    text = (line[:m.start()] + line[m.end():]).strip()
    return Stamp(n, v, q, "wall", m.group(0), text, None, notes)


def parse_rfc2822(n: int, line: str, ctx: Context) -> Stamp:
    """`Mon, 30 Nov 2026 09:51:14 +0000` at the start of a line (mail-style, via email.utils)."""
    m = re.match(r"^((?:[A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}"
                 r" (?:[+-]\d{4}|GMT|UTC|UT))\s*(.*)$", line)
    if not m:
        raise Unparsed("no RFC 2822 date at the start of the line")
    try:
        d = parsedate_to_datetime(m.group(1))
    except (TypeError, ValueError) as exc:
        raise Unparsed(f"bad RFC 2822 date: {exc}") from None
    return Stamp(n, _ns(d), NS, "wall", m.group(1), m.group(2))


LINE_FORMATS = {"rfc5424": parse_rfc5424, "rfc3164": parse_rfc3164, "dmesg": parse_dmesg,
                "ipmi-sel": parse_ipmi_sel, "snmptrapd": parse_snmptrapd, "iso8601": parse_iso,
                "rfc2822": parse_rfc2822}


# -- whole-file formats ----------------------------------------------------------------------

def _json_records(text: str):
    """journald writes one JSON object a line; a Redfish collection is one document."""
    s = text.lstrip()
    if s.startswith("{") and "\n{" not in s.strip():
        try:
            return [json.loads(s)], True
        except json.JSONDecodeError:
            pass
    if s.startswith("["):
        try:
            return json.loads(s), True
        except json.JSONDecodeError:
            pass
    return None, False


def parse_journald(text: str, ctx: Context) -> ParsedLog:
    """`journalctl -o json`: __REALTIME_TIMESTAMP (µs, wall) or __MONOTONIC_TIMESTAMP (µs since
    that boot), __SEQNUM as the log's own order."""
    out = ParsedLog("journald", "")
    use_mono = ctx.stamp == "monotonic"
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            if not isinstance(r, dict):
                raise Unparsed("not a JSON object")
            key = "__MONOTONIC_TIMESTAMP" if use_mono else "__REALTIME_TIMESTAMP"
            if key not in r:
                raise Unparsed(f"no {key}")
            us = int(r[key])
            seq = r.get("__SEQNUM")
            msg = r.get("MESSAGE", "")
            if isinstance(msg, list):              # journald writes non-UTF-8 as a byte list
                msg = bytes(msg).decode(errors="replace")
            out.stamps.append(Stamp(n, us * US, US, "monotonic" if use_mono else "wall",
                                    str(r[key]), str(msg), int(seq) if seq is not None else None,
                                    (f"boot {r.get('_BOOT_ID', '?')}",) if use_mono else ()))
        except (json.JSONDecodeError, ValueError, TypeError, Unparsed) as exc:
            out.unparsed.append((n, line, str(exc) or type(exc).__name__))
    return out


def parse_redfish(text: str, ctx: Context) -> ParsedLog:
    """A Redfish LogEntryCollection (or a list of LogEntry): `Created` (RFC 3339; a `Created`
    without seconds or without an offset is read as such and said so), Id as the log's order."""
    out = ParsedLog("redfish", "")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        out.unparsed.append((exc.lineno, text.splitlines()[exc.lineno - 1][:200]
                             if text.splitlines() else "", f"not JSON: {exc.msg}"))
        return out
    members = doc.get("Members", []) if isinstance(doc, dict) else doc
    if not isinstance(members, list):
        out.unparsed.append((1, text[:200], "no Members list"))
        return out
    for n, m in enumerate(members, 1):
        try:
            if not isinstance(m, dict):
                raise Unparsed("member is not an object")
            created = m.get("Created")
            if not isinstance(created, str):
                raise Unparsed("no Created")
            im = ISO.fullmatch(created.strip())
            if not im:
                raise Unparsed(f"Created {created!r} is not ISO 8601")
            v, q, notes = iso_stamp(im, ctx)
            rid = str(m.get("Id", ""))
            out.stamps.append(Stamp(n, v, q, "wall", created,
                                    f"{rid} {m.get('MessageId', '')} {m.get('Message', '')}".strip(),
                                    int(rid) if rid.isdigit() else None, notes))
        except Unparsed as exc:
            out.unparsed.append((n, json.dumps(m)[:200], str(exc)))
    return out


CSV_TIME = ("timestamp", "time", "ts", "date", "datetime", "created", "@timestamp")


def parse_csv(text: str, ctx: Context) -> ParsedLog:
    """A CSV with a header: the first column named like a timestamp (ISO 8601 values) and the
    rest joined as text."""
    out = ParsedLog("csv", "")
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if not header:
        return out
    cols = [h.strip().lower() for h in header]
    tcol = next((i for i, h in enumerate(cols) if h in CSV_TIME), None)
    if tcol is None:
        out.unparsed.append((1, ",".join(header), f"no timestamp column (one of {CSV_TIME})"))
        return out
    for n, row in enumerate(rows, 2):
        if not row:
            continue
        try:
            if tcol >= len(row):
                raise Unparsed("row has no timestamp column")
            m = ISO.fullmatch(row[tcol].strip())
            if not m:
                raise Unparsed(f"{row[tcol]!r} is not ISO 8601")
            v, q, notes = iso_stamp(m, ctx)
            text_ = " ".join(x for i, x in enumerate(row) if i != tcol)
            out.stamps.append(Stamp(n, v, q, "wall", row[tcol], text_, None, notes))
        except Unparsed as exc:
            out.unparsed.append((n, ",".join(row), str(exc)))
    return out


FILE_FORMATS = {"journald": parse_journald, "redfish": parse_redfish, "csv": parse_csv}
FORMATS = tuple(FILE_FORMATS) + tuple(LINE_FORMATS)
# detection tries the most specific first; iso8601 last (it matches inside other formats' lines)
DETECT_ORDER = ("rfc5424", "ipmi-sel", "snmptrapd", "dmesg", "rfc3164", "rfc2822", "iso8601")
SNMPTRAPD_CONT = re.compile(r"^\s+\S|^[A-Za-z][\w-]*::|^\.?\d+(\.\d+)+ = ")


def _parse_lines(fmt: str, text: str, ctx: Context) -> ParsedLog:
    fn = LINE_FORMATS[fmt]
    out = ParsedLog(fmt, "")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.stamps.append(fn(n, line, ctx))
        except Unparsed as exc:
            if fmt == "snmptrapd" and out.stamps and SNMPTRAPD_CONT.match(line):
                last = out.stamps[-1]        # a varbind line of the trap above: part of it
                out.stamps[-1] = _with_varbind(last, line, ctx, n)
                continue
            out.unparsed.append((n, line, str(exc)))
    if fmt == "snmptrapd" and ctx.stamp == "monotonic":
        for st in [st for st in out.stamps if st.kind != "monotonic"]:
            out.stamps.remove(st)
            out.unparsed.append((st.line, st.text, "trap without a sysUpTime varbind"))
        out.unparsed.sort()
    return out


def _with_varbind(st: Stamp, line: str, ctx: Context, n: int) -> Stamp:
    from dataclasses import replace
    text = f"{st.text} | {line.strip()}"
    up = UPTIME_VB.search(line)
    if ctx.stamp == "monotonic" and up and st.kind != "monotonic":
        return replace(st, value_ns=int(up.group(1)) * 10_000_000, resolution_ns=10_000_000,
                       kind="monotonic", raw=up.group(0), text=text,
                       notes=("the agent's sysUpTime varbind (10 ms ticks)",))
    return replace(st, text=text)


def detect(text: str, sample: int = 200) -> tuple[str, str]:
    """(format, how sure) from the file itself, or raise SystemExit naming what was tried."""
    rec, is_json = _json_records(text)
    if is_json:
        first = rec[0] if rec else {}
        if isinstance(first, dict) and ("Members" in first or "Created" in first):
            return "redfish", "detected: a JSON document with Redfish LogEntry members"
    head = [ln for ln in text.splitlines() if ln.strip()][:sample]
    if not head:
        raise SystemExit("empty log: nothing to read")
    if head[0].lstrip().startswith("{"):
        ok = 0
        for ln in head:
            try:
                ok += "__REALTIME_TIMESTAMP" in json.loads(ln)
            except (json.JSONDecodeError, TypeError):
                pass
        if ok >= 0.5 * len(head):
            return "journald", f"detected: {ok} of {len(head)} sampled lines are journald JSON"
    first = [c.strip().lower() for c in next(csv.reader([head[0]]), [])]
    if len(first) > 1 and any(c in CSV_TIME for c in first):
        return "csv", f"detected: CSV header with a timestamp column ({head[0][:60]!r})"
    ctx = Context(year=2000)
    scores = []
    for fmt in DETECT_ORDER:
        fn = LINE_FORMATS[fmt]
        ok, prev = 0, False
        for i, ln in enumerate(head, 1):
            try:
                fn(i, ln, ctx)
                ok, prev = ok + 1, True
            except Unparsed:      # a trap's varbind lines belong to the header above them
                cont = fmt == "snmptrapd" and prev and bool(SNMPTRAPD_CONT.match(ln))
                ok += cont
                prev = cont
        scores.append((ok, fmt))
    best_ok, best = max(scores, key=lambda s: s[0])       # ties: the earlier (more specific) wins
    for ok, fmt in scores:
        if ok == best_ok:
            best = fmt
            break
    if best_ok < 0.5 * len(head):
        tried = ", ".join(f"{f} {k}/{len(head)}" for k, f in scores)
        raise SystemExit(f"log format not recognised (lines matched: {tried}); give it with "
                         f"format=NAME (one of {', '.join(FORMATS)})")
    return best, f"detected: {best_ok} of {len(head)} sampled lines match {best}"


def parse_log(text: str, fmt: str = "auto", ctx: Context = Context()) -> ParsedLog:
    """Every line of a log: its stamps, and each line that did not parse with its number."""
    if fmt in ("auto", "", None):
        fmt, how = detect(text)
    else:
        if fmt not in FORMATS:
            raise SystemExit(f"unknown log format {fmt!r} (one of {', '.join(FORMATS)})")
        how = "given"
    out = FILE_FORMATS[fmt](text, ctx) if fmt in FILE_FORMATS else _parse_lines(fmt, text, ctx)
    out.detected = how
    seen = []
    for st in out.stamps:
        for nt in st.notes:
            if nt not in seen and not nt.startswith("boot "):
                seen.append(nt)
    out.notes = seen
    return out


# -- IPMI SEL stamps: local wall seconds in the BMC's zone (drivers/ipmi_bmc.py, bench/sim/ipmi_bmc.py)
def sel_zone(name: str | None) -> dt.tzinfo | None:
    """The zone SEL wall-time stamps are read in; None for "unknown" (read as UTC, reported)."""
    if name is None or str(name).lower() == "unknown":
        return None
    if str(name).upper() == "UTC":
        return dt.timezone.utc
    return ZoneInfo(str(name))


def sel_seconds_to_ns(seconds: int, zone: dt.tzinfo | None) -> int:
    """A SEL wall-time stamp (local seconds in `zone`) as Unix-epoch ns (UTC)."""
    if zone is None or zone is dt.timezone.utc:
        return seconds * NS
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    off = local.replace(tzinfo=zone).utcoffset() or dt.timedelta(0)
    return (seconds - int(off.total_seconds())) * NS


def ns_to_sel_seconds(t_ns: int, zone: dt.tzinfo | None) -> int:
    """The SEL seconds a BMC keeping local time in `zone` shows at Unix instant t_ns."""
    s = t_ns // NS
    if zone is None or zone is dt.timezone.utc:
        return s
    off = dt.datetime.fromtimestamp(s, dt.timezone.utc).astimezone(zone).utcoffset()
    return s + int(off.total_seconds())
