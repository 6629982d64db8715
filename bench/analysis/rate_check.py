"""How far a clock's reads check its rate bound R (DESIGN.md, "What the reads check of R").

The reads contradict the model "the offset moves at most R" only where the offset they pin at
two instants moved further apart than R allows. Pinned to within w at each (the width of the
offset that the reads on both sides of an instant allow together), a rate of R + ΔR lasting T
shows once ΔR·T exceeds about 2w: so R is checked against excursions that move the offset more
than 2w beyond it, a rate of 2R lasting 2w/R or more, and not against shorter or smaller ones.

A 1 s clock pinned to 1 ms checks R = 600 ppm over 3.3 s; a 100 ms `hrSystemDate` whose driver
declares a 10 ms lag is pinned to 10 ms or more, and a PLL hunting at ±900 ppm for 25 s at a
time moves its offset less than its reads can show. Where the horizon 2w/R is longer than
RATE_CHECK_S the reads do not check R: the clock is fitted under DISCIPLINED_PRIOR_PPM, a rate
that holds for a disciplined clock, and says that this rate is assumed.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.analysis.statuses import BoundStatus

PPM = 1e-6
NS = 1_000_000_000
RATE_CHECK_S = 10.0     # reads that show a rate of 2R only over longer stretches do not check R
#                         (a PLL hunting swings one way for 20-30 s, beyond R by less than R)
# a disciplined clock's rate: ntpd's kernel PLL slews at most 500 ppm, an NTP client slewing a
# correction up to 2,000 ppm, a PLL hunting at ±700-1,200 ppm, plus the crystal's 100-400 ppm;
# chrony slewing a large offset (up to 83,333 ppm) is beyond it, caught only where reads show it
DISCIPLINED_PRIOR_PPM = 2_500.0
# how well the reads pin the offset: this percentile of the widths at their instants (an
# excursion shows between two well-pinned instants; a quarter of them lie in any few seconds)
PINNED_PERCENTILE = 25.0


def pinned_width_ns(segments: Sequence[Any]) -> float | None:
    """The PINNED_PERCENTILE-th percentile width, ns, of the offset the reads on both sides of
    each read's instant allow together (envelope.TwoSided.bounds, joined), over the published
    segments; None when no instant has reads on both sides."""
    widths = []
    for sg in segments:
        two = sg._env
        if two is None or sg.offset_status == BoundStatus.UNDECIDED:
            continue
        pts = np.unique(two.e.astype(np.int64) + two.env.t_ref)
        lo, hi, ok = two.bounds(pts, joined=True)
        widths.append(np.maximum(hi - lo, 0.0)[ok])
    w = np.concatenate(widths) if widths else np.zeros(0)
    return float(np.percentile(w, PINNED_PERCENTILE)) if len(w) else None


def check_horizon_s(width_ns: float | None, prior_ppm: float) -> float:
    """The shortest stretch, s, over which a rate of twice the bound shows in reads pinned to
    `width_ns` (inf when nothing is pinned)."""
    if width_ns is None or prior_ppm <= 0:
        return float("inf")
    return 2.0 * width_ns / (prior_ppm * PPM) / NS


def checked(width_ns: float | None, prior_ppm: float) -> bool:
    return check_horizon_s(width_ns, prior_ppm) <= RATE_CHECK_S


def assumed_note(width_ns: float | None, prior_ppm: float, horizon_s: float,
                 refit_ppm: float | None, corrected: bool) -> str:
    """Why the rate bound is assumed, in words (the clock's `rate_assumed`)."""
    from bench.units import fmt_ns
    why = (f"reads pin the offset to {fmt_ns(round(width_ns))}, so {2 * prior_ppm:g} ppm "
           f"would show only over {horizon_s:.0f} s or more"
           if width_ns is not None else "no instant has reads on both sides")
    if refit_ppm is None:
        return f"{why}: {prior_ppm:g} ppm not checked"
    return (f"{why}: fitted under {refit_ppm:g} ppm, a disciplined clock's (an NTP slew, a PLL "
            f"hunting{'; the reads show corrections' if corrected else ''})")
