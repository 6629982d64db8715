"""The simulated NTP client's steps are truth breaks (truth.json), so the truth check sees them:
the true offset is never carried across one, and a break found across one is checked for size."""
from __future__ import annotations

from bench.model.summary import _truth_offset_at, breaks_truth
from bench.sim.clock_model import NS, ClockModel, ClockParams
from bench.sim.ntp import NtpDiscipline, NtpParams

T0 = 1_800_000_000 * NS


def disciplined(offset_s: float = 3.0) -> ClockModel:
    m = ClockModel(ClockParams(offset_s=offset_s, resolution_s=1.0), T0, seed=1)
    NtpDiscipline(m, NtpParams(poll_s=4.0, step_threshold_s=1.0, first_poll_s=1.5), True,
                  ["10.0.0.1"], T0)
    return m


def test_the_clients_steps_are_truth_breaks_and_cut_the_truth_grid():
    m = disciplined()
    m.add_step(T0 + round(6.2 * NS), 5 * NS)            # a manual set: the client steps it back
    truth = m.truth(range(T0, T0 + 12 * NS, NS))
    steps = [(b["t_ns"] - T0, b["size_ns"], b.get("source")) for b in truth["breaks"]]
    assert steps == [(round(1.5 * NS), -3 * NS, "ntp"), (round(6.2 * NS), 5 * NS, None),
                     (round(9.5 * NS), -5 * NS, "ntp")]
    # between a grid point before a step and one after it, the truth is taken from the side
    # the instant is on: 1.2 s is nearest the 1 s point, before the client's step at 1.5 s
    for t_s in (1.2, 1.7, 6.1, 6.3, 9.4, 9.6):
        t = T0 + round(t_s * NS)
        assert abs(_truth_offset_at(truth, t) - m.offset_ns(t)) < 1_000, t_s


def test_a_break_found_across_a_client_step_is_checked_for_its_size():
    m = disciplined()
    truth = m.truth(range(T0, T0 + 8 * NS, NS))
    t = truth["breaks"][0]["t_ns"]
    window = {"after_ns": t - NS // 2, "before_ns": t + NS // 2, "kind": "step"}
    right = dict(window, size_ns={"lo": -3_010_000_000, "hi": -2_990_000_000})
    wrong = dict(window, size_ns={"lo": -2_000_000_000, "hi": -1_000_000_000})
    elsewhere = {"after_ns": T0 + 4 * NS, "before_ns": T0 + 5 * NS, "kind": "step",
                 "size_ns": {"lo": 1, "hi": 2}}
    ok = breaks_truth([right], truth)
    assert ok["sizes_in"] and ok["found"] == [{"true_breaks": 1, "true_size_ns": -3 * NS,
                                               "size_in": True}]
    assert ok["true"] == 1 and ok["unseen_t_ns"] == []
    bad = breaks_truth([wrong, elsewhere], truth)
    assert not bad["sizes_in"] and bad["found"][1] == {"true_breaks": 0}
    assert breaks_truth([], truth)["unseen_t_ns"] == [t]
