"""Proven bounds on a quantile of a run's event latencies, from each event's proven interval.

Each event i of a run has a true latency x_i and a proven interval lo_i <= x_i <= hi_i (the
stimulus's bracket to the log stamp's interval, bench/model/summary.latency_records). Let
x_(k) be the k-th smallest of the x_i (1-based), lo_(k) and hi_(k) the k-th smallest lo and hi.

Theorem: lo_(k) <= x_(k) <= hi_(k).
  Lower: if x_(k) < lo_(k), the k events with the k smallest latencies have lo_i <= x_i <=
  x_(k) < lo_(k): k lo's strictly below lo_(k), but at most k - 1 lo's are. Contradiction.
  Upper: if x_(k) > hi_(k), the n - k + 1 events with latencies x_(k..n) have hi_i >= x_i >=
  x_(k) > hi_(k): n - k + 1 hi's strictly above hi_(k), but at most n - k are. Contradiction.
The bound is the tightest that holds for every x inside the intervals (x_i = lo_i for all i
attains lo_(k), x_i = hi_i attains hi_(k)). It rests on nothing but the per-event intervals, so
it is proven whenever they are. It narrows with many events where one event's interval does not:
each stamp is quantized at a phase of its own (a 1 s log stamp cuts one event's interval at 0.2 s
after the stimulus and the next at 0.9 s), so the k-th smallest lo and hi sit close to the q-th
quantiles of the latencies, not a tick apart; the union [min lo, max hi] only widens with n.

The quantile q of n events is its k = ceil(q n)-th order statistic (q = 0.5: the lower median;
0.9: p90), the run's own events' quantile, not a distribution's: comparing two runs' medians
asks whether the device's events came out later, at the tolerance that absorbs event-to-event
spread. `events_to_decide` estimates how many events a side would settle an undecided change,
from the spread of this run's lo's and hi's (the DKW inequality at 95 %).
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

QUANTILES = {"median": 0.5, "p90": 0.9}
DKW_LN = math.log(2 / 0.05)       # DKW at 95 %: |F_n - F| <= sqrt(ln(2 / 0.05) / (2 n))
MAX_EVENTS = 100_000


def rank(n: int, q: float) -> int:
    """The 1-based rank k = ceil(q n) (at least 1, at most n) of quantile q among n events."""
    return min(n, max(1, math.ceil(q * n - 1e-9)))


def quantile_bounds(lo: npt.ArrayLike, hi: npt.ArrayLike, q: float) -> tuple[float, float, float]:
    """(lo_(k), hi_(k), point) of quantile q: the proven bound on the k-th smallest latency of
    these events, and the k-th smallest of the intervals' midpoints."""
    a, b = np.sort(np.asarray(lo, np.float64)), np.sort(np.asarray(hi, np.float64))
    k = rank(len(a), q) - 1
    mid = np.sort((np.asarray(lo, np.float64) + np.asarray(hi, np.float64)) / 2)
    return float(a[k]), float(b[k]), float(mid[k])


def _at(x: np.ndarray, p: float) -> float:
    """The empirical p-quantile of sorted x, p clipped to [0, 1]."""
    return float(x[rank(len(x), min(1.0, max(0.0, p))) - 1])


def change_limit(b: tuple, c: tuple, q: float, eps: float) -> tuple[float, float]:
    """The change interval of quantile q expected with events enough that the order statistics
    are within eps (in probability) of the quantiles of this run's lo's and hi's: (lo, hi).
    `b`, `c`: (sorted lo's, sorted hi's) of the baseline and the candidate."""
    return (_at(c[0], q - eps) - _at(b[1], q + eps), _at(c[1], q + eps) - _at(b[0], q - eps))


def decides(d: tuple[float, float], tol: float) -> bool:
    """A change interval that clears the tolerance or lies within it decides a verdict."""
    return d[0] > tol or d[1] < -tol or (-tol <= d[0] and d[1] <= tol)


def events_to_decide(b_lo, b_hi, c_lo, c_hi, q: float, tol: float) -> int | None:
    """Events a side (estimated) at which quantile q's change would be decided at +-tol, taking
    the spread of the lo's and hi's as this pair shows it; None when no count decides it (the
    change sits on the tolerance, or the per-event intervals are too wide)."""
    b = (np.sort(np.asarray(b_lo, np.float64)), np.sort(np.asarray(b_hi, np.float64)))
    c = (np.sort(np.asarray(c_lo, np.float64)), np.sort(np.asarray(c_hi, np.float64)))
    if not decides(change_limit(b, c, q, 0.0), tol):
        return None
    n = 2
    while n <= MAX_EVENTS:
        if decides(change_limit(b, c, q, math.sqrt(DKW_LN / (2 * n))), tol):
            return n
        n = math.ceil(n * 1.5)
    return None


def smallest_decidable(b_lo, b_hi, c_lo, c_hi, q: float) -> float:
    """The smallest tolerance at which quantile q's change, with events enough, is proven within
    it (what no affordable run can decide below): max |limit of the change interval|."""
    b = (np.sort(np.asarray(b_lo, np.float64)), np.sort(np.asarray(b_hi, np.float64)))
    c = (np.sort(np.asarray(c_lo, np.float64)), np.sort(np.asarray(c_hi, np.float64)))
    d = change_limit(b, c, q, 0.0)
    return max(abs(d[0]), abs(d[1]))
