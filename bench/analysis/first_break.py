"""Which plane broke first among a window's lines, and the proof (`rackclock timeline --first`).
Pure: arrays in, an answer out.

A line is proven after another when their intervals are disjoint, or when both are stamps of one
clock within one segment a tick or more apart (bench.analysis.timeline_order.before). The lines no other
line of the window is proven to follow are the candidates for first; their planes are the answer:
one plane, or a set undecidable between them (two candidates of different planes whose order is
not proven, named). Every other plane is proven not first by the pair that orders its earliest
line after another. The story is the window's lines in proven order: blocks, each proven after
every line of the blocks before it. The naive merge (raw stamps at face value) is answered beside.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.timeline_order import order_arrays

I64 = npt.NDArray[np.int64]
STORY_LINES = 60        # lines of the story listed; the rest counted


@dataclass(frozen=True)
class Lines:
    """A window's lines as columns: interval, same-clock key (-1 none), stamp and its tick,
    plane, a label each, and the raw wall stamp for the naive merge (has_raw False: a counter's,
    which the naive merge cannot place)."""
    lo: I64
    hi: I64
    clock: I64
    stamp: I64
    res: I64
    plane: list[str]
    label: list[str]
    raw_ns: I64
    has_raw: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.lo)


def predecessors(x: Lines) -> I64:
    """For each line, one line proven before it (-1: none)."""
    n = len(x)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    order = np.argsort(x.hi, kind="stable")
    first, second = int(order[0]), int(order[1])
    w = np.where(np.arange(n) == first, second, first)          # least hi among the others
    out = np.where(x.hi[w] < x.lo, w, -1)
    for key in np.unique(x.clock[x.clock >= 0]).tolist():
        g = np.flatnonzero(x.clock == key)
        if len(g) < 2:
            continue
        end = x.stamp[g] + x.res[g]
        o = np.argsort(end, kind="stable")
        a, b = g[o[0]], g[o[1]]
        wg = np.where(g == a, b, a)
        ok = (out[g] < 0) & (x.stamp[wg] + x.res[wg] <= x.stamp[g])
        out[g[ok]] = wg[ok]
    return out


def first_planes(x: Lines) -> dict[str, Any]:
    """The answer: which plane broke first (or the set undecidable between them), the proof,
    the naive merge's answer and the story."""
    if not len(x):
        return {"lines": 0, "answer": "no lines in the window", "first": [], "planes": []}
    pred = predecessors(x)
    cand = np.flatnonzero(pred < 0)
    planes = list(dict.fromkeys(x.plane[i] for i in cand[np.argsort(x.lo[cand])]))
    out: dict[str, Any] = {"lines": len(x), "planes": planes,
                           "first": [_line(x, int(i)) for i in cand[:20]],
                           "first_count": len(cand)}
    if len(planes) == 1:
        out["answer"] = f"{planes[0]} broke first"
    else:
        out["answer"] = " or ".join(planes) + ": undecidable between them"
        out["undecided"] = _undecided(x, cand)
    out["proof"] = _proof(x, pred, set(planes))
    out["naive"] = _naive(x, pred)
    out["story"], out["story_count"] = _story(x)
    return out


def _line(x: Lines, i: int) -> dict[str, Any]:
    return {"plane": x.plane[i], "label": x.label[i], "lo_ns": int(x.lo[i]),
            "hi_ns": int(x.hi[i])}


def _undecided(x: Lines, cand: I64) -> list[dict[str, Any]]:
    """For each pair of candidate planes, two of their lines whose order is not proven."""
    by_plane: dict[str, int] = {}
    for i in cand[np.argsort(x.lo[cand])].tolist():
        by_plane.setdefault(x.plane[i], i)
    ps = list(by_plane)
    return [{"a": _line(x, by_plane[p]), "b": _line(x, by_plane[q]),
             "why": "neither interval ends before the other begins"}
            for k, p in enumerate(ps) for q in ps[k + 1:]][:10]


def _proof(x: Lines, pred: I64, first: set[str]) -> list[dict[str, Any]]:
    """Per plane not first: its earliest line and the line proven before it (the pair)."""
    out = []
    for p in dict.fromkeys(x.plane):
        if p in first:
            continue
        idx = [i for i in range(len(x)) if x.plane[i] == p]
        i = min(idx, key=lambda k: int(x.lo[k]))
        j = int(pred[i])
        same = bool(x.clock[i] >= 0 and x.clock[i] == x.clock[j] and x.hi[j] >= x.lo[i])
        out.append({"plane": p, "lines": len(idx), "after": _line(x, j), "line": _line(x, i),
                    "by": "the same clock's stamps, a tick or more apart" if same else
                          "its interval ends before this one begins"})
    return out


def _naive(x: Lines, pred: I64) -> dict[str, Any]:
    """The naive merge's first line (the earliest raw wall stamp), and whether it is proven not
    first."""
    walls = np.flatnonzero(x.has_raw)
    if not len(walls):
        return {"answer": "no wall-clock stamps to merge"}
    i = int(walls[np.argmin(x.raw_ns[walls])])
    out = {"answer": f"{x.plane[i]} broke first", "line": _line(x, i),
           "raw_ns": int(x.raw_ns[i]), "counters_left_out": int(len(x) - len(walls))}
    if pred[i] >= 0:
        out["refuted_by"] = _line(x, int(pred[i]))
    return out


def _story(x: Lines) -> tuple[list[dict[str, Any]], int]:
    """The window's lines in proven order: each with its block (every line of a block is
    proven after every line of the blocks before it); the first STORY_LINES."""
    perm, block, count = order_arrays(x.lo, x.hi, x.clock, x.stamp, x.res)
    rows = [{"step": int(block[k]) + 1, **_line(x, int(i)), "unordered": int(count[k])}
            for k, i in enumerate(perm[:STORY_LINES].tolist())]
    return rows, len(x)
