"""Each log source's stamp is mapped through the clock that wrote it (bench/model/logsources.py):
snmptrapd's receive time through the receiver's clock or the agent's sysUpTime varbind through the
agent's uptime, a Kubernetes event's eventTime through the reporting component's clock and its
creationTimestamp through the API server's, Redfish Created vs EventTimestamp, a syslog relay's
stamp through the relay; a clock that cannot have stamped a field is refused in one line. Every
log is generated from clock models, so each interval is checked against its true instant."""
import json

import numpy as np
import pytest
from timeline_truth import MS, NS, T0, iso, make_run, misses, report_of

from bench.commands.timeline import main
from bench.sim.clock_model import ClockParams

DEVICES = {
    "pdu-1": ("pdu", {"sysuptime": ClockParams(counter=True, uptime_s=1234567.0, drift_ppm=23,
                                               resolution_s=0.01),
                      "hrsystemdate": ClockParams(offset_s=-2.1, drift_ppm=5, resolution_s=1.0)}),
    "host-1": ("host", {"realtime": ClockParams(offset_s=0.31, drift_ppm=-3,
                                                resolution_s=1e-6)}),
    "k8s-1": ("scheduler", {"apiserver": ClockParams(offset_s=-0.41, drift_ppm=4,
                                                     resolution_s=1.0),
                            "scheduler": ClockParams(offset_s=0.003, drift_ppm=-2,
                                                     resolution_s=1e-6)}),
    "bmc-1": ("bmc", {"datetime": ClockParams(offset_s=12.3456, drift_ppm=20,
                                              resolution_s=1.0)}),
    "ipmi-2": ("ipmi", {"sel_init": ClockParams(counter=True, uptime_s=500.0, drift_ppm=10,
                                                resolution_s=1.0)}),
}


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("sources"), DEVICES)


def _instants(n, seed):
    rng = np.random.default_rng(seed)
    return np.sort(T0 + rng.integers(60 * NS, 540 * NS, n))


def _traps(rack, folder, varbind=True):
    """snmptrapd lines: the receiver (host-1) stamps the receive instant to the second, the
    agent (pdu-1) its sysUpTime at the send; (send truths, receive truths) by line number."""
    sent = _instants(12, 1)
    recv = sent + np.random.default_rng(2).integers(MS, 5 * MS, len(sent))
    lines, t_send, t_recv = [], {}, {}
    for t, r in zip(sent.tolist(), recv.tolist()):
        n = len(lines) + 1
        t_send[n], t_recv[n] = t, r
        stamp = iso(rack.read("host-1", "realtime", r)).replace("T", " ")[:-1]
        lines.append(f"{stamp} pdu-1 [UDP: [127.0.0.1]:50001->[127.0.0.1]:162]:")
        if varbind:
            ticks = rack.read("pdu-1", "sysuptime", t) // (10 * MS)
            lines.append(f"DISMAN-EVENT-MIB::sysUpTimeInstance = Timeticks: ({ticks}) x\t"
                         "SNMPv2-MIB::snmpTrapOID.0 = OID: PowerNet-MIB::outletOff")
        else:
            lines.append("  SNMPv2-MIB::snmpTrapOID.0 = OID: PowerNet-MIB::outletOff")
    path = folder / ("traps.log" if varbind else "traps_novb.log")
    path.write_text("\n".join(lines) + "\n")
    return path, t_send, t_recv


def _run(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_traps_map_through_the_agent_uptime_or_the_receiver_never_the_pdu_wall_clock(
        rack, tmp_path, capsys):
    run = rack.path
    traps, t_send, _ = _traps(rack, tmp_path)
    code, out, err = _run([str(run), f"pdu-1={traps}"], capsys)
    assert code == 0, err
    assert not misses(run, "traps.log", t_send)
    rep = report_of(run, "traps.log")
    assert [s["clock"] for s in rep["stamped_by"]] == ["pdu-1/sysuptime"]
    assert rep["mapped"] == 12 and "sysUpTime varbind by pdu-1/sysuptime" in out
    # without varbinds: the receive time, only through the receiver's clock
    novb, _, t_recv = _traps(rack, tmp_path, varbind=False)
    code, out, err = _run([str(run), f"pdu-1={novb},tz=UTC"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "receiver=HOST" in err
    code, out, err = _run([str(run), f"pdu-1={novb},tz=UTC,receiver=host-1"], capsys)
    assert code == 0, err
    rep = report_of(run, "traps_novb.log")
    assert [s["clock"] for s in rep["stamped_by"]] == ["host-1/realtime"]
    assert rep["mapped"] == 12 and not misses(run, "traps_novb.log", t_recv)
    # the PDU's own wall clock cannot have stamped either: refused, one line
    for log in (traps, novb):
        code, out, err = _run([str(run), f"pdu-1:hrsystemdate={log},tz=UTC"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "cannot have stamped" in err


def _events(rack, folder):
    """Scheduled events: eventTime by the scheduler's clock at the event (µs), creationTimestamp
    by the API server's when it stored the object 1-4 ms later (whole seconds)."""
    t_ev = _instants(8, 3)
    t_cr = t_ev + np.random.default_rng(4).integers(MS, 4 * MS, len(t_ev))
    items = [{"kind": "Event", "metadata": {
        "name": f"p{k}.1", "resourceVersion": str(100 + k),
        "creationTimestamp": iso(rack.read("k8s-1", "apiserver", c))},
        "eventTime": iso(rack.read("k8s-1", "scheduler", e), 6),
        "reportingComponent": "default-scheduler", "reason": "Scheduled",
        "involvedObject": {"kind": "Pod", "name": f"p{k}"}, "message": "bound"}
        for k, (e, c) in enumerate(zip(t_ev.tolist(), t_cr.tolist()))]
    path = folder / "events.json"
    path.write_text(json.dumps({"kind": "EventList", "items": items}, indent=1))
    return path, dict(enumerate(t_ev.tolist(), 1)), dict(enumerate(t_cr.tolist(), 1))


def test_kubernetes_event_fields_each_through_the_clock_that_wrote_it(rack, tmp_path, capsys):
    run = rack.path
    events, t_ev, t_cr = _events(rack, tmp_path)
    code, out, err = _run([str(run), f"k8s-1={events}"], capsys)
    assert code == 0, err
    rep = report_of(run, "events.json")
    assert rep["format"] == "k8s-events"
    assert [(s["field"], s["clock"]) for s in rep["stamped_by"]] == [
        ("eventTime", "k8s-1/scheduler")]
    assert rep["mapped"] == 8 and not misses(run, "events.json", t_ev)
    code, out, err = _run([str(run), f"k8s-1:apiserver={events}"], capsys)
    assert code == 0, err
    rep = report_of(run, "events.json")
    assert [(s["field"], s["clock"]) for s in rep["stamped_by"]] == [
        ("creationTimestamp", "k8s-1/apiserver")]
    assert rep["mapped"] == 8 and not misses(run, "events.json", t_cr)
    code, out, err = _run([str(run), f"k8s-1:apiserver={events},field=eventTime"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "k8s-1/apiserver cannot have stamped eventTime" in err


def test_redfish_created_and_event_timestamp(rack, tmp_path, capsys):
    run = rack.path
    t_ev = _instants(6, 5)
    t_log = t_ev + 200 * MS
    members = [{"Id": str(k + 1), "MessageId": "Base.1.0.Overtemp", "Message": "inlet hot",
                "EventTimestamp": iso(rack.read("bmc-1", "datetime", e), zone="+00:00"),
                "Created": iso(rack.read("bmc-1", "datetime", c), zone="+00:00")}
               for k, (e, c) in enumerate(zip(t_ev.tolist(), t_log.tolist()))]
    log = tmp_path / "sel.json"
    log.write_text(json.dumps({"Members": members}))
    for field, truth in (("", t_log), ("EventTimestamp", t_ev)):
        code, out, err = _run([str(run), f"bmc-1={log}" + (f",field={field}" if field else "")],
                              capsys)
        assert code == 0, err
        rep = report_of(run, "sel.json")
        assert rep["stamped_by"][0]["field"] == (field or "Created")
        assert rep["mapped"] == 6 and not misses(run, "sel.json", dict(enumerate(truth, 1)))


def test_a_relayed_syslog_stamp_maps_through_the_relay(rack, tmp_path, capsys):
    run = rack.path
    t = _instants(5, 6)
    log = tmp_path / "relay.log"
    log.write_text("".join(f"<134>1 {iso(rack.read('host-1', 'realtime', x), 6)} bmc-1 "
                           f"thermald - - - inlet {k}\n" for k, x in enumerate(t.tolist())))
    code, out, err = _run([str(run), f"bmc-1={log},stamp=relay"], capsys)
    assert code == 2 and "receiver=HOST" in err and len(err.strip().splitlines()) == 1
    code, out, err = _run([str(run), f"bmc-1={log},stamp=relay,receiver=host-1"], capsys)
    assert code == 0, err
    assert report_of(run, "relay.log")["stamped_by"][0]["clock"] == "host-1/realtime"
    assert not misses(run, "relay.log", dict(enumerate(t.tolist(), 1)))


def test_pre_init_sel_lines_are_placed_through_the_measured_init_counter(rack, tmp_path, capsys):
    """ipmi-2's SEL time was never set: `ipmitool sel elist` prints pre-init seconds since the
    BMC's init; the run measured that counter (sel_init), so each line is placed through it."""
    run = rack.path
    t = _instants(6, 9)
    log = tmp_path / "sel.txt"
    log.write_text("".join(f"{k + 1:4x} | Pre-Init  |{rack.read('ipmi-2', 'sel_init', x) // NS:010d}"
                           f"| Temperature #0x30 | Upper Critical going high | Asserted\n"
                           for k, x in enumerate(t.tolist())))
    code, out, err = _run([str(run), f"ipmi-2={log}"], capsys)
    assert code == 0, err
    rep = report_of(run, "sel.txt")
    assert rep["mapped"] == 6 and rep["stamped_by"][0]["clock"] == "ipmi-2/sel_init"
    assert not misses(run, "sel.txt", dict(enumerate(t.tolist(), 1)))
