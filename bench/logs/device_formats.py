"""Line formats a device's tools write: `ipmitool sel list` (and the IPMI SEL stamp arithmetic:
local wall seconds in the BMC's zone, used by drivers/ipmi_bmc.py and bench/sim/ipmi_bmc_emu.py)
and snmptrapd (a trap's header line and its varbind lines)."""
from __future__ import annotations

import datetime as dt
import re
from datetime import datetime
from zoneinfo import ZoneInfo

from bench.logs.logstamps import (
    NS,
    Context,
    Parsed,
    Unparsed,
    local_to_ns,
)

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


UPTIME_TEXT = re.compile(r"\S*(?:sysUpTime|1\.3\.6\.1\.2\.1\.1\.3\.0)\S* = Timeticks: "
                         r"\(\d+\)[^\t]*")
TRAP_OID = re.compile(r"\S*snmpTrapOID\.0 = OID: ")


def trap_text(varbinds: str) -> str:
    """A trap's varbinds as a label reads them: the trap's OID first, the uptime left out (it
    is the stamp), the rest joined by "; "."""
    parts = [p.strip() for p in UPTIME_TEXT.sub("", varbinds).split("\t") if p.strip()]
    oid = [TRAP_OID.sub("trap ", p) for p in parts if TRAP_OID.search(p)]
    return "; ".join(oid + [p for p in parts if not TRAP_OID.search(p)])


SNMPTRAPD_CONT = re.compile(r"^\s+\S|^[A-Za-z][\w-]*::|^\.?\d+(\.\d+)+ = ")


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
