"""Lost-trap bookkeeping (drivers/pdu_backends/outlet_watch), instant by instant: which change a
state read shows, which trap announces it, when a missing one counts as lost."""
from drivers.pdu_backends.outlet_watch import OutletWatch

S = 1_000_000_000


def test_a_change_without_its_trap_is_lost_only_after_the_grace_period():
    w = OutletWatch(grace_ns=10 * S, traps_expected=True)
    assert w.states_read({3: "on"}, 0, 1) == []                       # the first read: no change
    (c,) = w.states_read({3: "off"}, 5 * S, 5 * S + 1)
    assert (c.outlet, c.state, c.after_ns, c.seen_ns) == (3, "off", 0, 5 * S + 1)
    assert w.expired(15 * S) == [] and w.lost == 0                    # still within the grace
    assert [x.outlet for x in w.expired(15 * S + 2)] == [3] and w.lost == 1
    assert w.expired(30 * S) == [] and w.lost == 1                    # counted once


def test_a_trap_before_or_after_the_read_announces_the_change():
    w = OutletWatch(grace_ns=10 * S, traps_expected=True)
    w.states_read({1: "on", 2: "on"}, 0, 1)
    w.trap(1, "off", 2 * S)                                           # before the read: announced
    w.states_read({1: "off", 2: "off"}, 3 * S, 3 * S + 1)
    assert [c.outlet for c in w.pending] == [2]
    w.trap(2, "off", 4 * S)                                           # after it, in the grace
    assert w.pending == [] and w.expired(60 * S) == [] and w.lost == 0


def test_a_stale_or_wrong_trap_does_not_announce_and_one_that_does_not_say_does():
    w = OutletWatch(grace_ns=S, traps_expected=True)
    w.trap(1, "off", 0)                                               # before the old state's read
    w.states_read({1: "on", 2: "on"}, S, S + 1)
    w.trap(2, "on", 2 * S)                                            # the wrong state
    w.states_read({1: "off", 2: "off"}, 3 * S, 3 * S + 1)
    assert sorted(c.outlet for c in w.pending) == [1, 2]
    w.trap(2, None, 4 * S)                                            # e.g. Raritan's: not saying
    assert [c.outlet for c in w.pending] == [1]
    assert [c.outlet for c in w.expired(10 * S)] == [1] and w.lost == 1


def test_without_a_trap_receiver_nothing_is_lost():
    w = OutletWatch(grace_ns=S, traps_expected=False)
    w.states_read({1: "on"}, 0, 1)
    assert len(w.states_read({1: "off"}, S, S + 1)) == 1
    assert w.expired(100 * S) == [] and w.lost == 0
