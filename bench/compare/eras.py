"""Firmware and identity eras of a series of runs (`rackclock trend`): where a device's firmware
or identity changed, and which runs the last one is judged against -- those since the previous
firmware change (the runs on the firmware before the current one), or a named baseline.

The reference value of a measure over several runs is their hull: the lowest lo and highest hi
of their bounds, the median of their points (events pooled for a latency quantile), so that a
verdict of REGRESSED means beyond every run of the reference era.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench.compare.measures import Measure, identities
from bench.model.rundata import Run

IDENTITY_KEYS = ("firmware", "vendor", "model", "serial")


@dataclass(frozen=True)
class Change:
    run: int              # index of the first run that shows it
    device: str
    what: str             # firmware, vendor, model, serial
    before: str
    after: str


def identity_changes(runs: list[Run]) -> list[Change]:
    """Every change of a device's identity from one run to the next (a device absent from a run
    keeps its last known identity)."""
    known: dict[str, dict] = {}
    out = []
    for i, r in enumerate(runs):
        for dev, ident in sorted(identities(r).items()):
            prev = known.get(dev)
            if prev is not None:
                out += [Change(i, dev, k, str(prev.get(k) or ""), str(ident.get(k) or ""))
                        for k in IDENTITY_KEYS if (prev.get(k) or "") != (ident.get(k) or "")]
            known[dev] = ident
    return out


def reference_runs(runs: list[Run], changes: list[Change], baseline: int | None = None
                   ) -> list[int]:
    """The indices of the runs the last run is judged against: `baseline` when named; else the
    runs since the firmware change before the current firmware (the first run when none)."""
    last = len(runs) - 1
    if baseline is not None:
        return [baseline]
    starts = sorted({c.run for c in changes if c.what == "firmware" and 0 < c.run <= last})
    if not starts:
        return [0]
    cur = starts[-1]
    prev = starts[-2] if len(starts) > 1 else 0
    return list(range(prev, cur))


def hull(ms: list[Measure]) -> Measure:
    """One reference measure from several runs' (see the module's docstring)."""
    if len(ms) == 1:
        return ms[0]
    return replace(ms[0], lo=min(m.lo for m in ms), hi=max(m.hi for m in ms),
                   point=float(np.median([m.point for m in ms])), **_events_of(ms),
                   span_s=min((m.span_s for m in ms if m.span_s), default=None))


def _events_of(ms: list[Measure]) -> dict[str, Any]:
    """The runs' events together: how many (None where none counted any) and their bounds."""
    return {"events": sum(m.events or 0 for m in ms) or None,
            "event_lo": tuple(x for m in ms for x in m.event_lo),
            "event_hi": tuple(x for m in ms for x in m.event_hi)}
