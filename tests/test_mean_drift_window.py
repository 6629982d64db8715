"""A segment's mean drift never spans a break the fit found. The reads that fit either side of a
break stay with the earlier segment (they lie within its one unseen step), so its reads reach
past the step; a mean-drift window chosen among them crossed the step, its true mean was the
step over the window (-12,772 ppm for a -300 ms step over 24 s of a 1 s clock), and the bound
published for it was ±R "assumed" (cut to the rate bound): an assumption the clock's own reads
contradict. The window now ends where the break may start (its `after_ns`), so the bound is
about reads on one line, and it holds the true mean over that window."""
from __future__ import annotations

import numpy as np
import pytest

from bench.analysis.estimate import fit_clock
from bench.model.run_statuses import BoundStatus
from bench.sim.clock_model import ClockModel, ClockParams
from bench.sim.probing import read_like_runner

NS = 1_000_000_000
T0 = 1_800_000_000 * NS


@pytest.mark.parametrize("size_s, at_s, seed", [
    (-0.3, 8.0, 3),      # 17 reads after the step kept in segment 0
    (0.3, 8.0, 5),       # 13
    (0.05, 20.0, 5),     # 14, under the disciplined rate (its R assumed: 2,500 ppm)
])
def test_the_mean_drift_window_ends_before_the_step_the_fit_found(size_s, at_s, seed):
    p = ClockParams(offset_s=0.37 + 0.11 * seed, drift_ppm=5.0, resolution_s=1.0,
                    steps=((at_s, size_s),))
    m = ClockModel(p, T0, seed)
    s, e, v, _, _ = read_like_runner(m, int(at_s + 25), 1.0, NS, np.random.default_rng(seed))
    fit = fit_clock(s, e, v, NS)
    t_step = T0 + int(at_s * NS)
    assert len(fit.breaks) == 1
    b = fit.breaks[0]
    assert b.after_ns < t_step <= b.before_ns
    sg = fit.segments[0]
    # the case in point: segment 0 holds reads taken after the step, ambiguously
    assert b.ambiguous_reads >= 5 and sg.end_ns > t_step
    md = sg.mean_drift
    assert md is not None
    t1, t2 = md["from_ns"], md["to_ns"]
    # the window ends where the break may start, so before the step: one line's reads
    assert sg.start_ns < t1 < t2 <= b.after_ns < t_step
    true_mean = (m.offset_ns(t2) - m.offset_ns(t1)) / (t2 - t1) * 1e6
    assert md["lo"] <= true_mean <= md["hi"], (md, true_mean)
    # a bound on the rate bound's edge (cut to ±R) is assumed, never proven
    R = fit.drift_prior_ppm
    if md["lo"] <= -R or md["hi"] >= R:
        assert md["status"] == BoundStatus.ASSUMED
    assert sg.as_dict()["mean_drift_ppm"] == md
    # the segment after the step: its window starts after the break
    md1 = fit.segments[1].mean_drift
    if md1 is not None:
        assert b.before_ns <= md1["from_ns"] < md1["to_ns"]
