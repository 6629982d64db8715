"""Residuals of clock reads against a segment's point fit, and the regular series the stability
statistics need. Pure: numpy in, numbers out.

A read (s, e, v, q) says the offset then lay in [v − e, v + q − s]; minus the fitted line
θ + ρ·(t − epoch) at the bracket's midpoint, that interval is the read's residual interval and its
midpoint the read's residual. When the resolution q is much coarser than the bracket, the midpoint
residual is the tick's quantization, not the clock's noise: `coarse()` says so, and figures and
comparisons label it or leave it out.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64, I64

if TYPE_CHECKING:
    from bench.analysis.proven_segment import Segment


COARSE_RATIO = 1.0           # resolution over median bracket above which the tick dominates
MIN_STABILITY_POINTS = 8     # regular points needed before ADEV/TDEV/MTIE say anything
NICE_BINS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0,
               5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


@dataclass(frozen=True)
class Residuals:
    """Per read of one segment, in ns: bracket midpoint `t_ns`, residual interval [lo, hi],
    midpoint residual `mid`, bracket width `bracket`."""

    t_ns: I64
    lo: F64
    hi: F64
    mid: F64
    bracket: F64
    resolution_ns: int

    def __len__(self) -> int:
        return len(self.t_ns)

    @property
    def coarse(self) -> bool:
        return coarse(self.resolution_ns, self.bracket)


def coarse(resolution_ns: float, bracket_ns: npt.ArrayLike) -> bool:
    b = np.asarray(bracket_ns, dtype=np.float64)
    return bool(len(b)) and float(resolution_ns) > COARSE_RATIO * float(np.median(b))


def fitted_line(seg: Segment) -> Callable[[npt.ArrayLike], F64]:
    """The point fit of a segment (bench.analysis.proven_segment.Segment, or a summary's as
    bench.model.documents loads it): t_ns -> offset ns (float)."""
    epoch = int(seg.epoch_ns)
    theta = float(seg.offset_ns.point)
    rho = float(seg.drift_ppm.point) * 1e-6
    return lambda t: theta + rho * (np.asarray(t, dtype=np.int64) - epoch).astype(np.float64)


def segment_residuals(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: npt.ArrayLike,
                      seg: Segment) -> Residuals:
    """Residuals of the reads (int ns arrays, time order) that fall inside a summary segment."""
    sa, ea, va = (np.asarray(x, dtype=np.int64) for x in (s, e, v))
    qa = np.broadcast_to(np.asarray(q, dtype=np.int64), sa.shape)
    res = int(seg.resolution_ns or (int(qa[0]) if len(qa) else 1))
    keep = (sa >= int(seg.start_ns)) & (ea <= int(seg.end_ns))
    sa, ea, va = sa[keep], ea[keep], va[keep]
    qk: I64 = np.maximum(qa[keep], res)    # the fit used the coarser of declared and observed
    mid_t = sa + (ea - sa) // 2
    line = fitted_line(seg)(mid_t)
    lo = (va - ea).astype(np.float64) - line
    hi = (va + qk - sa).astype(np.float64) - line
    return Residuals(mid_t, lo, hi, (lo + hi) / 2, (ea - sa).astype(np.float64), res)


@dataclass(frozen=True)
class Series:
    """A regularly spaced series (`interval_s` apart) or the reason there is none."""

    x: F64
    interval_s: float
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.note


def regular_series(t_ns: npt.ArrayLike, x: npt.ArrayLike, min_points: int = MIN_STABILITY_POINTS
                   ) -> Series:
    """Bin irregular samples onto a regular grid (the mean of each bin) for ADEV/TDEV/MTIE.

    The bin is the shortest round width, from the median spacing up, that leaves no bin empty and
    still gives `min_points` bins; when none does, no series, with the reason."""
    t = np.asarray(t_ns, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    if len(t) < 2:
        return Series(np.array([]), 0.0, f"only {len(t)} read(s)")
    order = np.argsort(t, kind="stable")
    t, x = t[order], x[order]
    spacing = float(np.median(np.diff(t))) / 1e9
    why = (f"{len(t)} reads {spacing:.3g} s apart: series too short for {min_points} "
           f"regular bins")
    for tau0 in [b for b in NICE_BINS_S if b >= spacing] or [NICE_BINS_S[-1]]:
        step = round(tau0 * 1e9)
        too_short = True
        for phase in (0, step // 4, step // 2, 3 * step // 4):     # the grid's phase is arbitrary
            start = t[0] - phase
            k = ((t - start) // step).astype(np.int64)
            first, n = int(k[0]), int(k[-1])    # a partial first and last bin are dropped
            k = k - first - 1
            n = n - first - 1
            keep = (k >= 0) & (k < n)
            if n < min_points:
                continue
            too_short = False
            counts = np.bincount(k[keep], minlength=n)
            if np.any(counts == 0):
                why = (f"{int(np.sum(counts == 0))} of {n} bins of {tau0:g} s hold no read: "
                       f"series too irregular")
                continue
            sums = np.bincount(k[keep], weights=x[keep], minlength=n)
            return Series(sums / counts, tau0)
        if too_short:
            break
    return Series(np.array([]), 0.0, why)


def order_statistic_rank(n: int, alpha: float) -> int:
    """The largest j with P(Bin(n, 1/2) < j) <= alpha (0 when none): [a_(j), a_(n-j+1)]
    (1-based) holds the median of n exchangeable samples with confidence 1 - 2 alpha. The
    binomial's terms are taken in logs (lgamma), which stay finite where 2^-n underflowed (n >
    1074 reads crashed compare), and summed from 8 standard deviations below the middle, where
    the tail left out is below 1e-15 (bench/analysis imports no scipy: tests/test_layers.py)."""
    k = max(0, int(n / 2 - 4 * math.sqrt(n)) - 1)      # 8 sd of Bin(n, 1/2) below n/2
    log_c, cdf = math.lgamma(n + 1) - n * math.log(2), 0.0
    while k < n:
        nxt = cdf + math.exp(log_c - math.lgamma(k + 1) - math.lgamma(n - k + 1))
        if nxt > alpha:
            break
        cdf, k = nxt, k + 1
    return k


def median_ci(x: npt.ArrayLike, confidence: float = 0.95) -> tuple[float, float, float]:
    """(lo, median, hi): a distribution-free confidence interval of the median from order
    statistics (binomial), assuming only that the samples are exchangeable. With too few samples
    for the confidence asked, the full range."""
    a = np.sort(np.asarray(x, dtype=np.float64))
    n = len(a)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    med = float(np.median(a))
    j = order_statistic_rank(n, (1 - confidence) / 2)
    if j == 0:
        return float(a[0]), med, float(a[-1])
    return float(a[j - 1]), med, float(a[n - j])
