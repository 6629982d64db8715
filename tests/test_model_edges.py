"""The model's edges (issue 39 part B): proven quantities never claim more than the model
allows; rates the reads cannot check are named as assumed."""
from __future__ import annotations

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.sim.clock import ClockModel, ClockParams
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
