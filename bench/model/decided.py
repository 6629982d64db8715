"""When a clock's drift is decided, and how long a run needs until it is (issue 45 item 7).

A drift is *decided* when its published bound (the drift at the epoch, the table's "drift ppm")
is at most a target wide: by default a tenth of the prior's width 2R (120 ppm under ±600 ppm);
`rackclock run --decided-ppm` sets another.

How long a run needs, from what the run measured. The estimator (bench.analysis.estimate,
`_publish`) bounds the drift at the epoch by the hull of two fits: the reads before the epoch and
the reads after it, each a polygon of lines. A side of length L whose offset is pinned within w
at both of its ends allows slopes within about 2w/L; the hull is set by the shorter side. The
epoch is where the two-sided offset bound is narrowest (envelope.TwoSided.narrowest), which
falls anywhere in the segment's span T, so the shorter side is about T/4 in the median case:

    width(T) ≈ 8 w / T + 2 wander        (w: the offset's width at the epoch, the pinned width)

Where the drift is already off the prior, its width was measured at the span T0 and scales as
1/T: the run needs T0 · width / target. Where it is only the prior (both edges on ±R), the model
above gives T = 8 w / target. Either way the run needs the segment's own span plus the time
before the segment began (a step or reboot earlier in the run starts a new segment). A figure,
not a bound: benchmarks/README.md ("until decided") compares it with the run length a run
measuring until decided needed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

NS = 1_000_000_000
TARGET_SHARE = 0.1         # a drift is decided at a tenth of the prior's width
EPOCH_SIDES = 8.0          # width ≈ EPOCH_SIDES · w / T (module docstring)
AT_PRIOR = 0.999           # an edge within this share of ±R sits on the prior


def target_ppm(prior_ppm: float, given_ppm: float | None = None) -> float:
    """The width at which a drift counts as decided: `given_ppm`, else a tenth of 2R."""
    return float(given_ppm) if given_ppm else 2.0 * float(prior_ppm) * TARGET_SHARE


def only_prior(lo_ppm: float, hi_ppm: float, prior_ppm: float) -> bool:
    """Both edges of the drift bound on the prior's: the reads bounded nothing."""
    return lo_ppm <= -AT_PRIOR * prior_ppm and hi_ppm >= AT_PRIOR * prior_ppm


def run_needed_s(width_ppm: float, offset_width_ns: float, span_s: float, lead_s: float,
                 prior_ppm: float, target: float, wander_ppm: float = 0.0,
                 at_prior: bool = False) -> float | None:
    """The run length (s, from the run's first read) at which the drift would be `target` ppm
    wide; None when it already is. inf when no run would (the wander allowance alone is as wide)."""
    if width_ppm <= target:
        return None
    room = target - 2.0 * wander_ppm
    if room <= 0:
        return math.inf
    if not at_prior and span_s > 0 and width_ppm < 2.0 * prior_ppm:
        need = span_s * (width_ppm - 2.0 * wander_ppm) / room
    else:
        need = EPOCH_SIDES * max(0.0, offset_width_ns) / NS / (room * 1e-6)
    return lead_s + max(need, span_s)


def clock_decided(segments: Sequence[Any], prior_ppm: float, wander_ppm: float = 0.0,
                  given_ppm: float | None = None) -> dict[str, Any] | None:
    """summary.json's `drift_target_ppm`, `drift_decided` and `drift_decided_after_s` (None
    when decided, or when no run would be: the wander allowance alone is as wide) of one clock,
    from its last segment (the one the table prints); None without a segment. `wander_ppm`: the
    fit's wander allowance (ppm, each side). `segments`: the fit's
    (bench.analysis.estimate.Segment or bench.model.documents.SegmentSummary)."""
    if not segments:
        return None
    s = segments[-1]
    d, o = s.drift_ppm, s.offset_ns
    target = target_ppm(prior_ppm, given_ppm)
    after = run_needed_s(d.hi - d.lo, o.hi - o.lo, (s.end_ns - s.start_ns) / NS,
                         (s.start_ns - segments[0].start_ns) / NS, prior_ppm, target,
                         wander_ppm, only_prior(d.lo, d.hi, prior_ppm))
    return {"drift_target_ppm": round(target, 6), "drift_decided": after is None,
            "drift_decided_after_s": None if after is None or math.isinf(after)
            else round(after, 1)}


def fmt_run(seconds: float) -> str:
    """'40 s', '4 min', '2.5 h': a run length as said, rounded up."""
    if seconds < 90:
        return f"{max(1, math.ceil(seconds)):d} s"
    if seconds < 90 * 60:
        return f"{math.ceil(seconds / 60):d} min"
    return f"{math.ceil(seconds / 360) / 10:g} h"
