"""What the values say about the clock's tick: the resolution to fit with (check_resolution: the
declared one, or the GCD of the gaps between distinct values where that is coarser; the reads'
span when every read gave one value), a lag of the reading behind its clock (lag_seen) and a
value that updates slower than its tick (update_bound), which a fit publishes as a resolution
finding (_lag_found).
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import I64
from bench.analysis.polygon import PPM
from bench.analysis.statuses import ResolutionBasis
from bench.units import fmt_ns


def observed_resolution(value_ns: npt.ArrayLike) -> int | None:
    """The step between the clock's distinct values (GCD of their gaps), or None when fewer
    than two distinct values were seen. The true tick divides every gap, so this is never finer
    than the truth: a bound on the tick from above, from two distinct values on."""
    # the gaps between consecutive reads, in any order, have the GCD of all pairwise gaps (each
    # pairwise gap is a sum of them): no sort needed; all zero means one distinct value
    g = int(np.gcd.reduce(np.abs(np.diff(np.asarray(value_ns, dtype=np.int64)))))
    return g or None


def check_resolution(value_ns: npt.ArrayLike, declared_ns: int) -> tuple[int, str, ResolutionBasis]:
    """(resolution to fit with, note, basis). The declaration is a claim: a tick coarser than
    declared breaks every proof made with the declared one. The tick the clock really has
    divides the gaps between its values, so max(declared, GCD of the gaps) is never finer than
    it, from the second distinct value on ("declared" when that is the declaration, "observed"
    when the values force a coarser one). With one distinct value nothing bounds the tick:
    "unproven", and nothing fitted from it is published as proven."""
    declared = max(1, int(declared_ns))
    obs = observed_resolution(value_ns)
    if obs is None:
        return declared, "", ResolutionBasis.UNPROVEN
    if obs <= declared:
        return declared, "", ResolutionBasis.DECLARED
    n = len(np.unique(np.asarray(value_ns)))
    return obs, (f"declared resolution {fmt_ns(declared)}, but the {n} distinct values seen are "
                 f"all whole multiples of {fmt_ns(obs)} apart: using {fmt_ns(obs)} "
                 f"({declared} -> {obs} ns)"), ResolutionBasis.OBSERVED


def _lag_found(s: I64, e: I64, v: I64, q: int, prior: float, publish: bool, note: str,
               basis: ResolutionBasis) -> tuple[int, int, str, ResolutionBasis]:
    """The lag the reads show and how often the value updates at most (_lag_and_update; only
    when publishing), with the resolution note and basis: a value that moves less often than
    its tick is a resolution finding."""
    seen, update = _lag_and_update(s, e, v, q, prior) if publish else (0, 0)
    if update:
        note, basis = _update_note(q, update, v), ResolutionBasis.EDGES
    return seen, update, note, basis


def _fit_resolution(raw_s: I64, raw_e: I64, v: I64, resolution_ns: int
                    ) -> tuple[int, str, ResolutionBasis]:
    """The tick to fit with (check_resolution), at least the reads' span when every read gave
    one value: then no break is invented (all undecided), whatever was declared."""
    q, note, basis = check_resolution(v, resolution_ns)
    if basis == ResolutionBasis.UNPROVEN and len(v):
        q = max(q, 2 * int(np.max(raw_e) - np.min(raw_s)) + 1)
    elif basis == ResolutionBasis.OBSERVED and int(v[0]) % q:
        return _off_grid(q, math.gcd(q, int(v[0]) % q))
    return q, note, basis


def _off_grid(q: int, g: int) -> tuple[int, str, ResolutionBasis]:
    """Values whose gaps are whole multiples of q but that are not themselves multiples of q
    (on a finer grid g, the GCD of q and their remainder): no tick of q floors the clock so; a
    value that updates every q or so and shows its clock then, to g, does (a declared 37 ms
    that moves once a second, issue 39). Between updates the clock runs up to about q past the
    value, and an update's step is a whole number of q within g of the update period, so each
    read stands for its clock within q + 2g above its value. Sound when the updates are
    periodic: an assumption, so the clock's bounds are "assumed" (basis "edges",
    _no_tick_fits)."""
    note = (f"values on a {fmt_ns(g)} grid move in whole steps of {fmt_ns(q)}: a value that "
            f"updates about every {fmt_ns(q)} and shows its clock then; each read stands for "
            f"its clock up to {fmt_ns(q + 2 * g)} above its value (periodic updates assumed)")
    return q + 2 * g, note, ResolutionBasis.EDGES


def _no_tick_fits(beyond: str, basis: ResolutionBasis, q: int, declared_ns: int) -> bool:
    """Values whose gaps say a tick coarser than the declared one (`basis` observed), on reads
    that still need a rate beyond the prior (`beyond`): the observed tick does not explain them
    either (a value that updates slower than its tick and shows its clock then, each gap a
    whole number of declared ticks near the update period: issue 39); or values off the grid
    of the tick their gaps show (basis "edges", _off_grid: periodic updates assumed). The
    clock's bounds are assumed (step_risk._downgraded)."""
    return basis == ResolutionBasis.EDGES or (
        bool(beyond) and basis == ResolutionBasis.OBSERVED and q > int(declared_ns))


LAG_SEEN_MIN = 3      # value jumps ahead of the elapsed time before a lag is believed


def update_bound(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, prior_ppm: float) -> int:
    """How long a value can stay shown, ns, from the spacing of its observed edges (0 with
    fewer than two): a value that updates every u (a device refreshing its clock every 1.5 s,
    shown to 1 s) changes only at update instants, u apart in its clock; two value changes, in
    (s_i, e_i+1] and (s_j, e_j+1], are distinct updates, so u ≤ (1 + R)·(e_j+1 − s_i), and the
    least such span bounds u. Each read then shows its clock at some instant up to u before its
    bracket (DESIGN.md, "A value that updates slower than its tick"). Sound when the updates are
    periodic: an assumption, so what rests on it is "assumed"."""
    ch = np.flatnonzero(np.diff(np.asarray(v, dtype=np.int64)) != 0)
    if len(ch) < 2:
        return 0
    span = np.asarray(e, dtype=np.int64)[ch[1:] + 1] - np.asarray(s, dtype=np.int64)[ch[:-1]]
    return int(math.ceil(float(span.min()) * (1 + float(prior_ppm) * PPM)))


def _lag_and_update(s: I64, e: I64, v: I64, q: int, prior_ppm: float) -> tuple[int, int]:
    """(the lag the values prove, lag_seen; the update period's bound from the edges when the
    value moves less often than its tick, update_bound, else 0)."""
    seen = lag_seen(s, e, v, q, prior_ppm)
    if not seen or not _slow_update_seen(s, e, v, q):
        return seen, 0
    update = update_bound(s, e, v, prior_ppm)
    return seen, update if update > q else 0


def _slow_update_seen(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: int) -> bool:
    """The values jump by two ticks or more between reads less than a tick apart, at least
    LAG_SEEN_MIN times: a value that moves less often than its tick (a fine tick read slower
    than it ticks never shows this, nor does one that flips late by a few ms)."""
    dv = np.diff(np.asarray(v, dtype=np.int64))
    elapsed = np.asarray(e, dtype=np.int64)[1:] - np.asarray(s, dtype=np.int64)[:-1]
    return int(np.count_nonzero((dv >= 2 * q) & (elapsed < q))) >= LAG_SEEN_MIN


def _update_note(q: int, update_ns: int, v: npt.ArrayLike) -> str:
    n = int(np.count_nonzero(np.diff(np.asarray(v, dtype=np.int64))))
    return (f"the value moves in steps of {fmt_ns(q)} but its {n} observed edges are spaced so "
            f"that it updates only every {fmt_ns(update_ns)} or less (a tick incommensurate "
            f"with the declared one): each read stands for the clock up to "
            f"{fmt_ns(update_ns)} before it")


def lag_seen(s: I64, e: I64, v: I64, q: int, prior_ppm: float) -> int:
    """The lag the values prove, ns (0 when they prove none): a reading floored to q of a clock
    moving at most 1 + R per unit of time cannot advance by more than (1 + R)·(e_j − s_i) + q
    between consecutive reads i, j; each time it does, the earlier reading was that much behind
    its clock (a tick that flips late, a value that updates slower than its tick, DESIGN.md).
    A single jump is a step; from LAG_SEEN_MIN of them on, the largest is a floor on the lag.
    Only a floor: the clock may lag more than any jump showed, so bounds fitted with it are
    "assumed"."""
    if len(v) < 2:
        return 0
    R = float(prior_ppm) * PPM
    dv = np.diff(v).astype(np.float64)
    x = (dv - q) / (1 + R) - (e[1:] - s[:-1]).astype(np.float64)
    ahead = x[x > 0]
    return int(math.ceil(float(ahead.max()))) if len(ahead) >= LAG_SEEN_MIN else 0
