"""Frozen copy of bench/analysis/segment.py before issue 11 (baseline for the soundness fuzz).

Splitting one clock's reads where the model breaks, and telling a break from a lone bad read.

The fit is a predicate here: `feasible(idx)` says whether the reads at positions `idx` (ascending)
admit one straight line (non-empty region). Everything below is search over that predicate:

* the longest clean run from a start is found by galloping then bisection (O(log n) fits);
* a read that empties the region is an **outlier** when the reads before it and the next few after
  it agree without it (it alone broke the region); otherwise the series **breaks** there; a read
  left alone between two breaks (or first, before one) whose next few reads agree without it is
  an outlier too, and the break it caused is looked for again without it;
* around a break, the next run is grown backwards as far as it stays feasible. Reads that fit
  either side are ambiguous and join neither fit: the last read the later run cannot take is
  provably before the break, the first read the earlier run cannot take provably after it, which
  bounds the break's instant without ever fitting across it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Feasible = Callable[[np.ndarray], bool]

OUTLIER_LOOKAHEAD = 6      # reads after a suspect that must agree with the reads before it
OUTLIER_MIN_AFTER = 3      # fewer reads after a suspect than this: it cannot be judged an outlier


@dataclass
class Split:
    runs: list[np.ndarray] = field(default_factory=list)        # positions of each clean run
    breaks: list[tuple[int, int, int]] = field(default_factory=list)
    # per break: (last position provably before, first position provably after, ambiguous count)
    outliers: list[tuple[int, str]] = field(default_factory=list)   # (position, evidence)


def _longest_forward(idx: np.ndarray, start: int, feasible: Feasible, known: int = -1) -> int:
    """Largest j >= start with idx[start..j] feasible (a single read always is; so is
    idx[start..known]). Galloping keeps the cost proportional to the run found, not to the reads
    left."""
    n = len(idx)
    good = max(start, min(known, n - 1))
    step = max(1, good - start)
    while True:
        j = min(good + step, n - 1)
        if j == good:
            return good
        if feasible(idx[start:j + 1]):
            good, step = j, step * 2
        else:
            bad = j
            break
    while bad - good > 1:
        mid = (good + bad) // 2
        if feasible(idx[start:mid + 1]):
            good = mid
        else:
            bad = mid
    return good


def _longest_backward(idx: np.ndarray, first: int, last: int, floor: int,
                      feasible: Feasible) -> int:
    """Smallest b in [floor, first] with idx[b..last] feasible."""
    good, step = first, 1
    while True:
        b = first - step
        if b < floor:
            bad = floor - 1
            if floor < good and feasible(idx[floor:last + 1]):
                return floor
            break
        if feasible(idx[b:last + 1]):
            good, step = b, step * 2
        else:
            bad = b
            break
    while good - bad > 1:
        mid = (good + bad) // 2
        if feasible(idx[mid:last + 1]):
            good = mid
        else:
            bad = mid
    return good


def split(n: int, feasible: Feasible) -> Split:
    """Clean runs, breaks and outliers of reads 0..n-1 (in time order)."""
    out = Split()
    idx = np.arange(n)
    start = 0
    starts: list[int] = []             # where the runs before each recorded break started
    known = -1                         # idx[start..known] is known to be feasible
    while start < len(idx):
        end = _longest_forward(idx, start, feasible, known)
        known = -1
        if end == len(idx) - 1:
            out.runs.append(idx[start:])
            break
        f = end + 1
        after = idx[f + 1:f + 1 + OUTLIER_LOOKAHEAD]
        if end == start and len(idx) - f >= OUTLIER_MIN_AFTER:
            # a run of one read, at odds with the run before it (or first) and with the reads
            # after it, which agree among themselves: that read alone is wrong
            nxt = idx[f:f + OUTLIER_LOOKAHEAD]
            if feasible(nxt):
                what = "the reads before it nor " if starts else ""
                out.outliers.append((int(idx[start]), f"alone empties the region: it agrees "
                                     f"with neither {what}the next {len(nxt)} reads, which agree "
                                     f"without it"))
                idx = np.delete(idx, start)
                if starts:                          # the break it caused was no break
                    out.runs.pop()
                    out.breaks.pop()
                    start = starts.pop()
                continue
        if len(after) >= OUTLIER_MIN_AFTER and feasible(np.concatenate((idx[start:f], after))):
            out.outliers.append((int(idx[f]), f"alone empties the region of reads "
                                 f"{int(idx[start])}..{int(idx[f - 1])}, which agree with the "
                                 f"next {len(after)} reads without it"))
            idx = np.delete(idx, f)
            known = f - 1 + len(after)
            continue
        end2 = _longest_forward(idx, f, feasible)
        b = _longest_backward(idx, f, end2, start + 1, feasible)
        out.runs.append(idx[start:b])
        out.breaks.append((int(idx[b - 1]), int(idx[f]), f - b))
        starts.append(start)
        start = f
    return out
