"""What a fit publishes for each run of its split (_segment): the two-sided envelope's offset at
the epoch and its status (_publish: "undecided" with an unproven resolution or a segment of fewer
than MIN_DECIDED_READS reads beside a break, "assumed" when the reads need RATE_EDGE of the rate
bound, else "proven"), the drift at the epoch under RATE_CHANGE_ASSUMPTION (_epoch_drift; the
reasoning is in bench/analysis/estimate.py's docstring), every offset the bound allows over the
span (_span_offset) and the proven mean drift over the narrowest window (_mean_drift).
"""
from __future__ import annotations

import math
from dataclasses import replace as _dc_replace
from typing import Any

import numpy as np

from bench.analysis import envelope as _envelope
from bench.analysis import segment as _seg
from bench.analysis.arrays import I64, Idx
from bench.analysis.line_fit import _cone, _fit_run
from bench.analysis.polygon import PPM
from bench.analysis.proven_segment import Bound, Segment, _halves
from bench.analysis.statuses import BoundStatus, ResolutionBasis

MIN_DECIDED_READS = 4    # a segment beside a break with fewer reads could be a burst of bad reads


RATE_CHANGE_ASSUMPTION = ("at most one rate change inside the segment that the reads do not "
                          "show (an unseen slew, two changes, could put the drift at the epoch "
                          "anywhere within the prior)")


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
    RATE_CHANGE_ASSUMPTION (bench.analysis.estimate's docstring)."""
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
    dr, dst = _epoch_drift(seg, st)
    return _dc_replace(seg, offset_ns=off, drift_ppm=dr, offset_status=st, drift_status=dst,
                       drift_assumes=RATE_CHANGE_ASSUMPTION if dst != BoundStatus.UNDECIDED
                       else "", offset_line=line, rate_needed_ppm=need / PPM,
                       span_offset=_span_offset(env, seg), _env=env)


def _epoch_drift(seg: Segment, st: BoundStatus) -> tuple[Bound, BoundStatus]:
    """The drift at the epoch and its status: the hull of the two sides' lines (_halves), at
    best "assumed"; the line's own, "undecided", with no halves or an undecided offset."""
    s, e, v = seg._reads
    h = _halves(s, e, v, seg.resolution_ns, seg.epoch_ns, seg._w * 1e9, seg._prior, seg._cache)
    d = seg.drift_ppm
    if h is None or st == BoundStatus.UNDECIDED:
        return d, BoundStatus.UNDECIDED
    wp = seg._w * 1e6
    return Bound(h[2] - wp, h[3] + wp, min(max(d.point, h[2] - wp), h[3] + wp)), \
        BoundStatus.ASSUMED


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
