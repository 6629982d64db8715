"""One cross-plane timeline: order proven where the bounds allow, "unordered" where they do not.

Each entry is a reference-time interval [lo_ns, hi_ns] proven to contain the instant it stands
for. Two entries are ordered when their intervals are disjoint, or when both are stamps of the
same device clock within one segment (a monotone clock orders its own stamps: a + q <= b).
Everything else is unordered, and said so. Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import I64


@dataclass(frozen=True)
class Entry:
    source: str                     # device (or log file) the entry comes from
    plane: str
    label: str                      # the log line, stimulus or break, as it reads
    lo_ns: int
    hi_ns: int
    basis: str = "stamp"            # stamp | event | reference | break
    clock_key: str | None = None    # device/clock/segment, for the same-clock rule
    stamp_ns: int | None = None     # the device stamp and its resolution, for the same rule
    resolution_ns: int = 0
    raw: str = ""                   # the device's timestamp exactly as written (never corrected)
    calibration: str = ""           # the calibration(s) the interval comes from
    status: str = "proven"    # proven | assumed | extrapolated | ambiguous (bench.analysis.timeline_map)
    distance_ns: int = 0            # from the calibrated span it was mapped through

    @property
    def width_ns(self) -> int:
        return self.hi_ns - self.lo_ns


def before(a: Entry, b: Entry) -> bool:
    """Is `a` proven to precede `b`?"""
    if a.hi_ns < b.lo_ns:
        return True
    return (a.clock_key is not None and a.clock_key == b.clock_key and a.basis == b.basis == "stamp"
            and a.stamp_ns is not None and b.stamp_ns is not None
            and a.stamp_ns + a.resolution_ns <= b.stamp_ns)


def order(entries: list[Entry], max_pairs: int = 2_000_000) -> list[dict[str, Any]]:
    """Entries sorted by interval, grouped into blocks: every entry of a block is proven after
    every entry of the blocks before it; within a block, `unordered_with` lists (by index in the
    returned order) the entries whose order against this one is not proven, and
    `unordered_count` counts them. When the overlapping pairs exceed `max_pairs`, each list
    holds at most the 12 nearest such entries; the count stays exact
    (bench.analysis.timeline_order.order_arrays)."""
    n = len(entries)
    if not n:
        return []
    clock, stamp = _clock_groups(entries)
    res = np.array([e.resolution_ns for e in entries], dtype=np.int64)
    perm, block, count = order_arrays([e.lo_ns for e in entries], [e.hi_ns for e in entries],
                                      clock, stamp, res)
    ents = [entries[i] for i in perm]
    lists = _unordered_lists(ents, max_pairs)
    return [{"index": i, "block": int(block[i]), "entry": ents[i],
             "unordered_with": sorted(lists[i]), "unordered_count": int(count[i])}
            for i in range(n)]


def _clock_groups(entries: list[Entry]) -> tuple[I64, I64]:
    """Each entry's same-clock group (by clock_key, for a stamp with its stamp; -1: none) and
    its stamp (0 without a group): the same-clock rule of `before` as order_arrays takes it."""
    keys: dict[str, int] = {}
    clock = np.array([keys.setdefault(e.clock_key, len(keys)) if e.clock_key is not None
                      and e.basis == "stamp" and e.stamp_ns is not None else -1
                      for e in entries], dtype=np.int64)
    stamp = np.array([e.stamp_ns if c >= 0 else 0 for e, c in zip(entries, clock)], dtype=np.int64)
    return clock, stamp


def _unordered_lists(ents: list[Entry], max_pairs: int) -> list[list[int]]:
    """For each entry (sorted by interval) the later-or-earlier entries whose order against it is
    not proven; at most 12 each when the overlapping pairs exceed `max_pairs`."""
    n = len(ents)
    lo = np.array([e.lo_ns for e in ents], dtype=np.int64)
    hi = np.array([e.hi_ns for e in ents], dtype=np.int64)
    reach = np.searchsorted(lo, hi, "right")          # entries i+1 .. reach-1 overlap entry i
    pairs = int(np.sum(reach - np.arange(n) - 1))
    cap = None if pairs <= max_pairs else 12
    lists: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        _pair_later(ents, lists, i, int(reach[i]), cap)
    return lists


def _pair_later(ents: list[Entry], lists: list[list[int]], i: int, reach: int, cap: int | None
                ) -> None:
    """Entry i against the later entries it overlaps (up to `reach`): each pair whose order is
    not proven either way goes in both lists, each list holding at most `cap` (None: all)."""
    a = ents[i]
    for j in range(i + 1, reach):
        if cap is not None and len(lists[i]) >= cap:
            break
        b = ents[j]
        if not before(a, b) and not before(b, a):
            lists[i].append(j)
            if cap is None or len(lists[j]) < cap:
                lists[j].append(i)


def widen(entry: Entry, latency_lo_ns: int, latency_hi_ns: int) -> Entry:
    """From the instant a device stamped a line to the instant of the event it logs:
    event = stamp - latency, latency in [lo, hi]."""
    from dataclasses import replace
    return replace(entry, lo_ns=entry.lo_ns - latency_hi_ns, hi_ns=entry.hi_ns - latency_lo_ns,
                   basis="event", clock_key=None, stamp_ns=None, resolution_ns=0)


def order_arrays(lo_ns: npt.ArrayLike, hi_ns: npt.ArrayLike, clock: npt.ArrayLike | None = None,
                 stamp_ns: npt.ArrayLike | None = None, resolution_ns: npt.ArrayLike | None = None,
                 ) -> tuple[npt.NDArray[np.intp], I64, I64]:
    """`order` over arrays, for a million entries: (permutation sorting by interval, proven-order
    block of each sorted entry, number of entries each sorted entry is unordered with).

    `clock`: an int group per entry (-1: none) whose members order by their stamps when these
    differ by at least the resolution (the same-clock rule of `before`). An entry is unordered
    with every entry whose interval overlaps its own, except same-clock entries whose stamps
    differ by a tick or more; exact when stamps of one clock less than a tick apart have
    overlapping intervals, which mapping one segment gives them."""
    lo = np.asarray(lo_ns, dtype=np.int64)
    hi = np.asarray(hi_ns, dtype=np.int64)
    perm = np.lexsort((hi, lo))
    if clock is None:
        return perm, *order_sorted(lo[perm], hi[perm])
    return perm, *order_sorted(lo[perm], hi[perm], np.asarray(clock, dtype=np.int64)[perm],
                               np.asarray(stamp_ns, dtype=np.int64)[perm],
                               np.asarray(resolution_ns, dtype=np.int64)[perm])


def order_sorted(lo: I64, hi: I64, clock: I64 | None = None, st: I64 | None = None,
                 q: I64 | None = None) -> tuple[I64, I64]:
    """`order_arrays` over entries already sorted by it (by lo, then hi): (block, unordered
    count) of each. A caller that sorts its columns itself (bench.model.timeline_table) orders
    them without a second sorted copy of five columns."""
    # (temporaries freed as they go: a million entries' order within ~50 MB more)
    reach = np.maximum.accumulate(hi)
    block = np.zeros(len(lo), dtype=int)
    np.cumsum(lo[1:] > reach[:-1], out=block[1:])
    del reach
    # overlapping j: lo_j <= hi_i and hi_j >= lo_i; minus itself
    overlap = np.searchsorted(lo, hi, "right")
    shi = np.sort(hi)
    overlap -= np.searchsorted(shi, lo, "left")
    del shi
    overlap -= 1
    if clock is None or st is None or q is None:
        return block, overlap
    for key in np.unique(clock[clock >= 0]).tolist():
        idx = np.flatnonzero(clock == key)
        if len(idx) == len(lo):          # one clock's entries only: no copies
            del idx
            overlap -= _same_clock_ordered(lo, hi, st, q)
            continue
        overlap[idx] -= _same_clock_ordered(lo[idx], hi[idx], st[idx], q[idx])
    return block, overlap


def _same_clock_ordered(glo: I64, ghi: I64, st: I64, q: I64) -> I64:
    """Per entry of one clock group (sorted by lo, so `glo` is sorted): how many of its
    overlapping group mates its stamp orders (a tick or more apart), which order_arrays takes
    off its overlap count."""
    same = np.searchsorted(glo, ghi, "right")
    sh = np.sort(ghi)
    same -= np.searchsorted(sh, glo, "left")
    del glo, ghi, sh
    sst = np.sort(st)
    # same tick: |a - b| < q (a + q <= b orders them); q is one per clock segment
    t = st + q
    same -= np.searchsorted(sst, t, "left")
    np.subtract(st, q, out=t)
    same += np.searchsorted(sst, t, "right")
    return same


SLICE = 1 << 16     # entries a step of nearest_unordered handles at a time (bounded temporaries)


def _sliced(a: npt.NDArray[Any], f: Any) -> npt.NDArray[np.bool_]:
    """f over `a` a SLICE at a time, its boolean results joined."""
    if len(a) <= SLICE:
        return np.asarray(f(a), bool)
    return np.concatenate([f(a[k:k + SLICE]) for k in range(0, len(a), SLICE)])


def _same_tick_ordered(i: npt.NDArray[Any], j: npt.NDArray[Any], clock: I64, st: I64,
                       q: I64) -> npt.NDArray[np.bool_]:
    """Pairs (i, j) of one clock whose stamps a tick or more apart order them."""
    ci = clock[i]
    same = (ci >= 0) & (ci == clock[j])
    si, sj = st[i], st[j]
    out: npt.NDArray[np.bool_] = same & ((si + q[i] <= sj) | (sj + q[j] <= si))
    return out


def nearest_unordered(lo: npt.ArrayLike, hi: npt.ArrayLike, clock: npt.ArrayLike,
                      stamp_ns: npt.ArrayLike, resolution_ns: npt.ArrayLike, count: npt.ArrayLike,
                      cap: int = 12, window: int = 4096, relative: bool = False
                      ) -> npt.NDArray[np.int32] | npt.NDArray[np.int16]:
    """Over entries sorted as `order_arrays` sorts them: for each, up to `cap` of the entries it
    is unordered with (the rule of `before`, pair by pair), nearest in the order first, looked
    for within `window` positions; (n, cap) int32 indices, -1 padded. An entry whose exact
    `count` is at most `cap` gets all of them unless one lies farther than `window` positions.
    Vectorised over all entries one distance at a time; memory n * cap * 4 bytes.
    `relative`: each index as its offset from its own row, int16 (0: none; every offset lies
    within `window` < 2**15), half the memory: a million entries' lists in 24 MB, not 48."""
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    clock, st = np.asarray(clock), np.asarray(stamp_ns, np.int64)    # clock: any int type
    q = np.asarray(resolution_ns, np.int64)
    n = len(lo)
    if relative and window >= 2**15:
        raise ValueError("relative offsets are int16: window < 32768")
    out = np.zeros((n, cap), np.int16) if relative else np.full((n, cap), -1, dtype=np.int32)
    small: Any = np.int8 if cap < 127 else np.int64     # counts of found entries: 1 byte each
    got: npt.NDArray[Any] = np.zeros(n, dtype=small)
    need: npt.NDArray[Any] = np.minimum(np.asarray(count, np.int64), cap).astype(small)
    ix: Any = np.int32 if n < 2**31 - window else np.int64     # positions: 4 bytes each
    reach = np.searchsorted(lo, hi, "right").astype(ix)   # sorted by lo: j in (i, reach_i)
    active = np.flatnonzero(reach > np.arange(1, n + 1, dtype=ix)).astype(ix)
    short = np.zeros(n + 1, dtype=ix)
    d = 0
    while len(active) and d < window:
        d += 1
        if d % 4 == 1:        # keep i while it, or a later entry it overlaps, still needs some
            np.cumsum(got < need, out=short[1:])
            active = active[_sliced(active, lambda i, d=d: (got[i] < need[i]) | (
                short[np.minimum(reach[i], n)] > short[np.minimum(i + d, n)]))]
        active = active[_sliced(active, lambda i, d=d: i + d < reach[i])]
        i = active[_sliced(active, lambda i, d=d: ~_same_tick_ordered(i, i + d, clock, st, q))]
        _record_pairs(out, got, i, d, cap, relative)
    return out


def _record_pairs(out: npt.NDArray[Any], got: npt.NDArray[Any], i: npt.NDArray[Any], d: int,
                  cap: int, relative: bool) -> None:
    """Each unordered pair (i, i + d) into both rows' lists (`out`, `got` of each filled), in
    the rows with room left (fewer than `cap`): forward in row i, backward in row i + d."""
    for fwd in (True, False):   # each a distinct in one pass: safe to assign at once
        for k in range(0, len(i), SLICE):
            a = i[k:k + SLICE] + (0 if fwd else d)
            a = a[got[a] < cap]
            b = a + (d if fwd else -d)
            out[a, got[a]] = b - a if relative else b
            got[a] += 1
