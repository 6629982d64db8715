"""Latency as a distribution (bench/compare/quantiles.py): the k-th smallest lo and hi of the
events' proven intervals bound the k-th smallest true latency (a property test over random true
latencies inside random intervals), the bound is tight, and with stamps quantized at their own
phase it decides a median change that the union of the intervals never can."""
from __future__ import annotations

import numpy as np
import pytest

from bench.compare import quantiles as Q
from bench.compare.measures import Measure
from bench.compare.tolerances import Rule
from bench.compare.verdicts import verdict


@pytest.mark.parametrize("seed", range(6))
def test_order_statistics_of_the_bounds_hold_the_true_quantile(seed):
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 60))
        x = rng.exponential(rng.uniform(0.01, 2), n) * (1 + rng.integers(0, 3))
        lo = x - rng.uniform(0, 1, n) * rng.choice([0, 1e-3, 1], n)
        hi = x + rng.uniform(0, 1, n) * rng.choice([0, 1e-3, 1], n)
        for q in (0.0, 0.1, 0.5, 0.9, 1.0):
            a, b, _ = Q.quantile_bounds(lo, hi, q)
            truth = np.sort(x)[Q.rank(n, q) - 1]
            assert a <= truth <= b, (n, q, a, truth, b)


def test_the_bound_is_attained_at_both_ends():
    lo, hi = np.array([3.0, 0.0, 5.0, 1.0]), np.array([4.0, 2.0, 9.0, 6.0])
    a, b, _ = Q.quantile_bounds(lo, hi, 0.5)
    assert a == np.sort(lo)[1] and b == np.sort(hi)[1]     # x = lo and x = hi attain them


def _stamped(rng, n: int, lat: tuple[float, float], tick: float = 1.0, poll: float = 0.1):
    """n events: latency uniform in `lat`, stamped on a `tick` clock at a phase of its own,
    the entry listed by a log poll every `poll` s: the proven interval of each."""
    x = rng.uniform(*lat, n)
    phase = rng.uniform(0, tick, n)
    lo = np.maximum(0.0, x - phase)             # the stamp floors the event's instant
    hi = x + rng.uniform(0, poll, n)            # the fetch that listed it
    hi = np.minimum(hi, lo + tick)
    hi = np.maximum(hi, x)
    return lo, hi


def _measure(lo, hi, q, label="median") -> Measure:
    a, b, p = Q.quantile_bounds(lo, hi, q)
    return Measure("bmc-1", "", f"latency.test_event.{label}", "ns", a, b, p, "proven",
                   events=len(lo), quantile=q, event_lo=tuple(lo), event_hi=tuple(hi))


def test_quantiles_decide_what_the_union_cannot():
    """Case (a) of the gallery in numbers: 0.05-0.25 s -> 0.9-1.5 s on a 1 s log stamp, 25
    events a side: the union straddles ±200 ms, the median and p90 are REGRESSED."""
    rng = np.random.default_rng(3)
    b, c = _stamped(rng, 25, (0.05, 0.25)), _stamped(rng, 25, (0.9, 1.5))
    rule = Rule(tolerance=0.2)
    assert c[0].min() - b[1].max() < 0.2                  # the union: undecided
    for q, label in ((0.5, "median"), (0.9, "p90")):
        v, _, why, _ = verdict(_measure(*b, q, label), _measure(*c, q, label), rule)
        assert v == "regressed", why


def test_unchanged_medians_are_proven_unchanged_and_events_are_counted():
    rng = np.random.default_rng(4)
    rule = Rule(tolerance=0.2)
    fine = {"tick": 0.1, "poll": 0.05}                     # 100 ms stamps, 50 ms log polls
    b, c = _stamped(rng, 30, (0.05, 0.25), **fine), _stamped(rng, 30, (0.05, 0.25), **fine)
    v, _, why, _ = verdict(_measure(*b, 0.5), _measure(*c, 0.5), rule)
    assert v == "unchanged", why
    # a change on the edge: undecided, with how many events would (or could not) decide it
    b, c = _stamped(rng, 8, (0.0, 0.2), poll=0.3), _stamped(rng, 8, (0.25, 0.45), poll=0.3)
    v, _, why, _ = verdict(_measure(*b, 0.5), _measure(*c, 0.5), rule)
    assert v == "undecided" and ("events a side would decide it" in why
                                 or "no number of events decides it" in why), why


def test_events_to_decide_grows_as_the_margin_shrinks():
    rng = np.random.default_rng(5)
    b = _stamped(rng, 200, (0.05, 0.25))
    far, near = _stamped(rng, 200, (2.0, 2.5)), _stamped(rng, 200, (0.95, 1.15))
    n_far = Q.events_to_decide(*b, *far, 0.5, 0.2)
    n_near = Q.events_to_decide(*b, *near, 0.5, 0.2)
    assert n_far is not None and n_near is not None and n_far < n_near
    assert Q.events_to_decide(*b, *b, 0.5, 0.001) is None
    assert Q.smallest_decidable(*b, *b, 0.5) > 0.001


def test_a_quantile_of_few_events_is_bounded_by_their_union():
    """Below 10 events a side the p90 is the largest event, a median one draw's luck: the
    quantiles take the union of the events' bounds (the false alarm benchmarks/false_alarms.py
    found: an unchanged optic bridge's p90 of 4 events a second apart run to run)."""
    from bench.compare.measures import MIN_QUANTILE_EVENTS, latency_measures
    from bench.model.summary_records import Latency

    def lat(bounds):
        return Latency.of("x", {"sent": len(bounds), "events": [
            {"seq": i, "s_ns": 0, "e_ns": 0, "observed_ns": {"lo": a, "hi": b}}
            for i, (a, b) in enumerate(bounds)]})
    few = [(100e6 * i, 100e6 * i + 50e6) for i in range(MIN_QUANTILE_EVENTS - 1)]
    ms = {m.name: m for m in latency_measures("d", "x", lat(few))}
    assert (ms["latency.x.p90"].lo, ms["latency.x.p90"].hi) == (0.0, few[-1][1])
    many = few + [(1e9, 1.05e9)]
    ms = {m.name: m for m in latency_measures("d", "x", lat(many))}
    assert (ms["latency.x.median"].lo, ms["latency.x.median"].hi) == (400e6, 450e6)
    assert not ms["latency.x.extremes"].judgeable


def test_a_latency_seen_in_few_baseline_events_is_not_lost():
    m = _measure(np.array([0.1, 0.2]), np.array([0.3, 0.4]), 0.5)
    assert verdict(m, None, Rule(tolerance=0.2))[0] == "undecided"
    many = _measure(np.linspace(0, 1, 12), np.linspace(0.5, 1.5, 12), 0.5)
    assert verdict(many, None, Rule(tolerance=0.2))[0] == "lost"
