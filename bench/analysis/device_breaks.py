"""Breaks one clock of a device shows that every clock of that device must split at
(DESIGN.md, "A break on another clock").

A reboot seen on an uptime counter, an agent restart, an outage (reads that failed in a row):
the device's other clocks may have stepped there too (a wall clock that comes back from a
restart wrong until NTP steps it back), and with two or more such steps inside one segment
the published two-sided bound, which holds with at most one unseen step, no longer does. So
those instants end every clock's segment, whatever its own reads say.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from bench.analysis.estimate import ClockFit
from bench.analysis.statuses import BreakKind

OUTAGE_MIN_FAILED = 2      # failed reads in a row (no read answered between them) that are an outage

Window = tuple[int, int]   # (after_ns, before_ns): the break happened inside


def outages(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, ok: npt.ArrayLike,
            min_failed: int = OUTAGE_MIN_FAILED) -> list[Window]:
    """Windows of the device's outages from all its read rows (any clock, any order): runs of
    at least `min_failed` failed rows with no answered read between them, from the end of the
    last answered read before to the start of the first after (a run at either end of the
    series splits nothing and is not listed). A single lost read is no outage."""
    s, e = np.asarray(s_ns, dtype=np.int64), np.asarray(e_ns, dtype=np.int64)
    good = np.asarray(ok, dtype=bool)
    order = np.argsort(s, kind="stable")
    s, e, good = s[order], e[order], good[order]
    out: list[Window] = []
    k, n = 0, len(s)
    while k < n:
        if good[k]:
            k += 1
            continue
        j = k
        while j < n and not good[j]:
            j += 1
        if j - k >= min_failed and k > 0 and j < n:
            out.append((int(np.max(e[:k][good[:k]])), int(s[j])))
        k = j
    return out


def reboots(fit: ClockFit | None) -> list[Window]:
    """The windows of the reboots a clock's fit found (an uptime counter reset)."""
    if fit is None:
        return []
    return [(b.after_ns, b.before_ns) for b in fit.breaks if b.kind == BreakKind.REBOOT]


def cuts_for(name: str, fits: Mapping[str, ClockFit | None],
             outage_windows: Sequence[Window]) -> list[Window]:
    """Where clock `name` must split: every other clock's reboots and the device's outages."""
    cuts = list(outage_windows)
    for other, fit in fits.items():
        if other != name:
            cuts.extend(reboots(fit))
    return sorted(set(cuts))


def splits_inside(fit: ClockFit | None, cuts: Sequence[Window]) -> bool:
    """Whether any cut's middle lies inside one of the fit's segments (else a refit with the
    cuts changes nothing)."""
    if fit is None:
        return False
    mids = [a // 2 + b // 2 for a, b in cuts]
    return any(sg.start_ns < m < sg.end_ns for sg in fit.segments for m in mids)
