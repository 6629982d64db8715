"""The loop's read calendar (bench/run/calendar.py): aims that crowd one instant yield, the
exploration reads keep their instants, other reads move to the next slot with room."""
import random

from bench.analysis.probe_schedule import explore_instant_ns
from bench.run.calendar import ReadCalendar

MS = 1_000_000
NS = 1_000_000_000


def test_aims_at_one_instant_fill_a_slot_then_yield():
    cal = ReadCalendar(slot_ns=20 * MS, share=0.6, cost_ns=3 * MS)   # 12 ms per slot
    t = 5 * NS + 900 * MS                       # 120 BMCs ticking together all aim here
    got = [cal.aim(t, 2, 1 * MS) for _ in range(120)]
    assert got[:2] == [t, t]                    # 2 probes of 2 reads at 3 ms fill 12 ms
    assert all(g is None for g in got[2:])
    assert cal.yielded == 118
    assert cal.booked[t // (20 * MS)] == 12 * MS


def test_an_aim_takes_a_neighbour_slot_within_its_tolerance_only():
    cal = ReadCalendar(slot_ns=20 * MS, share=0.5, cost_ns=5 * MS)    # one probe of 2 per slot
    t = NS + 10 * MS
    assert cal.aim(t, 2, 0) == t
    assert cal.aim(t, 2, 0) is None                       # no tolerance: yields
    assert cal.aim(t, 2, 25 * MS) in (t - 20 * MS, t + 20 * MS)   # the nearest with room
    assert cal.aim(t, 2, 25 * MS) in (t - 20 * MS, t + 20 * MS)
    assert cal.aim(t, 2, 25 * MS) is None


def test_a_probe_costlier_than_a_slot_still_gets_an_empty_one():
    cal = ReadCalendar(slot_ns=20 * MS, share=0.5, cost_ns=50 * MS)
    assert cal.aim(3 * NS, 1, 0) == 3 * NS
    assert cal.aim(3 * NS, 1, 0) is None


def test_exploration_reads_keep_their_uniform_instants_whatever_the_slots_hold():
    cal = ReadCalendar(slot_ns=20 * MS, share=0.6, cost_ns=3 * MS)
    for _ in range(50):                     # the aims crowd every second's 900 ms
        for k in range(10):
            cal.aim(k * NS + 900 * MS, 2, 0)
    rng = random.Random(1)
    phases = []
    for _ in range(4000):
        t = explore_instant_ns(rng.random(), NS, 10 * NS + 123 * MS, NS, 0.5)
        assert cal.force(t, 2) == t
        phases.append(t % NS)
    crowd = sum(900 * MS <= p < 920 * MS for p in phases) / len(phases)
    assert 0.01 < crowd < 0.03                # 2 % of a uniform phase, as without the crowd


def test_other_reads_move_to_the_next_slot_with_room_within_their_limit():
    cal = ReadCalendar(slot_ns=20 * MS, share=0.5, cost_ns=5 * MS)
    t = 2 * NS + 3 * MS
    assert cal.later(t, 2, 100 * MS) == t
    assert cal.later(t, 2, 100 * MS) == 2 * NS + 20 * MS      # the next slot's start
    assert cal.moved == 1
    for _ in range(4):
        cal.later(t, 2, 100 * MS)
    assert cal.later(t, 2, 100 * MS) == t + 100 * MS          # the limit: there it goes anyway


def test_the_cost_per_read_follows_the_loop_threads_cpu():
    cal = ReadCalendar(cost_ns=3 * MS)
    cal.measure(0, 0)
    x, n = 0, 0
    while cal.cost_per_read_ns == 3 * MS or n < 40:   # burn CPU on this thread, "reading"
        for i in range(20_000):
            x += i * i
        n += 20
        cal.measure(n, n * MS)
    assert cal.cost_per_read_ns > 0
    assert cal.cost_per_read_ns != 3 * MS


def test_past_slots_are_forgotten():
    cal = ReadCalendar(slot_ns=20 * MS)
    for k in range(200):
        cal.force(k * 20 * MS, 1)
    cal.measure(0, 200 * 20 * MS)
    assert not cal.booked


def test_the_loops_lag_quantiles_come_from_its_bins():
    from collections import Counter

    from bench.run.runner import _bin_quantile
    lags = Counter({3: 50, 5: 45, 120: 5})            # 0.1 ms bins
    assert _bin_quantile(lags, 0.5) == 3
    assert _bin_quantile(lags, 0.9) == 5
    assert _bin_quantile(lags, 0.99) == 120


def test_stimuli_due_together_take_the_lane_one_per_two_slots_within_their_limit():
    """Every device's first stimulus falls due at one instant: they spread one per
    STIMULUS_SLOTS slots (with the log polls that watch for their entries, one slot could not
    hold them), none before its instant, none past its limit; beyond it, at the limit."""
    from bench.run.calendar import STIMULUS_SLOTS
    cal = ReadCalendar(slot_ns=20 * MS, share=0.6, cost_ns=1 * MS)
    t, limit = 5 * NS + 3 * MS, 1 * NS
    got = [cal.stimulus(t, limit) for _ in range(60)]
    assert got[0] == t and all(g >= t for g in got)
    placed = sorted(g // (20 * MS) for g in got[:25])
    assert all(b - a == STIMULUS_SLOTS for a, b in zip(placed, placed[1:]))
    assert all(g <= t + limit for g in got)
    assert got[-1] == t + limit                  # the lane within the limit is full
    assert cal.booked[t // (20 * MS)] == 1 * MS  # a stimulus costs its slot a read
