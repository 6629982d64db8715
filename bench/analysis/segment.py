"""Splitting one clock's reads where the model breaks, and telling a break from a lone bad read.

The fit is a predicate here: `feasible(idx)` says whether the reads at positions `idx` (ascending)
admit one straight line (non-empty region). Everything below is search over that predicate.

Splitting is the safe default; setting a read aside is not:

1. **Runs.** From each start the longest feasible run is found by galloping then bisection
   (O(log L) fits of O(L) each for a run of L reads); the next run starts at the read that
   emptied the region. The search never goes back before the last break, so the whole pass is
   O(n log n) whatever the rate of bad reads.
2. **Outliers.** A run of at most `BURST_MAX` reads between two runs is a candidate. Its reads
   are set aside only when each is provably inconsistent with the run before it *and* with the
   run after it, each side taken with all its reads (its own bounds). A lone read between two
   runs always is: the run before ended because of it, and it ended because of the read after
   it. A short run of several reads additionally needs the two sides to agree with each other.
   Never "the next few reads agree": reads aimed at a tick edge agree with both sides of a
   small step and vouch for nothing. When the sides agree they become one run.
3. **Breaks localised.** Around each remaining break the later run is grown backwards into the
   earlier one as far as it stays feasible: the last read the later run cannot take is provably
   before the break, the first read of the later run provably after it, and the break's window
   lies between them. The reads in between fit either side (ambiguous); they stay with the
   earlier run, whose published bounds hold with one unseen break inside it (bench.analysis.estimate), so
   they keep serving a fit instead of being thrown away.

Merging and back-growth test a run by its *core*: `compress(idx)` may return the subset of reads
whose constraints bound the region (the rest are implied by them), which keeps every test
proportional to the reads being added, not to the whole run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import Idx

Feasible = Callable[[Idx], bool]
Compress = Callable[[Idx], Idx]

BURST_MAX = 8      # a run this short between two others may be a burst of bad reads


@dataclass
class Split:
    runs: list[Idx] = field(default_factory=list)        # positions of each clean run
    breaks: list[tuple[int, int, int]] = field(default_factory=list)
    # per break: (last position provably before, first position provably after, ambiguous count)
    outliers: list[tuple[int, str]] = field(default_factory=list)   # (position, evidence)
    forced: list[int] = field(default_factory=list)     # breaks the caller imposed (split_chunks)
    # bursts of two reads or more set aside together: each is a run that fits one line on its
    # own, apart from both sides (a blip the reads showed: a step and its return, issue 39)
    bursts: int = 0


def _longest_forward(n: int, start: int, feasible: Feasible) -> int:
    """Largest j >= start with reads start..j feasible (a single read always is). Galloping keeps
    the cost proportional to the run found, not to the reads left."""
    good, step = start, 1
    while True:
        j = min(good + step, n - 1)
        if j == good:
            return good
        if feasible(np.arange(start, j + 1)):
            good, step = j, step * 2
        else:
            bad = j
            break
    while bad - good > 1:
        mid = (good + bad) // 2
        if feasible(np.arange(start, mid + 1)):
            good = mid
        else:
            bad = mid
    return good


class _Run:
    """Positions of a run (ascending) and, computed when first needed, its core: a subset with
    the same region (a lone run is never compressed)."""

    def __init__(self, reads: Idx, source: Idx, comp: Compress):
        self.reads, self._source, self._comp = reads, source, comp
        self._core: Idx | None = None

    @property
    def core(self) -> Idx:
        if self._core is None:
            self._core = self._comp(self._source)
        return self._core


def _span(r: _Run) -> str:
    return f"reads {int(r.reads[0])}..{int(r.reads[-1])}"


def split(n: int, feasible: Feasible, compress: Compress | None = None, first: int = 0) -> Split:
    """Clean runs, breaks and outliers of reads first..n-1 (in time order)."""
    comp: Compress = compress or (lambda idx: idx)
    out = Split()
    if n <= first:
        return out
    stack: list[_Run] = []
    start = first
    while start < n:
        end = _longest_forward(n, start, feasible)
        reads = np.arange(start, end + 1)
        stack.append(_Run(reads, reads, comp))
        _reduce(stack, feasible, comp, out)
        start = end + 1
    out.outliers.sort()
    # breaks: grow each later run backwards into the earlier one (ambiguous reads join neither)
    for k, run in enumerate(stack):
        if k == 0:
            out.runs.append(run.reads)
            continue
        prev = out.runs[-1]
        b = _grow_back(prev, run.core, feasible)
        out.breaks.append((int(prev[b - 1]), int(run.reads[0]), len(prev) - b))
        out.runs.append(run.reads)
    return out


def _join(a: npt.ArrayLike, b: npt.ArrayLike) -> Idx:
    return np.concatenate((a, b))


def _reduce(stack: list[_Run], feasible: Feasible, comp: Compress, out: Split) -> None:
    """Set aside short runs (bursts, lone reads) between two runs as outliers when none of their
    reads fits either side; merge the sides when they agree with each other."""
    while len(stack) >= 3 and len(stack[-2].reads) <= BURST_MAX:
        P, M, N = stack[-3], stack[-2], stack[-1]
        lone = len(M.reads) == 1
        sides_agree = feasible(_join(P.core, N.core))
        if not lone and not _burst_between(P, M, N, sides_agree, feasible):
            return
        why = _burst_why(P, N, sides_agree, len(M.reads))
        out.outliers.extend((int(r), why) for r in M.reads)
        out.bursts += not lone
        if sides_agree:
            # N was the longest run from its start, and the read after it empties N: so it
            # empties P + N too, and the merged run is still maximal
            stack[-3:] = [_Run(_join(P.reads, N.reads), _join(P.core, N.core), comp)]
        else:
            stack[-2:] = [N]
            return


def _burst_between(P: _Run, M: _Run, N: _Run, sides_agree: bool, feasible: Feasible) -> bool:
    """May the short run M of several reads be set aside? Only when the sides agree and none
    of its reads fits either side (else it is a short segment, not a burst)."""
    if not sides_agree:
        return False
    bad = [int(r) for r in M.reads
           if not feasible(_join(P.core, [r])) and not feasible(_join([r], N.core))]
    return len(bad) == len(M.reads)


def _burst_why(P: _Run, N: _Run, sides_agree: bool, reads: int) -> str:
    why = (f"inconsistent with the segment before it ({_span(P)}) and with the "
           f"segment after it ({_span(N)})")
    why += (", which agree with each other" if sides_agree
            else ", which do not agree with each other either (a break between them)")
    if reads != 1:
        why += f"; one of a burst of {reads} reads"
    return why


def _grow_back(prev: Idx, core: Idx, feasible: Feasible) -> int:
    """The earliest position b in `prev` such that prev[b:] + core is feasible (galloping, then
    bisection); prev + core is infeasible (prev ended there), core alone is feasible."""
    good, bad, step = len(prev), 0, 1
    while good - step > bad:
        cand = good - step
        if feasible(_join(prev[cand:], core)):
            good, step = cand, step * 2
        else:
            bad = cand
            break
    while good - bad > 1:
        mid = (good + bad) // 2
        if feasible(_join(prev[mid:], core)):
            good = mid
        else:
            bad = mid
    return good


def split_chunks(n: int, starts: list[int], feasible: Feasible,
                 compress: Compress | None = None) -> Split:
    """`split` with a forced break before each position in `starts` (ascending): a break the
    device showed on another of its clocks (a reboot, an outage), so no run spans it whatever
    these reads say. Each chunk is split on its own; a forced break's window is the chunk
    boundary (no read is ambiguous across it) and its index is in `forced`."""
    bounds = [0] + sorted({p for p in starts if 0 < p < n}) + [n]
    out = Split()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = split(hi, feasible, compress, first=lo)
        if out.runs:
            out.forced.append(len(out.breaks))
            out.breaks.append((int(out.runs[-1][-1]), lo, 0))
        out.runs.extend(part.runs)
        out.breaks.extend(part.breaks)
        out.outliers.extend(part.outliers)
        out.bursts += part.bursts
    return out
