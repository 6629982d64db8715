"""Stimulus latency across a clock fault between the device's stamp and the bench's fetch: on the
simulated rack (real emulators, real drivers) the test's procedure triggers a step of a BMC's
wall clock, or a reboot of a PDU's sysUpTime counter, after the crossing entry is in the device's
log and before the run fetches it (tests/fault_between_stamp_and_fetch.py). Every event's
`logged_ns` holds the true latency from truth.json, and the crossing event is bounded through the
segment in force when it was stamped (before the fault), not dropped."""
from __future__ import annotations

from pathlib import Path

import pytest
from racks import sim_rack_text

from bench.model.rundata import load_run
from bench.run.experiment import run_experiment

PROCEDURE = Path(__file__).resolve().parent / "fault_between_stamp_and_fetch.py"

CASES = {
    # a Redfish BMC's 1 s wall clock stepped back 30 s (its scheduled step removed)
    "bmc-step": ("bmc-3", {"stimuli": ["test_event"], "sim": {"steps": None}},
                 {"stimulus": "test_event", "fault": "step", "step_back_s": "30"}, "datetime"),
    # an SNMP PDU's agent restarted: sysUpTime from zero (no wrap in this run, no traps: the
    # outlet log alone)
    "pdu-reboot": ("pdu-2", {"trap_listen": None,
                             "sim": {"reboot_down_s": 1.0,
                                     "clocks": {"sysuptime": {"uptime_s": 1234567.0}}}},
                   {"stimulus": "outlet_off:5", "fault": "reboot"}, "sysuptime"),
}
RECEIVED = ("test_event", "outlet_command")     # the emulator got the stimulus (truth kinds)
LOGGED = ("log", "outlet_log")                  # the emulator stamped its log entry


def true_latencies(events: list[dict]) -> list[tuple[int, int]]:
    """(instant the device received a stimulus, its entry's stamp instant minus that), from the
    emulator's truth; each entry is the first logged after its stimulus (the procedure waits for
    every entry before the next stimulus)."""
    got = sorted(e["t_ns"] for e in events if e["kind"] in RECEIVED)
    logged = sorted(e["t_ns"] for e in events if e["kind"] in LOGGED)
    return [(t, next(x for x in logged if x > t) - t) for t in got]


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    device, changes, params, clock = CASES[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text([device], name="fault-between", changes={device: changes}))
    folder = run_experiment(str(PROCEDURE), rack, tmp / "runs", {"device": device, **params},
                            quiet=True)
    return device, clock, load_run(folder)


def test_every_logged_bound_holds_the_true_latency_across_the_fault(case):
    device, clock, run = case
    assert run.manifest["status"] == "completed", run.manifest.get("error")
    truth = true_latencies(run.truth["devices"][device]["events"])
    [lat] = run.summary.devices[device].latency.values()
    assert lat.sent == len(truth) == 7
    for e in lat.events:
        assert e.logged_ns is not None, (e.logged_unbounded, e.event)   # none dropped
        [(_, true)] = [(t, x) for t, x in truth if e.s_ns <= t <= e.e_ns]
        assert e.logged_ns.lo <= true <= e.logged_ns.hi, (e, true)
    assert lat.logged_ns.n == 7


def test_the_crossing_entry_is_bounded_through_the_segment_of_its_stamp(case):
    device, clock, run = case
    cross = run.manifest["crossing"]
    fault = cross["fault_ns"]
    # the fault fell between the stamp and the fetch, as the procedure made it
    truth = true_latencies(run.truth["devices"][device]["events"])
    [(t_recv, true)] = [(t, x) for t, x in truth if cross["s_ns"] <= t <= cross["e_ns"]]
    assert t_recv + true < fault < cross["fetch_from_ns"]
    fit = run.summary.devices[device].clocks[clock]
    assert [b.after_ns < fault <= b.before_ns for b in fit.breaks] == [True]
    # the segment after the fault had begun (a read) when the entry was fetched: the one in
    # force at the fetch is not the one the entry was stamped in
    assert fit.segments[1].start_ns < cross["fetch_from_ns"]
    [lat] = run.summary.devices[device].latency.values()
    [e] = [e for e in lat.events if e.s_ns == cross["s_ns"]]
    assert e.logged_ns is not None and e.logged_ns.lo <= true <= e.logged_ns.hi
    # through the segment before the fault (alone, or in a flagged union with the one after)
    assert f"{clock}#0" in e.logged_via, e.logged_via
    # the answer that listed it bounds it: no wider than the stimulus's observed latency
    assert e.logged_ns.hi <= e.observed_ns.hi
