"""The feasible region of a run of reads in the (drift, offset) plane and its geometry (the model
and why it is exact: bench/analysis/estimate.py's docstring): the upper envelopes of the reads'
lines (a numpy sort by slope, then a monotone chain; the same in plain Python lists below
LIST_ENVELOPE_MAX lines, bit for bit), _Window (a run's constraints relative to an epoch, the
cutting-plane feasibility test the segmentation search calls, the polygon's vertices and its
chains), and the polygon's centroid.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

import numpy as np

from bench.analysis.arrays import F64, I64, Idx

PPM = 1e-6
TOL_NS = 1e-3            # float slack when deciding a region is non-empty, ns
Env = tuple[F64, F64, F64]         # an upper envelope: (slopes, intercepts, breakpoints)
EnvList = tuple[list[float], list[float], list[float]]     # the same in plain lists


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
        lo, hi = _feasible_ends(xs, d, k0, k1)
        inner = xs[k0:k1 + 1]
        inner = inner[(inner > lo) & (inner < hi)]
        lo, hi = _nudged_out(lo, hi, P)
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
        lo, hi = _feasible_ends(xs, d, k0, k1)
        inner = [x for x in xs[k0:k1 + 1] if lo < x < hi]
        lo, hi = _nudged_out(lo, hi, P)
        return np.array(sorted({lo, *inner, hi}))

    def chains(self, x: F64) -> tuple[F64, F64]:
        """g(x) and h(x) from every constraint (not only the hull), so hull rounding cannot
        shrink the bounds."""
        g = np.max(self.L[None, :] - np.outer(x, self.beta), axis=1)
        h = np.min(self.U[None, :] - np.outer(x, self.alpha), axis=1)
        return g, h


def _feasible_ends(xs: Any, d: Any, k0: int, k1: int) -> tuple[float, float]:
    """The drift bounds from the first (k0) and last (k1) vertex where g − h <= tol: where
    g − h is below 0 there, out to where it crosses 0 on the edge beyond (linear between
    vertices). The same operations on a list or an array of floats."""
    lo, hi = xs[k0], xs[k1]
    if k0 > 0 and d[k0] < 0:
        lo = xs[k0 - 1] + (xs[k0] - xs[k0 - 1]) * d[k0 - 1] / (d[k0 - 1] - d[k0])
    if k1 < len(xs) - 1 and d[k1] < 0:
        hi = xs[k1] + (xs[k1 + 1] - xs[k1]) * d[k1] / (d[k1] - d[k1 + 1])
    return lo, hi


def _nudged_out(lo: float, hi: float, P: float) -> tuple[float, float]:
    """The drift bounds nudged outward by more than the interpolation's rounding, within ±P."""
    return max(-P, lo - 1e-9 * (1 + abs(lo))), min(P, hi + 1e-9 * (1 + abs(hi)))


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
