"""When a clock's drift is decided, and how long a run needs until it is (issue 45 item 7).

The drift decided is the proven one: a segment's mean drift (`mean_drift_ppm`, the offset's mean
rate between the two read instants whose proven offsets bound it narrowest; DESIGN.md, "A mean
drift can be proven"). It is *decided* when it is at most a target wide: by default a tenth of
the prior's width 2R (120 ppm under ±600 ppm); `rackclock run --decided-ppm` sets another. (The
drift at the epoch, the table's "drift ppm (assumed)", is no such figure: it rests on an
assumption, and is the hull of the fits on each side of the epoch, the instant where the offset
is narrowest, which may fall seconds from a segment's end in a run of any length, leaving that
side, and the drift, as wide as a few seconds of reads allow.)

How long a run needs, from what the run measured. The mean drift over a window [t1, t2] is
(w1 + w2)/(t2 − t1) wide, w1, w2 the proven offset's widths at its ends; the window is the
pair of instants where that is least, so it spans most of the segment. Where the mean drift
is already decided by the reads (not cut to ±R), its width scales as 1/T with the segment's span
T: the run needs T · width / target. Where there is none, or it is only the prior, the ends'
widths are taken as twice the narrowest offset width w0 the segment shows (its epoch's):

    width(T) ≈ MEAN_SIDES · w0 / T          (MEAN_SIDES = 4)

(the ratio measured on the default rack: benchmarks/README.md, "Until decided"). Either way
the run also needs the time before the segment began (a step or a reboot earlier in the run
starts a new segment). A figure, not a bound: benchmarks/README.md ("until decided")
sets it beside the run length a run measuring until decided needed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

NS = 1_000_000_000
TARGET_SHARE = 0.1         # a drift is decided at a tenth of the prior's width
MEAN_SIDES = 4.0           # width ≈ MEAN_SIDES · w0 / T (module docstring)
AT_PRIOR = 0.999           # an edge within this share of ±R sits on the prior


def target_ppm(prior_ppm: float, given_ppm: float | None = None) -> float:
    """The width at which a drift counts as decided: `given_ppm`, else a tenth of 2R."""
    return float(given_ppm) if given_ppm else 2.0 * float(prior_ppm) * TARGET_SHARE


def only_prior(lo_ppm: float, hi_ppm: float, prior_ppm: float) -> bool:
    """Both edges of a drift bound on the prior's: the reads bounded nothing."""
    return lo_ppm <= -AT_PRIOR * prior_ppm and hi_ppm >= AT_PRIOR * prior_ppm


def mean_drift(segment: Any) -> tuple[float, float] | None:
    """(lo, hi) ppm of a segment's proven mean drift, None where it has none. `segment`:
    bench.analysis.proven_segment.Segment or bench.model.documents.SegmentSummary."""
    m = getattr(segment, "mean_drift", None)
    if not m or m.get("lo") is None or m.get("hi") is None:
        return None
    return float(m["lo"]), float(m["hi"])


def width_ppm(segment: Any) -> float | None:
    """The width of the drift that is decided (the mean drift's), None without one."""
    m = mean_drift(segment)
    return None if m is None else m[1] - m[0]


def run_needed_s(width: float | None, offset_width_ns: float, span_s: float, lead_s: float,
                 prior_ppm: float, target: float) -> float | None:
    """The run length (s, from the clock's first read) at which the mean drift would be
    `target` ppm wide; None when it already is. `width`: its width now (None: it has none)."""
    if width is not None and width <= target:
        return None
    if width is not None and span_s > 0 and width < AT_PRIOR * 2.0 * prior_ppm:
        need = span_s * width / target
    else:
        need = MEAN_SIDES * max(0.0, offset_width_ns) / NS / (target * 1e-6)
    return lead_s + max(need, span_s)


def clock_decided(segments: Sequence[Any], prior_ppm: float,
                  given_ppm: float | None = None) -> dict[str, Any] | None:
    """summary.json's `drift_target_ppm`, `drift_decided` and `drift_decided_after_s` (None
    when decided) of one clock, from its last segment (the one the table prints); None without
    a segment. `segments`: the fit's (bench.analysis.proven_segment.Segment or
    bench.model.documents.SegmentSummary)."""
    if not segments:
        return None
    s = segments[-1]
    target = target_ppm(prior_ppm, given_ppm)
    after = run_needed_s(width_ppm(s), s.offset_ns.hi - s.offset_ns.lo,
                         (s.end_ns - s.start_ns) / NS, (s.start_ns - segments[0].start_ns) / NS,
                         prior_ppm, target)
    return {"drift_target_ppm": round(target, 6), "drift_decided": after is None,
            "drift_decided_after_s": None if after is None else round(after, 1)}


def fmt_run(seconds: float) -> str:
    """'40 s', '4 min', '2.5 h': a run length as said, rounded up."""
    if seconds < 90:
        return f"{max(1, math.ceil(seconds)):d} s"
    if seconds < 90 * 60:
        return f"{math.ceil(seconds / 60):d} min"
    return f"{math.ceil(seconds / 360) / 10:g} h"
