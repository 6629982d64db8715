"""What `rackclock check` proves about a clock from a few reads of its own, with no run.

A clock's declared resolution may be finer than the one it keeps (net-snmp's `hrSystemDate`
has a 100 ms field but fills whole seconds), so `check` does not take it on trust: it reads
until the value changes (back to back, then every `GAP_S`, for at most `BUDGET_S`) and uses

- the **resolution learned**: two reads A, B with values a < b of a display that shows
  floor-quantised values: b - a is a whole number of ticks, so the clock's tick q is at most the
  smallest change seen. Each read then bounds the offset by [v - e, v + q + lag - s] with that
  q, not the declared one (`lag_ns`: a tick that flips late);
- the **tick it saw**: with q = b - a, A's and B's bounds together give [b - B.e, b + lag - A.s]:
  the clock reached b between A's start and B's end, as wide as the gap between the reads.

Every bound is carried to the last read's end with the drift prior (`PRIOR_PPM`) and they are
intersected. When no change is seen within the budget the declared resolution is assumed, and
the text says so. Each assumption is named in the text the check prints.
"""
from __future__ import annotations

from dataclasses import dataclass

NS = 1_000_000_000
PRIOR_PPM = 200.0          # the runner's default drift prior: the bounds are carried this far
BUDGET_S = 2.5             # reads of one clock for at most this long, looking for a tick
GAP_S = 0.05               # between reads once two back-to-back reads showed no change
MAX_READS = 60


@dataclass(frozen=True)
class CheckBound:
    """The offset (device minus reference) at `t_ns` that a check's reads prove."""
    lo: int
    hi: int
    t_ns: int
    resolution_ns: int
    basis: str            # "learned": a tick seen; "assumed": the declared resolution
    reads: int


async def reads_across_a_tick(read, sleep, budget_s: float = BUDGET_S,
                              gap_s: float = GAP_S) -> list:
    """Reads (`await read()`) until the value changes, at most `budget_s` and `MAX_READS`: the
    first two back to back (a fine clock changes between them), then every `gap_s`."""
    import time
    out = [await read()]
    t_end = time.monotonic() + budget_s
    while len(out) < MAX_READS and time.monotonic() < t_end:
        if len(out) >= 2:
            await sleep(gap_s)
        out.append(await read())
        if out[-1].value_ns != out[-2].value_ns:
            break
    return out


def _carry(lo: int, hi: int, t_ns: int, to_ns: int) -> tuple[int, int]:
    """An offset bound at t_ns, at to_ns under the drift prior."""
    w = int(abs(to_ns - t_ns) * PRIOR_PPM / 1e6) + 1
    return lo - w, hi + w


def bound_from_reads(reads, declared_ns: int, lag_ns: int = 0) -> CheckBound:
    """The offset at the last read's end that every read and every tick seen prove (see the
    module's docstring)."""
    ups = [b.value_ns - a.value_ns for a, b in zip(reads, reads[1:])
           if b.value_ns > a.value_ns]
    went_back = any(b.value_ns < a.value_ns for a, b in zip(reads, reads[1:]))
    learned = bool(ups) and not went_back
    q = max(1, min(ups)) if learned else max(1, int(declared_ns))
    t = reads[-1].e_ns
    lo, hi = -(2 ** 62), 2 ** 62
    for r in reads:
        a, b = _carry(r.value_ns - r.e_ns, r.value_ns + q + lag_ns - r.s_ns, r.s_ns, t)
        lo, hi = max(lo, a), min(hi, b)
    if lo > hi:                    # reads that contradict the model (a step, a stuck display)
        r, q = reads[-1], max(q, int(declared_ns))
        lo, hi, learned = r.value_ns - r.e_ns, r.value_ns + q + lag_ns - r.s_ns, False
    return CheckBound(lo, hi, t, q, "learned" if learned else "assumed", len(reads))
