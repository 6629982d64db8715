"""One line through a run of reads: the line model's segment (_fit_run: the polygon's offset and
drift bounds, its centroid as the point, the residual and bracket statistics), the envelope's
cone where no single line fits within the prior (_cone), and fit_line, the probe schedule's
one-segment fit without the segmentation search.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bench.analysis import envelope as _envelope
from bench.analysis.arrays import F64, I64, Idx
from bench.analysis.polygon import PPM, TOL_NS, _centroid, _Window
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Bound, Segment
from bench.analysis.statuses import BoundStatus


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
