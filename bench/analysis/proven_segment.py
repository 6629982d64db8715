"""The segment record and its proven sides (bench/analysis/estimate.py's docstring has the
model). A Segment holds the line model's polygon (offset_at, to_reference) and what holds with
one unseen break inside it (proven_offset_at, proven_to_reference, proven_sides): the published
two-sided envelope's bound (bench/analysis/envelope.py), or, for a segment fitted without
publishing, the hull of the bounds from the reads on each side of the instant (_halves, its
answers and the sides' vertices kept with the segment's reads in _Cache).
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis import envelope as _envelope
from bench.analysis.arrays import F64, I64
from bench.analysis.polygon import PPM, TOL_NS, _Window
from bench.analysis.statuses import BoundStatus

DEFAULT_DRIFT_PRIOR_PPM = 600.0   # crystal tolerance (100 ppm) + an NTP slew (500 ppm): fit_clock says why
SIDE_READS = 4096        # reads on each side of an instant its published bound is fitted from
SEARCH_LIMIT_NS = 2 ** 62      # instants a stamp search may try (int64 arithmetic on reads)
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
            return self._proven_sides_each(v, q)
        p = self._pieces(self._env)
        if p is None:
            z = np.zeros(len(v), dtype=np.int64)
            return z, z.copy(), np.zeros(len(v), bool), np.zeros(len(v), bool)
        return _envelope.proven_sides_many(p, v, q)

    def _proven_sides_each(self, v: I64, q: npt.NDArray[np.int64]
                           ) -> tuple[I64, I64, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """proven_sides_many's result from proven_sides, one stamp at a time."""
        sides = [self.proven_sides(int(a), int(b)) for a, b in zip(v, q)]
        has_lo = np.array([s[0] is not None for s in sides], dtype=bool)
        has_hi = np.array([s[1] is not None for s in sides], dtype=bool)
        lo = np.array([s[0] or 0 for s in sides], dtype=np.int64)
        hi = np.array([s[1] or 0 for s in sides], dtype=np.int64)
        return lo, hi, has_lo, has_hi

    def _pieces(self, env: _envelope.TwoSided) -> _envelope.Pieces | None:
        """The published envelope's pieces (bench.analysis.envelope.pieces), built once."""
        kept = [pc for e, pc in self._cache.pieces if e is env]
        if kept:
            return kept[0]
        p = _envelope.pieces(env)
        self._cache.pieces[:] = [(env, p)]
        return p

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
