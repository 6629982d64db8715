"""A device's own log stamps in reference time, bracketed by what caused and what listed them:
the timeline's mapping (bench/analysis/timeline_map.py) over one run's fit of the stamping
clock, for the entries of a stimulus or a power cycle (bench/model/summary.py `latencies`,
experiments/power_cycle.py).

A stamp is mapped through every segment of its clock that can have been in force between the
request that caused the entry (`not_before`) and the answer that listed it (`not_after`): each
segment over its window (from the break before it to the break after it, with the breaks' own
uncertainty), each segment's interval proven with one unseen break inside it
(Segment.proven_to_reference) and cut to the window and to [request, answer]. The bound is the
union of the candidates left; the log's own order (the fetch order of one log: `log_of`)
narrows them as in the timeline. No candidate left: no bound, and the reason is said.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.analysis.timeline_map import PRESYNC_BEFORE_NS, SegmentWindow, calibrations, describe, map_stamps


def log_of(raw: str) -> str:
    """The log a fetched entry belongs to, from the cursor its row starts with ("trap:3",
    "log:3": a device's trap stream and its event log are two logs, each in its own order);
    "" for a driver whose cursor names none."""
    cursor = raw.split(" ", 1)[0]
    return cursor.split(":", 1)[0] if ":" in cursor else ""


@dataclass(frozen=True)
class StampBound:
    """Reference interval of one stamp (lo_ns, hi_ns), what it rests on (`via`: the segment(s),
    with the mapping's status), or why there is none (`why`, lo_ns and hi_ns None)."""
    lo_ns: int | None = None
    hi_ns: int | None = None
    via: str = ""
    why: str = ""


def bound_stamps(smp: Any, results: dict[str, Any], meta: dict[str, Any] | None, rows: list[int],
                 not_before_ns: list[int]) -> list[StampBound]:
    """Bounds of the stamps of event rows `rows` of `smp` (bench.model.rundata.Samples), each no
    earlier than its `not_before_ns` and no later than the answer that listed it (the row's
    e_ns); `results`: the run's fit per clock (bench.model.summary.ClockResult)."""
    out = [StampBound()] * len(rows)          # every row is set below
    groups: dict[tuple[str, str], list[int]] = {}
    for n, j in enumerate(rows):
        why = _unmappable(smp, results, j)
        if why:
            out[n] = StampBound(why=why)
        else:
            groups.setdefault((smp.clock[j], log_of(smp.raw[j])), []).append(n)
    for (clock, _), ns in groups.items():
        js = [rows[n] for n in ns]
        nb = np.array([not_before_ns[n] for n in ns], dtype=np.int64)
        for n, b in zip(ns, _map_group(smp, results[clock], meta, js, nb)):
            out[n] = b
    return out


def _unmappable(smp: Any, results: dict[str, Any], j: int) -> str:
    """Why row j's stamp cannot be mapped ("" when it can)."""
    clock = smp.clock[j]
    res = results.get(clock)
    if not smp.has_value[j]:
        return "the entry carries no stamp"
    if res is None or res.fit is None or not res.fit.segments:
        return (f"clock {clock!r} has no fit in this run"
                + (f" ({res.note})" if res is not None and res.note else ""))
    return ""


def _map_group(smp: Any, res: Any, meta: dict[str, Any] | None, js: list[int],
               nb: np.ndarray) -> list[StampBound]:
    """The stamps of rows `js` (one clock, one log) mapped through the clock's segments."""
    cals = calibrations([("run", res, meta or {})])
    na = np.asarray(smp.e_ns[js], dtype=np.int64)
    # a wall clock whose reads themselves show a time before it was ever set runs unset:
    # its stamps are in the same timescale as the reads, not pre-sync
    shown = min(c.span[0] + c.segment.offset_at(c.span[0]).lo for c in cals)
    wall = not res.meta.get("counter") and shown >= PRESYNC_BEFORE_NS
    m = map_stamps(cals, smp.value_ns[js], smp.resolution_ns[js], smp.seq[js], wall=wall,
                   not_after_ns=na, not_before_ns=nb, proven=True, clip=True)
    return [_stamp_bound(m, x, cals, int(nb[x]), int(na[x])) for x in range(len(js))]


def _stamp_bound(m: Any, x: int, cals: list[SegmentWindow], nb: int, na: int) -> StampBound:
    st = m.status_of(x)
    if st == "unplaceable":
        live = [c.name for c in cals if (c.window_hi is None or c.window_hi >= nb)
                and (c.window_lo is None or c.window_lo <= na)]
        return StampBound(why=f"the stamp maps outside [request, answer] through every "
                              f"segment that can have been in force then "
                              f"({' | '.join(live) or 'none'})")
    if st == "presync":
        return StampBound(why=describe(m, x))
    return StampBound(int(m.lo_ns[x]), int(m.hi_ns[x]), describe(m, x))
