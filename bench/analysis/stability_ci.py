"""Stability at standard taus with confidence intervals and proven bounds (issue 45 item 1):
flat numpy functions over arrays, in the style of allantools, and as cheap: no scipy.

- `standard_taus`: the 1-2-5 taus from 1 s that are whole multiples of the grid interval.
- `deviation`: ADEV (non-overlapping), OADEV, MDEV, TDEV of a phase series (s) at averaging
  factors m: NIST SP 1065 eqns (7), (11), (14), (15), the same sums as allantools (tests match
  allantools to 1e-9 relative).
- `deviation_bound`: the same estimator applied with the absolute values of its coefficients to
  a per-point bound E_i on the phase error. Each deviation is sqrt(c·Σ_j (L_j x)²) with linear
  L_j: a seminorm of x, so by Minkowski |σ(x_true) − σ(x_est)| <= σ(e) <= σ_|L|(E) when
  |x_est,i − x_true,i| <= E_i at every point (for ADEV σ_|L|(E) <= 2·√2·max E / τ).
- `noise_id`: the lag-1 autocorrelation noise identification (Riley & Greenhall 2004), as
  allantools.ci.autocorr_noise_id: the integer power-law exponent alpha of each tau, or none
  with fewer than 30 decimated points.
- `edf_greenhall`: equivalent degrees of freedom (Greenhall & Riley 2004), as
  allantools.ci.edf_greenhall, vectorised over cells.
- `chi2_ppf` and `confidence_interval`: the chi-squared interval of NIST SP 1065 eqn (45), as
  allantools.ci.confidence_interval; the quantiles by Newton's method on the regularised
  incomplete gamma function up to 300 degrees of freedom, the Cornish-Fisher expansion beyond
  (relative error below 5e-10 there).
- `mtie_bounds`: MTIE of the estimate and the interval the true MTIE lies in given a band
  [lo_i, hi_i] holding each true point; `max_te_bounds`: the same for max |TE|.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64, I64

ONE_SIGMA = math.erf(1 / math.sqrt(2))       # 0.6826894921370859: the 1-sigma interval
NOISE_ID_MIN_POINTS = 30                     # allantools' (and Stable32's) minimum for the ACF
ALPHAS = np.arange(-2, 3)                    # power-law noise exponents valid for d = 2
J_MAX = 100
STATISTICS = ("adev", "oadev", "mdev", "tdev")
# (overlapping, modified) of each statistic for its EDF (allantools confidence_interval_noiseID)
EDF_KIND = {"adev": (False, False), "oadev": (True, False), "mdev": (True, True),
            "tdev": (True, True)}


def standard_taus(interval_s: float, points: int, top_fraction: float = 1 / 3) -> I64:
    """Averaging factors m of the 1-2-5 taus (1 s upward) that are whole multiples of the grid
    interval with m·interval <= top_fraction of the span ((points − 1)·interval). A grid none
    of them is a multiple of (1.5 s, 3 s, 15 s) takes the 1-2-5 factors m themselves."""
    step = int(round(interval_s * 1e9))
    span = (points - 1) * step
    top = span * top_fraction
    if step and not any(x * 10 ** 9 % step == 0 for x in _ONE_TWO_FIVE_S):
        out = [m for m in _ONE_TWO_FIVE_S if m * step <= top]
    else:
        out = _whole_multiples(step, top)
    return np.asarray(sorted(set(out)), dtype=np.int64)


_ONE_TWO_FIVE_S = [c * 10 ** k for k in range(0, 10) for c in (1, 2, 5)]   # 1 s .. 5e9 s


def _whole_multiples(step: int, top: float) -> list[int]:
    """The 1-2-5 taus that are whole multiples of the grid step (ns) and at most `top` ns, as
    factors m of the step (none for a step of 0)."""
    return [t // step for t in (x * 10 ** 9 for x in _ONE_TWO_FIVE_S)
            if step and t % step == 0 and t <= top]


def _second_differences(x: F64, m: int, absolute: bool) -> F64:
    d: F64 = x[2 * m:] + 2 * x[m:-m] + x[:-2 * m] if absolute else \
        x[2 * m:] - 2 * x[m:-m] + x[:-2 * m]
    return d


def _one(name: str, x: F64, m: int, tau0: float, absolute: bool) -> float:
    """One statistic at one m (phase x in s, or its error bound E with `absolute`)."""
    n = len(x)
    tau = m * tau0
    if name in ("adev", "oadev"):
        if n < 2 * m + 1:
            return math.nan
        d = _second_differences(x, m, absolute)
        if name == "adev":
            d = d[::m]
        return math.sqrt(float(np.sum(d * d)) / (2.0 * len(d))) / tau
    if n < 3 * m:
        return math.nan
    if absolute:                  # v_j = sum of m second differences from j, all terms >= 0
        c = np.concatenate(([0.0], np.cumsum(_second_differences(x, m, True))))
        v = c[m:] - c[:-m]
    else:                         # allantools' recursion (adev_lib.c), for the same roundoff
        v0 = float(np.sum(x[2 * m:3 * m] - 2 * x[m:2 * m] + x[:m]))
        e = n - 3 * m
        v = np.concatenate(([v0], v0 + np.cumsum(x[3 * m:3 * m + e] - 3 * x[2 * m:2 * m + e]
                                                 + 3 * x[m:m + e] - x[:e])))
    mdev = math.sqrt(float(np.sum(v * v)) / (2.0 * m * m * tau * tau * len(v)))
    return mdev * tau / math.sqrt(3.0) if name == "tdev" else mdev


def deviation(name: str, phase_s: npt.ArrayLike, m: npt.ArrayLike, tau0_s: float) -> F64:
    """`name` (adev, oadev, mdev, tdev) of a phase series (s) sampled every tau0_s, at each
    averaging factor m (NaN where the series is too short: 2m + 1 points for ADEV, 3m for
    MDEV). TDEV in s. The sums allantools makes (NIST SP 1065)."""
    x = np.asarray(phase_s, dtype=np.float64)
    return np.asarray([_one(name, x, int(k), tau0_s, False) for k in np.atleast_1d(m)])


def deviation_bound(name: str, error_s: npt.ArrayLike, m: npt.ArrayLike, tau0_s: float) -> F64:
    """How far `name` of the true phase can be from that of the estimate when each point's
    error is at most error_s[i] (s): the estimator with absolute coefficients applied to the
    bounds (module docstring)."""
    e = np.asarray(error_s, dtype=np.float64)
    return np.asarray([_one(name, e, int(k), tau0_s, True) for k in np.atleast_1d(m)])


def _lag1(x: F64) -> float:
    mu = float(np.mean(x))
    y = x - mu
    return float(np.dot(y[:-1], y[1:]) / np.dot(y, y))


def noise_id(phase_s: npt.ArrayLike, m: int, dmax: int = 2) -> int | None:
    """The power-law exponent alpha (2 white PM ... -2 random-walk FM) of a phase series at
    averaging factor m by the lag-1 autocorrelation (allantools.ci.autocorr_noise_id): None with
    fewer than NOISE_ID_MIN_POINTS decimated points, or a degenerate (constant) series."""
    x = np.asarray(phase_s, dtype=np.float64)[::max(1, int(m))]
    if len(x) < NOISE_ID_MIN_POINTS:
        return None
    t = np.arange(len(x), dtype=np.float64)
    x = x - np.polyval(np.polyfit(t, x, 2), t)
    d = 0
    while True:
        if not np.any(x - x.mean()):
            return None
        r1 = _lag1(x)
        rho = r1 / (1.0 + r1)
        if rho < 0.25 or d >= dmax:
            return int(-1.0 * np.round(2 * rho) - 2.0 * d) + 2
        x = np.diff(x)
        d += 1


# Greenhall & Riley 2004, tables 1-3 (rows alpha = 2 .. -4, columns d = 1, 2, 3), as allantools
_T1 = np.array([[(2 / 3, 1 / 3), (7 / 9, 1 / 2), (22 / 25, 2 / 3)],
                [(0.840, 0.345), (0.997, 0.616), (1.141, 0.843)],
                [(1.079, 0.368), (1.033, 0.607), (1.184, 0.848)],
                [(-1, -1), (1.048, 0.534), (1.180, 0.816)],
                [(-1, -1), (1.302, 0.535), (1.175, 0.777)],
                [(-1, -1), (-1, -1), (1.194, 0.703)],
                [(-1, -1), (-1, -1), (1.489, 0.702)]])
_T2 = np.array([[(3 / 2, 1 / 2), (35 / 18, 1.0), (231 / 100, 3 / 2)],
                [(78.6, 25.2), (790.0, 410.0), (9950.0, 6520.0)],
                [(2 / 3, 1 / 6), (2 / 3, 1 / 3), (7 / 9, 1 / 2)],
                [(-1, -1), (0.852, 0.375), (0.997, 0.617)],
                [(-1, -1), (1.079, 0.368), (1.033, 0.607)],
                [(-1, -1), (-1, -1), (1.053, 0.553)],
                [(-1, -1), (-1, -1), (1.302, 0.535)]])
_T3 = np.array([(6.0, 4.0), (15.23, 12.0), (47.8, 40.0)])


def _sw(t: F64, alpha: F64) -> F64:
    """Greenhall's sw (eqn 7): |t|^(3 - alpha), times ln|t| for odd alpha, negated for 2."""
    a = np.abs(t)
    p = np.power(a, 3 - alpha)
    odd = (alpha % 2) == 1
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), 0.0)
    out: F64 = np.where(odd, np.where(a > 0, p * lg, 0.0), np.where(alpha == 2, -a, p))
    return out


def _sx(t: F64, F: F64, alpha: F64) -> F64:
    """Greenhall's sx (eqn 8); F = inf gives sw(t, alpha + 2)."""
    inf = np.isinf(F)
    Fs = np.where(inf, 1.0, F)
    fin = Fs * Fs * (2 * _sw(t, alpha) - _sw(t - 1.0 / Fs, alpha) - _sw(t + 1.0 / Fs, alpha))
    out: F64 = np.where(inf, _sw(t, alpha + 2), fin)
    return out


def _sz(t: F64, F: F64, alpha: F64) -> F64:
    """Greenhall's sz (eqn 9) for d = 2: 6 sx(t) − 4 sx(t ± 1) + sx(t ± 2)."""
    return (6 * _sx(t, F, alpha) - 4 * _sx(t - 1.0, F, alpha) - 4 * _sx(t + 1.0, F, alpha)
            + _sx(t - 2.0, F, alpha) + _sx(t + 2.0, F, alpha))


def _basic_sum(J: F64, M: F64, S: F64, F: F64, alpha: F64, j_max: int = J_MAX) -> F64:
    """Greenhall's BasicSum (eqn 10) over cells (columns j = 1 .. j_max − 1, masked j < J)."""
    j = np.arange(1, max(2, j_max), dtype=np.float64)[None, :]
    Jc, Mc, Sc, Fc, ac = (np.asarray(v, dtype=np.float64)[:, None] for v in (J, M, S, F, alpha))
    first = _sz(np.zeros_like(Jc), Fc, ac)[:, 0] ** 2
    second = (1 - J / M) * _sz(Jc / Sc, Fc, ac)[:, 0] ** 2
    terms = 2 * (1.0 - j / Mc) * _sz(j / Sc, Fc, ac) ** 2
    third = np.sum(np.where(j < Jc, terms, 0.0), axis=1)
    out: F64 = first + second + third
    return out


def edf_greenhall(alpha: npt.ArrayLike, m: npt.ArrayLike, N: npt.ArrayLike,
                  overlapping: npt.ArrayLike, modified: npt.ArrayLike) -> F64:
    """Equivalent degrees of freedom of the d = 2 (Allan family) variances, per cell (arrays
    broadcast): allantools.ci.edf_greenhall's cases 1-4; NaN where it has none (alpha = 2,
    unmodified, with K = ceil(M/S) <= 2; alpha outside [-2, 2])."""
    a, m_, N_, ov, mo = np.broadcast_arrays(*(np.asarray(v) for v in
                                              (alpha, m, N, overlapping, modified)))
    a, m_, N_ = a.astype(np.float64), m_.astype(np.float64), N_.astype(np.float64)
    ov, mo = ov.astype(bool), mo.astype(bool)
    d = 2
    F = np.where(mo, 1.0, m_)
    S = np.where(ov, m_, 1.0)
    L = m_ / F + m_ * d
    M = 1 + np.floor(S * (N_ - L) / m_)
    J = np.minimum(M, (d + 1) * S)
    r = M / S
    row = np.clip((2 - a).astype(int), 0, 6)
    small, big = J <= J_MAX, r > d + 1
    # the basic-sum branches: (J, M, S, F) per cell, with the factor sz(0)'s F and the divisor
    c1 = mo
    c2 = ~mo & (a <= 0)
    c3 = ~mo & (a == 1)
    mp = J_MAX / r
    Fa = np.where(c1, 1.0, np.where(c2, np.where(m_ * (d + 1) <= J_MAX, m_, np.inf), m_))
    Fb = np.where(c1, 1.0, np.where(c2, np.inf, mp))
    Jb = np.where(small, J, J_MAX)
    Mb = np.where(small, M, J_MAX)
    Sb = np.where(small, S, mp)
    Fs = np.where(small, Fa, Fb)
    with np.errstate(all="ignore"):
        # the basic sum only where a branch takes it (not the tables', not case 4's)
        need = (small | ~big) & ~(~mo & (a == 2)) & np.isfinite(Jb) & (Mb > 0)
        bs = np.full(a.shape, np.nan)
        if np.any(need):
            bs[need] = _basic_sum(Jb[need], Mb[need], Sb[need], Fs[need], a[need],
                                  int(np.max(Jb[need])))
        z0 = _sz(np.zeros_like(a), np.where(small, Fa, np.where(c2, np.inf, np.where(c1, 1.0, m_))),
                 a) ** 2
        b0, b1 = _T3[d - 1]
        log_m = np.log(np.maximum(m_, 1.0))
        norm3 = np.where(c3 & ~small, (b0 + b1 * log_m) ** 2, z0)
        inv = bs / (norm3 * Mb)
        t1, t2 = _T1[row, d - 1], _T2[row, d - 1]
        tab = np.where(c1[:, None], t1, t2)
        inv_tab = (tab[:, 0] - tab[:, 1] / r) / r
        inv_tab = np.where(c3, (tab[:, 0] - tab[:, 1] / r) / ((b0 + b1 * log_m) ** 2 * r),
                           inv_tab)
        inv = np.where(~small & big, inv_tab, inv)
        c4 = ~mo & (a == 2)
        a0 = math.comb(4 * d, 2 * d) / math.comb(2 * d, d) ** 2
        inv = np.where(c4, np.where(np.ceil(r) <= d, np.nan, (a0 - d / 2.0 / r) / M), inv)
        edf: F64 = np.where((a < -2) | (a > 2) | ~np.isfinite(inv) | (inv <= 0), np.nan, 1.0 / inv)
    return edf


def _lgamma(a: F64) -> F64:
    return np.asarray([math.lgamma(float(v)) for v in a])


def _gammainc(a: F64, x: F64, lg: F64, iters: int = 4000) -> F64:
    """Regularised lower incomplete gamma P(a, x): the series below a + 1, the continued
    fraction (modified Lentz) above (Numerical Recipes 6.2)."""
    x = np.maximum(x, 1e-300)
    front = np.exp(-x + a * np.log(x) - lg)
    ser = x < a + 1
    term = 1.0 / a
    total = term.copy()
    b = x + 1.0 - a
    c = np.full_like(x, 1e300)
    dd = 1.0 / b
    h = dd.copy()
    for n in range(1, iters):
        term = term * x / (a + n)
        total = total + term
        an = -n * (n - a)
        b = b + 2.0
        dd = an * dd + b
        dd = np.where(np.abs(dd) < 1e-300, 1e-300, dd)
        c = b + an / c
        c = np.where(np.abs(c) < 1e-300, 1e-300, c)
        dd = 1.0 / dd
        delta = dd * c
        h = h * delta
        if n % 8 == 0 and np.all(np.where(ser, np.abs(term) <= np.abs(total) * 1e-15,
                           np.abs(delta - 1.0) <= 1e-15)):
            break
    out: F64 = np.where(ser, front * total, 1.0 - front * h)
    return out


def _cornish_fisher(z: F64, nu: F64) -> F64:
    """The chi-squared quantile's Cornish-Fisher expansion to O(nu^-3/2) (relative error below
    5e-10 from 300 degrees of freedom on, at the 1-sigma quantiles)."""
    s = np.sqrt(2 * nu)
    out: F64 = (nu + z * s + 2 / 3 * (z * z - 1) + (z ** 3 - 7 * z) / (9 * s)
                - (6 * z ** 4 + 14 * z * z - 32) / (405 * nu)
                + (9 * z ** 5 + 256 * z ** 3 - 433 * z) / (4860 * nu * s))
    return out


EXACT_DF = 300            # chi2_ppf: Newton up to this many degrees of freedom, Cornish-Fisher beyond


def chi2_ppf(p: npt.ArrayLike, df: npt.ArrayLike) -> F64:
    """The p-quantile of chi-squared with df (> 0, real) degrees of freedom (p and df
    broadcast): Newton on P(df/2, x/2) (safeguarded by bisection) up to EXACT_DF, the
    Cornish-Fisher expansion beyond."""
    pp, nu = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(p, df))
    zs = {q: math.sqrt(2) * _erfinv(2 * q - 1) for q in set(pp.ravel().tolist())}
    z = np.asarray([zs[q] for q in pp.ravel().tolist()], dtype=np.float64).reshape(pp.shape)
    out: F64 = np.where(nu > EXACT_DF, _cornish_fisher(z, np.maximum(nu, 1.0)), np.nan)
    exact = nu <= EXACT_DF
    if not np.any(exact):
        return out
    a, ze, p_ = nu[exact] / 2, z[exact], pp[exact]
    lg = _lgamma(a)
    wh = nu[exact] * np.maximum(1 - 2 / (9 * nu[exact]) + ze * np.sqrt(2 / (9 * nu[exact])),
                                1e-3) ** 3
    # start: Wilson-Hilferty, Cornish-Fisher from 20 degrees of freedom (within 3e-6 there)
    x = np.where(nu[exact] >= 20, _cornish_fisher(ze, np.maximum(nu[exact], 1.0)), wh) / 2
    lo, hi = np.zeros_like(x), np.full_like(x, np.inf)
    for _ in range(60):
        f = _gammainc(a, x, lg) - p_
        lo, hi = np.where(f < 0, x, lo), np.where(f > 0, x, hi)
        pdf = np.exp((a - 1) * np.log(x) - x - lg)
        nx = x - f / np.maximum(pdf, 1e-300)
        nx = np.where((nx <= lo) | (nx >= hi) | ~np.isfinite(nx),
                      np.where(np.isfinite(hi), (lo + hi) / 2, 2 * x), nx)
        # quadratic convergence: a step of 1e-8 leaves an error of order 1e-16
        done = np.abs(nx - x) <= 1e-8 * x
        x = nx
        if np.all(done):
            break
    out[exact] = 2 * x
    return out


def _erfinv(y: float) -> float:
    """erf^-1 by Newton from a rational start (scalar; a handful of calls per run)."""
    x = 0.0
    for _ in range(100):
        err = math.erf(x) - y
        x -= err / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        if abs(err) < 1e-16:
            break
    return x


def confidence_interval(dev: npt.ArrayLike, edf: npt.ArrayLike,
                        ci: float = ONE_SIGMA) -> tuple[F64, F64]:
    """(lo, hi) of each deviation with its EDF at confidence `ci` (NIST SP 1065 eqn 45, as
    allantools.ci.confidence_interval): sqrt(edf·dev²/chi2(1 − (1−ci)/2)) and with (1−ci)/2.
    NaN where the EDF is."""
    dv = np.asarray(dev, dtype=np.float64)
    nu = np.asarray(edf, dtype=np.float64)
    lo, hi = np.full_like(dv, np.nan), np.full_like(dv, np.nan)
    ok = np.isfinite(nu) & (nu > 0) & np.isfinite(dv)
    if np.any(ok):
        pl = min(abs(ci), abs(ci - 1)) / 2
        k = int(ok.sum())
        both = chi2_ppf(np.repeat([pl, 1 - pl], k), np.tile(nu[ok], 2))   # one pass: both
        c_lo, c_hi = both[:k], both[k:]
        lo[ok] = np.sqrt(nu[ok] * dv[ok] ** 2 / c_hi)
        hi[ok] = np.sqrt(nu[ok] * dv[ok] ** 2 / c_lo)
    return lo, hi


def noise_ids(phase_s: F64, m: I64) -> list[int | None]:
    """noise_id at each m."""
    return [noise_id(phase_s, int(k)) for k in m]


def edf_of(names: tuple[str, ...], n: int, m: I64, alphas: list[int | None]
           ) -> dict[str, tuple[F64, list[int | None]]]:
    """Per statistic: (EDF, alpha used or None) over n points at each m, given each m's
    identified alpha (noise_ids): Greenhall's EDF for it; where none is identified (or it has
    no EDF), the smallest EDF over alpha in [-2, 2], i.e. the widest interval any power-law
    noise gives. One vectorised pass over every statistic, m and alpha."""
    kinds = np.array([EDF_KIND[nm] for nm in names])                       # (s, 2)
    shape = (len(names), len(m), len(ALPHAS))
    a = np.broadcast_to(ALPHAS[None, None, :], shape).astype(np.float64)
    mm = np.broadcast_to(np.asarray(m)[None, :, None], shape)
    ov = np.broadcast_to(kinds[:, 0][:, None, None], shape)
    mo = np.broadcast_to(kinds[:, 1][:, None, None], shape)
    every = edf_greenhall(a.ravel(), mm.ravel(), n, ov.ravel(), mo.ravel()).reshape(shape)
    with np.errstate(all="ignore"):
        worst = np.where(np.all(np.isnan(every), axis=2), np.nan,
                         np.nanmin(np.where(np.isnan(every), np.inf, every), axis=2))
    out: dict[str, tuple[F64, list[int | None]]] = {}
    for k, nm in enumerate(names):
        edf, used = worst[k].copy(), list(alphas)
        for i, al in enumerate(alphas):
            if al is not None and -2 <= al <= 2 and np.isfinite(every[k, i, al + 2]):
                edf[i] = every[k, i, al + 2]
            else:
                used[i] = None
        out[nm] = (edf, used)
    return out


def _sliding_rows(X: F64, w: int, op: np.ufunc, fill: float) -> F64:
    """bench.analysis.stability._sliding along each row of X (van Herk / Gil-Werman)."""
    r, n = X.shape
    nb = -(-n // w)
    P = np.full((r, nb * w), fill)
    P[:, :n] = X
    B = P.reshape(r, nb, w)
    pre = op.accumulate(B, axis=2).reshape(r, -1)
    suf = op.accumulate(B[:, :, ::-1], axis=2)[:, :, ::-1].reshape(r, -1)
    out: F64 = op(suf[:, :n - w + 1], pre[:, w - 1:n])
    return out


def _grow(mx: F64, mn: F64, w: int, target: int) -> tuple[F64, F64]:
    """Sliding extremes of windows of w samples widened to `target` samples: a window of
    w + k (k <= w) is the union of two windows of w, k apart, so each step is one elementwise
    max (min), exactly."""
    while w < target:
        k = min(w, target - w)
        mx, mn = np.maximum(mx[:, :-k], mx[:, k:]), np.minimum(mn[:, :-k], mn[:, k:])
        w += k
    return mx, mn


def mtie_bounds(x: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike, m: npt.ArrayLike
                ) -> tuple[F64, F64, F64]:
    """(estimate, lower, upper) of MTIE at windows of m + 1 consecutive samples (tau =
    m·interval): the estimate's largest peak-to-peak, and given lo_i <= truth_i <= hi_i, the
    interval the truth's lies in: max over windows of max(0, max lo − min hi), and of
    max hi − min lo. The smallest window's sliding extremes in O(N) (van Herk / Gil-Werman),
    each larger one grown from the previous (_grow). The estimate is taken of x moved into
    [lo, hi] where it lies outside (a dithered grid point of a coarse clock can: the nearest
    proven value is never further from the truth), so it lies inside its interval."""
    X = np.vstack([np.asarray(v, dtype=np.float64) for v in (x, lo, hi)])
    X[0] = np.clip(X[0], X[1], X[2])
    mm = np.atleast_1d(np.asarray(m))
    out = np.full((3, len(mm)), np.nan)
    w, mx, mn = 0, X, X
    for k in np.argsort(mm, kind="stable"):
        target = int(mm[k]) + 1
        if target > X.shape[1] or target < 2:
            continue
        if w == 0:                                       # rows: x, lo, hi
            w = target
            mx = _sliding_rows(X, w, np.maximum, -np.inf)
            mn = _sliding_rows(X, w, np.minimum, np.inf)
        mx, mn = _grow(mx, mn, w, target)
        w = target
        out[0, k] = np.max(mx[0] - mn[0])
        out[1, k] = max(0.0, float(np.max(mx[1] - mn[2])))
        out[2, k] = np.max(mx[2] - mn[1])
    return out[0], out[1], out[2]


def max_te_bounds(x: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike
                  ) -> tuple[float, float, float]:
    """(estimate, lower, upper) of max |TE|: the estimate's max |x| (x moved into [lo, hi], as
    mtie_bounds), and given lo_i <= truth_i <= hi_i, max of the distance from 0 to [lo_i, hi_i]
    and max of max(|lo_i|, |hi_i|)."""
    xs, ls, hs = (np.asarray(v, dtype=np.float64) for v in (x, lo, hi))
    xs = np.clip(xs, ls, hs)
    if not len(xs):
        return math.nan, math.nan, math.nan
    dist = np.maximum(0.0, np.maximum(ls, -hs))
    return (float(np.max(np.abs(xs))), float(np.max(dist)),
            float(np.max(np.maximum(np.abs(ls), np.abs(hs)))))
