"""A clock whose value updates less often than its tick (1.5 s shown to 1 s, 250 ms shown to
100 ms: an incommensurate tick) is found from the spacing of its observed edges and reported as
a resolution finding, never as drift beyond the prior with false steps (issue 28 item 6)."""
from __future__ import annotations

import numpy as np
import pytest

from bench.analysis.estimate import fit_clock
from bench.analysis.statuses import ResolutionBasis, Verdict
from bench.sim.clock_model import NS, ClockModel, ClockParams
from bench.sim.probing import read_like_runner

T0 = 1_800_000_000 * NS


def reads(q_s: float, update_s: float, seed: int, n: int = 90, rate_hz: float = 2.0):
    rng = np.random.default_rng(seed)
    p = ClockParams(offset_s=float(rng.uniform(-5, 5)), drift_ppm=float(rng.uniform(-50, 50)),
                    resolution_s=q_s, update_s=update_s, sample_delay_s=0.0)
    m = ClockModel(p, T0, seed)
    s, e, v, _, _ = read_like_runner(m, n, rate_hz, p.resolution_ns, rng)
    return m, s, e, v, p.resolution_ns


# the finding needs reads closer than a tick (a value seen to jump two ticks or more within
# less than one): a 100 ms field is read at 10 Hz here, a 1 s one at the runner's 2 Hz
@pytest.mark.parametrize("q_s,update_s,rate_hz", [(1.0, 1.5, 2.0), (0.1, 0.25, 10.0)])
@pytest.mark.parametrize("seed", [2])
def test_an_incommensurate_tick_is_a_resolution_finding(q_s, update_s, rate_hz, seed):
    m, s, e, v, q = reads(q_s, update_s, seed, rate_hz=rate_hz)
    fit = fit_clock(s, e, v, q)
    assert fit.verdict == Verdict.ASSUMED and not fit.breaks and not fit.beyond_note
    assert fit.resolution_basis == ResolutionBasis.EDGES and "updates only every" in \
        fit.resolution_note
    # a bound on the update period from the edges: never below it, and near it
    assert update_s * NS <= fit.update_ns <= update_s * NS + 0.6 * NS / rate_hz * 2
    assert fit.as_dict()["update_ns"] == fit.update_ns
    for sg in fit.segments:          # the device's clock (not its stale value) is inside
        assert sg.offset_ns.lo <= m.true_ns(sg.epoch_ns) - sg.epoch_ns <= sg.offset_ns.hi


def test_a_clock_that_updates_every_tick_has_no_such_finding():
    m, s, e, v, q = reads(1.0, 0.0, 1)
    fit = fit_clock(s, e, v, q)
    assert fit.resolution_basis == ResolutionBasis.DECLARED and fit.update_ns == 0
    assert fit.verdict == Verdict.PROVEN and "update_ns" not in fit.as_dict()


def test_a_fine_tick_flipping_late_is_no_slow_update():
    """A 1 µs clock whose reading lags by a varying 2–8 ms jumps ahead of the elapsed time too,
    but its edges are not resolved (reads are far more than a tick apart): no such finding."""
    rng = np.random.default_rng(3)
    p = ClockParams(offset_s=1.0, resolution_s=1e-6, tick_lag_ms=(2.0, 8.0), sample_delay_s=0.0)
    m = ClockModel(p, T0, 3)
    s, e, v, _, _ = read_like_runner(m, 90, 2.0, p.resolution_ns, rng)
    fit = fit_clock(s, e, v, p.resolution_ns)
    assert fit.resolution_basis != ResolutionBasis.EDGES and fit.update_ns == 0
