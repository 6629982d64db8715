"""The regression run's plan (bench/compare/plan.py): the model's smallest decidable latency
tolerance and events, the drift run length, and a tolerance no affordable run decides said so
with the smallest one that is."""
from __future__ import annotations

import math

import pytest
from racks import sim_rack_text

from bench.compare import plan as P
from bench.compare.verdicts import load_tolerances
from bench.config.inventory import load_rack


def test_latency_model():
    floor, n = P.latency_model(0.9, tick_s=1.0, poll_s=0.1, tol_s=0.3)
    assert floor == pytest.approx(0.19)
    eps = (0.3 - 0.19) / 1.1
    assert n == math.ceil(math.log(40) / (2 * eps ** 2))
    assert P.latency_model(0.5, 1.0, 0.1, 0.3) == (pytest.approx(0.55), None)


def test_drift_span():
    assert P.drift_span_s(5e6, 2.0) == pytest.approx(5000.0)   # 2 x 5 ms / 2 ppm


def test_the_plan_says_what_it_cannot_decide(tmp_path):
    rack = tmp_path / "r.toml"
    rack.write_text(sim_rack_text(["bmc-1", "bmc-3"]))        # bmc-3 allows no stimulus
    plan = P.plan_run(load_rack(rack), load_tolerances(None), ("latency", "drift"),
                      max_duration_s=600)
    needs = {(n.device, n.measure): n for n in plan.needs}
    assert set(needs) == {("bmc-1", "latency.median"), ("bmc-1", "latency.p90"),
                          ("bmc-1", "drift"), ("bmc-3", "drift")}
    med = needs[("bmc-1", "latency.median")]
    assert not med.affordable and med.smallest is not None and med.smallest > 200e6
    assert med.events is not None and med.events >= P.MIN_QUANTILE_EVENTS
    drift = needs[("bmc-3", "drift")]              # 83 min at ±2 ppm: beyond 10 min
    assert not drift.affordable and drift.smallest == pytest.approx(2 * P.EDGE_NS / 600 / 1e3)
    lines = plan.lines()
    assert lines[0].startswith("plan: ") and "a stimulus every 3 s" in lines[0]
    assert any("no run within 10 min decides it; the smallest decidable is" in x for x in lines)
    assert plan.duration_s <= 600 and plan.stimulus_every_s == 3.0
