"""Tick-edge probing: when to read a coarse clock next so that the read cuts the region most.

A read of a clock with tick q says only on which side of a tick edge the device sampled: "before"
proves the edge came after s, "after" proves it came at or before e. With the current region the
next edge's reference instant is known to lie in [a, b] (from the offset bounds there). A read
whose bracket starts at s = (a + b − B)/2, with B the typical bracket, leaves at most
(b − a + B)/2 whichever way it answers: bisection, converging to about one bracket within a few
reads, where reads at random phases need hundreds (a random read lands within the uncertain
interval with probability (b − a)/q). Where the device samples within its bracket does not
change what a read proves (only s and e do), so it does not move the aim.

Clocks with q no coarser than a couple of brackets straddle an edge on every read: those are read
at the earliest allowed instant, as are clocks whose offset is not yet known to within a tick.
"""
from __future__ import annotations

import math

import numpy as np

from bench.estimate import DEFAULT_DRIFT_PRIOR_PPM, Segment, check_resolution, fit_clock

RECENT = 256             # reads used to aim


def edge_window(seg: Segment, q: int, phase_ns: int, after_ns: int) -> tuple[int, int, int]:
    """(k-th edge index, a, b): bounds [a, b] on the reference instant of the first tick edge
    (device reading k·q + phase) whose earliest possible instant is at or after `after_ns`."""
    off = seg.offset_at(after_ns)
    k = math.ceil((after_ns + off.hi - phase_ns) / q)
    for _ in range(4):
        target = k * q + phase_ns
        # D(t) = t + offset(t); the edge solves it for the offset bounds near the edge
        t_mid = target - seg.offset_at(target - off.point).point
        o = seg.offset_at(t_mid)
        a, b = target - o.hi, target - o.lo
        if a >= after_ns:
            return k, a, b
        k += 1
    return k, a, b


def aim(seg: Segment, q: int, phase_ns: int, now_ns: int, typical_bracket_ns: int,
        min_gap_ns: int) -> int:
    """The reference instant to send the next request, given the current segment."""
    earliest = int(now_ns) + int(min_gap_ns)
    B = max(1, int(typical_bracket_ns))
    if q <= 2 * B:
        return earliest
    off = seg.offset_at(earliest)
    if off.hi - off.lo >= q - B:
        return earliest
    k, a, b = edge_window(seg, q, phase_ns, earliest + B // 2)
    s = (a + b - B) // 2
    while s < earliest:                      # too close: aim at the next edge
        k, a, b = edge_window(seg, q, phase_ns, b + 1)
        s = (a + b - B) // 2
    return int(s)


def next_probe_ns(s, e, v, q, now_ns, typical_bracket_ns, min_gap_ns, *,
                  drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, uncertainty_ns: int = 0) -> int:
    """The reference instant at which to read next, from the raw ok reads so far (time order)."""
    s, e, v = (np.asarray(x, dtype=np.int64) for x in (s, e, v))
    earliest = int(now_ns) + int(min_gap_ns)
    if len(v) == 0:
        return earliest
    k = max(0, len(v) - RECENT)          # the latest reads aim as well as all of them, in O(1)
    if check_resolution(v[k:], q)[0] <= 2 * int(typical_bracket_ns):
        return earliest                  # every read straddles a tick edge anyway
    fit = fit_clock(s[k:], e[k:], v[k:], q, drift_prior_ppm=drift_prior_ppm,
                    uncertainty_ns=uncertainty_ns)
    if not fit.segments:
        return earliest
    qq = fit.resolution_ns
    phase = int(np.asarray(v, dtype=np.int64)[-1] % qq)
    return aim(fit.segments[-1], qq, phase, now_ns, typical_bracket_ns, min_gap_ns)
