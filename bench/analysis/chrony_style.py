"""A chrony-style statistical clock estimate, the comparator for bench/estimate's proven bounds.

Modelled on chrony's regress.c / sourcestats.c, rewritten here because chrony is a C daemon with no
library interface: each read becomes one offset sample at its bracket's midpoint,
y = v + q/2 − (s + e)/2, weighted by the inverse square of its bracket relative to the narrowest
one (chrony weights samples by their distance); a weighted least-squares line y = b0 + b1·x is
fitted; a **runs test** on the signs of the residuals decides how many old points to keep (if the
residuals form too few runs for chance, the line is not a line any more: drop the oldest points,
0, 1, 2, 4, ... of them, until it passes or MIN_SAMPLES remain). Error bars are chrony's kind:
standard errors of b0 and b1 from the residual variance, times Student's t at 99% two-sided for
the remaining degrees of freedom (chrony's RGR_GetTCoef table is this t). They assume independent
Gaussian residuals, which quantization to a coarse tick and one-sided delays are not: the
benchmark reports how often they miss the truth.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64
from bench.analysis.proven_segment import Bound

MIN_SAMPLES = 6
RUNS_Z = 1.645          # one-sided 5% critical value for too few runs

# Student's t, 99% two-sided (0.995 quantile), dof 1..30; beyond, the normal value
_T995 = [63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055,
         3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
         2.787, 2.779, 2.771, 2.763, 2.756, 2.750]


def t_coef(dof: int) -> float:
    if dof < 1:
        return math.inf
    return _T995[dof - 1] if dof <= len(_T995) else 2.576


@dataclass(frozen=True)
class ChronyFit:
    epoch_ns: int
    offset_ns: Bound         # point ± t·sb0 at epoch (not a proof)
    drift_ppm: Bound         # point ± t·sb1 (chrony's "skew")
    used: int                # points kept by the runs test
    dropped: int             # oldest points dropped
    residual_sd_ns: float
    span_ns: int = 0         # from the first to the last point kept (chrony's "Span")

    def as_dict(self) -> dict[str, Any]:
        return {"epoch_ns": self.epoch_ns, "offset_ns": self.offset_ns.as_dict(),
                "drift_ppm": self.drift_ppm.as_dict(), "used": self.used,
                "dropped": self.dropped, "residual_sd_ns": self.residual_sd_ns,
                "span_ns": self.span_ns}


def _runs(r: F64) -> int:
    sgn = r >= 0
    return 1 + int(np.count_nonzero(sgn[1:] != sgn[:-1]))


def _runs_ok(r: F64) -> bool:
    n = len(r)
    n1 = int(np.count_nonzero(r >= 0))
    n2 = n - n1
    if n1 == 0 or n2 == 0:
        return n < MIN_SAMPLES
    mu = 2.0 * n1 * n2 / n + 1
    var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1)) if n > 1 else 0.0
    return _runs(r) >= mu - RUNS_Z * math.sqrt(max(var, 0.0))


def _wls(x: F64, y: F64, w: F64) -> tuple[float, float, float, float, float]:
    sw = w.sum()
    xm = (w * x).sum() / sw
    ym = (w * y).sum() / sw
    dx = x - xm
    sxx = (w * dx * dx).sum()
    b1 = (w * dx * (y - ym)).sum() / sxx if sxx > 0 else 0.0
    b0 = ym - b1 * xm
    return b0, b1, xm, sw, sxx


def fit_chrony(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, resolution_ns: int,
               *, epoch_ns: int | None = None) -> ChronyFit | None:
    """The statistical estimate of offset (at epoch_ns, default the middle of the points kept)
    and drift from one segment's reads; None with fewer than 3 reads."""
    s = np.asarray(s_ns, dtype=np.int64)
    e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    n = len(v)
    if n < 3:
        return None
    q = int(resolution_ns)
    mid = s + (e - s) // 2
    y_int = v - mid
    y0 = int(np.median(y_int))
    t_ref = int(mid[0])
    x = (mid - t_ref).astype(np.float64)
    y = (y_int - y0).astype(np.float64) + q / 2
    br = (e - s).astype(np.float64)
    w = (max(float(br.min()), 1.0) / np.maximum(br, 1.0)) ** 2

    drop, step = 0, 0
    while True:
        xs, ys, ws = x[drop:], y[drop:], w[drop:]
        b0, b1, xm, sw, sxx = _wls(xs, ys, ws)
        r = ys - (b0 + b1 * xs)
        nxt = 1 if step == 0 else step * 2
        if _runs_ok(r) or n - drop - nxt < MIN_SAMPLES:
            break
        step = nxt
        drop += step
    m = len(xs)
    dof = m - 2
    s2 = float((ws * r * r).sum() / dof) if dof > 0 else math.inf
    t = t_coef(dof)
    ep = int(epoch_ns) if epoch_ns is not None else \
        t_ref + int((xs[0] + xs[-1]) / 2)
    xe = float(ep - t_ref)
    sb1 = math.sqrt(s2 / sxx) if sxx > 0 else math.inf
    sb0 = math.sqrt(s2 * (1.0 / sw + (xe - xm) ** 2 / sxx)) if sxx > 0 else math.inf
    off = y0 + b0 + b1 * xe
    wr = r * np.sqrt(ws)
    return ChronyFit(
        epoch_ns=ep,
        offset_ns=Bound(off - t * sb0, off + t * sb0, off),
        drift_ppm=Bound((b1 - t * sb1) * 1e6, (b1 + t * sb1) * 1e6, b1 * 1e6),
        used=m, dropped=drop, residual_sd_ns=float(np.sqrt((wr * wr).mean())),
        span_ns=int(mid[-1] - mid[drop]))
