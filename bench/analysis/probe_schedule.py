"""Tick-edge probing: when to read a coarse clock next so that the read cuts the region most.

A read of a clock with tick q says only on which side of a tick edge the device sampled: "before"
proves the edge came after s, "after" proves it came at or before e. With the current region the
next edge's reference instant is known to lie in [a, b] (from the offset bounds there). A read
whose bracket starts at s = (a + b − B)/2, with B the typical bracket, leaves at most
(b − a + B)/2 whichever way it answers: bisection, converging to about one bracket within a few
reads, where reads at random phases need hundreds (a random read lands within the uncertain
interval with probability (b − a)/q). Where the device samples within its bracket does not
change what a read proves (only s and e do), so it does not move the aim.

Once the window is pinned, flank reads stand just outside what the bounded-rate envelope allows,
where a step below a tick reads differently (_edge_plan; DESIGN.md, "Breaks localised: flank
reads").

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
from bench.analysis.envelope import Envelope
from bench.analysis.envelope import build as build_envelope
from bench.analysis.estimate import fit_clock
from bench.analysis.line_fit import fit_line
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Segment
from bench.analysis.resolution import check_resolution
from bench.analysis.statuses import ResolutionBasis

RECENT = 256             # reads used to aim
FLANKED = 16             # paired: an edge window at most this many brackets wide is flanked too
PINNED = 1.5             # one slot per edge: a window at most this many brackets wide is pinned
FLANK_EVERY = 3          # ... and the read aimed at every this-many-th pinned edge is a flank
FLANK_REACH = 8          # a flank stays within this many long brackets of the edge window
BURST_REACH_NS = 30_000_000   # a burst's planned reads at most this far apart
ENVELOPE_READS = 32      # the latest reads of the segment whose envelope places the flanks
AIM_REACH = 0.75         # a slot aims at an edge up to this many periods past its centre: a 1 s
                         # clock read at 2 Hz has an edge in every other slot only (the slot's
                         # own half period widened the 2 Hz mean drift; a whole one bunched reads)


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
    resolution.check_resolution takes it over the run). `update` takes the caller's growing list
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


def paired_slots(q: int, period_ns: float) -> bool:
    """Two slots or more per tick: each edge can get two aimed reads (_edge_plan)."""
    return q >= 2 * period_ns


def aim_from_ns(now_ns: int, centre_ns: int, q: int, period_ns: float) -> int:
    """From when a slot centred on `centre_ns` looks for its edge. A clock with an edge in
    every slot or more often: the edge nearest the centre (from half a tick or half a period
    before it). A clock with two slots or more per edge: right after the probe before, so two
    slots read the same edge, its flank and its bisecting read (aim); the reach past the centre
    (AIM_REACH) still keeps one probe per slot."""
    if paired_slots(q, period_ns):
        return int(now_ns)
    return max(int(now_ns), int(centre_ns) - int(min(q, period_ns)) // 2)


def explore_instant_ns(u: float, q: int, centre_ns: int, period_ns: float, dither: float) -> int:
    """An exploration read's instant in the slot centred on `centre_ns`, u uniform in [0, 1):
    uniform over a whole number of ticks around the centre (at least one, about 2·d·period), so
    its tick phase is uniform whatever the reads before it were, and every part of the tick, the
    one a small forward step shows in too, is sampled at the same rate."""
    q = max(1, int(q))
    window = q * max(1, int(2 * dither * period_ns // q))
    return int(centre_ns - window // 2 + u * window)


def _window(seg: Segment, q: int, phase_ns: int, k: int) -> tuple[int, int]:
    """Bounds [a, b] on the reference instant at which the device reads k·q + phase."""
    target = k * q + phase_ns
    # D(t) = t + offset(t); the edge solves it for the offset bounds near the edge
    # offset_at's bounds and point are whole ns (floored, ceiled, rounded): int() keeps them
    t_mid = target - int(seg.offset_at(target - int(seg.offset_at(target).point)).point)
    o = seg.offset_at(t_mid)
    return target - int(o.hi), target - int(o.lo)


def edge_window(seg: Segment, q: int, phase_ns: int, after_ns: int) -> tuple[int, int, int]:
    """(k-th edge index, a, b): bounds [a, b] on the reference instant of the first tick edge
    (device reading k·q + phase) whose earliest possible instant is at or after `after_ns`."""
    first = math.ceil((after_ns + seg.offset_at(after_ns).hi - phase_ns) / q)
    for k in range(first, first + 4):
        a, b = _window(seg, q, phase_ns, k)
        if a >= after_ns:
            break
    return k, a, b


def _envelope_edge(env: Envelope, target: int, side: int) -> int:
    """The instant t at which the envelope's bound on the offset brings the device to `target`:
    t = target − bound(t), side 1 its upper bound (the earliest instant the model lets the device
    reach target: reading target or more before it contradicts every clock it admits), side 0
    its lower bound (the latest instant it may still read below target). The bound moves at most
    R·|Δt|, so a few fixed-point steps settle it."""
    t = target - env.at(target)[side]
    for _ in range(3):
        t = target - env.at(t)[side]
    return int(t)


def _edge_plan(seg: Segment, env: Envelope | None, q: int, phase_ns: int, k: int, B: int,
               Bf: int, paired: bool, burst: int = 1) -> list[tuple[int, int]]:
    """The reads planned at edge k, in time order, as (start, how late it may start): bisecting
    reads pin the edge's window [a, b], flank reads, just outside what the bounded-rate envelope
    admits, catch a step (a forward one reads the later value before the edge, a backward one
    the earlier value after it). A flank allows for a bracket of Bf (a long one: a longer
    bracket reaching into the envelope contradicts nothing). A flank stays within FLANK_REACH
    long brackets of the window (a loose envelope, early in a segment, would put it where only
    huge steps show, and bisecting reads see those). An after-flank may start up to 2·Bf late
    (it is then further out, still outside): the bisecting read just before it, and the lead a
    probe needs, often leave no room for it on time.

    `paired` (two slots or more per edge): once the window is at most FLANKED brackets wide,
    a flank and a bisecting read at every edge, the flank first on the before side (edges 0 and
    3 of every 4, so that the exploration read, every 4th probe, does not always take the same
    side's flank), second on the after side; a wider window gets a bisecting read (the next
    read bisects again while the edge is still ahead). With bursts of two reads or more, both
    flanks and the bisecting read at every edge: a probe takes two of them, its reads apart
    (aim_pair). One slot per edge: a bisecting read, except at every FLANK_EVERY-th edge once the
    window is pinned (PINNED brackets), a flank, the sides in turn."""
    a, b = _window(seg, q, phase_ns, k)
    bisect = (a + b - B) // 2
    guard = max(1, B // 4)
    if env is None:
        return [(bisect, 0)]
    if paired:
        if b - a > FLANKED * B:
            return [(bisect, 0)]
        if burst >= 2:
            return [_before_flank(env, a, k * q + phase_ns, Bf, guard), (bisect, 0),
                    _after_flank(env, b, k * q + phase_ns, Bf, guard)]
        before = k % 4 in (0, 3)
    else:
        if b - a > PINNED * B or k % FLANK_EVERY:
            return [(bisect, 0)]
        before = (k // FLANK_EVERY) % 2 == 0
    target = k * q + phase_ns
    flank = (_before_flank(env, a, target, Bf, guard) if before
             else _after_flank(env, b, target, Bf, guard))
    if not paired:
        return [flank]
    return [flank, (bisect, 0)] if before else [(bisect, 0), flank]


def _before_flank(env: Envelope, a: int, target: int, Bf: int, guard: int) -> tuple[int, int]:
    """A before-flank's (start, lateness allowed): its bracket ends `guard` before the envelope's
    earliest instant, never closer to the line's window [a, .] than that, nor FLANK_REACH long
    brackets further."""
    near = a - Bf - guard
    edge = _envelope_edge(env, target, 1) - guard - Bf
    return max(min(edge, near), near - FLANK_REACH * Bf), 0


def _after_flank(env: Envelope, b: int, target: int, Bf: int, guard: int) -> tuple[int, int]:
    """An after-flank's (start, lateness allowed): `guard` after the envelope's latest instant,
    clamped to the line's window [., b] as _before_flank; it may start up to 2·Bf late."""
    near = b + guard
    edge = _envelope_edge(env, target, 0) + guard
    return min(max(edge, near), near + FLANK_REACH * Bf), 2 * Bf


def aim_pair(seg: Segment, q: int, phase_ns: int, now_ns: int, typical_bracket_ns: int,
             min_gap_ns: int, env: Envelope | None = None, long_bracket_ns: int = 0,
             paired: bool = False, last_start_ns: int | None = None, burst: int = 1
             ) -> tuple[int, int | None]:
    """The reference instants to send the next probe's first request and, for a burst, its
    last one, given the current segment and the bounded-rate envelope of its latest reads: the
    first planned read of the edges ahead (or of the one just passed, whose after-flank may
    still be due) that starts at or after the earliest instant allowed, or a little late where
    the plan allows it and the last read (starting at `last_start_ns`) was not that one; and
    the planned read after it when it is at least a long bracket and at most BURST_REACH later
    (else None: the burst's reads go back to back)."""
    earliest = int(now_ns) + int(min_gap_ns)
    B = max(1, int(typical_bracket_ns))
    if q <= 2 * B:
        return earliest, None
    off = seg.offset_at(earliest)
    if off.hi - off.lo >= q - B:
        return earliest, None
    Bf = max(B, int(long_bracket_ns))
    first = math.ceil((earliest + off.hi - phase_ns) / q) - 1     # the edge maybe just passed
    plan = [x for k in range(first, first + 6)
            for x in _edge_plan(seg, env, q, phase_ns, k, B, Bf, paired, burst)]
    for i, (s, late) in enumerate(plan):
        if s < earliest and not _late_allowed(s, late, earliest, last_start_ns, B):
            continue
        s = max(s, earliest)
        return int(s), _burst_last(plan, i, s, Bf, burst)
    return earliest, None


def _late_allowed(s: int, late: int, earliest: int, last_start_ns: int | None, B: int) -> bool:
    """May a planned read due at `s` (now past) still start at `earliest`? Where its plan
    allows `late` and the last read (starting at `last_start_ns`) was not that one."""
    return (s + late >= earliest and last_start_ns is not None
            and last_start_ns < s - B)


def _burst_last(plan: list[tuple[int, int]], i: int, s: int, Bf: int, burst: int) -> int | None:
    """For a burst, the planned read after plan[i] (starting at `s`) when it is at least a long
    bracket (`Bf`) and at most BURST_REACH_NS later; else None (back to back)."""
    nxt = plan[i + 1][0] if burst >= 2 and i + 1 < len(plan) else None
    if nxt is not None and not s + Bf <= nxt <= s + BURST_REACH_NS:
        return None
    return nxt


def current_segment(s: I64, e: I64, v: I64, q: int, k: int, drift_prior_ppm: float,
                    uncertainty_ns: int, state: dict[str, Any] | None,
                    checked: tuple[int, str, ResolutionBasis] | None = None
                    ) -> tuple[Segment | None, int]:
    """The segment the latest reads belong to (line-model bounds) and the resolution it was
    fitted with, from the reads k.. on.

    With `state` (a dict the caller keeps per clock between calls) the segment found last time
    is extended by the reads since, when one line still fits them all (line_fit.fit_line: one
    test and one fit instead of a segmentation search per read); when they do not fit, or the
    reads are not the ones seen before, the reads are segmented afresh (fit_clock) and the
    state remembers where the last segment starts."""
    qq, _, basis = check_resolution(v[k:], q) if checked is None else checked
    if state is not None and basis != "unproven":
        sg = _extended(s, e, v, qq, k, drift_prior_ppm, uncertainty_ns, state)
        if sg is not None:
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


def _extended(s: I64, e: I64, v: I64, qq: int, k: int, drift_prior_ppm: float,
              uncertainty_ns: int, state: dict[str, Any]) -> Segment | None:
    """The segment found last time (`state`) extended by the reads since, when these are the
    reads seen before and one line still fits them all (line_fit.fit_line); else None."""
    s0 = state.get("s_start")      # found by its instant: the caller's window may slide
    start = int(np.searchsorted(s, s0)) if s0 is not None else len(v)
    if not (state.get("q") == qq and start < len(v) and int(s[start]) == s0):
        return None
    start = max(start, k)
    keep = np.arange(start, len(v))
    if state.get("outliers"):        # the reads the segmentation set aside stay aside
        keep = keep[~np.isin(s[start:], state["outliers"])]
    sg = fit_line(s[keep], e[keep], v[keep], qq,
                  drift_prior_ppm=state.get("prior", drift_prior_ppm),
                  uncertainty_ns=uncertainty_ns)
    if sg is not None:
        state["s_start"] = int(s[start])
    return sg


def next_probe_pair(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: int, now_ns: int,
                    typical_bracket_ns: int, min_gap_ns: int, *,
                    drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, uncertainty_ns: int = 0,
                    state: dict[str, Any] | None = None, paired: bool = False, burst: int = 1
                    ) -> tuple[int, int | None]:
    """The reference instants at which to read next, from the raw ok reads so far (time order):
    the probe's first read and, for a burst whose reads the plan sets apart, its last (aim_pair).
    `state`: a dict kept by the caller for this clock between calls (see current_segment);
    `paired`: the plan has two slots or more per tick (aim_from_ns), so every edge gets a
    bisecting and a flank read (_edge_plan)."""
    s, e, v = (np.asarray(x, dtype=np.int64) for x in (s, e, v))
    earliest = int(now_ns) + int(min_gap_ns)
    if len(v) == 0:
        return earliest, None
    k = max(0, len(v) - RECENT)          # the latest reads aim as well as all of them, in O(1)
    checked = check_resolution(v[k:], q)
    if checked[0] <= 2 * int(typical_bracket_ns):
        return earliest, None            # every read straddles a tick edge anyway
    sg, qq = current_segment(s, e, v, q, k, drift_prior_ppm, uncertainty_ns, state, checked)
    if sg is None:
        return earliest, None
    phase = int(v[-1] % qq)
    inside = np.flatnonzero(s >= sg.start_ns)[-ENVELOPE_READS:]
    env = build_envelope(s[inside], e[inside], v[inside], qq, sg._prior) if len(inside) else None
    long = int(np.percentile(e[-20:] - s[-20:], 90))
    return aim_pair(sg, qq, phase, now_ns, typical_bracket_ns, min_gap_ns, env, long, paired,
                    int(s[-1]), burst)


def next_probe_ns(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: int, now_ns: int,
                  typical_bracket_ns: int, min_gap_ns: int, *,
                  drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, uncertainty_ns: int = 0,
                  state: dict[str, Any] | None = None, paired: bool = False) -> int:
    """The reference instant at which to read next (next_probe_pair's first, one read a probe)."""
    return next_probe_pair(s, e, v, q, now_ns, typical_bracket_ns, min_gap_ns,
                           drift_prior_ppm=drift_prior_ppm, uncertainty_ns=uncertainty_ns,
                           state=state, paired=paired)[0]
