"""MTIE and TDEV limits, judged from the reads like the other limits (pass / fail / undecided).

A mask is stated per plane or device in the rack file's [limits], as ITU-T G.8262 / G.8273.2 give
theirs: the largest MTIE or TDEV allowed at each observation interval tau,

    [limits.planes.host]
    mtie = {"1s" = "100ns", "10s" = "200ns", "100s" = "500ns"}
    tdev = {"1s" = "50ns", "10s" = "100ns"}

Each read proves the offset lay in [v - e, v + q - s] at an instant of its bracket [s, e] (widened
by the reference's bound). MTIE(tau) of the true offset is bounded below by the largest spread two
reads inside one window of tau prove, and above, under the model "between reads the offset moves
at most the drift prior (checked) and makes no unseen excursion", by the spread of the reads near
the window plus the prior times the longest gap. TDEV is a root mean square of second differences
of window means, so the true TDEV lies within 4/sqrt(6) times the largest half-width (reads and
interpolation) of the TDEV of the interval midpoints. A tau the run is too short for is undecided.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.stability import deviation, resample
from bench.units import fmt_bounds_ns, parse_duration_ns

MASK_KEYS = ("mtie", "tdev")
TDEV_GAIN = 4 / math.sqrt(6)      # TDEV of a series bounded by ±E is at most this times E
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def parse_mask(v: Any, where: str) -> list[tuple[float, float]]:
    """{"1s": "100ns", ...} -> [(tau_s, max_ns)] sorted by tau; ValueError naming `where`."""
    if not isinstance(v, Mapping) or not v:
        raise ValueError(f"{where}: expected a table of tau = max, e.g. {{\"1s\" = \"100ns\"}}")
    out = []
    for tau, mx in v.items():
        try:
            t, m = parse_duration_ns(tau) / 1e9, float(parse_duration_ns(mx))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if t <= 0 or m < 0:
            raise ValueError(f"{where}: tau must be > 0 and the maximum >= 0 ({tau} = {mx})")
        out.append((t, m))
    return sorted(out)


def read_intervals(s: npt.ArrayLike, e: npt.ArrayLike, v: npt.ArrayLike, q: npt.ArrayLike,
                   uncertainty_ns: int, prior_ppm: float) -> tuple[I64, F64, F64, float, float]:
    """(t_mid, lo, hi, gap_ns, slop_ns): each read's offset interval and the longest gap between
    reads with the offset's possible move across half of it under the prior."""
    s, e, v, q = (np.asarray(x, dtype=np.int64) for x in (s, e, v, q))
    base = int(v[0] - e[0])
    lo = (v - e - base).astype(float) - uncertainty_ns
    hi = (v + q - s - base).astype(float) + uncertainty_ns
    mid = s + (e - s) // 2
    gap = float(np.max(np.diff(s))) if len(s) > 1 else 0.0
    return mid, lo, hi, gap, prior_ppm * 1e-6 * gap / 2


def mtie_bounds(mid: I64, lo: F64, hi: F64, gap: float, slop: float,
                tau_s: float) -> tuple[float, float] | None:
    """(lower, upper) ns on MTIE(tau) of the true offset; None when the run is shorter than tau."""
    tau = tau_s * 1e9
    if len(mid) < 2 or mid[-1] - mid[0] < tau:
        return None
    lower = upper = 0.0
    for i in range(len(mid)):
        if mid[i] + tau > mid[-1]:
            break
        inside = (mid >= mid[i]) & (mid <= mid[i] + tau)
        near = (mid >= mid[i] - gap) & (mid <= mid[i] + tau + 2 * gap)
        lower = max(lower, float(lo[inside].max() - hi[inside].min()))
        upper = max(upper, float(hi[near].max() - lo[near].min()) + 2 * slop)
    return max(0.0, lower), upper


def tdev_bounds(mid: I64, lo: F64, hi: F64, gap: float, slop: float,
                tau_s: float) -> tuple[float, float] | None:
    """(lower, upper) ns on TDEV(tau); None when the run is too short for tau."""
    step = max(gap, 1.0) / 1e9
    t, x = resample(mid, (lo + hi) / 2, step)
    taus, d = deviation("tdev", (x - x[0]) * 1e-9, 1.0 / step, taus=[tau_s])
    if len(d) == 0 or abs(taus[0] - tau_s) > 0.5 * tau_s:
        return None
    err = TDEV_GAIN * (float(np.max(hi - lo)) / 2 + slop)
    val = float(d[0]) * 1e9
    return max(0.0, val - err), val + err


def _worst(verdicts: list[str]) -> str:
    """fail if any fails, pass if all pass, else undecided."""
    if "fail" in verdicts:
        return "fail"
    return "pass" if all(x == "pass" for x in verdicts) else "undecided"


def judge(kind: str, mask: list[tuple[float, float]], mid: I64, lo: F64, hi: F64, gap: float,
          slop: float) -> tuple[str, str, str]:
    """(verdict, bound text, why) of one mask over one clock's reads."""
    fn = mtie_bounds if kind == "mtie" else tdev_bounds
    verdicts: list[str] = []
    texts: list[str] = []
    short: list[str] = []
    for tau, mx in mask:
        b = fn(mid, lo, hi, gap, slop, tau)
        if b is None:
            verdicts.append("undecided")
            short.append(f"{tau:g} s: run too short")
            continue
        texts.append(f"{tau:g} s: {fmt_bounds_ns(b[0], b[1])}")
        verdicts.append("pass" if b[1] <= mx else "fail" if b[0] > mx else "undecided")
    v = _worst(verdicts)
    why = ("model: between reads the offset moves at most the drift prior (checked), no unseen "
           "excursion" + (f"; {', '.join(short)}" if short else ""))
    return v, "; ".join(texts) or "—", why
