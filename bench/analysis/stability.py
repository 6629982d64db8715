"""Time stability of a regularly sampled offset series: ADEV, OADEV, MDEV, TDEV, TIE rms, MTIE.

The deviations and TIE rms come from allantools (NIST SP 1065 definitions, checked in
tests/test_stability.py against the published NBS14 values). MTIE is written here because
allantools' MTIE takes the max and min of every window of m + 1 samples, O(N·m) time per tau,
which at 10^6 points and octave taus is hours. Here each tau costs O(N) with the van Herk /
Gil-Werman block trick: within blocks of the window's length, prefix and suffix running extremes
(numpy accumulate) give any window's extreme as the extreme of one suffix and one prefix. It picks
the same samples as allantools, so the results are identical, not merely close.

Phase is in seconds for allantools (so ADEV is dimensionless); `summary()` takes the offset series
in ns and returns the time statistics (TDEV, TIE rms, MTIE) in ns. Reads come dithered:
`offset_series()` turns them into per-read offsets and `resample()` puts those on a regular grid
(linear interpolation, which smooths the shortest taus: quote those from regular reads only).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64, I64

Taus = npt.ArrayLike | None   # None or "octave": octaves; another str: every m; else taus (s)


def _taus(n: int, rate: float, taus: Taus) -> tuple[I64, F64]:
    """(m, tau_s) as allantools chooses them: octaves by default, m in [1, n)."""
    m: F64
    if taus is None or isinstance(taus, str):
        kmax = max(0, int(np.floor(np.log2(max(n - 1, 1)))))
        m = np.asarray(2.0 ** np.arange(kmax + 1), dtype=np.float64) if taus in (None, "octave") \
            else np.arange(1, n, dtype=np.float64)
    else:
        m = np.round(np.asarray(taus, dtype=float) * rate)
    m = np.unique(m[(m > 0) & (m < n)])
    return m.astype(np.int64), m / float(rate)


def _sliding(x: F64, w: int, op: np.ufunc, fill: float) -> F64:
    """op (np.maximum or np.minimum) over every window of w consecutive samples, O(len(x))."""
    n = len(x)
    nb = -(-n // w)
    X = np.full(nb * w, fill)
    X[:n] = x
    B = X.reshape(nb, w)
    pre = op.accumulate(B, axis=1).ravel()
    suf = op.accumulate(B[:, ::-1], axis=1)[:, ::-1].ravel()
    out: F64 = op(suf[:n - w + 1], pre[w - 1:n])
    return out


def mtie(phase: npt.ArrayLike, rate: float = 1.0, taus: Taus = None) -> tuple[F64, F64]:
    """(tau_s, MTIE) of a phase series: for each tau = m/rate, the largest peak-to-peak of the
    phase over any m + 1 consecutive samples (allantools.mtie's definition and tau choice)."""
    x = np.asarray(phase, dtype=np.float64)
    m, tau = _taus(len(x), rate, taus)
    out = np.empty(len(m))
    for k, mj in enumerate(m):
        w = int(mj) + 1
        out[k] = np.max(_sliding(x, w, np.maximum, -np.inf) - _sliding(x, w, np.minimum, np.inf))
    keep = (len(x) - m) > 1                     # allantools drops taus with a single window
    return tau[keep], out[keep]


def deviation(name: str, data: npt.ArrayLike, rate: float = 1.0, data_type: str = "phase",
              taus: Taus = None) -> tuple[F64, F64]:
    """(tau_s, dev) of allantools' `name` (adev, oadev, mdev, tdev, tierms)."""
    x = np.asarray(data, dtype=np.float64)
    n = len(x) + 1 if data_type == "freq" else len(x)          # as phase points
    m, _ = _taus(n, rate, taus)
    # allantools prints and raises when a tau has too little data: pass only taus it can do
    m = m[(n - m >= 2)] if name == "tierms" else m[n >= 3 * m + 2]
    if len(m) == 0:
        return np.zeros(0), np.zeros(0)
    import allantools  # scipy underneath: 1-2 s of import, paid only when used
    t, d, _, _ = getattr(allantools, name)(x, rate=rate, data_type=data_type,
                                           taus=m / float(rate))
    return np.asarray(t), np.asarray(d)


def offset_series(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike,
                  resolution_ns: float) -> tuple[I64, F64]:
    """Per read: the bracket's midpoint (ns) and the offset measured there, v + q/2 − midpoint
    (ns, float: exact relative to the first read's offset, which is subtracted in int64 and
    added back as a float)."""
    s = np.asarray(s_ns, dtype=np.int64)
    e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    mid = s + (e - s) // 2
    off = v - mid
    if len(off) == 0:
        return mid, off.astype(np.float64)
    return mid, (off - off[0]).astype(np.float64) + float(off[0]) + resolution_ns / 2


def resample(t_ns: npt.ArrayLike, x: npt.ArrayLike, interval_s: float) -> tuple[I64, F64]:
    """A dithered series onto a regular grid every interval_s from its first instant (linear
    interpolation; the grid stops at the last sample)."""
    t = np.asarray(t_ns, dtype=np.int64)
    step = int(round(interval_s * 1e9))
    if len(t) < 2:
        return t.copy(), np.asarray(x, dtype=np.float64).copy()
    grid = np.arange(t[0], t[-1] + 1, step, dtype=np.int64)
    return grid, np.interp((grid - t[0]).astype(np.float64), (t - t[0]).astype(np.float64),
                           np.asarray(x, dtype=np.float64))


def summary(offset_ns: npt.ArrayLike, interval_s: float, taus: Taus = None) -> dict[str, Any]:
    """All statistics of an offset series sampled every `interval_s` seconds (ns in, ns out for
    the time statistics; ADEV/OADEV/MDEV are dimensionless)."""
    x = np.asarray(offset_ns, dtype=np.float64)
    rate = 1.0 / float(interval_s)
    out: dict[str, Any] = {"interval_s": float(interval_s), "points": len(x)}   # keys by name
    if len(x) < 3:
        return out
    phase_s = (x - x[0]) * 1e-9
    for name in ("adev", "oadev", "mdev"):
        t, d = deviation(name, phase_s, rate, taus=taus)
        out[name] = {"tau_s": t.tolist(), "value": d.tolist()}
    for name, key in (("tdev", "tdev_ns"), ("tierms", "tie_rms_ns")):
        t, d = deviation(name, phase_s, rate, taus=taus)
        out[key] = {"tau_s": t.tolist(), "value": (d * 1e9).tolist()}
    t, d = mtie(x, rate, taus)
    out["mtie_ns"] = {"tau_s": t.tolist(), "value": d.tolist()}
    return out


def deviation_with_errors(name: str, data: npt.ArrayLike, rate: float = 1.0, data_type: str = "phase",
                          taus: Taus = None) -> tuple[F64, F64, F64]:
    """(tau_s, dev, err): `deviation()` with allantools' own error estimate (dev/√N, N the
    number of terms averaged at that tau), for error bars."""
    x = np.asarray(data, dtype=np.float64)
    n = len(x) + 1 if data_type == "freq" else len(x)
    m, _ = _taus(n, rate, taus)
    m = m[(n - m >= 2)] if name == "tierms" else m[n >= 3 * m + 2]
    if len(m) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    import allantools
    t, d, err, _ = getattr(allantools, name)(x, rate=rate, data_type=data_type,
                                             taus=m / float(rate))
    return np.asarray(t), np.asarray(d), np.asarray(err)


def log_taus(n: int, rate: float, per_decade: int = 8) -> F64:
    """About `per_decade` log-spaced taus (s) per decade from tau0 to n/3 samples: more points
    than octaves where a short run has few."""
    top = max(1.0, (n - 2) / 3.0)
    m = np.unique(np.round(np.logspace(0, np.log10(top), max(2, int(per_decade *
                                                                      np.log10(top)) + 1))))
    return m / float(rate)
