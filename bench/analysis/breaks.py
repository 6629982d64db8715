"""Where the reads break: the segmentation at the drift prior (_split under the line model,
_split_envelope under the published one; bench/analysis/segment.py searches), cut where another
clock of the device broke (cut_starts); the check that a range WIDE_PRIOR_FACTOR times wider does
not explain a break or an outlier (_asks_for_wider, _split_checked); how many steps the breaks
show at the least (_turns); each break's kind and size (Break, _classify); the reads set aside
(Outlier).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from bench.analysis import envelope as _envelope
from bench.analysis import segment as _seg
from bench.analysis.arrays import I64, Idx
from bench.analysis.polygon import PPM, _Window
from bench.analysis.proven_segment import Bound, Segment
from bench.analysis.statuses import BoundStatus, BreakKind

SMALL_WINDOW = 48        # reads up to which feasibility is tested on the hull, not by bisection
WIDE_PRIOR_FACTOR = 10   # the wider range tried before a break or outlier is believed


@dataclass(frozen=True)
class Break:
    kind: BreakKind
    after_ns: int                 # the break happened after this reference instant ...
    before_ns: int                # ... and at or before this one
    size_ns: Bound | None         # later offset minus earlier offset across the break
    ambiguous_reads: int = 0      # reads that fit either side (kept by the earlier segment)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "after_ns": self.after_ns, "before_ns": self.before_ns,
                "size_ns": None if self.size_ns is None else self.size_ns.as_dict(),
                "ambiguous_reads": self.ambiguous_reads}


class Outlier(TypedDict):
    """A read fit_clock set aside: its position in the input, its read, why."""
    index: int
    s_ns: int
    e_ns: int
    value_ns: int
    evidence: str


def _classify(a: Segment, b: Segment, after: int, before: int, q: int, prior: float
              ) -> tuple[BreakKind, Bound]:
    oa = [a.offset_at(t) for t in (after, before)]
    ob = [b.offset_at(t) for t in (after, before)]
    lo = min(y.lo - x.hi for x, y in zip(oa, ob))
    hi = max(y.hi - x.lo for x, y in zip(oa, ob))
    pa = [(y.point - x.point) for x, y in zip(oa, ob)]
    proven = _proven_size(a, b, after, before, prior)
    if proven is not None:
        lo, hi = proven
    size = Bound(lo, hi, min(max(round(sum(pa) / 2), lo), hi))
    if hi < 0:
        return _backward_kind(oa, ob, after, before, q, prior, lo, hi), size
    if lo > 0:
        return BreakKind.STEP, size
    return BreakKind.UNKNOWN, size


def _proven_size(a: Segment, b: Segment, after: int, before: int, prior: float
                 ) -> tuple[int, int] | None:
    """(lo, hi) of the step from the proven offsets, or None where a side has none: the step
    happened at some t* in (after, before]: each side's proven offset carried to t* at the rate
    bound, so the size is later at `before` minus earlier at `after`, give or take the rate
    bound over the window."""
    if not a.offset_status != BoundStatus.UNDECIDED != b.offset_status:
        return None
    pa_, pb_ = a.proven_offset_at(after), b.proven_offset_at(before)
    if pa_ is None or pb_ is None:
        return None
    slack = prior * PPM * (before - after)
    return math.floor(pb_.lo - pa_.hi - slack), math.ceil(pb_.hi - pa_.lo + slack)


def _backward_kind(oa: list[Bound], ob: list[Bound], after: int, before: int, q: int, prior: float,
                   lo: float, hi: float) -> BreakKind:
    """A break whose size is surely negative: a counter's wrap, a reboot, or a backward step."""
    # a counter modulo M = 2^k ticks (or 2^k ns) wrapped: the earlier reading crossed M
    # within the break's bounds and the size is -M
    a_lo, a_hi = after + oa[0].lo - q, before + oa[1].hi + q
    for k in range(8, 63):
        for m in (q << k, 1 << k):
            if a_lo <= m <= a_hi and lo <= -m <= hi:
                return BreakKind.WRAP
    reading_lo = before + ob[1].lo        # the later clock's reading at `before`
    reading_hi = before + ob[1].hi
    span = (before - after) * (1 + prior * PPM) + q
    if reading_lo <= span and reading_hi >= -q:
        return BreakKind.REBOOT
    return BreakKind.STEP


def _split(s: I64, e: I64, v: I64, q: int, w: float, prior: float, wide: float,
           starts: list[int]) -> _seg.Split:
    """Segmentation of the reads with drift within ±prior (cores kept for ±wide), a forced
    break before each of `starts`."""
    hint: list[float | None] = [None]

    def feasible(idx: Idx) -> bool:
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        win = _Window(s[idx], e[idx], v[idx], q, t0, w, prior)
        if len(idx) <= SMALL_WINDOW:           # the exact hull is cheaper on a few reads
            xs = win.vertices()
            x = None if xs is None else float((xs[0] + xs[-1]) / 2)
        else:
            x = win.feasible_x(hint[0])
        if x is not None:
            hint[0] = x
        return x is not None

    def compress(idx: Idx) -> Idx:
        if w > 0 or len(idx) <= 2 * SMALL_WINDOW:
            return idx
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        return idx[_Window(s[idx], e[idx], v[idx], q, t0, 0.0, wide).core(wide)]

    return _seg.split_chunks(len(v), starts, feasible, compress)


def _split_envelope(s: I64, e: I64, v: I64, q: int, w: float, prior: float, wide: float,
                    starts: list[int]) -> _seg.Split:
    """Segmentation of the reads under the published model: a run is feasible when one offset
    moving at most `prior` ppm meets every read's constraints (bench.analysis.envelope)."""
    return _seg.split_chunks(len(v), starts, lambda idx: _envelope.feasible(
        _envelope.build(s[idx], e[idx], v[idx], q, prior)))


def cut_starts(s: I64, cuts_ns: Sequence[tuple[int, int]]) -> list[int]:
    """The reads (time order) where each device-wide break (after_ns, before_ns) starts a new
    chunk: the first read (by bracket start, `s` ascending) that starts past the window's
    middle. Which side a read straddling the window takes does not matter for soundness: each
    chunk is segmented on its own and splits where its reads disagree."""
    return sorted({int(np.searchsorted(s, a // 2 + b // 2, side="right")) for a, b in cuts_ns})


def _asks_for_wider(sp: _seg.Split, s: I64, e: I64, v: I64, q: int, w: float, wide: float) -> str:
    """Would a wider drift range have explained a break or an outlier? The window before each
    break plus the read that emptied it, and each outlier with the run before it, are tested
    with drift within ±wide. Returns the evidence, or ""."""

    def ok(idx: npt.NDArray[Any]) -> bool:
        t0 = (int(s[idx[0]]) + int(e[idx[-1]])) // 2
        win = _Window(s[idx], e[idx], v[idx], q, t0, w, wide)
        return win.feasible_x() is not None

    return _break_fits_wider(sp, ok, wide) or _outlier_fits_wider(sp, ok, wide)


def _break_fits_wider(sp: _seg.Split, ok: Callable[[npt.NDArray[Any]], bool], wide: float
                      ) -> str:
    """_asks_for_wider's evidence from a break of the split's own (not one another clock of
    the device imposed): the reads around it fit one line within ±wide (`ok`); else ""."""
    out_pos = {p for p, _ in sp.outliers}
    for k, (_pre, post, _amb) in enumerate(sp.breaks):
        if k in sp.forced:        # imposed by another clock of the device: nothing to explain
            continue
        first, last = _around_break(sp, k, post)
        idx = np.array([i for i in range(first, last + 1) if i not in out_pos])
        if ok(idx):
            return (f"the reads {first}..{last} fit one line only with a drift beyond the prior: "
                    f"refitted within ±{wide:g} ppm")
    return ""


def _around_break(sp: _seg.Split, k: int, post: int) -> tuple[int, int]:
    """The first and last read tested for break k: the run before it through the read that
    emptied it, and the run after it too (a drift beyond the prior goes on along one line, a
    step leaves the later reads on a parallel one: a line steep enough to join the two sides
    of a small step parts from the later reads within seconds)."""
    first = int(sp.runs[k][0])
    last = max(post, int(sp.runs[k + 1][-1])) if k + 1 < len(sp.runs) else post
    return first, last


def _outlier_fits_wider(sp: _seg.Split, ok: Callable[[npt.NDArray[Any]], bool], wide: float
                        ) -> str:
    """_asks_for_wider's evidence from an outlier: it fits the run before it within ±wide
    (`ok`); else ""."""
    for p, _ in sp.outliers:
        before = [r for r in sp.runs if r[-1] < p]
        if before and ok(np.concatenate((before[-1][-4 * SMALL_WINDOW:], [p]))):
            return (f"read {p}, set aside at the prior, fits the reads before it with a drift "
                    f"beyond the prior: refitted within ±{wide:g} ppm")
    return ""


def _split_checked(s: I64, e: I64, v: I64, q: int, w: float, prior: float,
                   split_prior_ppm: float | None, publish: bool, starts: list[int]
                   ) -> tuple[_seg.Split, float, str, int]:
    """The reads split at the cut rate (`split_prior_ppm`, else the prior); where a wider
    drift range explains a break or an outlier (_asks_for_wider), split again within it.
    Returns (split, prior, the beyond-prior evidence or "", steps seen before the refit)."""
    cut = float(split_prior_ppm or prior)       # the rate the reads are split at
    wide = cut * WIDE_PRIOR_FACTOR
    split = _split_envelope if publish else _split
    sp = split(s, e, v, q, w, cut, wide, starts)
    beyond = _asks_for_wider(sp, s, e, v, q, w, wide) if (sp.breaks or sp.outliers) else ""
    shown = _turns(sp, s, e, v, q, cut) if beyond else 0    # steps seen before the wider refit
    if beyond:
        prior = max(prior, wide)
        bursts = sp.bursts      # a blip the prior's split set aside stays shown (step_risk)
        sp = split(s, e, v, q, w, wide, wide, starts)
        sp.bursts = max(sp.bursts, bursts)
    return sp, prior, beyond, shown


def _outliers_of(sp: _seg.Split, raw_s: I64, raw_e: I64, v: I64, order: Idx | None
                 ) -> list[Outlier]:
    """The split's outliers as published, each at its position in the caller's input."""
    orig = (lambda i: int(order[i])) if order is not None else int
    return [{"index": orig(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
             "value_ns": int(v[i]), "evidence": ev} for i, ev in sp.outliers]


def _turns(sp: _seg.Split, s: I64, e: I64, v: I64, q: int, prior: float) -> int:
    """How many steps the breaks of a split show at the least: 1 + the times their direction
    turns (each break's sign: the offset the run after it allows at the break against the one
    the run before it allows, under the prior, where the two are apart). A drift beyond the
    prior breaks one way again and again (1); a blip breaks one way and back (2)."""
    signs = []
    for k, (pre, post, _amb) in enumerate(sp.breaks):
        if k in sp.forced:
            continue
        a, b = sp.runs[k], sp.runs[k + 1]
        t = (int(s[pre]) + int(e[post])) // 2
        lo_a, hi_a = _envelope.build(s[a], e[a], v[a], q, prior).at(t)
        lo_b, hi_b = _envelope.build(s[b], e[b], v[b], q, prior).at(t)
        if lo_b > hi_a or hi_b < lo_a:
            signs.append(1 if lo_b > hi_a else -1)
    if not signs:
        return 1 if len(sp.breaks) > len(sp.forced) else 0
    return 1 + sum(x != y for x, y in zip(signs, signs[1:]))


def _breaks_of(sp: _seg.Split, segs: list[Segment], s: I64, e: I64, q: int, prior: float
               ) -> list[Break]:
    """The breaks between the split's runs, classified from the segments on each side."""
    breaks: list[Break] = []
    for k, (pre, post, amb) in enumerate(sp.breaks):
        after, before = int(s[pre]), int(e[post])
        kind, size = _classify(segs[k], segs[k + 1], after, before, q, prior)
        breaks.append(Break(kind, after, before, size, amb))
    return breaks
