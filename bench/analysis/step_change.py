"""A change between two arms of an interleaved experiment, as a distribution-free interval.

The unit is the repeat: each repeat ran every arm once, back to back, so the ratio of an arm's
figure to the control's figure in the same repeat cancels the machine's slow drift. Steps within
one run are not independent (they share a process, a cache, a scheduler's mood), so no interval
here treats them as samples; a run contributes one figure per measure (its median step, its p99).

`median_interval` bounds the median of the paired ratios by order statistics: for n ratios the
interval [x_(k), x_(n-k+1)] covers the median with probability 1 - 2 P(Bin(n, 1/2) < k), whatever
the distribution (the sign test's interval). Five repeats give at best [min, max] at 93.75 %.

`verdict` says what an interval in percent decides: a change (the interval excludes 0), no change
beyond the interval's larger end (it contains 0 and lies within `within_pct`), or UNDECIDED.
Pure math: the standard library only.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def quantile(xs: Sequence[float], q: float) -> float:
    """The q-quantile of `xs` by the nearest-rank rule (an observed value, no interpolation)."""
    if not xs:
        raise ValueError("quantile of no values")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def _below(n: int, k: int) -> float:
    """P(Bin(n, 1/2) < k)."""
    return sum(math.comb(n, i) for i in range(k)) / (1 << n)


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float
    confidence: float        # the coverage the order statistics give (distribution-free)
    n: int


def median_interval(xs: Sequence[float], confidence: float = 0.95) -> Interval:
    """The narrowest order-statistic interval [x_(k), x_(n-k+1)] covering the median of the
    distribution `xs` came from with at least `confidence`; where n is too small for that,
    [min, max] with the coverage it has (reported, never claimed higher)."""
    n = len(xs)
    if n == 0:
        raise ValueError("an interval of no values")
    s = sorted(xs)
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * _below(n, k + 1) >= confidence:
        k += 1
    return Interval(s[k - 1], s[n - k], max(0.0, 1 - 2 * _below(n, k)), n)


def ratio_interval_pct(arm: Sequence[float], control: Sequence[float],
                       confidence: float = 0.95) -> Interval:
    """The change of `arm` against `control`, paired by repeat (same index), in percent:
    100 (arm/control - 1), bounded by `median_interval`. Pairs with a zero control are left out."""
    ratios = [100.0 * (a / c - 1.0) for a, c in zip(arm, control) if c > 0]
    return median_interval(ratios, confidence)


CHANGED, UNCHANGED, UNDECIDED = "changed", "unchanged", "UNDECIDED"


@dataclass(frozen=True)
class Verdict:
    word: str              # changed, unchanged or UNDECIDED
    smallest_pct: float    # the smallest change these runs could have shown: the larger end's size


def verdict(iv: Interval, within_pct: float, confidence: float = 0.9) -> Verdict:
    """`changed` when the interval excludes 0; `unchanged` when it contains 0 and both ends lie
    within ±within_pct (the runs would have shown a change as large as its larger end); else,
    and whenever the interval's coverage is below `confidence` (too few repeats), UNDECIDED."""
    reach = max(abs(iv.lo), abs(iv.hi))
    if iv.confidence < confidence:
        return Verdict(UNDECIDED, reach)
    if iv.lo > 0 or iv.hi < 0:
        return Verdict(CHANGED, reach)
    return Verdict(UNCHANGED if reach <= within_pct else UNDECIDED, reach)
