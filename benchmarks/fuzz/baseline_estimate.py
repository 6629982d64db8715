"""Frozen copy of bench/analysis/estimate.py as it stood before issue 11 (the width baseline of the
soundness fuzz; never used by the bench).

Provable offset and drift bounds of one device clock from bracketed reads (DESIGN.md,
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
Measured (benchmarks/estimator_mc.py, 12,000 devices, 40 % with wander given a 5σ allowance):
coverage 1.0 with and without wander, no false breaks; the allowance costs 11 % of median offset
width (1.27 against 1.14 narrowest brackets).

Resolution: the driver declares q; the values say what the clock delivers (the GCD of the gaps
between distinct values, trusted from MIN_DISTINCT distinct values). The coarser of the two is
used, because a coarser q only loosens constraints while a finer one than the truth breaks proofs.

Segmentation (bench/analysis/segment.py): an empty region is a model break; the series is split there, a
lone read that empties the region is an outlier, and each break gets bounds on its instant and size.
The search asks "is this window feasible?" O(log n) times per run; that test is a 1-D cutting-plane
minimisation of g − h (numpy, no hull), and the hull is built once per segment.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bench.units import fmt_ns
from benchmarks.fuzz import baseline_segment as _seg

PPM = 1e-6
TOL_NS = 1e-3            # float slack when deciding a region is non-empty, ns
SMALL_WINDOW = 48        # reads up to which feasibility is tested on the hull, not by bisection
MIN_DISTINCT = 6         # distinct values needed before the observed resolution is trusted


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

    def contains(self, x) -> bool:
        return self.lo <= x <= self.hi

    def as_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "point": self.point}


# -- envelopes and the polygon ---------------------------------------------------------------

def _max_envelope(m: np.ndarray, c: np.ndarray):
    """Upper envelope of lines y = m·x + c: (slopes, intercepts, breakpoints), slopes ascending."""
    order = np.lexsort((c, m))
    m, c = m[order], c[order]
    keep = np.ones(len(m), bool)
    keep[:-1] = m[1:] != m[:-1]            # equal slopes: the last (largest c) wins
    m, c = m[keep].tolist(), c[keep].tolist()
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
    M, C = np.array(hm), np.array(hc)
    X = (C[:-1] - C[1:]) / (M[1:] - M[:-1])
    return M, C, X


def _eval_env(env, x: np.ndarray) -> np.ndarray:
    M, C, X = env
    k = np.searchsorted(X, x)
    return M[k] * x + C[k]


class _Window:
    """The constraints of some reads, relative to epoch t0 (ns) and offset guess theta0 (ns).
    Coordinates: x = drift in ppm, y = offset at t0 minus theta0, ns."""

    def __init__(self, s, e, v, q: int, t0: int, wander_ns_per_s: float, prior_ppm: float):
        self.t0 = int(t0)
        self.theta0 = int(v[0]) - (int(s[0]) + int(e[0])) // 2
        self.q = int(q)
        self.w = float(wander_ns_per_s) * 1e-9
        self.prior = float(prior_ppm)
        a = (s - self.t0).astype(np.float64)
        b = (e - self.t0).astype(np.float64)
        self.alpha = a * PPM                                     # upper: y <= U - alpha·x
        self.beta = b * PPM                                      # lower: y >= L - beta·x
        self.U = ((v - s) - self.theta0 + self.q).astype(np.float64) + self.w * np.abs(a)
        self.L = ((v - e) - self.theta0).astype(np.float64) - self.w * np.abs(b)

    def feasible_x(self, hint: float | None = None, iters: int = 200) -> float | None:
        """A drift (ppm) at which the region is non-empty, or None when it is empty.

        d(x) = g(x) − h(x) is convex and piecewise linear: cutting planes in one dimension (the
        tangents at the ends of the bracket meet below the minimum; probe there, keep the side
        the slope points to) stop at the first x with d <= TOL or when the tangents prove
        d > TOL everywhere. O(n) numpy per step and no hull: the cheap test the segmentation
        search calls many times (a warm `hint` usually answers in one step). Undecided after
        `iters` steps counts as empty: a needless split, never a fit across a break."""
        L, U, beta, alpha = self.L, self.U, self.beta, self.alpha

        def probe(x):
            lv = L - beta * x
            uv = U - alpha * x
            i, j = int(np.argmax(lv)), int(np.argmin(uv))
            return float(lv[i] - uv[j]), float(alpha[j] - beta[i])

        lo, hi = -self.prior, self.prior
        if hint is not None and lo < hint < hi:
            d, sl = probe(hint)
            if d <= TOL_NS:
                return hint
            if sl > 0:
                hi = hint
            elif sl < 0:
                lo = hint
            else:
                return None
        d_lo, s_lo = probe(lo)
        if d_lo <= TOL_NS:
            return lo
        if s_lo >= 0:
            return None
        d_hi, s_hi = probe(hi)
        if d_hi <= TOL_NS:
            return hi
        if s_hi <= 0:
            return None
        for _ in range(iters):
            xc = (d_hi - d_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi)
            if d_lo + s_lo * (xc - lo) > TOL_NS:
                return None                      # the tangents meet above TOL: d > TOL
            x = xc if lo < xc < hi else (lo + hi) / 2
            if x in (lo, hi):
                return None                      # no float left between them
            d, sl = probe(x)
            if d <= TOL_NS:
                return x
            if sl > 0:
                hi, d_hi, s_hi = x, d, sl
            elif sl < 0:
                lo, d_lo, s_lo = x, d, sl
            else:
                return None
        return None

    def vertices(self, tol: float = TOL_NS):
        """x of the polygon's vertices (ascending, first and last are the drift bounds), or None
        when the region is empty (g − h > tol everywhere)."""
        P = self.prior
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

    def chains(self, x: np.ndarray):
        """g(x) and h(x) from every constraint (not only the hull), so hull rounding cannot
        shrink the bounds."""
        g = np.max(self.L[None, :] - np.outer(x, self.beta), axis=1)
        h = np.min(self.U[None, :] - np.outer(x, self.alpha), axis=1)
        return g, h


def _centroid(x, g, h):
    """Centroid of the polygon between chains g <= h over vertices x (coordinates scaled)."""
    if len(x) == 1:
        return float(x[0]), float((g[0] + h[0]) / 2)
    px = np.concatenate((x, x[::-1]))
    py = np.concatenate((g, h[::-1]))
    sx = max(float(np.ptp(px)), 1e-300)
    sy = max(float(np.ptp(py)), 1e-300)
    X = (px - px.mean()) / sx
    Y = (py - py.mean()) / sy
    X1, Y1 = np.roll(X, -1), np.roll(Y, -1)
    cr = X * Y1 - X1 * Y
    A = cr.sum() / 2
    if abs(A) < 1e-9:
        return float(px.mean()), float(py.mean())
    cx = ((X + X1) * cr).sum() / (6 * A)
    cy = ((Y + Y1) * cr).sum() / (6 * A)
    return float(cx * sx + px.mean()), float(cy * sy + py.mean())


# -- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    start_ns: int
    end_ns: int
    reads: int
    epoch_ns: int
    offset_ns: Bound
    drift_ppm: Bound
    jitter_ns: dict
    bracket_ns: dict
    resolution_ns: int
    resolution_note: str
    _x: tuple = field(default=(), repr=False, compare=False)     # polygon vertices: drift, ppm
    _g: tuple = field(default=(), repr=False, compare=False)     # lower chain, ns (- theta0)
    _h: tuple = field(default=(), repr=False, compare=False)     # upper chain, ns (- theta0)
    _theta0: int = field(default=0, repr=False, compare=False)
    _w: float = field(default=0.0, repr=False, compare=False)     # wander allowance, ns per ns

    def offset_at(self, t_ns: int) -> Bound:
        """Bounds on device minus reference at reference instant t_ns."""
        dt = int(t_ns) - self.epoch_ns
        x, g, h = np.array(self._x), np.array(self._g), np.array(self._h)
        k = x * PPM * float(dt)
        slack = self._w * abs(dt)
        lo = self._theta0 + math.floor(float(np.min(g + k)) - slack - TOL_NS)
        hi = self._theta0 + math.ceil(float(np.max(h + k)) + slack + TOL_NS)
        p = self.offset_ns.point - self._theta0 + self.drift_ppm.point * PPM * dt
        point = min(max(self._theta0 + round(p), lo), hi)
        return Bound(lo, hi, point)

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

    def as_dict(self) -> dict:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "reads": self.reads,
                "epoch_ns": self.epoch_ns, "offset_ns": self.offset_ns.as_dict(),
                "drift_ppm": self.drift_ppm.as_dict(), "jitter_ns": dict(self.jitter_ns),
                "bracket_ns": dict(self.bracket_ns), "resolution_ns": self.resolution_ns,
                "resolution_note": self.resolution_note}


@dataclass(frozen=True)
class Break:
    kind: str                     # "step" | "reboot" | "wrap" | "unknown"
    after_ns: int                 # the break happened after this reference instant ...
    before_ns: int                # ... and at or before this one
    size_ns: Bound | None         # later offset minus earlier offset across the break
    ambiguous_reads: int = 0      # reads that fit either side, left out of both fits

    def as_dict(self) -> dict:
        return {"kind": self.kind, "after_ns": self.after_ns, "before_ns": self.before_ns,
                "size_ns": None if self.size_ns is None else self.size_ns.as_dict(),
                "ambiguous_reads": self.ambiguous_reads}


@dataclass(frozen=True)
class ClockFit:
    segments: list
    breaks: list
    outliers: list
    resolution_ns: int
    resolution_note: str

    def segment_at(self, t_ns: int) -> Segment | None:
        """The segment whose span holds t_ns (or None)."""
        for sg in self.segments:
            if sg.start_ns <= t_ns <= sg.end_ns:
                return sg
        return None

    def as_dict(self) -> dict:
        return {"resolution_ns": self.resolution_ns, "resolution_note": self.resolution_note,
                "segments": [s.as_dict() for s in self.segments],
                "breaks": [b.as_dict() for b in self.breaks], "outliers": list(self.outliers)}


# -- fitting ---------------------------------------------------------------------------------

def wander_allowance_ns_per_s(wander_ppm_per_sqrt_hour: float, span_s: float,
                              k: float = 5.0) -> float:
    """An allowance for a frequency random walk of the given strength (its std over one hour,
    ppm): k standard deviations of its excursion over the span, in ns/s."""
    return k * float(wander_ppm_per_sqrt_hour) * math.sqrt(max(float(span_s), 1.0) / 3600.0) * 1e3


def observed_resolution(value_ns) -> int | None:
    """The step between the clock's distinct values (GCD of their gaps), or None when too few
    distinct values were seen to trust it."""
    u = np.unique(np.asarray(value_ns, dtype=np.int64))
    if len(u) < MIN_DISTINCT:
        return None
    return int(np.gcd.reduce(np.diff(u)))


def check_resolution(value_ns, declared_ns: int) -> tuple[int, str]:
    declared = max(1, int(declared_ns))
    obs = observed_resolution(value_ns)
    if obs is None or obs <= declared:
        return declared, ""
    n = len(np.unique(np.asarray(value_ns)))
    return obs, (f"declared resolution {fmt_ns(declared)}, but the {n} distinct values seen are "
                 f"all whole multiples of {fmt_ns(obs)} apart: using {fmt_ns(obs)} "
                 f"({declared} -> {obs} ns)")


def _fit_run(s, e, v, raw_s, raw_e, q, note, idx, epoch_ns, w, prior) -> Segment | None:
    si, ei, vi = s[idx], e[idx], v[idx]
    t0 = int(epoch_ns) if epoch_ns is not None else (int(si[0]) + int(ei[-1])) // 2
    win = _Window(si, ei, vi, q, t0, w, prior)
    x = win.vertices()
    if x is None:          # an epoch given far from the run can make the wander allowance fail
        t0 = (int(si[0]) + int(ei[-1])) // 2
        win = _Window(si, ei, vi, q, t0, w, prior)
        x = win.vertices()
    if x is None:          # the search's test and the hull disagree by float rounding: loosen
        x = win.vertices(tol=1.0)
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
    mid = (raw_s[idx] + raw_e[idx]) // 2
    res = ((vi - mid) - th0).astype(np.float64) + q / 2 - cy - cx * PPM * (mid - t0)
    br = (raw_e[idx] - raw_s[idx]).astype(np.float64)
    return Segment(
        start_ns=int(raw_s[idx[0]]), end_ns=int(raw_e[idx[-1]]), reads=len(idx), epoch_ns=t0,
        offset_ns=off, drift_ppm=dr,
        jitter_ns={"std": float(np.std(res)), "p99": float(np.percentile(np.abs(res), 99)),
                   "max": float(np.max(np.abs(res)))},
        bracket_ns={"min": int(br.min()), "median": float(np.median(br)),
                    "p99": float(np.percentile(br, 99))},
        resolution_ns=q, resolution_note=note,
        _x=tuple(x.tolist()), _g=tuple(g.tolist()), _h=tuple(h.tolist()), _theta0=th0, _w=w * 1e-9)


def _classify(a: Segment, b: Segment, after: int, before: int, q: int, prior: float):
    oa = [a.offset_at(t) for t in (after, before)]
    ob = [b.offset_at(t) for t in (after, before)]
    lo = min(y.lo - x.hi for x, y in zip(oa, ob))
    hi = max(y.hi - x.lo for x, y in zip(oa, ob))
    pa = [(y.point - x.point) for x, y in zip(oa, ob)]
    size = Bound(lo, hi, min(max(round(sum(pa) / 2), lo), hi))
    if hi < 0:
        # a counter modulo M = 2^k ticks (or 2^k ns) wrapped: the earlier reading crossed M
        # within the break's bounds and the size is -M
        a_lo, a_hi = after + oa[0].lo - q, before + oa[1].hi + q
        for k in range(8, 63):
            for m in (q << k, 1 << k):
                if a_lo <= m <= a_hi and lo <= -m <= hi:
                    return "wrap", size
        reading_lo = before + ob[1].lo        # the later clock's reading at `before`
        reading_hi = before + ob[1].hi
        span = (before - after) * (1 + prior * PPM) + q
        if reading_lo <= span and reading_hi >= -q:
            return "reboot", size
        return "step", size
    if lo > 0:
        return "step", size
    return "unknown", size


def fit_clock(s_ns, e_ns, value_ns, resolution_ns, *, drift_prior_ppm=200.0,
              wander_ns_per_s=0.0, uncertainty_ns=0, epoch_ns=None) -> ClockFit:
    """Segments with provable bounds, the breaks between them, and outliers, from one clock's
    ok reads in time order (int ns arrays: bracket start, bracket end, device value)."""
    raw_s = np.asarray(s_ns, dtype=np.int64)
    raw_e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    invalid = []
    if np.any(raw_e < raw_s):        # a bracket that ends before it starts proves nothing
        bad = np.flatnonzero(raw_e < raw_s)
        invalid = [{"index": int(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
                    "value_ns": int(v[i]), "evidence": "bracket ends before it starts"}
                   for i in bad]
        keep = np.flatnonzero(raw_e >= raw_s)
        fit = fit_clock(raw_s[keep], raw_e[keep], v[keep], resolution_ns,
                        drift_prior_ppm=drift_prior_ppm, wander_ns_per_s=wander_ns_per_s,
                        uncertainty_ns=uncertainty_ns, epoch_ns=epoch_ns)
        kept = [dict(o, index=int(keep[o["index"]])) for o in fit.outliers]
        return ClockFit(fit.segments, fit.breaks, sorted(kept + invalid, key=lambda o: o["index"]),
                        fit.resolution_ns, fit.resolution_note)
    q, note = check_resolution(v, resolution_ns)
    if len(v) == 0:
        return ClockFit([], [], [], q, note)
    order = np.argsort(raw_s, kind="stable")
    if np.any(order != np.arange(len(order))):
        raw_s, raw_e, v = raw_s[order], raw_e[order], v[order]
    else:
        order = None
    u = int(uncertainty_ns)
    s, e = raw_s - u, raw_e + u
    w, prior = float(wander_ns_per_s), float(drift_prior_ppm)

    hint = [None]

    def feasible(idx):
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

    sp = _seg.split(len(v), feasible)
    segs = [_fit_run(s, e, v, raw_s, raw_e, q, note, run, epoch_ns, w, prior) for run in sp.runs]
    breaks = []
    for k, (pre, post, amb) in enumerate(sp.breaks):
        after, before = int(s[pre]), int(e[post])
        kind, size = _classify(segs[k], segs[k + 1], after, before, q, prior)
        breaks.append(Break(kind, after, before, size, amb))
    orig = (lambda i: int(order[i])) if order is not None else int
    outliers = [{"index": orig(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
                 "value_ns": int(v[i]), "evidence": ev} for i, ev in sp.outliers]
    return ClockFit(segs, breaks, outliers, q, note)
