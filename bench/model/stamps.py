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

import numpy as np

from bench.analysis.timeline_map import PRESYNC_BEFORE_NS, calibrations, describe, map_stamps


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


def bound_stamps(smp, results: dict, meta: dict | None, rows: list[int],
                 not_before_ns: list[int]) -> list[StampBound]:
    """Bounds of the stamps of event rows `rows` of `smp` (bench.model.rundata.Samples), each no
    earlier than its `not_before_ns` and no later than the answer that listed it (the row's
    e_ns); `results`: the run's fit per clock (bench.model.summary.ClockResult)."""
    out: list[StampBound | None] = [None] * len(rows)
    groups: dict[tuple[str, str], list[int]] = {}
    for n, j in enumerate(rows):
        clock = smp.clock[j]
        res = results.get(clock)
        if not smp.has_value[j]:
            out[n] = StampBound(why="the entry carries no stamp")
        elif res is None or res.fit is None or not res.fit.segments:
            out[n] = StampBound(why=f"clock {clock!r} has no fit in this run"
                                    + (f" ({res.note})" if res is not None and res.note else ""))
        else:
            groups.setdefault((clock, log_of(smp.raw[j])), []).append(n)
    for (clock, _), ns in groups.items():
        res = results[clock]
        cals = calibrations([("run", res, meta or {})])
        js = [rows[n] for n in ns]
        nb = np.array([not_before_ns[n] for n in ns], dtype=np.int64)
        na = np.asarray(smp.e_ns[js], dtype=np.int64)
        # a wall clock whose reads themselves show a time before it was ever set runs unset:
        # its stamps are in the same timescale as the reads, not pre-sync
        shown = min(c.span[0] + c.segment.offset_at(c.span[0]).lo for c in cals)
        wall = not res.meta.get("counter") and shown >= PRESYNC_BEFORE_NS
        m = map_stamps(cals, smp.value_ns[js], smp.resolution_ns[js], smp.seq[js], wall=wall,
                       not_after_ns=na, not_before_ns=nb, proven=True, clip=True)
        for x, n in enumerate(ns):
            st = m.status_of(x)
            if st == "unplaceable":
                live = [c.name for c in cals if (c.window_hi is None or c.window_hi >= nb[x])
                        and (c.window_lo is None or c.window_lo <= na[x])]
                out[n] = StampBound(why=f"the stamp maps outside [request, answer] through every "
                                        f"segment that can have been in force then "
                                        f"({' | '.join(live) or 'none'})")
            elif st == "presync":
                out[n] = StampBound(why=describe(m, x))
            else:
                out[n] = StampBound(int(m.lo_ns[x]), int(m.hi_ns[x]), describe(m, x))
    return out
