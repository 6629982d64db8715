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
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import I64
from bench.analysis.estimate import DEFAULT_DRIFT_PRIOR_PPM, Segment, check_resolution, fit_clock, fit_line
from bench.analysis.statuses import ResolutionBasis

RECENT = 256             # reads used to aim
PINNED = 1.5             # an edge window at most this many brackets wide is pinned: then ...
AIM_REACH = 0.75         # a slot aims at an edge up to this many periods past its centre: a 1 s
                         # clock read at 2 Hz has an edge in every other slot only (the slot's
                         # own half period widened the 2 Hz mean drift; a whole one bunched reads)
FLANK_EVERY = 3          # ... the read aimed at every this-many-th edge is a flank read
FLANK_TICKS = 8          # a flank stays the rate bound's movement over this many ticks outside


def grid_slot(origin_ns: int, k: int, period_ns: float, now_ns: int) -> tuple[int, int]:
    """The plan's slot after slot k of a clock read every `period_ns` from `origin_ns`: (its
    index, its centre origin + index·period). Each slot holds one probe, so the rate read is the
    plan's over any stretch of the run, however the probes move inside their slots (dithered,
    aimed, exploring, late). A slot whose window (centre ± period/2) has passed by `now_ns` (the
    device did not answer for a while) is skipped, not caught up with a run of reads."""
    k += 1
    if origin_ns + k * period_ns + period_ns / 2 < now_ns:
        k = math.ceil((now_ns - origin_ns - period_ns / 2) / period_ns)
    return k, int(origin_ns + k * period_ns)


class ProvenTick:
    """The tick to aim and explore with, as the run goes: the declared resolution, or the coarser
    one the values prove from the second distinct value on (the GCD of the gaps between them, as
    estimate.check_resolution takes it over the run). `update` takes the caller's growing list
    of reads, (s, e, value) tuples, and costs only the ones it has not seen."""

    def __init__(self, declared_ns: int):
        self.declared_ns = max(1, int(declared_ns))
        self.gcd = 0
        self.seen = 0

    def update(self, reads: Sequence[Sequence[int]]) -> int:
        if self.seen > len(reads):               # a new list: start again
            self.gcd, self.seen = 0, 0
        for k in range(max(1, self.seen), len(reads)):
            self.gcd = math.gcd(self.gcd, abs(int(reads[k][2]) - int(reads[k - 1][2])))
        self.seen = len(reads)
        return self.ns

    @property
    def ns(self) -> int:
        return max(self.declared_ns, self.gcd)


def explore_instant_ns(u: float, q: int, centre_ns: int, period_ns: float, dither: float) -> int:
    """An exploration read's instant in the slot centred on `centre_ns`, u uniform in [0, 1):
    uniform over a whole number of ticks around the centre (at least one, about 2·d·period), so
    its tick phase is uniform whatever the reads before it were, and every part of the tick, the
    one a small forward step shows in too, is sampled at the same rate."""
    q = max(1, int(q))
    window = q * max(1, int(2 * dither * period_ns // q))
    return int(centre_ns - window // 2 + u * window)


def detection_reads(step_ns: float, q: int, bracket_ns: float, width_ns: float,
                    p: float = 0.99) -> float:
    """Exploration reads after a step of size s until one contradicts the earlier segment with
    probability p (DESIGN.md, "Probing"): a read at a uniform tick phase does when it samples in
    the part of the tick where the old line and the stepped clock read differently by more than
    the bracket and the bound's width, of length |s| − b − w per tick (every read when
    |s| ≥ q + b + w). n = ln(1 − p) / ln(1 − (|s| − b − w)/q); T = n / r_explore."""
    s, qf = abs(float(step_ns)), float(q)
    f = min(1.0, max(0.0, (s - bracket_ns - width_ns) / qf))
    if f >= 1.0:
        return 1.0
    if f <= 0.0:
        return math.inf
    return math.log(1 - p) / math.log(1 - f)


EXPLORE_EVERY = 4        # every 4th probe of a coarse clock explores (bench/run/runner.py)
UNSEEN_P = 0.99           # the probability the unseen-step statement is made at
UNSEEN_WITHIN_S = 10.0    # ... for a step (or a blip) lasting at least this long


def unseen_step_ns(q: int, bracket_ns: float, width_ns: float, rate_hz: float,
                   p: float = UNSEEN_P, within_s: float = UNSEEN_WITHIN_S) -> int:
    """The smallest step X such that a step of at least X in either direction, lasting at least
    `within_s`, shows with probability >= p: the exploration reads in that time (every
    EXPLORE_EVERY-th read at `rate_hz`) each see it with probability (|s| − b − w)/q
    (detection_reads), so X = b + w + q·(1 − (1 − p)^(1/n)). Flank and aimed reads only add to
    that chance, so the statement is conservative; below X a step can hide."""
    n = max(1.0, float(within_s) * float(rate_hz) / EXPLORE_EVERY)
    f = 1.0 - (1.0 - p) ** (1.0 / n)
    return int(math.ceil(bracket_ns + width_ns + f * q))


def edge_window(seg: Segment, q: int, phase_ns: int, after_ns: int) -> tuple[int, int, int]:
    """(k-th edge index, a, b): bounds [a, b] on the reference instant of the first tick edge
    (device reading k·q + phase) whose earliest possible instant is at or after `after_ns`."""
    off = seg.offset_at(after_ns)
    k = math.ceil((after_ns + off.hi - phase_ns) / q)
    for _ in range(4):
        target = k * q + phase_ns
        # D(t) = t + offset(t); the edge solves it for the offset bounds near the edge
        # offset_at's bounds and point are whole ns (floored, ceiled, rounded): int() keeps them
        t_mid = target - int(seg.offset_at(target - int(off.point)).point)
        o = seg.offset_at(t_mid)
        a, b = target - int(o.hi), target - int(o.lo)
        if a >= after_ns:
            return k, a, b
        k += 1
    return k, a, b


def _aimed_start(a: int, b: int, k: int, B: int, margin: int = 0) -> int:
    """Where a read aimed at edge k (reference instant within [a, b]) starts: bisecting the
    window, except once it is pinned (at most PINNED brackets wide) at every FLANK_EVERY-th edge,
    where it goes on a flank, the two sides in turn: its bracket ends just before a, or starts
    just after b. There the line is certain of the reading, and a forward (before a) or backward
    (after b) step larger than b − a plus about a bracket reads differently, however far below a
    tick it is; a read at a random phase sees it with probability |s|/q, a bisecting read,
    straddling the old edge, never. Bisecting a pinned window gains little (it stays about a
    bracket wide), so the flanks cost a few % of width (benchmarks/README.md). `margin`: how
    far beyond the window the flank stays: the published model lets the offset move at the rate
    bound between reads, so a flank closer to the window than that movement since the nearest
    pins contradicts nothing."""
    if b - a > PINNED * B or k % FLANK_EVERY:
        return (a + b - B) // 2
    before = (k // FLANK_EVERY) % 2 == 0
    m = max(B // 4, int(margin))
    return a - B - m if before else b + m


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
    # the pins a flank is judged against are the edges a tick or two before: the rate bound
    # moves the offset that much over two ticks
    margin = B // 4 + int(FLANK_TICKS * seg._prior * 1e-6 * q)
    s = _aimed_start(a, b, k, B, margin)
    while s < earliest:                      # too close: aim at the next edge
        k, a, b = edge_window(seg, q, phase_ns, b + 1)
        s = _aimed_start(a, b, k, B, margin)
    return int(s)


def current_segment(s: I64, e: I64, v: I64, q: int, k: int, drift_prior_ppm: float,
                    uncertainty_ns: int, state: dict[str, Any] | None,
                    checked: tuple[int, str, ResolutionBasis] | None = None
                    ) -> tuple[Segment | None, int]:
    """The segment the latest reads belong to (line-model bounds) and the resolution it was
    fitted with, from the reads k.. on.

    With `state` (a dict the caller keeps per clock between calls) the segment found last time
    is extended by the reads since, when one line still fits them all (estimate.fit_line: one
    test and one fit instead of a segmentation search per read); when they do not fit, or the
    reads are not the ones seen before, the reads are segmented afresh (fit_clock) and the
    state remembers where the last segment starts."""
    qq, _, basis = check_resolution(v[k:], q) if checked is None else checked
    if state is not None and basis != "unproven":
        s0 = state.get("s_start")      # found by its instant: the caller's window may slide
        start = int(np.searchsorted(s, s0)) if s0 is not None else len(v)
        if state.get("q") == qq and start < len(v) and int(s[start]) == s0:
            start = max(start, k)
            keep = np.arange(start, len(v))
            if state.get("outliers"):        # the reads the segmentation set aside stay aside
                keep = keep[~np.isin(s[start:], state["outliers"])]
            sg = fit_line(s[keep], e[keep], v[keep], qq,
                          drift_prior_ppm=state.get("prior", drift_prior_ppm),
                          uncertainty_ns=uncertainty_ns)
            if sg is not None:
                state["s_start"] = int(s[start])
                return sg, qq
    fit = fit_clock(s[k:], e[k:], v[k:], q, drift_prior_ppm=drift_prior_ppm,
                    uncertainty_ns=uncertainty_ns, publish=False)
    if not fit.segments:
        return None, fit.resolution_ns
    sg = fit.segments[-1]
    if state is not None:
        state.clear()
        state.update(s_start=sg.start_ns, q=fit.resolution_ns, prior=fit.drift_prior_ppm,
                     outliers=[o["s_ns"] for o in fit.outliers if o["s_ns"] >= sg.start_ns])
    return sg, fit.resolution_ns


def next_probe_ns(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: int, now_ns: int,
                  typical_bracket_ns: int, min_gap_ns: int, *,
                  drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, uncertainty_ns: int = 0,
                  state: dict[str, Any] | None = None) -> int:
    """The reference instant at which to read next, from the raw ok reads so far (time order).
    `state`: a dict kept by the caller for this clock between calls (see current_segment)."""
    s, e, v = (np.asarray(x, dtype=np.int64) for x in (s, e, v))
    earliest = int(now_ns) + int(min_gap_ns)
    if len(v) == 0:
        return earliest
    k = max(0, len(v) - RECENT)          # the latest reads aim as well as all of them, in O(1)
    checked = check_resolution(v[k:], q)
    if checked[0] <= 2 * int(typical_bracket_ns):
        return earliest                  # every read straddles a tick edge anyway
    sg, qq = current_segment(s, e, v, q, k, drift_prior_ppm, uncertainty_ns, state, checked)
    if sg is None:
        return earliest
    phase = int(v[-1] % qq)
    return aim(sg, qq, phase, now_ns, typical_bracket_ns, min_gap_ns)
