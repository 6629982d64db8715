"""The model's edges (issue 39 part B): proven quantities never claim more than the model
allows; rates the reads cannot check are named as assumed."""
from __future__ import annotations

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.sim.clock_model import ClockModel, ClockParams
from bench.sim.probing import read_like_runner

NS = 1_000_000_000
T0 = 1_800_000_000 * NS


def test_a_proven_mean_drift_is_never_wider_than_the_rate_bound():
    """Short sideband-bracketed runs give wide mean drifts: cut to ±R, and then assumed."""
    seen = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        p = ClockParams(offset_s=3.0, drift_ppm=float(rng.uniform(-100, 100)),
                        resolution_s=float(rng.choice([1e-6, 0.01, 1.0])))
        m = ClockModel(p, T0, seed)
        s, e, v, _, _ = read_like_runner(m, int(rng.integers(8, 30)), 1.0, p.resolution_ns, rng,
                                         sideband=True)
        fit = fit_clock(s, e, v, p.resolution_ns)
        for sg in fit.segments:
            md = sg.mean_drift
            if md is None:
                continue
            seen += 1
            if md["status"] == "proven":
                assert -fit.drift_prior_ppm <= md["lo"] <= md["hi"] <= fit.drift_prior_ppm
            t1, t2 = md["from_ns"], md["to_ns"]
            true = (m.offset_ns(t2) - m.offset_ns(t1)) / (t2 - t1) * 1e6
            assert md["lo"] <= true <= md["hi"]
    assert seen > 20


def _max_rate_ppm(m: ClockModel, t1: int, t2: int) -> float:
    return max(abs(m.drift_ppm(int(t))) for t in range(t1, t2, NS // 20))


def _disciplined(seed: int) -> ClockParams:
    """A 100 ms clock (net-snmp's hrSystemDate) disciplined beyond 600 ppm: a PLL hunting at
    ±700-1,200 ppm with a 40-60 s period, or an NTP client slewing 2-10 ms corrections every 20-40 s at
    500-2,000 ppm; its edges flip 4-8 ms late."""
    rng = np.random.default_rng(seed)
    kw: dict = {"resolution_s": 0.1, "drift_ppm": float(rng.uniform(-50, 50)),
                "tick_lag_ms": (4.0, 8.0)}
    if seed % 2:
        kw["hunting"] = (float(rng.uniform(700, 1200)), float(rng.uniform(40, 60)))
    else:
        kw["discipline"] = (20.0, 40.0, 2.0, 10.0, float(rng.uniform(500, 2000)))
    return ClockParams(**kw)


def test_disciplined_clocks_are_bounded_under_a_rate_that_holds_or_not_proven():
    proven = 0
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        p = _disciplined(seed)
        m = ClockModel(p, T0, seed)
        s, e, v, _, _ = read_like_runner(m, 120, 2.0, p.resolution_ns, rng)
        fit = fit_clock(s, e, v, p.resolution_ns, lag_ns=10_000_000)
        for sg in fit.segments:
            if sg.offset_status != "proven":
                continue
            proven += 1
            assert fit.drift_prior_ppm >= _max_rate_ppm(m, sg.start_ns, sg.end_ns), seed
            for t in np.linspace(sg.start_ns, sg.end_ns, 30).astype(np.int64):
                b = sg.proven_offset_at(int(t))
                assert b is None or b.lo <= m.offset_ns(int(t)) <= b.hi, (seed, int(t) - T0)
    assert proven >= 6        # not bought by calling nothing proven


def test_a_device_wide_tick_lag_widens_its_wall_clocks_only():
    from bench.model.summary import lag_ns
    meta = {"tick_lag_ms": 10.0}
    assert lag_ns(meta, {"name": "hrSystemDate"}) == 10_000_000
    assert lag_ns(meta, {"name": "sysUpTime", "counter": True, "lag_ns": 0}) == 0
    assert lag_ns({}, {"name": "hrSystemDate", "lag_ns": 3_000_000}) == 3_000_000
