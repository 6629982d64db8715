"""Periodic stimuli are sent at phases of the reference second that spread evenly, so a log
stamping whole seconds cuts their latencies at different phases of its tick."""
from bench.run.runner import stimulus_phase

NS = 1_000_000_000


def test_each_stimulus_lands_within_a_second_after_its_due_instant_at_its_own_phase():
    t0 = 1_796_621_926_154_571_909
    phases = []
    for k in range(20):
        t = stimulus_phase(t0 + k * 3 * NS, k, 3.0)
        assert t0 + k * 3 * NS <= t < t0 + k * 3 * NS + NS
        phases.append(t % NS)
    gaps = sorted(phases)
    # 20 phases of k * 0.618 mod 1: no two closer than 1/40 s, none of the second left 1/10 s bare
    assert min(b - a for a, b in zip(gaps, gaps[1:])) > NS // 40
    assert max(b - a for a, b in zip(gaps, gaps[1:] + [gaps[0] + NS])) < NS // 10


def test_a_stimulus_every_second_or_faster_is_not_moved():
    assert stimulus_phase(123_456_789, 7, 1.0) == 123_456_789
