"""The vectorised proven mapping (Segment.proven_sides_many, timeline_map.proven_many) against
the per-stamp search it replaces in bulk (Segment.proven_sides) and against the truth, on
random segments: clocks that drift, slew, hunt, step (seen or not) at random ticks."""
import numpy as np
import pytest

from bench.analysis.timeline_map import calibrations, map_stamps
from bench.sim.cascade import calibrate
from bench.sim.clock_model import ClockModel, ClockParams

T0 = 1_795_000_000_000_000_000
NS = 1_000_000_000
MS = 1_000_000


def _clock(seed: int) -> ClockModel:
    rng = np.random.default_rng(seed)
    res = float(rng.choice([1.0, 0.01, 0.001, 1e-6]))
    steps = ((float(rng.uniform(10, 50)), float(rng.choice([-1, 1]) * rng.uniform(0.002, 0.9))),) \
        if rng.random() < 0.6 else ()
    slews = ((float(rng.uniform(5, 40)), 10.0, float(rng.uniform(-400, 400))),) \
        if rng.random() < 0.4 else ()
    return ClockModel(ClockParams(offset_s=float(rng.uniform(-5, 5)),
                                  drift_ppm=float(rng.uniform(-200, 200)), resolution_s=res,
                                  steps=steps, slews=slews), T0, seed=seed)


@pytest.mark.parametrize("seed", range(10))
def test_fast_proven_sides_are_certified_and_at_least_as_tight_as_the_search(seed):
    """Each end the fast mapping gives passes the search's own test (proven_offset_at at that
    instant shows it before / after the stamp); where the search finds an end, the fast one
    is no looser than it (1 ns rounding), and it finds one wherever the search does."""
    m = _clock(seed)
    res = calibrate(m, T0, 60.0, seed=seed, name="datetime")
    rng = np.random.default_rng(100 + seed)
    for sg in res.fit.segments:
        span = sg.proven_span()
        if span is None:
            continue
        t = rng.integers(span[0] - 2 * NS, span[1] + 2 * NS, 120)
        q = int(sg.resolution_ns)
        vals = np.array([m.read_ns(int(x)) for x in t], dtype=np.int64)
        lo, hi, has_lo, has_hi = sg.proven_sides_many(vals, q)
        for i, v in enumerate(vals.tolist()):
            slo, shi = sg.proven_sides(v, q)
            if has_lo[i]:
                b = sg.proven_offset_at(int(lo[i]))
                assert b is not None and int(lo[i]) + b.hi < v
            if has_hi[i]:
                b = sg.proven_offset_at(int(hi[i]))
                assert b is not None and int(hi[i]) + b.lo >= v + q
            if slo is not None:
                assert has_lo[i] and int(lo[i]) >= slo - 1, (i, slo, int(lo[i]))
            if shi is not None:
                assert has_hi[i] and int(hi[i]) <= shi + 1, (i, shi, int(hi[i]))


@pytest.mark.parametrize("seed", range(10))
def test_fast_proven_intervals_hold_the_truth_and_their_assumed_one_is_inside(seed):
    """Every stamp a clock wrote (steps seen or not) maps to a proven, extrapolated or
    ambiguous interval that holds its true instant; the line's (assumed) interval is inside."""
    m = _clock(seed)
    res = calibrate(m, T0, 60.0, seed=seed, name="datetime")
    cals = calibrations([("run", res, {})])
    t = T0 + np.sort(np.random.default_rng(seed).integers(-5 * NS, 65 * NS, 3000))
    vals = np.array([m.read_ns(int(x)) for x in t], dtype=np.int64)
    mp = map_stamps(cals, vals, m.p.resolution_ns, np.arange(len(t)))
    placed = mp.status < 4
    assert np.all((mp.lo_ns <= t) | ~placed) and np.all((t <= mp.hi_ns) | ~placed)
    assert mp.assumed_lo_ns is not None and mp.assumed_hi_ns is not None
    assert np.all(mp.lo_ns <= mp.assumed_lo_ns) and np.all(mp.assumed_hi_ns <= mp.hi_ns)
