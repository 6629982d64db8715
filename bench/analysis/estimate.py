"""Provable offset and drift bounds of one device clock from bracketed reads (DESIGN.md,
"The measurement model").

Within a segment the device clock is D(t) = t + θ + ρ·(t − t0). A read (s, e, v) with resolution q
says the device sampled at some instant in [s, e] and its true reading then lay in [v, v + q):

    θ + ρ·(s − t0) < v + q − s          θ + ρ·(e − t0) ≥ v − e

In the (ρ, θ) plane every read adds one upper and one lower half-plane. For a fixed ρ the offset is
bounded by the lower envelope g(ρ) = max_i(v_i − e_i − ρ·(e_i − t0)) (convex) and the upper one
h(ρ) = min_i(v_i + q − s_i − ρ·(s_i − t0)) (concave); the region is {g ≤ h} within the drift prior
|ρ| ≤ P, a convex polygon whose vertices are the breakpoints of both envelopes. The envelopes are
upper hulls of lines (a numpy sort by slope, then a monotone chain: O(n log n) per fit, no general
LP ever solved). The extremes of anything linear in
(θ, ρ) lie at the vertices: offset at any epoch, drift, and the linear-fractional map of a device
timestamp back to reference time. Hand-written because no library gives exact, outward-rounded
2-D half-plane intersection on int64 nanosecond data (scipy's HalfspaceIntersection needs an
interior point, i.e. an LP, and works in plain float). Epoch-scale integers (~1.8e18 ns) are
reduced in int64 by the epoch t0 and a first guess θ0 before anything becomes a float.

Wander: a real oscillator's frequency moves. We choose an *allowance*, not windows: the caller
states `wander_ns_per_s` = w, a bound on how far the frequency strays from its value at the epoch
over the segment (ns/s = ppb). Then |D(t) − (t + θ + ρ·(t − t0))| ≤ w·|t − t0|, every constraint is
loosened by that much, and (θ, ρ) are the tangent at the epoch: the true offset and the true
instantaneous drift at t0 stay inside the region; the reported drift bound is widened by w so that
it holds for the drift at every instant of the segment. It keeps all reads in one fit (the tick-edge
reads that pin a coarse clock are rare, and windows would throw them away), costs nothing when
w = 0, and a w too small shows up as a break ("unknown" kind), never as a silently wrong bound.
Its coverage and what the allowance costs in width: benchmarks/estimator_mc.py, measured in
benchmarks/README.md.

Resolution: the driver declares q; the values say what the clock delivers: the true tick divides
every gap between distinct values, so max(declared, GCD of the gaps) is never finer than it, from
the second distinct value on (check_resolution). A coarser q only loosens constraints while a
finer one than the truth breaks proofs; with one distinct value nothing bounds it ("unproven").

Segmentation (bench/analysis/segment.py): an empty region is a model break; the series is split there;
a read is set aside only when it is inconsistent with the segments on both sides of it. The
search asks "is this window feasible?" O(log n) times per run; that test is a 1-D cutting-plane
minimisation of g − h (numpy, no hull), and the hull is built once per segment.

What is published (fit_clock, Segment.proven_offset_at, Segment.proven_to_reference) holds even
with one break inside a segment that the reads could not show (a step below the detection
threshold, a change of frequency): it is the hull of the bounds from the reads on each side of
the instant. The drift prior is a checked assumption (fit_clock). DESIGN.md, "The measurement
model", has the reasoning.

Drift at the epoch is "assumed", never "proven" (RATE_CHANGE_ASSUMPTION). The drift at an
instant is the clock's instantaneous frequency there, and no set of reads bounds it more tightly
than the prior once two rate changes may go unseen (an NTP slew is two: it starts and it ends).
The argument: let the slew run at ρm over [t1, t2] around the epoch and at ρa outside. It moves
the offset by (ρm − ρa)·(t2 − t1) against the unslewed line; every read allows its bracket plus
its tick of slack, so whenever (ρm − ρa)·(t2 − t1) is small against the slack the reads leave
around the line (and no read, or too few to pin a slope, falls inside [t1, t2]) a line still
meets every read's constraint and the region is not empty: nothing is seen. For any ρm within the prior
there is such a short slew, so the set of drifts consistent with the reads at the epoch is the whole prior,
and beyond the prior
(a slew faster than it, equally unseen) nothing bounds it at all. The two-sided hull survives
one unseen change (one side of the epoch is clean), not two (neither is); a hull over more
sub-windows or chords of the offset bounds measures a mean frequency over a window, not the
frequency at an instant, and fails in the same way. So the published drift bound (the two-sided
hull, as tight as before) holds under a named assumption that no reads can check, "at most one
rate change inside the segment that the reads do not show", and says so: drift_status
"assumed" with that assumption in `drift_assumes` and in the summary's assumptions. The offsets,
the band, the maps and the break sizes stay "proven": a slew is continuous, the reads on each
side pin the offset near the instant, and the fuzz checks them under slews
(benchmarks/README.md).
"""
from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as _dc_replace
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from bench.analysis import envelope as _envelope
from bench.analysis import rate_check as _rate
from bench.analysis import segment as _seg
from bench.analysis.arrays import F64, I64, Idx
from bench.analysis.statuses import BoundStatus, BreakKind, ResolutionBasis, Verdict, worst
from bench.analysis.unseen import unseen_step_ns
from bench.units import fmt_ns

PPM = 1e-6
TOL_NS = 1e-3            # float slack when deciding a region is non-empty, ns
SMALL_WINDOW = 48        # reads up to which feasibility is tested on the hull, not by bisection
DEFAULT_DRIFT_PRIOR_PPM = 600.0   # crystal tolerance (100 ppm) + an NTP slew (500 ppm): see below
WIDE_PRIOR_FACTOR = 10   # the wider range tried before a break or outlier is believed
MIN_DECIDED_READS = 4    # a segment beside a break with fewer reads could be a burst of bad reads
STATUSES = tuple(BoundStatus)
SIDE_READS = 4096        # reads on each side of an instant its published bound is fitted from
RATE_CHANGE_ASSUMPTION = ("at most one rate change inside the segment that the reads do not "
                          "show (an unseen slew, two changes, could put the drift at the epoch "
                          "anywhere within the prior)")


SEARCH_LIMIT_NS = 2 ** 62      # instants a stamp search may try (int64 arithmetic on reads)

Env = tuple[F64, F64, F64]         # an upper envelope: (slopes, intercepts, breakpoints)
EnvList = tuple[list[float], list[float], list[float]]     # the same in plain lists
Halves = tuple[int, int, float, float, bool]    # _halves: offset lo, hi, drift lo, hi, touches
Side = tuple[int, int, float, float]             # _side: offset lo, hi, drift lo, hi


@dataclass(frozen=True)
class Bound:
    """lo <= truth <= hi is proven; point is a point estimate inside."""
    lo: float
    hi: float
    point: float

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def magnitude(self) -> float:
        """The largest |value| the bounds allow."""
        return max(abs(self.lo), abs(self.hi))

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    def as_dict(self) -> dict[str, float]:
        return {"lo": self.lo, "hi": self.hi, "point": self.point}


# -- envelopes and the polygon ---------------------------------------------------------------

def _max_envelope(m: F64, c: F64) -> Env:
    """Upper envelope of lines y = m·x + c: (slopes, intercepts, breakpoints), slopes ascending."""
    order = np.lexsort((c, m))
    m, c = m[order], c[order]
    keep = np.ones(len(m), bool)
    keep[:-1] = m[1:] != m[:-1]            # equal slopes: the last (largest c) wins
    hm, hc = _hull(m[keep].tolist(), c[keep].tolist())
    M, C = np.array(hm), np.array(hc)
    X = (C[:-1] - C[1:]) / (M[1:] - M[:-1])
    return M, C, X


def _hull(m: list[float], c: list[float]) -> tuple[list[float], list[float]]:
    """The upper hull of lines with distinct slopes, ascending: the lines that make the envelope."""
    hm: list[float] = []
    hc: list[float] = []
    for mk, ck in zip(m, c):
        while len(hm) >= 2:
            mi, ci, mj, cj = hm[-2], hc[-2], hm[-1], hc[-1]
            if (ci - ck) * (mj - mi) <= (ci - cj) * (mk - mi):
                hm.pop()
                hc.pop()
            else:
                break
        hm.append(mk)
        hc.append(ck)
    return hm, hc


def _envelope_lists(m: list[float], c: list[float]) -> EnvList:
    """_max_envelope in plain Python lists, bit for bit the same (the same float operations in
    the same order): below a few hundred lines numpy's per-call cost is most of the time, and
    the segmentation search and the fits call this on windows of tens of reads."""
    pairs = sorted(zip(m, c))
    dm: list[float] = []
    dc: list[float] = []
    for mk, ck in pairs:
        if dm and dm[-1] == mk:            # equal slopes: the last (largest c) wins
            dc[-1] = ck
        else:
            dm.append(mk)
            dc.append(ck)
    hm, hc = _hull(dm, dc)
    X = [(hc[i] - hc[i + 1]) / (hm[i + 1] - hm[i]) for i in range(len(hm) - 1)]
    return hm, hc, X


def _eval_lists(env: EnvList, x: float) -> float:
    M, C, X = env
    k = bisect_left(X, x)
    return M[k] * x + C[k]


LIST_ENVELOPE_MAX = 512   # lines up to which the envelope is built in plain Python


def _within(m: F64, c: F64, P: float) -> tuple[list[float], list[float]]:
    """The lines y = m·x + c that are not below one other line at both x = −P and x = P (as
    lists). A line below another at both ends is below it on all of [−P, P], so the upper
    envelope there is the same without it; most reads' lines go this way, which keeps the
    envelope's Python loop short."""
    if len(m) < 8:
        return m.tolist(), c.tolist()
    a, b = c - m * P, c + m * P
    order = np.lexsort((-b, -a))            # by the value at −P, highest first
    bs = b[order]
    keep = np.empty(len(bs), bool)
    keep[0] = True
    keep[1:] = bs[1:] > np.maximum.accumulate(bs)[:-1]
    k = order[keep]
    return m[k].tolist(), c[k].tolist()


def _envelope_members(m: F64, c: F64, lo: float, hi: float) -> Idx:
    """Indices of the lines y = m·x + c on their upper envelope somewhere in [lo, hi] (a little
    more is kept, never less: a line within rounding of the envelope stays)."""
    order = np.lexsort((c, m))
    ms, cs = m[order], c[order]
    keep = np.ones(len(ms), bool)
    keep[:-1] = ms[1:] != ms[:-1]
    order, ms, cs = order[keep], ms[keep].tolist(), cs[keep].tolist()
    hk: list[int] = []
    for k, (mk, ck) in enumerate(zip(ms, cs)):
        while len(hk) >= 2:
            i, j = hk[-2], hk[-1]
            mi, ci, mj, cj = ms[i], cs[i], ms[j], cs[j]
            # j is dropped only when k passes above it by more than rounding
            if (ci - ck) * (mj - mi) < (ci - cj) * (mk - mi) - 1e-9 * (1 + abs(ci - cj) * abs(mk - mi)):
                hk.pop()
            else:
                break
        hk.append(k)
    H = np.array(hk)
    M, C = np.array(ms)[H], np.array(cs)[H]
    X = (C[:-1] - C[1:]) / (M[1:] - M[:-1])
    left = np.concatenate(([-np.inf], X))
    right = np.concatenate((X, [np.inf]))
    pad = 1e-6 * (1 + abs(lo) + abs(hi))
    on = (left <= hi + pad) & (right >= lo - pad)
    members: Idx = order[H[on]]
    return members


def _eval_env(env: Env, x: F64) -> F64:
    M, C, X = env
    k = np.searchsorted(X, x)
    return M[k] * x + C[k]


class _Window:
    """The constraints of some reads, relative to epoch t0 (ns) and offset guess theta0 (ns).
    Coordinates: x = drift in ppm, y = offset at t0 minus theta0, ns."""

    def __init__(self, s: I64, e: I64, v: I64, q: int, t0: int, wander_ns_per_s: float,
                 prior_ppm: float):
        self.t0 = int(t0)
        self.theta0 = int(v[0]) - (int(s[0]) + int(e[0])) // 2
        self.q = int(q)
        self.w = float(wander_ns_per_s) * 1e-9
        self.prior = float(prior_ppm)
        a = (s - self.t0).astype(np.float64)
        b = (e - self.t0).astype(np.float64)
        self.alpha = a * PPM                                     # upper: y <= U - alpha·x
        self.beta = b * PPM                                      # lower: y >= L - beta·x
        self.U = ((v - s) - self.theta0 + self.q).astype(np.float64)
        self.L = ((v - e) - self.theta0).astype(np.float64)
        if self.w:          # (adding 0.0 would change no value: skipped when there is none)
            self.U += self.w * np.abs(a)
            self.L -= self.w * np.abs(b)

    def at_epoch(self, s: I64, e: I64, t0: int) -> _Window:
        """The same constraints relative to another epoch (no wander: U and L do not depend on
        it), computed as __init__ would, so the same values bit for bit."""
        assert not self.w
        out = object.__new__(_Window)
        out.__dict__.update(self.__dict__)
        out.t0 = int(t0)
        out.alpha = (s - out.t0).astype(np.float64) * PPM
        out.beta = (e - out.t0).astype(np.float64) * PPM
        return out

    def core(self, prior_ppm: float) -> Idx:
        """Positions of the reads whose constraints bound the region for drift within
        ±prior_ppm: the others are implied by them (only without wander, whose allowance
        depends on the epoch)."""
        lo = _envelope_members(-self.beta, self.L, -prior_ppm, prior_ppm)
        up = _envelope_members(self.alpha, -self.U, -prior_ppm, prior_ppm)
        return np.union1d(lo, up)

    def feasible_x(self, hint: float | None = None, iters: int = 200) -> float | None:
        """A drift (ppm) at which the region is non-empty, or None when it is empty.

        d(x) = g(x) − h(x) is convex and piecewise linear: cutting planes in one dimension (the
        tangents at the ends of the bracket meet below the minimum; probe there, keep the side
        the slope points to) stop at the first x with d <= TOL or when the tangents prove
        d > TOL everywhere. O(n) numpy per step and no hull: the cheap test the segmentation
        search calls many times (a warm `hint` usually answers in one step). Undecided after
        `iters` steps counts as empty: a needless split, never a fit across a break."""
        lo, hi = -self.prior, self.prior
        if hint is not None and lo < hint < hi:
            d, sl = self._probe(hint)
            if d <= TOL_NS:
                return hint
            if sl == 0:
                return None
            lo, hi = (lo, hint) if sl > 0 else (hint, hi)
        d_lo, s_lo = self._probe(lo)
        if d_lo <= TOL_NS:
            return lo
        if s_lo >= 0:
            return None
        d_hi, s_hi = self._probe(hi)
        if d_hi <= TOL_NS:
            return hi
        if s_hi <= 0:
            return None
        return self._cutting_planes((lo, d_lo, s_lo), (hi, d_hi, s_hi), iters)

    def _probe(self, x: float) -> tuple[float, float]:
        """d(x) = g(x) − h(x) and its slope there."""
        lv = self.L - self.beta * x
        uv = self.U - self.alpha * x
        i, j = int(np.argmax(lv)), int(np.argmin(uv))
        return float(lv[i] - uv[j]), float(self.alpha[j] - self.beta[i])

    def _cutting_planes(self, left: tuple[float, float, float], right: tuple[float, float, float],
                        iters: int) -> float | None:
        """feasible_x's search between (x, d, slope) ends with d > TOL, slopes − and +."""
        (lo, d_lo, s_lo), (hi, d_hi, s_hi) = left, right
        for _ in range(iters):
            xc = (d_hi - d_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi)
            if d_lo + s_lo * (xc - lo) > TOL_NS:
                return None                      # the tangents meet above TOL: d > TOL
            x = xc if lo < xc < hi else (lo + hi) / 2
            if x in (lo, hi):
                return None                      # no float left between them
            d, sl = self._probe(x)
            if d <= TOL_NS:
                return x
            if sl > 0:
                hi, d_hi, s_hi = x, d, sl
            elif sl < 0:
                lo, d_lo, s_lo = x, d, sl
            else:
                return None
        return None

    def vertices(self, tol: float = TOL_NS) -> F64 | None:
        """x of the polygon's vertices (ascending, first and last are the drift bounds), or None
        when the region is empty (g − h > tol everywhere)."""
        P = self.prior
        if len(self.L) <= LIST_ENVELOPE_MAX:
            return self._vertices_lists(tol)
        genv = _max_envelope(-self.beta, self.L)
        henv = _max_envelope(self.alpha, -self.U)
        xs = np.concatenate(([-P, P], genv[2], henv[2]))
        xs = np.unique(xs[(xs >= -P) & (xs <= P)])
        d = _eval_env(genv, xs) + _eval_env(henv, xs)            # g - h
        ok = np.flatnonzero(d <= tol)
        if len(ok) == 0:
            return None
        k0, k1 = ok[0], ok[-1]
        lo, hi = xs[k0], xs[k1]
        if k0 > 0 and d[k0] < 0:
            lo = xs[k0 - 1] + (xs[k0] - xs[k0 - 1]) * d[k0 - 1] / (d[k0 - 1] - d[k0])
        if k1 < len(xs) - 1 and d[k1] < 0:
            hi = xs[k1] + (xs[k1 + 1] - xs[k1]) * d[k1] / (d[k1] - d[k1 + 1])
        inner = xs[k0:k1 + 1]
        inner = inner[(inner > lo) & (inner < hi)]
        # nudge the drift bounds outward by more than the interpolation's rounding
        lo, hi = max(-P, lo - 1e-9 * (1 + abs(lo))), min(P, hi + 1e-9 * (1 + abs(hi)))
        return np.unique(np.concatenate(([lo], inner, [hi])))

    def _vertices_lists(self, tol: float) -> F64 | None:
        """vertices() on plain Python floats: the same operations on the same values, so the
        same result bit for bit (tests/test_estimate_fast.py compares them)."""
        P = self.prior
        genv = _envelope_lists(*_within(-self.beta, self.L, P))
        henv = _envelope_lists(*_within(self.alpha, -self.U, P))
        xs = sorted({x for x in (-P, P, *genv[2], *henv[2]) if -P <= x <= P})
        d = [_eval_lists(genv, x) + _eval_lists(henv, x) for x in xs]
        ok = [k for k, dk in enumerate(d) if dk <= tol]
        if not ok:
            return None
        k0, k1 = ok[0], ok[-1]
        lo, hi = xs[k0], xs[k1]
        if k0 > 0 and d[k0] < 0:
            lo = xs[k0 - 1] + (xs[k0] - xs[k0 - 1]) * d[k0 - 1] / (d[k0 - 1] - d[k0])
        if k1 < len(xs) - 1 and d[k1] < 0:
            hi = xs[k1] + (xs[k1 + 1] - xs[k1]) * d[k1] / (d[k1] - d[k1 + 1])
        inner = [x for x in xs[k0:k1 + 1] if lo < x < hi]
        lo, hi = max(-P, lo - 1e-9 * (1 + abs(lo))), min(P, hi + 1e-9 * (1 + abs(hi)))
        return np.array(sorted({lo, *inner, hi}))

    def chains(self, x: F64) -> tuple[F64, F64]:
        """g(x) and h(x) from every constraint (not only the hull), so hull rounding cannot
        shrink the bounds."""
        g = np.max(self.L[None, :] - np.outer(x, self.beta), axis=1)
        h = np.min(self.U[None, :] - np.outer(x, self.alpha), axis=1)
        return g, h


def _centroid(x: F64, g: F64, h: F64) -> tuple[float, float]:
    """Centroid of the polygon between chains g <= h over vertices x (coordinates scaled)."""
    if len(x) == 1:
        return float(x[0]), float((g[0] + h[0]) / 2)
    # plain Python floats: the polygon has a few tens of vertices at most, where numpy's
    # per-call cost would be most of the time
    xl, gl, hl = list(map(float, x)), list(map(float, g)), list(map(float, h))
    px, py = xl + xl[::-1], gl + hl[::-1]
    n = len(px)
    mx, my = math.fsum(px) / n, math.fsum(py) / n
    sx = max(max(px) - min(px), 1e-300)
    sy = max(max(py) - min(py), 1e-300)
    X = [(a - mx) / sx for a in px]
    Y = [(b - my) / sy for b in py]
    A = cx = cy = 0.0
    for k in range(n):
        x0, y0, x1, y1 = X[k], Y[k], X[k - n + 1], Y[k - n + 1]
        cr = x0 * y1 - x1 * y0
        A += cr
        cx += (x0 + x1) * cr
        cy += (y0 + y1) * cr
    A /= 2
    if abs(A) < 1e-9:
        return mx, my
    return cx / (6 * A) * sx + mx, cy / (6 * A) * sy + my


@dataclass
class _Cache:
    """Kept with a segment's reads (Segment._cache): _halves' answer per instant, and _side's
    (window, vertices) per read set."""
    halves: dict[int, Halves | None] = field(default_factory=dict)
    sides: dict[tuple[int, bytes], tuple[_Window, F64 | None]] = field(default_factory=dict)
    # proven_sides_many's table, with the envelope it was made of (a replaced segment shares
    # its cache)
    pieces: list[tuple[_envelope.TwoSided, _envelope.Pieces | None]] = field(
        default_factory=list)


# -- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    start_ns: int
    end_ns: int
    reads: int
    epoch_ns: int
    offset_ns: Bound
    drift_ppm: Bound
    jitter_ns: dict[str, float]
    bracket_ns: dict[str, float]
    resolution_ns: int
    resolution_note: str
    offset_status: BoundStatus = BoundStatus.PROVEN     # see fit_clock
    drift_status: BoundStatus = BoundStatus.PROVEN
    drift_assumes: str = ""           # what the drift bound rests on beyond the model
    mean_drift: dict[str, Any] | None = None    # proven mean frequency error over a window (_mean_drift)
    offset_line: Bound | None = None  # the single line's offset at the epoch: no unseen break
    rate_needed_ppm: float | None = None   # the least rate bound the reads are consistent with
    span_offset: Bound | None = None  # every offset the proven bound allows, first to last read
    _x: tuple[float, ...] = field(default=(), repr=False, compare=False)  # polygon vertices: drift, ppm
    _g: tuple[float, ...] = field(default=(), repr=False, compare=False)  # lower chain, ns (- theta0)
    _h: tuple[float, ...] = field(default=(), repr=False, compare=False)  # upper chain, ns (- theta0)
    _theta0: int = field(default=0, repr=False, compare=False)
    _w: float = field(default=0.0, repr=False, compare=False)     # wander allowance, ns per ns
    _reads: tuple[I64, ...] = field(default=(), repr=False, compare=False)  # (s, e, v) of its reads
    _prior: float = field(default=DEFAULT_DRIFT_PRIOR_PPM, repr=False, compare=False)
    _cache: _Cache = field(default_factory=_Cache, repr=False, compare=False)   # _halves'
    _env: _envelope.TwoSided | None = field(default=None, repr=False, compare=False)  # published

    def proven_offset_at(self, t_ns: int) -> Bound | None:
        """Offset bound at t_ns under the published model (bench.analysis.envelope.TwoSided):
        the offset moves at most the rate bound, with at most one step inside the segment that
        no read showed; None when a side of t has no read. Segments fitted without publishing
        (the probe schedule's) have no envelope and give the hull of the two sides' lines."""
        if self._env is not None:
            b = self._env.at(int(t_ns))
            if b is None:
                return None
            return Bound(b[0], b[1], min(max(self.offset_at(int(t_ns)).point, b[0]), b[1]))
        s, e, v = self._reads
        h = _halves(s, e, v, self.resolution_ns, int(t_ns), self._w * 1e9, self._prior, self._cache)
        if h is None:
            return None
        p = min(max(self.offset_at(int(t_ns)).point, h[0]), h[1])
        return Bound(h[0], h[1], p)

    def offset_at(self, t_ns: int) -> Bound:
        """Bounds on device minus reference at reference instant t_ns."""
        dt = int(t_ns) - self.epoch_ns
        fdt = float(dt)
        # plain floats over the polygon's few vertices: numpy's per-call cost would be most of
        # the time (the probe schedule asks this several times per probe); the same operations
        k = [x * PPM * fdt for x in self._x]
        slack = self._w * abs(dt)
        lo = self._theta0 + math.floor(min(map(operator.add, self._g, k)) - slack - TOL_NS)
        hi = self._theta0 + math.ceil(max(map(operator.add, self._h, k)) + slack + TOL_NS)
        p = self.offset_ns.point - self._theta0 + self.drift_ppm.point * PPM * dt
        point = min(max(self._theta0 + round(p), lo), hi)
        return Bound(lo, hi, point)

    def offset_bounds_many(self, t_ns: npt.ArrayLike) -> tuple[I64, I64]:
        """(lo, hi) of `offset_at` at many instants at once: the same operations on arrays
        (identical results), for exports of 10^6 instants (bench.model.phase_export)."""
        dt = np.asarray(t_ns, dtype=np.int64) - np.int64(self.epoch_ns)
        fdt = dt.astype(np.float64)
        x = np.asarray(self._x, dtype=np.float64)[:, None] * PPM
        k = x * fdt[None, :]
        slack = self._w * np.abs(fdt)
        g = np.asarray(self._g, dtype=np.float64)[:, None]
        h = np.asarray(self._h, dtype=np.float64)[:, None]
        lo = np.floor(np.min(g + k, axis=0) - slack - TOL_NS).astype(np.int64) + self._theta0
        hi = np.ceil(np.max(h + k, axis=0) + slack + TOL_NS).astype(np.int64) + self._theta0
        return lo, hi

    def to_reference(self, value_ns: int, resolution_ns: int) -> tuple[int, int]:
        """Reference interval [lo, hi] ns of a device timestamp whose true reading lay in
        [value, value + resolution)."""
        x = np.concatenate((self._x, self._x))
        y = np.concatenate((self._g, self._h))
        den = 1.0 + x * PPM
        base = int(value_ns) - self.epoch_ns - self._theta0
        t_lo = (float(base) - y) / den
        t_hi = (float(base + int(resolution_ns)) - y) / den
        lo, hi = float(np.min(t_lo)), float(np.max(t_hi))
        f = self._w / max(1e-12, 1.0 - self._w - float(np.max(np.abs(x))) * PPM)
        lo -= f * abs(lo) + TOL_NS
        hi += f * abs(hi) + TOL_NS
        return self.epoch_ns + math.floor(lo), self.epoch_ns + math.ceil(hi)

    def proven_span(self) -> tuple[int, int] | None:
        """The instants where proven_offset_at can answer (a read ended by t and one started at
        or after it): from the first read's end to the last read's start (gaps of reads set
        aside inside it answer None); None where no instant has both."""
        if self._env is not None:
            two, env = self._env, self._env.env
            if not len(two.e) or not len(two.s):
                return None
            a, b = env.t_ref + math.ceil(float(two.e[0])), env.t_ref + math.floor(float(two.s[-1]))
        elif len(self._reads) == 3 and len(self._reads[0]):
            a, b = int(np.min(self._reads[1])), int(np.max(self._reads[0]))
        else:
            return None
        return (a, b) if a <= b else None

    def proven_to_reference(self, value_ns: int, resolution_ns: int, iters: int = 16
                            ) -> tuple[int, int] | None:
        """Reference interval of a device timestamp (true reading in [value, value + q)) that
        holds with one unseen break in the segment, or None where it cannot be bounded.

        The clock is monotone, so an instant t whose proven offset puts D(t) below the value is
        before the stamp, and one that puts D(t) at or above value + q is after it; each such
        instant is a valid bound whatever the others are. The search starts from the line
        model's interval and keeps the tightest instants found (each costs two fits)."""
        lo, hi = self.proven_sides(value_ns, resolution_ns, iters)
        return None if lo is None or hi is None else (lo, hi)

    def proven_sides(self, value_ns: int, resolution_ns: int, iters: int = 16
                     ) -> tuple[int | None, int | None]:
        """proven_to_reference's two ends apart: each None where no instant of proven_span
        is proven before (lo) or after (hi) the stamp. The search never steps past the span's
        ends, where proven_offset_at has no answer (it used to jump over a short stretch of
        instants that bound the stamp and give up: the caller fell back on the line, which an
        unseen step inside the segment can put off by the step's size)."""
        V, Vq = int(value_ns), int(value_ns) + max(1, int(resolution_ns))
        lo0, hi0 = self.to_reference(V, resolution_ns)
        span = self.proven_span()
        if span is None:
            return None, None
        first, last = span

        def before(t: int) -> bool:
            b = self.proven_offset_at(t)
            return b is not None and t + b.hi < V

        def after(t: int) -> bool:
            b = self.proven_offset_at(t)
            return b is not None and t + b.lo >= Vq

        def search(start: int, sign: int, test: Callable[[int], bool]) -> int | None:
            step = max(hi0 - lo0, 1_000_000)
            edge = first if sign < 0 else last
            t = min(max(start, first), last)
            start = t
            for _ in range(64):
                if abs(t) > SEARCH_LIMIT_NS:       # beyond int64 instants: not bounded here
                    return None
                if test(t):
                    break
                if t == edge:
                    return None
                t = max(t - step, edge) if sign < 0 else min(t + step, edge)
                step *= 2
            else:
                return None
            good, bad = t, start
            if good == bad:
                return good
            for _ in range(iters):
                mid = (good + bad) // 2
                if mid in (good, bad):
                    break
                if test(mid):
                    good = mid
                else:
                    bad = mid
            return good

        return search(lo0, -1, before), search(hi0, +1, after)

    def proven_sides_many(self, value_ns: npt.ArrayLike, resolution_ns: npt.ArrayLike
                          ) -> tuple[I64, I64, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """proven_sides over arrays, in one vectorised pass (bench.analysis.envelope.pieces):
        (lo, hi, has_lo, has_hi), each end the tightest instant of proven_span whose proven
        bound shows it before (after) the stamp, where one is (proven_sides' bisection stops
        short of it). Segments without a published envelope take proven_sides per stamp."""
        v = np.asarray(value_ns, dtype=np.int64).reshape(-1)
        q = np.broadcast_to(np.asarray(resolution_ns, dtype=np.int64), v.shape)
        if self._env is None:
            sides = [self.proven_sides(int(a), int(b)) for a, b in zip(v, q)]
            has_lo = np.array([s[0] is not None for s in sides], dtype=bool)
            has_hi = np.array([s[1] is not None for s in sides], dtype=bool)
            lo = np.array([s[0] or 0 for s in sides], dtype=np.int64)
            hi = np.array([s[1] or 0 for s in sides], dtype=np.int64)
            return lo, hi, has_lo, has_hi
        kept = [pc for env, pc in self._cache.pieces if env is self._env]
        if kept:
            p = kept[0]
        else:
            p = _envelope.pieces(self._env)
            self._cache.pieces[:] = [(self._env, p)]
        if p is None:
            z = np.zeros(len(v), dtype=np.int64)
            return z, z.copy(), np.zeros(len(v), bool), np.zeros(len(v), bool)
        return _envelope.proven_sides_many(p, v, q)

    def as_dict(self) -> dict[str, Any]:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "reads": self.reads,
                "epoch_ns": self.epoch_ns, "offset_ns": self.offset_ns.as_dict(),
                "drift_ppm": self.drift_ppm.as_dict(), "jitter_ns": dict(self.jitter_ns),
                "bracket_ns": dict(self.bracket_ns), "resolution_ns": self.resolution_ns,
                "resolution_note": self.resolution_note, "offset_status": self.offset_status,
                "drift_status": self.drift_status,
                **({"drift_assumes": self.drift_assumes} if self.drift_assumes else {}),
                **({"mean_drift_ppm": dict(self.mean_drift)} if self.mean_drift else {}),
                **({"offset_line_ns": self.offset_line.as_dict()} if self.offset_line else {}),
                **({"gaps_ns": [list(g) for g in self._env.gaps]}
                   if self._env is not None and self._env.gaps else {}),
                **({"rate_needed_ppm": self.rate_needed_ppm}
                   if self.rate_needed_ppm is not None else {}),
                **({"span_offset_ns": self.span_offset.as_dict()} if self.span_offset else {})}


@dataclass(frozen=True)
class Break:
    kind: BreakKind
    after_ns: int                 # the break happened after this reference instant ...
    before_ns: int                # ... and at or before this one
    size_ns: Bound | None         # later offset minus earlier offset across the break
    ambiguous_reads: int = 0      # reads that fit either side (kept by the earlier segment)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "after_ns": self.after_ns, "before_ns": self.before_ns,
                "size_ns": None if self.size_ns is None else self.size_ns.as_dict(),
                "ambiguous_reads": self.ambiguous_reads}


class Outlier(TypedDict):
    """A read fit_clock set aside: its position in the input, its read, why."""
    index: int
    s_ns: int
    e_ns: int
    value_ns: int
    evidence: str


@dataclass(frozen=True)
class ClockFit:
    segments: list[Segment]
    breaks: list[Break]
    outliers: list[Outlier]
    resolution_ns: int
    resolution_note: str
    verdict: Verdict = Verdict.UNDECIDED
    drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM     # the range the segments were fitted in
    resolution_basis: ResolutionBasis = ResolutionBasis.UNPROVEN
    beyond_note: str = ""
    lag_seen_ns: int = 0          # the reading lags its clock by at least this (lag_seen)
    update_ns: int = 0            # ... and updates at most this often (update_bound)
    pinned_ns: float | None = None   # how tightly the reads pin the offset (rate_check)
    rate_assumed: str = ""        # why the rate bound is assumed, not checked by the reads
    unknown_breaks: int = 0       # breaks with no step to show (a lag or rate beyond the model)
    steps_seen: int = 0           # steps the clock showed (STEP_HISTORY of them: assumed)
    hide_ns: int = 0              # its one step was at least this, and one that size can hide
    rate_basis: str = ""          # the device's claim the rate bound rests on (_claimed_free)

    def segment_at(self, t_ns: int) -> Segment | None:
        """The segment whose span holds t_ns (or None)."""
        for sg in self.segments:
            if sg.start_ns <= t_ns <= sg.end_ns:
                return sg
        return None

    def as_dict(self) -> dict[str, Any]:
        """The summary's form; an outlier is {"t_ns" (its bracket's middle), "value_ns",
        "reason"}."""
        return {"resolution_ns": self.resolution_ns, "resolution_note": self.resolution_note,
                "verdict": self.verdict,
                "segments": [s.as_dict() for s in self.segments],
                "breaks": [b.as_dict() for b in self.breaks],
                "outliers": [{"t_ns": (o["s_ns"] + o["e_ns"]) // 2, "value_ns": o["value_ns"],
                              "reason": o["evidence"]} for o in self.outliers],
                **({"beyond_prior_note": self.beyond_note} if self.beyond_note else {}),
                **({"lag_seen_ns": self.lag_seen_ns} if self.lag_seen_ns else {}),
                **({"update_ns": self.update_ns} if self.update_ns else {}),
                **({"rate_assumed": self.rate_assumed} if self.rate_assumed else {}),
                **({"unknown_breaks": self.unknown_breaks} if self.unknown_breaks else {}),
                **({"steps_seen": self.steps_seen} if self.steps_seen else {}),
                **({"step_could_hide_ns": self.hide_ns} if self.hide_ns else {})}

    @property
    def rate_check_s(self) -> float:
        """The shortest stretch over which a rate of twice the bound shows (rate_check)."""
        return _rate.check_horizon_s(self.pinned_ns, self.drift_prior_ppm)


# -- fitting ---------------------------------------------------------------------------------

def wander_allowance_ns_per_s(wander_ppm_per_sqrt_hour: float, span_s: float,
                              k: float = 5.0) -> float:
    """An allowance for a frequency random walk of the given strength (its std over one hour,
    ppm): k standard deviations of its excursion over the span, in ns/s."""
    return k * float(wander_ppm_per_sqrt_hour) * math.sqrt(max(float(span_s), 1.0) / 3600.0) * 1e3


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


def _side_vertices(s: I64, e: I64, v: I64, q: int, t: int, w: float, prior: float
                   ) -> tuple[_Window, F64 | None]:
    """(window, drifts (ppm) of the polygon's vertices) from these reads alone; the drifts are
    None when the region is empty. Without wander they do not depend on the epoch (a change of
    epoch shears the polygon along the offset axis: vertices move in offset, not in drift), so
    they are computed at the reads' own first instant, the same whatever t asks, and a cache
    can keep them; with wander the allowance grows with the distance to t and the polygon is
    t's own."""
    win = _Window(s, e, v, q, t if w else int(s[0]), w, prior)
    x = win.vertices()
    if x is None:
        x = win.vertices(tol=1.0)
    return win, x


def _side(s: I64, e: I64, v: I64, q: int, t: int, w: float, prior: float,
          cache: _Cache | None = None, key: tuple[int, bytes] = (0, b"")) -> Side | None:
    """(offset lo, offset hi at t, drift lo, drift hi) from these reads alone, or None.
    `cache` keeps the vertices of read sets already seen (under `key`), so the many instants
    a published bound is asked at cost one hull per side, not one each."""
    if len(s) == 0:
        return None
    if cache is not None and not w:
        if key not in cache.sides:
            cache.sides[key] = _side_vertices(s, e, v, q, t, w, prior)
        win, x = cache.sides[key]
    else:
        win, x = _side_vertices(s, e, v, q, t, w, prior)
    if x is None:
        return None
    win = win if w else win.at_epoch(s, e, t)
    g, h = win.chains(x)
    h = np.maximum(h, g)
    return (win.theta0 + math.floor(float(g.min()) - TOL_NS),
            win.theta0 + math.ceil(float(h.max()) + TOL_NS), float(x[0]), float(x[-1]))


def _halves(s: I64, e: I64, v: I64, q: int, t: int, w: float, prior: float,
            cache: _Cache | None = None, memo: bool = True) -> Halves | None:
    """The hull of the bounds at t from the reads before t and from the reads after it:
    (offset lo, offset hi, drift lo, drift hi, touches the prior), or None when a side is
    empty. A read whose bracket holds t serves neither side. `cache`: kept with these reads
    (Segment._cache) for the answers and the sides' vertices."""
    if cache is not None and memo:      # the same reads, the same instant: the same answer
        if int(t) not in cache.halves:
            cache.halves[int(t)] = _halves(s, e, v, q, t, w, prior, cache, False)
        return cache.halves[int(t)]
    # reads are in time order; each side keeps its SIDE_READS reads nearest t (a subset of a
    # clean side is clean: fewer constraints, still sound) so the cost stays bounded
    left = np.flatnonzero(e <= t)[-SIDE_READS:]
    right = np.flatnonzero(s >= t)[:SIDE_READS]
    a = _side(s[left], e[left], v[left], q, t, w, prior, cache, (0, left.tobytes()))
    b = _side(s[right], e[right], v[right], q, t, w, prior, cache, (1, right.tobytes()))
    if a is None or b is None:
        return None
    touches = min(a[2], b[2]) <= -prior or max(a[3], b[3]) >= prior
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]), touches


def _fit_run(s: I64, e: I64, v: I64, raw_s: I64, raw_e: I64, q: int, note: str, idx: Idx,
             epoch_ns: int | None, w: float, prior: float, stats: bool = True,
             pre: tuple[_Window, F64] | None = None, offset_status: BoundStatus = BoundStatus.PROVEN,
             drift_status: BoundStatus = BoundStatus.PROVEN) -> Segment | None:
    si, ei, vi = s[idx], e[idx], v[idx]
    t0 = int(epoch_ns) if epoch_ns is not None else (int(si[0]) + int(ei[-1])) // 2
    x: F64 | None
    if pre is not None:                 # (window at t0, its vertices)
        win, x = pre
    else:
        win = _Window(si, ei, vi, q, t0, w, prior)
        x = win.vertices()
    if x is None:          # an epoch given far from the run can make the wander allowance fail
        t0 = (int(si[0]) + int(ei[-1])) // 2
        win = _Window(si, ei, vi, q, t0, w, prior)
        x = win.vertices()
    if x is None:          # the search's test and the hull disagree by float rounding: loosen
        x = win.vertices(tol=1.0)
    if x is None:          # no line fits these reads (an envelope segment whose rate changed)
        return None
    g, h = win.chains(x)
    # rounding can leave a hair of g above h at an end; the region is the closure
    h = np.maximum(h, g)
    cx, cy = _centroid(x, g, h)
    th0 = win.theta0
    off = Bound(th0 + math.floor(float(g.min()) - TOL_NS), th0 + math.ceil(float(h.max()) + TOL_NS),
                th0 + round(cy))
    # with a wander allowance the frequency stays within w of the tangent's: the bound then holds
    # for the drift at every instant of the segment (and so for its mean over any part of it)
    wp = w * 1e-3                       # ns/s -> ppm
    dr = Bound(float(x[0]) - wp, float(x[-1]) + wp, min(max(cx, float(x[0])), float(x[-1])))
    jit: dict[str, float] = {}
    brk: dict[str, float] = {}
    if stats:             # the published statistics (an aim needs only the bounds)
        mid = (raw_s[idx] + raw_e[idx]) // 2
        res = ((vi - mid) - th0).astype(np.float64) + q / 2 - cy - cx * PPM * (mid - t0)
        jit = {"std": float(np.std(res)), "p99": float(np.percentile(np.abs(res), 99)),
               "max": float(np.max(np.abs(res)))}
        brk = _bracket_stats(raw_s[idx], raw_e[idx])
    return Segment(
        start_ns=int(raw_s[idx[0]]), end_ns=int(raw_e[idx[-1]]), reads=len(idx), epoch_ns=t0,
        offset_ns=off, drift_ppm=dr, jitter_ns=jit, bracket_ns=brk,
        resolution_ns=q, resolution_note=note,
        _x=tuple(x.tolist()), _g=tuple(g.tolist()), _h=tuple(h.tolist()), _theta0=th0, _w=w * 1e-9,
        _reads=(si, ei, vi), _prior=prior, offset_status=offset_status, drift_status=drift_status)


MEAN_DRIFT_CANDIDATES = 400   # read instants a mean drift's window is chosen from, at the most
RATE_EDGE = 0.8           # reads that need this share of the rate bound sit on its edge


def _mean_drift(seg: Segment, until_ns: int | None = None) -> dict[str, Any] | None:
    """A proven mean frequency error over a stated window [t1, t2]: the offset's change over it,
    (offset(t2) − offset(t1)) / (t2 − t1), in ppm, from the two proven offsets (the envelope's)
    by interval arithmetic, so it holds whenever they do, slews and corrections included, unlike
    the drift at an instant (RATE_CHANGE_ASSUMPTION). The window is the pair of read instants
    with the narrowest such bound, ending at `until_ns` at the latest: the start of the break
    the fit found after this segment (Break.after_ns), so a window never crosses a step the
    reads show (the reads kept ambiguously after it lie on the next segment's line, not this
    one's); its status is the segment's offset status; None when undecided. One wider than the
    rate bound allows (±R: only an unseen step in the window could take it further) is cut to
    ±R and "assumed": it then rests on no unseen step there."""
    if len(seg._reads[0]) < 4 or seg.offset_status == BoundStatus.UNDECIDED or seg._env is None:
        return None
    window = _narrowest_window(seg._env, until_ns)
    if window is None:
        return None
    t1, t2 = window
    b1, b2 = seg._env.at(t1), seg._env.at(t2)
    if b1 is None or b2 is None:        # the window's instants have reads on both sides
        return None
    (lo1, hi1), (lo2, hi2) = b1, b2
    lo, hi = (lo2 - hi1) / (t2 - t1) / PPM, (hi2 - lo1) / (t2 - t1) / PPM
    lo, hi = lo - 1e-9 * (1 + abs(lo)), hi + 1e-9 * (1 + abs(hi))    # outward, past rounding
    status = seg.offset_status
    R = seg._prior
    if (lo < -R or hi > R) and max(lo, -R) <= min(hi, R):   # wider than the model allows:
        lo, hi = max(lo, -R), min(hi, R)      # cut to it, which rests on no unseen step there
        status = BoundStatus.ASSUMED
    point = min(max(seg.drift_ppm.point, lo), hi)
    return {"lo": lo, "hi": hi, "point": point, "from_ns": t1, "to_ns": t2, "status": status}


def _narrowest_window(two: _envelope.TwoSided, until_ns: int | None = None
                      ) -> tuple[int, int] | None:
    """The pair of instants t1 < t2 among the reads' (at most MEAN_DRIFT_CANDIDATES of them, none
    after `until_ns`) where (w1 + w2) / (t2 − t1) is least: the narrowest mean rate between two
    proven offsets."""
    pts = np.unique(np.concatenate((two.e, two.s)).astype(np.int64) + two.env.t_ref)
    if until_ns is not None:
        pts = pts[pts <= int(until_ns)]
    if len(pts) > MEAN_DRIFT_CANDIDATES:
        pts = pts[np.linspace(0, len(pts) - 1, MEAN_DRIFT_CANDIDATES).astype(int)]
    lo, hi, ok = two.bounds(pts)
    pts, w = pts[ok], (hi - lo)[ok]
    if len(pts) < 2:
        return None
    dt = (pts[None, :] - pts[:, None]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(dt > 0, (w[:, None] + w[None, :]) / dt, np.inf)
    i, j = divmod(int(np.argmin(rate)), len(pts))
    return (int(pts[i]), int(pts[j])) if np.isfinite(rate[i, j]) else None


def _publish(seg: Segment, env: _envelope.TwoSided, basis: str, lone_ok: bool,
             line_ok: bool) -> Segment:
    """The published bounds and their status. The offset at the epoch is the envelope's (module
    bench.analysis.envelope: every read carried to the epoch at the rate bound); the line's own
    offset there stays beside it as `offset_line` (it holds only with no unseen break). Status:
    "undecided" with an unproven resolution or with fewer than MIN_DECIDED_READS reads beside
    a break (a burst of bad reads looks the same); "assumed" when the reads need RATE_EDGE of
    the rate bound or more (the bound sits on that assumption's edge); else "proven". The drift
    at the epoch is the hull of the two sides' lines, at best "assumed": it rests on
    RATE_CHANGE_ASSUMPTION (module docstring)."""
    b = env.at(seg.epoch_ns)
    line = seg.offset_ns if line_ok else None
    lo, hi = b if b is not None else env.env.at(seg.epoch_ns)
    off = Bound(lo, hi, min(max(seg.offset_ns.point, lo), hi))
    need = _envelope.rate_needed(env.env)
    if (basis == ResolutionBasis.UNPROVEN or b is None
            or (seg.reads < MIN_DECIDED_READS and not lone_ok)):
        st = BoundStatus.UNDECIDED
    else:
        st = BoundStatus.ASSUMED if need >= RATE_EDGE * env.env.rate else BoundStatus.PROVEN
    s, e, v = seg._reads
    h = _halves(s, e, v, seg.resolution_ns, seg.epoch_ns, seg._w * 1e9, seg._prior, seg._cache)
    d = seg.drift_ppm
    if h is None or st == BoundStatus.UNDECIDED:
        dr, dst = d, BoundStatus.UNDECIDED
    else:
        wp = seg._w * 1e6
        dr = Bound(h[2] - wp, h[3] + wp, min(max(d.point, h[2] - wp), h[3] + wp))
        dst = BoundStatus.ASSUMED
    return _dc_replace(seg, offset_ns=off, drift_ppm=dr, offset_status=st, drift_status=dst,
                       drift_assumes=RATE_CHANGE_ASSUMPTION if dst != BoundStatus.UNDECIDED
                       else "", offset_line=line, rate_needed_ppm=need / PPM,
                       span_offset=_span_offset(env, seg), _env=env)


def _span_offset(two: _envelope.TwoSided, seg: Segment) -> Bound | None:
    """The lowest and highest offset at any instant from the segment's first read to its last
    with no unseen step there (the reads on both sides of each instant intersected, not their
    hull): what a limit over the span is judged on, its assumption said beside it (the
    clock's `unseen_step` says what could hide). Between two reads each side's bound is linear in
    t, so the extremes are at the reads' own instants (every one of them is evaluated)."""
    pts = np.unique(np.clip(np.concatenate((two.e, two.s)).astype(np.int64) + two.env.t_ref,
                            seg.start_ns, seg.end_ns))
    lo, hi, ok = two.bounds(pts, joined=True)
    if not ok.any():
        return None
    th = two.env.theta0
    lo_, hi_ = th + math.floor(float(lo[ok].min()) - 1.0), th + math.ceil(float(hi[ok].max()) + 1.0)
    return Bound(lo_, hi_, min(max(seg.offset_ns.point, lo_), hi_))


def _cone(s: I64, e: I64, v: I64, raw_s: I64, raw_e: I64, q: int, note: str, idx: Idx,
          env: _envelope.Envelope, t0: int | None, prior: float) -> Segment:
    """A segment whose reads no single line fits within the prior (the rate changed inside it,
    within the rate bound): its "line" is the cone of the envelope at its narrowest instant,
    widening at the rate bound both ways, so offset_at and the maps stay sound."""
    t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2 if t0 is None else int(t0)
    lo, hi = env.at(t0)
    th0 = (lo + hi) // 2
    g, h = float(lo - th0), float(hi - th0)
    return Segment(
        start_ns=int(raw_s[idx[0]]), end_ns=int(raw_e[idx[-1]]), reads=len(idx), epoch_ns=t0,
        offset_ns=Bound(lo, hi, th0), drift_ppm=Bound(-prior, prior, 0.0), jitter_ns={},
        bracket_ns=_bracket_stats(raw_s[idx], raw_e[idx]), resolution_ns=q,
        resolution_note=note, _x=(-prior, prior), _g=(g, g), _h=(h, h), _theta0=th0,
        _reads=(s[idx], e[idx], v[idx]), _prior=prior)


def _bracket_stats(rs: I64, re: I64) -> dict[str, float]:
    br = (re - rs).astype(np.float64)
    return {"min": int(br.min()), "median": float(np.median(br)),
            "p99": float(np.percentile(br, 99))}


def _classify(a: Segment, b: Segment, after: int, before: int, q: int, prior: float
              ) -> tuple[BreakKind, Bound]:
    oa = [a.offset_at(t) for t in (after, before)]
    ob = [b.offset_at(t) for t in (after, before)]
    lo = min(y.lo - x.hi for x, y in zip(oa, ob))
    hi = max(y.hi - x.lo for x, y in zip(oa, ob))
    pa = [(y.point - x.point) for x, y in zip(oa, ob)]
    proven = _proven_size(a, b, after, before, prior)
    if proven is not None:
        lo, hi = proven
    size = Bound(lo, hi, min(max(round(sum(pa) / 2), lo), hi))
    if hi < 0:
        return _backward_kind(oa, ob, after, before, q, prior, lo, hi), size
    if lo > 0:
        return BreakKind.STEP, size
    return BreakKind.UNKNOWN, size


def _proven_size(a: Segment, b: Segment, after: int, before: int, prior: float
                 ) -> tuple[int, int] | None:
    """(lo, hi) of the step from the proven offsets, or None where a side has none: the step
    happened at some t* in (after, before]: each side's proven offset carried to t* at the rate
    bound, so the size is later at `before` minus earlier at `after`, give or take the rate
    bound over the window."""
    if not a.offset_status != BoundStatus.UNDECIDED != b.offset_status:
        return None
    pa_, pb_ = a.proven_offset_at(after), b.proven_offset_at(before)
    if pa_ is None or pb_ is None:
        return None
    slack = prior * PPM * (before - after)
    return math.floor(pb_.lo - pa_.hi - slack), math.ceil(pb_.hi - pa_.lo + slack)


def _backward_kind(oa: list[Bound], ob: list[Bound], after: int, before: int, q: int, prior: float,
                   lo: float, hi: float) -> BreakKind:
    """A break whose size is surely negative: a counter's wrap, a reboot, or a backward step."""
    # a counter modulo M = 2^k ticks (or 2^k ns) wrapped: the earlier reading crossed M
    # within the break's bounds and the size is -M
    a_lo, a_hi = after + oa[0].lo - q, before + oa[1].hi + q
    for k in range(8, 63):
        for m in (q << k, 1 << k):
            if a_lo <= m <= a_hi and lo <= -m <= hi:
                return BreakKind.WRAP
    reading_lo = before + ob[1].lo        # the later clock's reading at `before`
    reading_hi = before + ob[1].hi
    span = (before - after) * (1 + prior * PPM) + q
    if reading_lo <= span and reading_hi >= -q:
        return BreakKind.REBOOT
    return BreakKind.STEP


def _split(s: I64, e: I64, v: I64, q: int, w: float, prior: float, wide: float,
           starts: list[int]) -> _seg.Split:
    """Segmentation of the reads with drift within ±prior (cores kept for ±wide), a forced
    break before each of `starts`."""
    hint: list[float | None] = [None]

    def feasible(idx: Idx) -> bool:
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        win = _Window(s[idx], e[idx], v[idx], q, t0, w, prior)
        if len(idx) <= SMALL_WINDOW:           # the exact hull is cheaper on a few reads
            xs = win.vertices()
            x = None if xs is None else float((xs[0] + xs[-1]) / 2)
        else:
            x = win.feasible_x(hint[0])
        if x is not None:
            hint[0] = x
        return x is not None

    def compress(idx: Idx) -> Idx:
        if w > 0 or len(idx) <= 2 * SMALL_WINDOW:
            return idx
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        return idx[_Window(s[idx], e[idx], v[idx], q, t0, 0.0, wide).core(wide)]

    return _seg.split_chunks(len(v), starts, feasible, compress)


def _split_envelope(s: I64, e: I64, v: I64, q: int, w: float, prior: float, wide: float,
                    starts: list[int]) -> _seg.Split:
    """Segmentation of the reads under the published model: a run is feasible when one offset
    moving at most `prior` ppm meets every read's constraints (bench.analysis.envelope)."""
    return _seg.split_chunks(len(v), starts, lambda idx: _envelope.feasible(
        _envelope.build(s[idx], e[idx], v[idx], q, prior)))


def cut_starts(s: I64, cuts_ns: Sequence[tuple[int, int]]) -> list[int]:
    """The reads (time order) where each device-wide break (after_ns, before_ns) starts a new
    chunk: the first read (by bracket start, `s` ascending) that starts past the window's
    middle. Which side a read straddling the window takes does not matter for soundness: each
    chunk is segmented on its own and splits where its reads disagree."""
    return sorted({int(np.searchsorted(s, a // 2 + b // 2, side="right")) for a, b in cuts_ns})


def _outlier_gaps(s: I64, e: I64, run: Idx, outliers: list[tuple[int, str]]
                  ) -> tuple[tuple[int, int], ...]:
    """The spans inside a run where reads were set aside: from the start of the last kept read
    before them to the end of the first kept read after them (a blip shorter than that span
    would read exactly like a burst of bad answers)."""
    pos = sorted(p for p, _ in outliers if run[0] < p < run[-1])
    gaps: list[tuple[int, int]] = []
    for p in pos:
        k = int(np.searchsorted(run, p))
        g = (int(s[run[k - 1]]), int(e[run[k]]))
        if gaps and gaps[-1][1] >= g[0]:
            g = (gaps[-1][0], max(gaps[-1][1], g[1]))
            gaps.pop()
        gaps.append(g)
    return tuple(gaps)


def _segment(s: I64, e: I64, v: I64, raw_s: I64, raw_e: I64, q: int, note: str, run: Idx,
             sp: _seg.Split, k: int, epoch_ns: int | None, w: float, prior: float,
             basis: ResolutionBasis, lone_ok: bool, publish: bool) -> Segment:
    """Run k of the split as a segment. Published: its two-sided envelope (the reads at its end
    that fit the next segment too stay with it: they lie within its one unseen break), its epoch
    where that bound is narrowest, the line's fit beside it (or the envelope's cone where no line
    fits), the mean drift. Otherwise the line's fit only, statuses "undecided" (the probe
    schedule's aim)."""
    def flat() -> _envelope.Envelope:
        return _envelope.build(s[run], e[run], v[run], q, prior)

    # the probe schedule's fits (not published) need no two-sided envelope: none is built
    env = _envelope.TwoSided(flat(), _outlier_gaps(s, e, run, sp.outliers)) if publish else None
    t0 = epoch_ns
    if env is not None and t0 is None:
        t0 = env.narrowest(int(s[run[0]]), int(e[run[-1]]))
    sg = _fit_run(s, e, v, raw_s, raw_e, q, note, run, t0, w, prior, stats=publish)
    line_ok = sg is not None
    if sg is None:
        sg = _cone(s, e, v, raw_s, raw_e, q, note, run, env.env if env else flat(), t0, prior)
    if env is None:                 # not published
        return _dc_replace(sg, offset_status=BoundStatus.UNDECIDED,
                           drift_status=BoundStatus.UNDECIDED)
    sg = _publish(sg, env, basis, lone_ok, line_ok)
    # the mean drift's window ends where the break after this run may start (its `after_ns`):
    # the reads this run keeps ambiguously past it may lie after the step
    until = int(s[sp.breaks[k][0]]) if k < len(sp.breaks) else None
    return _dc_replace(sg, mean_drift=_mean_drift(sg, until))


def _asks_for_wider(sp: _seg.Split, s: I64, e: I64, v: I64, q: int, w: float, wide: float) -> str:
    """Would a wider drift range have explained a break or an outlier? The window before each
    break plus the read that emptied it, and each outlier with the run before it, are tested
    with drift within ±wide. Returns the evidence, or ""."""
    out_pos = {p for p, _ in sp.outliers}

    def ok(idx: npt.NDArray[Any]) -> bool:
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        win = _Window(s[idx], e[idx], v[idx], q, t0, w, wide)
        return win.feasible_x() is not None

    for k, (_pre, post, _amb) in enumerate(sp.breaks):
        if k in sp.forced:        # imposed by another clock of the device: nothing to explain
            continue
        # the reads after the break too: a drift beyond the prior goes on along one line, a
        # step leaves the later reads on a parallel one (a line steep enough to join the two
        # sides of a small step parts from the later reads within seconds)
        first = int(sp.runs[k][0])
        last = max(post, int(sp.runs[k + 1][-1])) if k + 1 < len(sp.runs) else post
        idx = np.array([i for i in range(first, last + 1) if i not in out_pos])
        if ok(idx):
            return (f"the reads {first}..{last} fit one line only with a drift beyond the prior: "
                    f"refitted within ±{wide:g} ppm")
    for p, _ in sp.outliers:
        before = [r for r in sp.runs if r[-1] < p]
        if before and ok(np.concatenate((before[-1][-4 * SMALL_WINDOW:], [p]))):
            return (f"read {p}, set aside at the prior, fits the reads before it with a drift "
                    f"beyond the prior: refitted within ±{wide:g} ppm")
    return ""


def fit_line(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, resolution_ns: int,
             *, drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, uncertainty_ns: int = 0
             ) -> Segment | None:
    """One segment through all these reads (time order, resolution as given), or None when no
    line within the prior fits them: the line-model bounds of fit_clock's segments (its
    `publish=False` form, statuses "undecided"), without the segmentation search. For a caller
    that already knows where the current segment starts (the probe schedule)."""
    s = np.asarray(s_ns, dtype=np.int64) - int(uncertainty_ns)
    e = np.asarray(e_ns, dtype=np.int64) + int(uncertainty_ns)
    v = np.asarray(value_ns, dtype=np.int64)
    if len(v) == 0:
        return None
    q, prior = int(resolution_ns), float(drift_prior_ppm)
    win = _Window(s, e, v, q, (int(s[0]) + int(e[-1])) // 2, 0.0, prior)
    x = win.vertices()
    if x is None:
        return None
    return _fit_run(s, e, v, s + int(uncertainty_ns), e - int(uncertainty_ns), q, "",
                    np.arange(len(v)), None, 0.0, prior, stats=False, pre=(win, x),
                    offset_status=BoundStatus.UNDECIDED, drift_status=BoundStatus.UNDECIDED)


class _FitOptions(TypedDict):
    """fit_clock's keyword arguments, passed on as they came."""
    drift_prior_ppm: float
    wander_ns_per_s: float
    uncertainty_ns: int
    lag_ns: int
    epoch_ns: int | None
    publish: bool
    cuts_ns: Sequence[tuple[int, int]]


def fit_clock(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, resolution_ns: int,
              *, drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, wander_ns_per_s: float = 0.0,
              uncertainty_ns: int = 0, lag_ns: int = 0, epoch_ns: int | None = None,
              publish: bool = True, cuts_ns: Sequence[tuple[int, int]] = (),
              unchecked_prior_ppm: float | None = _rate.DISCIPLINED_PRIOR_PPM,
              free_running: str = "") -> ClockFit:
    """_fit_clock, then how far the reads check the rate bound (bench.analysis.rate_check):
    when they cannot show a rate of twice the bound within RATE_CHECK_S, the bound is assumed
    (`rate_assumed`) and the clock is fitted again under `unchecked_prior_ppm` (a disciplined
    clock's rate; None: keep the prior): reads that fit one line do not show the clock free-
    running when they pin it too loosely to show its corrections.

    `free_running`: the device's own word that nothing disciplines this clock (its source, e.g.
    "Redfish NTP.ProtocolEnabled=false"). Where the reads cannot check the prior and show no
    correction, the prior stands under that named assumption instead (`rate_basis`), at the
    statuses of the fit under the disciplined rate at best (_claimed_free): the claim narrows
    the bounds, it never makes one proven that the fallback did not.

    Why ±600 ppm by default: a device's crystal is specified to ±20–100 ppm over temperature and
    ageing, and a clock being slewed by ntpd runs up to 500 ppm off its crystal (the kernel PLL's
    limit, MAXFREQ); chrony slews faster (its maxslewrate is 83,333 ppm) but only while
    correcting a large offset, which the wider range (±6,000 ppm) catches and reports."""
    kw: _FitOptions = {"drift_prior_ppm": drift_prior_ppm, "wander_ns_per_s": wander_ns_per_s,
                       "uncertainty_ns": uncertainty_ns, "lag_ns": lag_ns, "epoch_ns": epoch_ns,
                       "publish": publish, "cuts_ns": cuts_ns}
    fit = _fit_clock(s_ns, e_ns, value_ns, resolution_ns, **kw)
    if not publish or fit.rate_assumed:
        return fit
    fit = _dc_replace(fit, pinned_ns=_rate.pinned_width_ns(fit.segments))
    if _rate.checked(fit.pinned_ns, fit.drift_prior_ppm):
        return fit
    return _unchecked(fit, (s_ns, e_ns, value_ns), resolution_ns, kw, unchecked_prior_ppm,
                      free_running)


def _unchecked(fit: ClockFit, reads: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
               resolution_ns: int, kw: _FitOptions, unchecked_prior_ppm: float | None,
               free_running: str) -> ClockFit:
    """fit_clock's fit whose reads cannot check its rate bound: refitted under the disciplined
    rate (or kept, with the claim of a free-running clock where it holds), the bound assumed."""
    s_ns, e_ns, value_ns = reads
    prior, before, own = fit.drift_prior_ppm, fit.rate_check_s, fit
    corrected = any(sg.offset_line is None for sg in fit.segments)   # no line fits: disciplined
    refit = unchecked_prior_ppm is not None and unchecked_prior_ppm > prior
    if refit:
        kw["drift_prior_ppm"] = float(unchecked_prior_ppm or 0)
        # split where the prior breaks (a step shows as before), bound under the wider rate
        fit = _fit_clock(s_ns, e_ns, value_ns, resolution_ns, **kw, split_prior_ppm=prior)
        fit = _dc_replace(fit, pinned_ns=_rate.pinned_width_ns(fit.segments))
    fit = _dc_replace(fit, rate_assumed=_rate.assumed_note(
        fit.pinned_ns, prior, before, fit.drift_prior_ppm if refit else None, corrected))
    if free_running and refit and not corrected:
        return _claimed_free(own, fit, free_running, before)
    return fit


_VERDICT_RANK = {Verdict.PROVEN: 0, Verdict.ASSUMED: 1, Verdict.BEYOND_PRIOR: 2,
                 Verdict.UNDECIDED: 3, Verdict.STUCK: 4}


def _claimed_free(own: ClockFit, wide: ClockFit, claim: str, horizon_s: float) -> ClockFit:
    """The fit under the prior (`own`) that the device's claim of a free-running clock keeps
    where the reads cannot check it, each status the worse of its own and that of the same
    segment under the disciplined rate (`wide`, split at the same rate: the same segments).
    `wide` itself where the segments differ, or where the claim costs a status: an offset or
    the verdict less sure under the prior than under the disciplined rate (a bound at the
    prior's edge, the reads asking for a rate near the claimed one) casts doubt on the claim.
    The claim is named in `rate_basis` and `rate_assumed`, the rate bound it supports assumed."""
    if [(a.start_ns, a.end_ns) for a in own.segments] != \
            [(b.start_ns, b.end_ns) for b in wide.segments] \
            or _VERDICT_RANK.get(own.verdict, 4) > _VERDICT_RANK.get(wide.verdict, 4) \
            or any(worst((a.offset_status, b.offset_status)) != b.offset_status
                   for a, b in zip(own.segments, wide.segments, strict=True)):
        return wide
    segs = [_dc_replace(a, offset_status=worst((a.offset_status, b.offset_status)),
                        drift_status=worst((a.drift_status, b.drift_status)),
                        mean_drift=_md_worst(a.mean_drift, b.mean_drift))
            for a, b in zip(own.segments, wide.segments, strict=True)]
    verdict = max(own.verdict, wide.verdict, key=lambda v: _VERDICT_RANK.get(v, 4))
    note = _rate.assumed_note(own.pinned_ns, own.drift_prior_ppm, horizon_s, None, False)
    return _dc_replace(own, segments=segs, verdict=verdict, rate_basis=claim,
                       rate_assumed=f"{note}; free-running per {claim} (the device's word)",
                       hide_ns=own.hide_ns or wide.hide_ns,
                       steps_seen=max(own.steps_seen, wide.steps_seen),
                       unknown_breaks=max(own.unknown_breaks, wide.unknown_breaks))


def _md_worst(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Mean drift `a` at the worse of its status and `b`'s (none where `b` has none)."""
    if a is None or b is None:
        return a if b is not None else None
    return {**a, "status": worst((a.get("status", BoundStatus.UNDECIDED),
                                  b.get("status", BoundStatus.UNDECIDED)))}


def _fit_clock(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike,
               resolution_ns: int, *, drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM,
               wander_ns_per_s: float = 0.0, uncertainty_ns: int = 0, lag_ns: int = 0,
               epoch_ns: int | None = None, publish: bool = True,
               cuts_ns: Sequence[tuple[int, int]] = (),
               split_prior_ppm: float | None = None) -> ClockFit:
    """Segments with provable bounds, the breaks between them, and outliers, from one clock's
    ok reads in time order (int ns arrays: bracket start, bracket end, device value).

    The drift prior is an assumption and is checked: before a break or an outlier is believed,
    the window is tried with a drift range WIDE_PRIOR_FACTOR times wider; if that explains it,
    the clock is "beyond_prior" and every segment is refitted within the wider range (never a
    step). A bound whose polygon reaches the range's edge is "assumed", not "proven".

    `cuts_ns`: breaks (after_ns, before_ns) another clock of the device showed: no segment
    spans one. `split_prior_ppm`: split at this rate, bound under the prior (fit_clock)."""
    raw_s = np.asarray(s_ns, dtype=np.int64)
    raw_e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    kw: _FitOptions = {"drift_prior_ppm": drift_prior_ppm, "wander_ns_per_s": wander_ns_per_s,
                       "uncertainty_ns": uncertainty_ns, "lag_ns": lag_ns, "epoch_ns": epoch_ns,
                       "publish": publish, "cuts_ns": cuts_ns}
    if np.any(raw_e < raw_s):        # a bracket that ends before it starts proves nothing
        return _fit_without_invalid(raw_s, raw_e, v, resolution_ns, kw)
    q, note, basis = _fit_resolution(raw_s, raw_e, v, resolution_ns)
    prior = float(drift_prior_ppm)
    if len(v) == 0:
        return ClockFit([], [], [], q, note, Verdict.UNDECIDED, prior, basis)
    raw_s, raw_e, v, order = _time_order(raw_s, raw_e, v)
    u = int(uncertainty_ns)
    s, e = raw_s - u - int(lag_ns), raw_e + u     # a lagging tick moves each read's upper point
    seen, update = _lag_and_update(s, e, v, q, float(drift_prior_ppm)) if publish else (0, 0)
    if update:            # a value that moves less often than its tick: a resolution finding
        note, basis = _update_note(q, update, v), ResolutionBasis.EDGES
    s = s - max(seen, update)
    w = float(wander_ns_per_s)
    cut = float(split_prior_ppm or prior)       # the rate the reads are split at
    wide = cut * WIDE_PRIOR_FACTOR
    split = _split_envelope if publish else _split
    sp = split(s, e, v, q, w, cut, wide, starts := cut_starts(raw_s, cuts_ns))
    beyond = _asks_for_wider(sp, s, e, v, q, w, wide) if (sp.breaks or sp.outliers) else ""
    shown = _turns(sp, s, e, v, q, cut) if beyond else 0    # steps seen before the wider refit
    bursts = sp.bursts      # bursts set aside under the prior, before any wider refit
    if beyond:
        prior = max(prior, wide)
        sp = split(s, e, v, q, w, wide, wide, starts)
    segs = [_segment(s, e, v, raw_s, raw_e, q, note, run, sp, k, epoch_ns, w, prior, basis,
                     len(sp.runs) == 1, publish) for k, run in enumerate(sp.runs)]
    breaks = _breaks_of(sp, segs, s, e, q, prior)
    outliers = _outliers_of(sp, raw_s, raw_e, v, order)
    unknown, steps = _model_breaks(sp, breaks, shown)
    hide = _history_hides(breaks, sp.forced, segs, q, len(v) / max(1e-9, (e[-1] - s[0]) / 1e9),
                          prior, bool(beyond and shown)) \
        if steps + unknown == 1 else 0
    steps += _aside_steps(sp, bursts)     # steps the reads set aside show (_downgraded)
    segs = _downgraded(segs) if seen or hide or _no_tick_fits(beyond, basis, q, resolution_ns) \
        or steps + unknown >= STEP_HISTORY else segs
    return ClockFit(segs, breaks, outliers, q, note, _fit_verdict(segs, beyond, bool(outliers)),
                    prior, basis, beyond, seen, update, unknown_breaks=unknown, steps_seen=steps,
                    hide_ns=hide)


STEP_HISTORY = 2    # steps a clock showed from which more may hide: its bounds are assumed


def _aside_steps(sp: _seg.Split, bursts: int) -> int:
    """Steps the reads the published split set aside show at the least: two for each burst
    that fits one line of its own apart from both sides (a step and its return; `bursts`: those
    set aside under the prior before a wider refit too); STEP_HISTORY where reads were set aside
    in two places or more (runs of consecutive positions: each a bad answer or a blip one read
    caught, so more than one is a clock that may step, or answer wrong, anywhere; issue 39).
    One place alone is the model's bad answer."""
    at = sorted(i for i, _ in sp.outliers)
    places = sum(1 for k, i in enumerate(at) if k == 0 or i - at[k - 1] > 1)   # runs of them
    return STEP_HISTORY * max(sp.bursts, bursts, int(places >= 2))


def _outliers_of(sp: _seg.Split, raw_s: I64, raw_e: I64, v: I64, order: Idx | None
                 ) -> list[Outlier]:
    """The split's outliers, each by its position in the caller's input order."""
    orig = (lambda i: int(order[i])) if order is not None else int
    return [{"index": orig(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
             "value_ns": int(v[i]), "evidence": ev} for i, ev in sp.outliers]


def _no_tick_fits(beyond: str, basis: ResolutionBasis, q: int, declared_ns: int) -> bool:
    """Values whose gaps say a tick coarser than the declared one (`basis` observed), on reads
    that still need a rate beyond the prior (`beyond`): the observed tick does not explain them
    either (a value that updates slower than its tick and shows its clock then, each gap a
    whole number of declared ticks near the update period: issue 39); or values off the grid
    of the tick their gaps show (basis "edges", _off_grid: periodic updates assumed). The
    clock's bounds are assumed (_downgraded)."""
    return basis == ResolutionBasis.EDGES or (
        bool(beyond) and basis == ResolutionBasis.OBSERVED and q > int(declared_ns))


def _turns(sp: _seg.Split, s: I64, e: I64, v: I64, q: int, prior: float) -> int:
    """How many steps the breaks of a split show at the least: 1 + the times their direction
    turns (each break's sign: the offset the run after it allows at the break against the one
    the run before it allows, under the prior, where the two are apart). A drift beyond the
    prior breaks one way again and again (1); a blip breaks one way and back (2)."""
    signs = []
    for k, (pre, post, _amb) in enumerate(sp.breaks):
        if k in sp.forced:
            continue
        a, b = sp.runs[k], sp.runs[k + 1]
        t = (int(s[pre]) + int(e[post])) // 2
        lo_a, hi_a = _envelope.build(s[a], e[a], v[a], q, prior).at(t)
        lo_b, hi_b = _envelope.build(s[b], e[b], v[b], q, prior).at(t)
        if lo_b > hi_a or hi_b < lo_a:
            signs.append(1 if lo_b > hi_a else -1)
    if not signs:
        return 1 if len(sp.breaks) > len(sp.forced) else 0
    return 1 + sum(x != y for x, y in zip(signs, signs[1:]))


def _history_hides(breaks: list[Break], forced: Sequence[int], segs: list[Segment], q: int,
                   rate_hz: float, prior: float, refit: bool) -> int:
    """A clock that showed one step (its own break, or one seen under the prior before a refit
    beyond it, `refit`) whose like could hide in its reads: the smallest such step, ns
    (1: no step to show), else 0 (_could_hide, _rate_unshown)."""
    hide = _could_hide(breaks, forced, segs, q, rate_hz, prior)
    return hide or (_rate_unshown(segs, prior) if refit else 0)


def _could_hide(breaks: list[Break], forced: Sequence[int], segs: list[Segment], q: int,
                rate_hz: float, prior: float) -> int:
    """The smallest step the clock's one break may have been, ns, where a step that size could
    hide in one of its segments (below the X that segment states for UNSEEN_WITHIN_S,
    unseen.unseen_step_ns); else 0. A clock that showed a step of a size its reads
    would miss elsewhere carries it into its risk: the reads cannot tell a step from a blip
    whose return went unseen, nor one step from a clock that steps again and again. A break
    whose size interval holds 0 showed no step at all (a lag, a rate beyond the model's); 1 ns
    stands for it."""
    own = [b for k, b in enumerate(breaks) if k not in forced and b.size_ns is not None
           and b.kind in (BreakKind.STEP, BreakKind.UNKNOWN)]
    if len(own) != 1:
        return 0
    lo, hi = own[0].size_ns.lo, own[0].size_ns.hi      # type: ignore[union-attr]
    least = max(1, int(min(abs(lo), abs(hi)))) if lo * hi > 0 else 1
    xs = [unseen_step_ns(q, sg.bracket_ns["median"], sg.offset_ns.width, rate_hz,
                         rate_ppm=prior)
          for sg in segs if sg.bracket_ns]
    return least if xs and least < max(xs) else 0


def _rate_unshown(segs: list[Segment], wide: float) -> int:
    """1 where a refit beyond the prior leaves a segment whose drift bound does not even tell
    its sign (it holds 0), or reaches the wider range's edge (`wide`): the reads then show no
    rate the wider range holds, so the break they showed under the prior may have been a step
    that the wider envelope now hides (a blip whose return went unseen), and a bound on the
    assumption's edge is assumed; else 0. A clock truly beyond the prior shows the sign of its
    rate, within the wider range, in every segment's drift."""
    edge = wide * (1 - 1e-9)
    return int(any(sg.drift_ppm.lo <= 0 <= sg.drift_ppm.hi or sg.drift_ppm.hi >= edge
                   or sg.drift_ppm.lo <= -edge for sg in segs))


def _model_breaks(sp: _seg.Split, breaks: list[Break], shown: int) -> tuple[int, int]:
    """(breaks of kind unknown, steps the clock showed) among the breaks its own reads made
    (not those another clock imposed); `shown`: the breaks seen under the prior before a refit
    beyond it (a refit in a wider range must not hide the steps it was asked about)."""
    own = [b for k, b in enumerate(breaks) if k not in sp.forced]
    return (sum(b.kind == BreakKind.UNKNOWN for b in own),
            max(shown, sum(b.kind == BreakKind.STEP for b in own)))


def _downgraded(segs: list[Segment]) -> list[Segment]:
    """Proven segments made assumed: the values prove a lag (only a floor on it, never a bound),
    or the clock broke STEP_HISTORY times or more, by steps or where no step shows (a break of
    kind unknown: a lag or a rate beyond the declared one, which can make the segments between
    such breaks miss too; repeated blips: more may hide, two in a segment break the
    one-unseen-step model; a burst of reads set aside together that fit one line apart from
    both sides is such a blip, its step and its return shown). One break alone is a step,
    whatever its size shows. The mean drift
    is made of the same offsets (_mean_drift took the segment's status before this): a proven
    one is made assumed with them (a blip inside its window moved the offset at its ends)."""
    return [_dc_replace(sg, offset_status=BoundStatus.ASSUMED, mean_drift=_assumed_md(sg))
            if sg.offset_status == BoundStatus.PROVEN else sg for sg in segs]


def _assumed_md(sg: Segment) -> dict[str, Any] | None:
    """The segment's mean drift with its status at best assumed."""
    md = sg.mean_drift
    if md is None or md.get("status") != BoundStatus.PROVEN:
        return md
    return {**md, "status": BoundStatus.ASSUMED}


def _time_order(raw_s: I64, raw_e: I64, v: I64) -> tuple[I64, I64, I64, Idx | None]:
    """The reads sorted by bracket start (stable), and the permutation (None: already sorted)."""
    order = np.argsort(raw_s, kind="stable")
    if np.any(order != np.arange(len(order))):
        return raw_s[order], raw_e[order], v[order], order
    return raw_s, raw_e, v, None


def _fit_without_invalid(raw_s: I64, raw_e: I64, v: I64, resolution_ns: int, kw: _FitOptions
                         ) -> ClockFit:
    """fit_clock over the reads whose bracket does not end before it starts; those are outliers
    and the verdict is at best assumed."""
    bad = np.flatnonzero(raw_e < raw_s)
    invalid: list[Outlier] = [{"index": int(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
                "value_ns": int(v[i]), "evidence": "bracket ends before it starts"}
               for i in bad]
    keep = np.flatnonzero(raw_e >= raw_s)
    fit = fit_clock(raw_s[keep], raw_e[keep], v[keep], resolution_ns, **kw)
    kept: list[Outlier] = [{**o, "index": int(keep[o["index"]])} for o in fit.outliers]
    verdict = fit.verdict if fit.verdict in (Verdict.BEYOND_PRIOR, Verdict.UNDECIDED) \
        else Verdict.ASSUMED
    return _dc_replace(fit, outliers=sorted(kept + invalid, key=lambda o: o["index"]),
                       verdict=verdict)


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


def _breaks_of(sp: _seg.Split, segs: list[Segment], s: I64, e: I64, q: int, prior: float
               ) -> list[Break]:
    """The breaks between the split's runs, classified from the segments on each side."""
    breaks: list[Break] = []
    for k, (pre, post, amb) in enumerate(sp.breaks):
        after, before = int(s[pre]), int(e[post])
        kind, size = _classify(segs[k], segs[k + 1], after, before, q, prior)
        breaks.append(Break(kind, after, before, size, amb))
    return breaks


def _fit_verdict(segs: list[Segment], beyond: str, outliers: bool) -> Verdict:
    st = {sg.offset_status for sg in segs}
    return (Verdict.BEYOND_PRIOR if beyond else Verdict.UNDECIDED if BoundStatus.UNDECIDED in st
            else Verdict.ASSUMED if BoundStatus.ASSUMED in st or outliers else Verdict.PROVEN)


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
