"""Line formats of the syslog family: RFC 5424 (with a fast path for a batch of RFC 3339
lines), RFC 3164, the kernel's dmesg, and a line that holds an ISO 8601 or RFC 2822 date. Each
parse(line, ctx) gives a Parsed tuple or raises Unparsed (bench/logs/logstamps.py)."""
from __future__ import annotations

import datetime as dt
import re
from datetime import datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache

from bench.logs.logfile import (
    LineBatch,
)
from bench.logs.logstamps import (
    ISO,
    MONTHS,
    NS,
    TEXT_KEEP,
    Context,
    Parsed,
    Stamps,
    Unparsed,
    _frac,
    _minute,
    _ns,
    iso_stamp,
    local_to_ns,
)
from bench.logs.rfc3339 import rfc3339_ns

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
    stamp (bench/logs/rfc3339.py): the stamps and texts parse_rfc5424 gives, added to `out`;
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
