"""The bounded-rate envelope: a clock's offset at any instant from every read, under a rate bound.

The model (DESIGN.md, "The measurement model"): between breaks the offset θ(t) = D(t) − t of a
monotone device clock moves at most R (the drift prior, as a fraction) per unit of time,
|θ(t) − θ(t')| <= R·|t − t'|, however it moves in between: slews, a PLL hunting, NTP corrections,
wander, frequency steps, all within R. A read (s, e, v) with resolution q says D(s) < v + q and
D(e) >= v (the clock is monotone and the device sampled inside [s, e]), so

    θ(e) >= v − e = L             θ(s) < v + q − s = U

and by the rate bound, at any instant t,

    θ(t) >= max_k (L_k − R·|t − e_k|)        θ(t) <= min_k (U_k + R·|t − s_k|)

This is the tightest bound the model allows: the left-hand side, as a function of t, is itself
R-Lipschitz and meets every lower constraint, so when it also stays below every upper one it is a
clock the reads admit, and it reaches the bound (likewise the right-hand side). The reads are
consistent with the model exactly when max_k (L_k − R·|s_j − e_k|) <= U_j for every read j; an
empty envelope is a model break (a step, or a rate beyond R), split there, never dropped.

NTP's root dispersion and ClockBound's error bound grow from their last update the same way; the
envelope intersects what every read says instead of keeping only the latest. Hand-written: it is
a few numpy lines over sorted arrays, no library offers it. Instants are reduced by a reference
instant and offsets by a guess θ0 in int64 before anything becomes a float (epoch-scale values are
~1.8e18 ns, beyond float's integers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64, I64

PPM = 1e-6
TOL_NS = 1e-3


@dataclass(frozen=True)
class Envelope:
    """The constraints of some reads, relative to t_ref (ns) and theta0 (ns). `rate` is R as a
    fraction (ppm · 1e-6). Lower points (a, L): θ(a) >= L; upper points (b, U): θ(b) <= U."""
    a: F64
    L: F64
    b: F64
    U: F64
    rate: float
    t_ref: int
    theta0: int

    def at(self, t_ns: int) -> tuple[int, int]:
        """(lo, hi) of the offset at reference instant t_ns, ns, rounded outward."""
        x = float(int(t_ns) - self.t_ref)
        lo = float(np.max(self.L - self.rate * np.abs(x - self.a)))
        hi = float(np.min(self.U + self.rate * np.abs(x - self.b)))
        slack = TOL_NS + 1e-12 * self.rate * abs(x)
        return self.theta0 + math.floor(lo - slack), self.theta0 + math.ceil(hi + slack)


def build(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: int, rate_ppm: float,
          lag_ns: int = 0) -> Envelope:
    """The envelope of reads (int64 arrays, ns). `lag_ns`: the device's reading may lag its clock
    by up to this much (a tick that flips after the true second), which moves each read's upper
    point to s − lag: D(s − lag) < v + q."""
    s = np.asarray(s, dtype=np.int64) - int(lag_ns)
    e = np.asarray(e, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    t_ref = int(s[0])
    theta0 = int(v[0]) - (int(s[0]) + int(e[0])) // 2
    return Envelope(a=(e - t_ref).astype(np.float64), L=((v - e) - theta0).astype(np.float64),
                    b=(s - t_ref).astype(np.float64),
                    U=((v - s) + int(q) - theta0).astype(np.float64),
                    rate=float(rate_ppm) * PPM, t_ref=t_ref, theta0=theta0)


def violation(env: Envelope, rate: float | None = None) -> float:
    """max_j (max_k (L_k − R·|b_j − a_k|) − U_j), ns: > 0 when the reads contradict the model at
    this rate (default the envelope's own). O(n log n): the lower envelope at each b_j is the
    larger of a prefix maximum of L + R·a (points before b_j) and a suffix maximum of L − R·a."""
    R = env.rate if rate is None else float(rate)
    order = np.argsort(env.a, kind="stable")
    a, L = env.a[order], env.L[order]
    pre = np.maximum.accumulate(L + R * a)
    suf = np.maximum.accumulate((L - R * a)[::-1])[::-1]
    k = np.searchsorted(a, env.b, side="right")
    low = np.full(len(env.b), -np.inf)
    has_pre = k > 0
    low[has_pre] = pre[k[has_pre] - 1] - R * env.b[has_pre]
    has_suf = k < len(a)
    low[has_suf] = np.maximum(low[has_suf], suf[k[has_suf]] + R * env.b[has_suf])
    return float(np.max(low - env.U))


def feasible(env: Envelope, tol: float = TOL_NS) -> bool:
    return violation(env) <= tol


def rate_needed(env: Envelope, iters: int = 40) -> float:
    """The smallest rate bound (a fraction) under which these reads are consistent, to within
    1/2^iters of the envelope's own; the envelope's rate when they are not even at that."""
    if violation(env, 0.0) <= TOL_NS:
        return 0.0
    lo, hi = 0.0, env.rate
    if violation(env, hi) > TOL_NS:
        return hi
    for _ in range(iters):
        mid = (lo + hi) / 2
        if violation(env, mid) <= TOL_NS:
            hi = mid
        else:
            lo = mid
    return hi


class TwoSided:
    """The offset at t from the reads that ended by t and, apart, from the reads that started at
    or after t, each carried to t at the rate bound; published: the hull of the two. With at most
    one step inside the segment that no read showed, one side holds only reads from the step's
    side of t, so its bound holds the truth, and so does the hull; the rate bound covers
    everything continuous (slews, corrections, a PLL hunting). A read whose bracket holds t serves
    neither side. Prefix and suffix extremes make each instant O(log n)."""

    def __init__(self, env: Envelope, gaps: tuple[tuple[int, int], ...] = ()):
        R = env.rate
        self.env = env
        # (lo, hi) ns: spans where reads were set aside as bad answers; had the clock really
        # been elsewhere then (a blip), nothing bounds it there, so no instant inside is published
        self.gaps = tuple((int(a), int(b)) for a, b in gaps)
        by_e = np.argsort(env.a, kind="stable")            # a = e: left sides, in order of e
        self.e = env.a[by_e]
        self.lo_l = np.maximum.accumulate(env.L[by_e] + R * env.a[by_e])
        self.hi_l = np.minimum.accumulate(env.U[by_e] - R * env.b[by_e])
        by_s = np.argsort(env.b, kind="stable")            # b = s: right sides, in order of s
        self.s = env.b[by_s]
        self.lo_r = np.maximum.accumulate((env.L[by_s] - R * env.a[by_s])[::-1])[::-1]
        self.hi_r = np.minimum.accumulate((env.U[by_s] + R * env.b[by_s])[::-1])[::-1]

    def bounds(self, t_ns: npt.ArrayLike, min_side: int = 1, joined: bool = False
               ) -> tuple[F64, F64, npt.NDArray[np.bool_]]:
        """(lo, hi, each side has at least `min_side` reads) at each instant, float ns relative
        to theta0. `joined`: the two sides intersected instead of their hull, which holds only
        with no unseen step at all."""
        R = self.env.rate
        x = (np.atleast_1d(np.asarray(t_ns, dtype=np.int64)) - self.env.t_ref).astype(np.float64)
        i = np.searchsorted(self.e, x, side="right")        # reads 0..i-1 ended by t
        j = np.searchsorted(self.s, x, side="left")         # reads j.. started at or after t
        ok = (i >= min_side) & (j <= len(self.s) - min_side)
        t = x + self.env.t_ref
        for g0, g1 in self.gaps:
            ok &= ~((t > g0) & (t < g1))
        ii, jj = np.maximum(i - 1, 0), np.minimum(j, len(self.s) - 1)
        both = (np.maximum, np.minimum) if joined else (np.minimum, np.maximum)
        lo = both[0](self.lo_l[ii] - R * x, self.lo_r[jj] + R * x)
        hi = both[1](self.hi_l[ii] + R * x, self.hi_r[jj] - R * x)
        return lo, hi, ok

    def at(self, t_ns: int) -> tuple[int, int] | None:
        """(lo, hi) ns at t_ns rounded outward, or None when a side has no read."""
        lo, hi, ok = self.bounds(t_ns)
        if not ok[0]:
            return None
        slack = TOL_NS + 1e-12 * self.env.rate * abs(float(int(t_ns) - self.env.t_ref))
        th = self.env.theta0
        return th + math.floor(float(lo[0]) - slack), th + math.ceil(float(hi[0]) + slack)

    def at_many(self, t_ns: npt.ArrayLike) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
        """`at` at many instants, with its rounding (kept apart: `at` is a scalar hot path, and
        one element through numpy costs it more; benchmarks/README.md): (lo, hi) int64 ns
        rounded outward, and where each side has a read (elsewhere lo and hi mean nothing)."""
        t = np.atleast_1d(np.asarray(t_ns, dtype=np.int64))
        lo, hi, ok = self.bounds(t)
        slack = TOL_NS + 1e-12 * self.env.rate * np.abs((t - self.env.t_ref).astype(np.float64))
        th = np.int64(self.env.theta0)
        return (np.floor(lo - slack).astype(np.int64) + th,
                np.ceil(hi + slack).astype(np.int64) + th, ok)

    def narrowest(self, t_lo: int, t_hi: int, candidates: int = 2048) -> int | None:
        """The instant in [t_lo, t_hi] where the published bound is narrowest: its edges are
        piecewise linear in t with corners at the reads' instants, so the minimum is at one of
        them. None when no instant has reads on both sides."""
        pts = np.unique(np.clip(np.concatenate((self.e, self.s)).astype(np.int64) + self.env.t_ref,
                                t_lo, t_hi))
        if len(pts) > candidates:
            pts = pts[np.linspace(0, len(pts) - 1, candidates).astype(int)]
        lo, hi, ok = self.bounds(pts)
        if not ok.any():
            return None
        w = np.where(ok, hi - lo, np.inf)
        return int(pts[int(np.argmin(w))])


@dataclass(frozen=True)
class Pieces:
    """TwoSided's published bound over its proven span cut into pieces where the same reads are on
    each side (bench.analysis.timeline_map maps many stamps through it at once). Piece m covers
    the integer instants [start[m], end[m]] (relative to t_ref; offsets relative to theta0); on
    it the bound is lo(x) = min(ll[m] − R·x, lr[m] + R·x), hi(x) = max(hl[m] + R·x, hr[m] − R·x),
    so x + lo(x) and x + hi(x) increase inside a piece (R < 1); between pieces they may jump
    either way (a read joins the left side at its end, leaves the right side after its start).
    `ok`: no gap of reads set aside covers it (such a piece bounds nothing)."""
    start: F64
    end: F64
    ll: F64
    lr: F64
    hl: F64
    hr: F64
    ok: npt.NDArray[np.bool_]
    rate: float
    t_ref: int
    theta0: int


def pieces(two: TwoSided) -> Pieces | None:
    """The pieces of two's published bound from its first read's end to its last read's start
    (Segment.proven_span); None where that is empty."""
    env = two.env
    if not len(two.e) or not len(two.s):
        return None
    x0, x1 = math.ceil(float(two.e[0])), math.floor(float(two.s[-1]))
    if x0 > x1:
        return None
    # i (reads ended by x) changes at each read's end; j (reads started at or after x) just
    # after each read's start; a gap (g0, g1), open, excludes the instants inside it
    cuts = [np.ceil(two.e), np.floor(two.s) + 1.0, np.array([float(x0)])]
    for g0, g1 in two.gaps:
        cuts.append(np.array([float(g0 - env.t_ref + 1), float(g1 - env.t_ref)]))
    start = np.unique(np.concatenate(cuts))
    start = start[(start >= x0) & (start <= x1)]
    end = np.append(start[1:] - 1.0, float(x1))
    R = env.rate
    i = np.searchsorted(two.e, start, side="right")
    j = np.searchsorted(two.s, start, side="left")
    ii, jj = np.maximum(i - 1, 0), np.minimum(j, len(two.s) - 1)
    ok = (i >= 1) & (j <= len(two.s) - 1)
    t = start + env.t_ref
    for g0, g1 in two.gaps:
        ok &= ~((t > g0) & (t < g1))
    return Pieces(start, end, two.lo_l[ii], two.lo_r[jj], two.hi_l[ii], two.hi_r[jj], ok, R,
                  env.t_ref, env.theta0)


def proven_sides_many(p: Pieces, value: npt.NDArray[np.int64], res: npt.NDArray[np.int64]
                      ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                 npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """For stamps (true reading in [value, value + res)): the latest instant of the pieces proven
    before each (D(t) <= t + hi(t) < value) and the earliest proven after it (t + lo(t) >=
    value + res), absolute ns, and whether each exists. Exact over the pieces (the latest
    piece whose first instant is before the stamp, then the crossing inside it, and likewise
    after), with the margin that makes each end pass TwoSided.at's rounded bounds too
    (what Segment.proven_sides tests)."""
    R = p.rate
    base = p.t_ref + p.theta0
    lim = 2 ** 62
    v = np.clip(np.asarray(value, dtype=np.int64), base - lim, base + lim)
    vq = np.clip(v + np.maximum(1, np.asarray(res, dtype=np.int64)), base - lim, base + lim)
    # TwoSided.at rounds hi(x) up after adding TOL_NS (plus 1e-12·R·|x|): t + that < value
    # (integers) holds where x + hi(x) <= value - 1 - slack; t + lo's floor >= value + res
    # where x + lo(x) >= value + res + slack
    slack = 2 * TOL_NS + 1e-12 * R * max(abs(float(p.start[0])), abs(float(p.end[-1]))) + 1e-6
    y = (v - base).astype(np.float64) - 1.0 - slack          # x + hi(x) < y: before the stamp
    yq = (vq - base).astype(np.float64) + slack              # x + lo(x) >= yq: after it
    # before: x + hi(x) at each piece's first instant (its least there), suffix minima
    h0 = p.start + np.maximum(p.hl + R * p.start, p.hr - R * p.start)
    sm = np.minimum.accumulate(np.where(p.ok, h0, np.inf)[::-1])[::-1]
    k = np.searchsorted(sm, y, side="left") - 1            # the last piece starting before
    has_lo = k >= 0
    kk = np.maximum(k, 0)
    x_lo = np.minimum((y - p.hl[kk]) / (1 + R), (y - p.hr[kk]) / (1 - R))
    lo = np.clip(np.floor(x_lo), p.start[kk], p.end[kk])
    # after: x + lo(x) at each piece's last instant (its most there), prefix maxima
    g1 = p.end + np.minimum(p.ll - R * p.end, p.lr + R * p.end)
    pm = np.maximum.accumulate(np.where(p.ok, g1, -np.inf))
    m = np.searchsorted(pm, yq, side="left")                # the first piece ending after
    has_hi = m < len(pm)
    mm = np.minimum(m, len(pm) - 1)
    x_hi = np.maximum((yq - p.ll[mm]) / (1 - R), (yq - p.lr[mm]) / (1 + R))
    hi = np.clip(np.ceil(x_hi), p.start[mm], p.end[mm])
    lo_ns = np.where(has_lo, lo, 0).astype(np.int64) + p.t_ref
    hi_ns = np.where(has_hi, hi, 0).astype(np.int64) + p.t_ref
    return lo_ns, hi_ns, has_lo, has_hi

