"""An incident timeline scored against the truth, beside the naive merge (timestamps taken at face
value, as every operator merges logs today). Pure: arrays in, counts out.

For every pair of events with distinct true instants: rackclock orders it right (the intervals
prove the true order), wrong (they prove the opposite: a bug, must be 0), or leaves it unordered.
The naive merge sorts by the raw stamps: right, wrong, or tied (equal stamps). "Which plane broke
first": the events no other event is proven to precede (the smallest set one of which must have
been first); it must hold the true first event.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import numpy.typing as npt


@dataclass
class PairScore:
    pairs: int = 0
    right: int = 0
    wrong: int = 0
    unordered: int = 0          # rackclock: not proven; naive: tied stamps
    gap_ns: list[int] = field(default_factory=list)      # per pair: true gap
    outcome: list[int] = field(default_factory=list)     # per pair: 1 right, -1 wrong, 0 unordered

    def add(self, gap: int, o: int) -> None:
        self.pairs += 1
        self.right += o == 1
        self.wrong += o == -1
        self.unordered += o == 0
        self.gap_ns.append(int(gap))
        self.outcome.append(int(o))

    def as_dict(self) -> dict[str, int]:
        return {"pairs": self.pairs, "right": self.right, "wrong": self.wrong,
                "unordered": self.unordered}


def first_set(lo_ns: npt.ArrayLike, hi_ns: npt.ArrayLike) -> list[int]:
    """Indices of the events no other event is proven (interval) to precede."""
    lo = np.asarray(lo_ns, dtype=np.int64)
    hi = np.asarray(hi_ns, dtype=np.int64)
    return [i for i in range(len(lo)) if not np.any(hi < lo[i])]


class Score(TypedDict):
    """`score`'s answer for one cascade."""
    rackclock: PairScore
    naive: PairScore
    true_first: int
    first_set: list[int]
    first_contains_truth: bool
    naive_first: int
    naive_first_right: bool


def score(true_ns: npt.ArrayLike, lo_ns: npt.ArrayLike, hi_ns: npt.ArrayLike,
          naive_ns: npt.ArrayLike) -> Score:
    """Pairs scored for rackclock and for the naive merge, and the first-event answers."""
    t = np.asarray(true_ns, dtype=np.int64)
    lo = np.asarray(lo_ns, dtype=np.int64)
    hi = np.asarray(hi_ns, dtype=np.int64)
    nv = np.asarray(naive_ns, dtype=np.int64)
    rc, nm = PairScore(), PairScore()
    for i in range(len(t)):
        for j in range(i + 1, len(t)):
            if t[i] == t[j]:
                continue
            a, b = (i, j) if t[i] < t[j] else (j, i)          # a truly before b
            gap = int(t[b] - t[a])
            rc.add(gap, 1 if hi[a] < lo[b] else -1 if hi[b] < lo[a] else 0)
            nm.add(gap, 1 if nv[a] < nv[b] else -1 if nv[b] < nv[a] else 0)
    first = int(np.argmin(t))
    fs = first_set(lo, hi)
    return {"rackclock": rc, "naive": nm, "true_first": first, "first_set": fs,
            "first_contains_truth": first in fs, "naive_first": int(np.argmin(nv)),
            "naive_first_right": int(np.argmin(nv)) == first}


GAP_BINS_NS = (0, 30_000_000, 100_000_000, 300_000_000, 1_000_000_000, 3_000_000_000,
               10_000_000_000, 10**15)


def curve(scores: list[Score], bins: tuple[int, ...] = GAP_BINS_NS) -> list[dict[str, int | float]]:
    """Per true-gap bin over many cascades: pairs, fraction rackclock orders (right), rackclock
    wrong, fraction the naive merge orders wrongly (and ties)."""
    g = np.concatenate([np.asarray(s["rackclock"].gap_ns, dtype=np.int64) for s in scores]) \
        if scores else np.zeros(0, dtype=np.int64)
    rc = np.concatenate([np.asarray(s["rackclock"].outcome) for s in scores]) if scores else g
    nm = np.concatenate([np.asarray(s["naive"].outcome) for s in scores]) if scores else g
    out = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (g >= lo) & (g < hi)
        n = int(m.sum())
        if not n:
            continue
        out.append({"gap_lo_ns": int(lo), "gap_hi_ns": int(hi), "pairs": n,
                    "rackclock_ordered": float(np.mean(rc[m] == 1)),
                    "rackclock_wrong": int(np.sum(rc[m] == -1)),
                    "naive_wrong": float(np.mean(nm[m] == -1)),
                    "naive_tied": float(np.mean(nm[m] == 0))})
    return out
