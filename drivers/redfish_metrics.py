"""A Redfish MetricReport's device stamps as log entries (drivers/redfish_hmc.py reads them).

A MetricReport (DSP0268 TelemetryService) carries a `Timestamp` of its own and one per
MetricValue, written by the service's clock: the same clock as its Manager's `DateTime`, at a
finer resolution (bmcweb renders milliseconds). Each new report (its `ReportSequence` or
`Timestamp` changed) is one entry stamped with the report's Timestamp; each change of a
throttle metric (`ThrottleCauses`, or a MetricId naming a throttle reason) is one entry stamped
with that MetricValue's Timestamp. The entries of one report form one log
(cursor `metric/<report Id>:<n>`, bench.model.stamps.log_of): the values in the report's order,
then the report itself, which is the order the service sampled them in.

Pure: dicts in, LogEntry out; a value that does not parse is counted and skipped.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from drivers.base import LogEntry
from drivers.redfish_time import parse_datetime_ns

NS = 1_000_000_000
MAX_VALUES = 4096              # MetricValues looked at per report (the rest counted, skipped)
_FRACTION = re.compile(r"T\d{2}:\d{2}:\d{2}(?:\.(\d+))?")
THROTTLE = re.compile(r"throttle", re.IGNORECASE)
UNTHROTTLED = ("None", "", "[]", "null")


def stamp_of(text: object) -> tuple[int, int] | None:
    """A Redfish date-time with its UTC offset -> (Unix-epoch ns, resolution ns), None if it is
    none: the resolution is that of the digits given (`.123`: 1 ms; none: 1 s)."""
    if not isinstance(text, str):
        return None
    m = _FRACTION.search(text)
    try:
        value = parse_datetime_ns(text)
    except ValueError:
        return None
    digits = len(m.group(1) or "") if m else 0
    return value, 10 ** (9 - min(digits, 9))


@dataclass
class ReportState:
    """What one report showed last: its sequence and stamp, each throttle metric's value."""
    last: tuple = ()
    throttle: dict[str, str] = field(default_factory=dict)
    count: int = 0                      # entries made from this report
    bad: int = 0                        # values whose Timestamp did not parse


def is_throttle(v: dict) -> bool:
    return bool(THROTTLE.search(str(v.get("MetricProperty", "")))
                or THROTTLE.search(str(v.get("MetricId", ""))))


def _subject(prop: str) -> str:
    """`/redfish/v1/Systems/X/Processors/GPU_SXM_1#/ThrottleCauses` -> `GPU_SXM_1 ThrottleCauses`."""
    path, _, pointer = prop.partition("#")
    return f"{path.rstrip('/').rsplit('/', 1)[-1]} {pointer.strip('/').replace('/', '.')}".strip()


def report_entries(rid: str, body: dict, state: ReportState, s_ns: int,
                   e_ns: int) -> list[LogEntry]:
    """The new entries of report `rid` as fetched in [s_ns, e_ns]; `state` is updated."""
    seq, stamp = body.get("ReportSequence"), body.get("Timestamp")
    if (seq, stamp) == state.last:
        return []
    state.last = (seq, stamp)
    values = _metric_values(body)
    out = []
    for v in values:
        subject = _throttle_change(v, state) if is_throttle(v) else None
        if subject is not None:
            out.append(_entry(rid, state, v.get("Timestamp"), subject, v, s_ns, e_ns))
    out.append(_entry(rid, state, stamp, f"{rid} report {seq}: {len(values)} values", None,
                      s_ns, e_ns))
    return [x for x in out if x is not None]


def _metric_values(body: dict) -> list[dict]:
    """The report's MetricValues (objects only, at most MAX_VALUES listed)."""
    listed = body.get("MetricValues")
    return [v for v in (listed if isinstance(listed, list) else [])[:MAX_VALUES]
            if isinstance(v, dict)]


def _throttle_change(v: dict, state: ReportState) -> str | None:
    """The message of a throttle value that changed since the last report ("<subject> <value>");
    None where it did not (a first value is news only as a throttle); `state` keeps it."""
    key, val = str(v.get("MetricProperty") or v.get("MetricId")), str(v.get("MetricValue"))
    prev, state.throttle[key] = state.throttle.get(key), val
    if prev == val or (prev is None and val in UNTHROTTLED):    # first seen: only a throttle
        return None
    return f"{_subject(key)} {val}"


def _entry(rid: str, state: ReportState, text, message: str, value: dict | None, s_ns: int,
           e_ns: int) -> LogEntry | None:
    st = stamp_of(text)
    if st is None:
        state.bad += 1
        return None
    state.count += 1
    raw = json.dumps(value if value is not None else {"Id": rid, "Timestamp": text},
                     separators=(",", ":"))[:400]
    return LogEntry(cursor=f"metric/{rid}:{state.count}", clock="datetime", value_ns=st[0],
                    resolution_ns=st[1], s_ns=s_ns, e_ns=e_ns, message=message, raw=raw)
