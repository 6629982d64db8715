"""The reference: sources, pmc parsing on captured real output, grading, the uncertainty bound,
the health series, the PHC path, and `rackclock check` against the simulated rack."""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import time

import pytest
import tomli_w

from bench.commands import check
from bench.config.inventory import load_rack
from bench.reference.clock import (
    Discipline,
    Reference,
    ReferenceRefused,
    VirtualReference,
    open_reference,
    reference_for_run,
)
from bench.reference.monitor import HealthMonitor
from bench.reference.phc import Phc, PhcError
from bench.reference.ptp_health import (
    NS,
    Pmc,
    PtpHealthError,
    PtpThresholds,
    UncertaintyPolicy,
    grade,
    parse_pmc,
    snapshot_from,
    uncertainty_ns,
)
from bench.sim.serve import DEFAULT_RACK, ensure_secrets
from bench.sim.thread import SimRackThread
from bench.units import parse_duration_ns

# Captured from linuxptp 3.1.1's pmc against a ptp4l slave (software stamps, veth, namespaces):
# `pmc -u -b 0 -s sl.sock 'GET TIME_STATUS_NP' 'GET PORT_DATA_SET' ...` (interleaved as printed).
SLAVE = """sending: GET TIME_STATUS_NP
sending: GET PORT_DATA_SET
\t6660a0.fffe.99ee15-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP 
\t\tmaster_offset              310
\t\tingress_time               1795972065970695679
\t\tcumulativeScaledRateOffset +0.000000000
\t\tscaledLastGmPhaseChange    0
\t\tgmTimeBaseIndicator        0
\t\tlastGmPhaseChange          0x0000'0000000000000000.0000
\t\tgmPresent                  true
\t\tgmIdentity                 5ab0e2.fffe.379d05
sending: GET CURRENT_DATA_SET
\t6660a0.fffe.99ee15-1 seq 1 RESPONSE MANAGEMENT PORT_DATA_SET 
\t\tportIdentity            6660a0.fffe.99ee15-1
\t\tportState               SLAVE
\t\tlogMinDelayReqInterval  -2
\t\tpeerMeanPathDelay       0
\t\tlogAnnounceInterval     -2
\t\tannounceReceiptTimeout  3
\t\tlogSyncInterval         -3
\t\tdelayMechanism          1
\t\tlogMinPdelayReqInterval 0
\t\tversionNumber           2
sending: GET PORT_PROPERTIES_NP
sending: GET PORT_STATS_NP
sending: GET TIME_PROPERTIES_DATA_SET
sending: GET PARENT_DATA_SET
\t6660a0.fffe.99ee15-0 seq 2 RESPONSE MANAGEMENT CURRENT_DATA_SET 
\t\tstepsRemoved     1
\t\toffsetFromMaster 310.0
\t\tmeanPathDelay    1668.0
\t6660a0.fffe.99ee15-1 seq 3 RESPONSE MANAGEMENT PORT_PROPERTIES_NP 
\t\tportIdentity            6660a0.fffe.99ee15-1
\t\tportState               SLAVE
\t\ttimestamping            SOFTWARE
\t\tinterface               rcsb5c24e
\t6660a0.fffe.99ee15-1 seq 4 RESPONSE MANAGEMENT PORT_STATS_NP 
\t\tportIdentity              6660a0.fffe.99ee15-1
\t\trx_Sync                   23
\t\trx_Delay_Req              0
\t\trx_Follow_Up              23
\t\trx_Delay_Resp             8
\t\trx_Announce               12
\t\ttx_Delay_Req              8
\t6660a0.fffe.99ee15-0 seq 5 RESPONSE MANAGEMENT TIME_PROPERTIES_DATA_SET 
\t\tcurrentUtcOffset      37
\t\tleap61                0
\t\tleap59                0
\t\tcurrentUtcOffsetValid 0
\t\tptpTimescale          0
\t\ttimeTraceable         0
\t\tfrequencyTraceable    0
\t\ttimeSource            0xa0
"""
SLAVE_NAMES = ("TIME_STATUS_NP", "PORT_DATA_SET", "CURRENT_DATA_SET", "PORT_PROPERTIES_NP",
               "PORT_STATS_NP", "TIME_PROPERTIES_DATA_SET")
SLAVE_INGRESS = 1795972065970695679

# The grandmaster's own ptp4l, same run.
GM = """\t5ab0e2.fffe.379d05-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP 
\t\tmaster_offset              0
\t\tingress_time               0
\t\tgmPresent                  false
\t\tgmIdentity                 5ab0e2.fffe.379d05
\t5ab0e2.fffe.379d05-1 seq 1 RESPONSE MANAGEMENT PORT_DATA_SET 
\t\tportIdentity            5ab0e2.fffe.379d05-1
\t\tportState               MASTER
\t5ab0e2.fffe.379d05-0 seq 2 RESPONSE MANAGEMENT CURRENT_DATA_SET 
\t\tstepsRemoved     0
\t\toffsetFromMaster 0.0
\t\tmeanPathDelay    0.0
"""

# The slave 3 s after its grandmaster was stopped.
LOST = """\t6660a0.fffe.99ee15-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP 
\t\tmaster_offset              -1290
\t\tingress_time               0
\t\tgmPresent                  true
\t\tgmIdentity                 5ab0e2.fffe.379d05
\t6660a0.fffe.99ee15-1 seq 1 RESPONSE MANAGEMENT PORT_DATA_SET 
\t\tportIdentity            6660a0.fffe.99ee15-1
\t\tportState               LISTENING
\t6660a0.fffe.99ee15-0 seq 2 RESPONSE MANAGEMENT CURRENT_DATA_SET 
\t\tstepsRemoved     1
\t\toffsetFromMaster -1290.0
\t\tmeanPathDelay    1548.0
"""
THREE = ("TIME_STATUS_NP", "PORT_DATA_SET", "CURRENT_DATA_SET")


def answers(text, names):
    out = {n: [] for n in names}
    for r in parse_pmc(text):
        out[r.tlv if r.tlv in out else names[r.seq]].append(r)
    return out


def slave_snapshot(**change):
    snap = snapshot_from(answers(SLAVE, SLAVE_NAMES), SLAVE_INGRESS + 100_000_000, "sl.sock")
    return dataclasses.replace(snap, **change)


# -- sources ------------------------------------------------------------------------------------------
def test_realtime_reference_is_the_system_clock_and_unverified_without_linuxptp():
    ref = open_reference("realtime", 0, ptp_uds=None)
    a = time.time_ns()
    t = ref.now_ns()
    b = time.time_ns()
    assert a <= t <= b
    assert Reference.now_ns() >= t                       # the static hot path stays usable
    assert 1 <= ref.resolution_ns() <= 1_000_000
    h = ref.health()
    assert not h.verified and h.grade == "unverified" and h.basis == "allowance"
    assert "unverified" in h.note


def test_virtual_reference_advances_by_hand_and_scales():
    v = open_reference("virtual:1000")
    assert isinstance(v, VirtualReference) and v.now_ns() == 1000
    assert v.advance(5 * NS) == 1000 + 5 * NS == v.now_ns()
    with pytest.raises(ValueError):
        v.advance(-1)
    fast = VirtualReference(0, rate=1000.0)
    t0 = fast.now_ns()
    time.sleep(0.01)
    assert fast.now_ns() - t0 >= 9_000_000                # 10 ms at 1000x is at least 9 s
    h = v.health()
    assert h.verified and h.basis == "virtual" and h.uncertainty_ns == 0


def test_unknown_reference_is_refused():
    with pytest.raises(ValueError, match="not supported"):
        open_reference("gps")


# -- pmc parsing and snapshots ---------------------------------------------------------------------
def test_parse_captured_slave_output():
    rs = parse_pmc(SLAVE)
    assert [r.tlv for r in rs] == list(SLAVE_NAMES)
    assert [r.seq for r in rs] == [0, 1, 2, 3, 4, 5]
    assert rs[0].fields["gmPresent"] == "true" and rs[0].clock_identity == "6660a0.fffe.99ee15"
    assert rs[1].port == 1 and rs[1].fields["portState"] == "SLAVE"
    snap = slave_snapshot()
    assert snap.gm_present is True and snap.gm_identity == "5ab0e2.fffe.379d05"
    assert snap.master_offset_ns == 310 and snap.offset_from_master_ns == 310
    assert snap.mean_path_delay_ns == 1668 and snap.steps_removed == 1
    assert snap.ingress_time_ns == SLAVE_INGRESS
    assert snap.port_states == ("SLAVE",) and not snap.hardware
    assert snap.ports[0]["rx_sync"] == 23 and snap.ports[0]["interface"] == "rcsb5c24e"
    assert snap.utc_offset_s == 37 and snap.utc_offset_valid is False and snap.ptp_timescale is False


def test_error_status_is_filed_under_its_request():
    text = ("\t6660a0.fffe.99ee15-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP \n"
            "\t\tgmPresent                  true\n"
            "\t6660a0.fffe.99ee15-1 seq 1 RESPONSE MANAGEMENT_ERROR_STATUS \n")
    rs = parse_pmc(text)
    assert rs[1].tlv == "MANAGEMENT_ERROR_STATUS"
    snap = snapshot_from(answers(text, ("TIME_STATUS_NP", "PORT_STATS_NP")), 0)
    assert snap.unsupported == ("PORT_STATS_NP",) and snap.gm_present is True


def test_garbage_parses_to_nothing():
    assert parse_pmc("sending: GET TIME_STATUS_NP\nbad command: x\n\t\tstray 1\n") == []
    snap = snapshot_from({}, 5)
    assert grade(snap).grade == "fail"


# -- grading -------------------------------------------------------------------------------------------
def test_captured_states_grade_as_they_should():
    assert grade(slave_snapshot()).grade == "ok"
    lost = snapshot_from(answers(LOST, THREE), SLAVE_INGRESS + 3 * NS)
    g = grade(lost)
    assert g.grade == "fail"
    assert any("LISTENING" in p for p in g.problems) and any("no Sync" in p for p in g.problems)
    gm = grade(snapshot_from(answers(GM, THREE), 0))
    assert gm.grade == "ok" and any("grandmaster" in p for p in gm.problems)


@pytest.mark.parametrize("offset_ns, expect", [(249_999, "ok"), (-250_001, "warn"),
                                               (1_000_000, "warn"), (-1_000_001, "fail")])
def test_offset_thresholds(offset_ns, expect):
    snap = slave_snapshot(master_offset_ns=offset_ns, offset_from_master_ns=offset_ns)
    assert grade(snap).grade == expect


@pytest.mark.parametrize("age_ns, expect", [(NS, "ok"), (NS + 1, "warn"), (5 * NS, "warn"),
                                            (5 * NS + 1, "fail"), (-2 * NS, "fail")])
def test_sync_age_thresholds(age_ns, expect):
    g = grade(slave_snapshot(), now_ns=SLAVE_INGRESS + age_ns)
    assert g.grade == expect and g.sync_age_ns == age_ns


def test_no_grandmaster_bad_port_and_unmeasured_delay_fail():
    assert grade(slave_snapshot(gm_present=False)).grade == "fail"
    ports = ({**slave_snapshot().ports[0], "state": "UNCALIBRATED"},)
    assert grade(slave_snapshot(ports=ports)).grade == "fail"
    assert grade(slave_snapshot(mean_path_delay_ns=0)).grade == "fail"
    assert grade(slave_snapshot(mean_path_delay_ns=150_000_000)).grade == "warn"


def test_thresholds_are_configurable_and_frozen():
    strict = PtpThresholds(offset_warn_ns=100, offset_fail_ns=300)
    assert grade(slave_snapshot(), strict).grade == "fail"          # 310 ns > 300 ns
    assert grade(slave_snapshot(), PtpThresholds(offset_warn_ns=300)).grade == "warn"
    with pytest.raises(dataclasses.FrozenInstanceError):
        strict.offset_fail_ns = 1


def test_uncertainty_terms():
    snap = slave_snapshot()
    bound, terms = uncertainty_ns(snap)
    assert terms == {"offset_ns": 310, "asymmetry_ns": 1668, "system_clock_ns": 0, "extra_ns": 0}
    assert bound == 310 + 1668
    half, _ = uncertainty_ns(snap, UncertaintyPolicy(asymmetry_fraction=0.5, extra_ns=7))
    assert half == 310 + 834 + 7
    hw = ({**snap.ports[0], "timestamping": "HARDWARE"},)
    b, t = uncertainty_ns(slave_snapshot(ports=hw), UncertaintyPolicy(phc2sys_allowance_ns=5000))
    assert t["system_clock_ns"] == 5000                  # PHC not readable: the allowance
    b, t = uncertainty_ns(slave_snapshot(ports=hw, phc="/dev/ptp0", phc_sys_offset_ns=-40,
                                         phc_sys_bracket_ns=600))
    assert t["system_clock_ns"] == 40 + 300 + 1          # measured: |offset| + half bracket
    b, t = uncertainty_ns(slave_snapshot(ports=hw), reference_is_phc=True)
    assert t["system_clock_ns"] == 0                     # reading the PHC itself


# -- linuxptp absent: refusal, allowance, simulated --------------------------------------------------
PMC = Pmc().pmc                         # linuxptp's pmc as Pmc finds it, or None


@pytest.mark.skipif(PMC is None, reason="pmc (apt: linuxptp) not installed")
def test_pmc_without_ptp4l_is_a_clear_error(tmp_path):
    with pytest.raises(PtpHealthError, match="no ptp4l management socket"):
        Pmc(str(tmp_path / "ptp4l")).query("TIME_STATUS_NP")
    ref = Reference(None, Discipline(uds=str(tmp_path / "ptp4l")))
    h = ref.health()                                      # never raises mid-run
    assert h.grade == "fail" and not h.verified and "could not be read" in h.note
    assert "no ptp4l management socket" in " ".join(h.problems)


def test_pmc_not_installed_is_a_clear_error(tmp_path):
    """linuxptp absent (hidden from this Pmc where it is installed): the same calls say so."""
    pmc = Pmc(str(tmp_path / "ptp4l"))
    pmc.pmc = None                                        # what Pmc() finds without linuxptp
    with pytest.raises(PtpHealthError, match=r"pmc \(linuxptp\) is not installed"):
        pmc.query("TIME_STATUS_NP")
    ref = Reference(None, Discipline(uds=str(tmp_path / "ptp4l")))
    ref._pmc.pmc = None
    h = ref.health()
    assert h.grade == "fail" and not h.verified and "could not be read" in h.note
    assert "not installed" in " ".join(h.problems)


def test_run_without_linuxptp_needs_an_allowance(tmp_path):
    missing = str(tmp_path / "no-ptp4l")
    with pytest.raises(ReferenceRefused, match="--reference-allowance"):
        reference_for_run("realtime", None, False, ptp_uds=missing)
    ref, h = reference_for_run("realtime", parse_duration_ns("1ms"), False, ptp_uds=missing)
    assert h.uncertainty_ns == 1_000_000 and not h.verified and "unverified" in h.note


def test_run_without_linuxptp_refuses_without_source():
    with pytest.raises(ReferenceRefused, match="no linuxptp health source"):
        reference_for_run("realtime", None, False, ptp_uds=None)


def test_simulated_rack_reference_is_exact():
    ref, h = reference_for_run("realtime", None, True)
    assert h.verified and h.basis == "simulated" and h.uncertainty_ns == 0 and h.grade == "ok"
    assert "exact" in h.note
    json.dumps(h.as_dict())                              # goes into the manifest as is


def test_health_monitor_series(tmp_path):
    ref = open_reference("realtime", 250_000, ptp_uds=None)
    with HealthMonitor(ref, tmp_path, interval_s=0.05) as mon:
        deadline = time.monotonic() + 10
        while len(mon.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    run = mon.run_health()
    rows = (tmp_path / "reference.csv").read_text().splitlines()
    assert rows[0].split(",")[:5] == ["t_ns", "grade", "verified", "basis", "uncertainty_ns"]
    assert len(rows) - 1 == len(mon.samples) >= 4        # 3 + the closing snapshot
    assert all(r.split(",")[1] == "unverified" and r.split(",")[4] == "250000" for r in rows[1:])
    ts = [int(r.split(",")[0]) for r in rows[1:]]
    assert ts == sorted(ts)
    assert mon.worst() == ("unverified", None)
    assert run.uncertainty_ns == 250_000 and not run.verified and "UNVERIFIED" in run.note


# -- the PHC path ----------------------------------------------------------------------------------------
def test_missing_phc_is_refused_clearly():
    with pytest.raises(PhcError, match=r"/dev/ptp99: no such PTP hardware clock"):
        open_reference("phc:/dev/ptp99", 0, ptp_uds=None)


def test_a_device_that_is_not_a_clock_is_refused():
    with pytest.raises(PhcError, match="not read as a POSIX clock"):
        Phc("/dev/null")


@pytest.mark.skipif(not glob.glob("/dev/ptp[0-9]*"), reason="no PTP hardware clock (/dev/ptp*) here")
def test_phc_reads_and_relates_to_system_time():
    path = sorted(glob.glob("/dev/ptp[0-9]*"))[0]
    with Phc(path) as phc:
        a = phc.now_ns()
        so = phc.sys_offset(9)
        b = phc.now_ns()
        assert a <= so.phc_ns <= b
        assert so.sys_before_ns <= so.sys_after_ns and so.method in ("extended", "sys_offset",
                                                                      "sandwich")
    try:
        ref = open_reference(f"phc:{path}", 0, ptp_uds=None)
    except ReferenceRefused as exc:                       # a PHC on an arbitrary timescale
        pytest.skip(str(exc))
    t = ref.now_ns()
    assert abs(t - time.time_ns()) < NS                   # UTC after the TAI correction
    assert "phc_read" in ref.health().detail
    ref.close()


# -- rackclock check ---------------------------------------------------------------------------------------
def _table(out: str) -> dict[str, list[str]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] != "device" and len(parts) > 3:
            rows[parts[0]] = parts
    return rows


def test_check_the_simulated_rack(capsys):
    rc = check.main(["--timeout", "20"])
    out = capsys.readouterr().out
    rows = _table(out)
    default = load_rack(DEFAULT_RACK)
    assert "verified (simulated)" in out
    for d in default.devices:
        assert d.name in rows, out
    ok = [d.name for d in default.devices if rows[d.name][3] == "ok"]
    assert ok, out
    assert (rc == 0) == (len(ok) == len(default.devices))
    assert f"{len(ok)} of {len(default.devices)} devices usable" in out


def _real_rack_file(sim, tmp_path, extra: dict | None = None):
    """The simulated rack's resolved addresses written as a rack file that is NOT marked
    simulated, so the reference rules for a lab rack apply."""
    r = sim.rack
    devices = {}
    for d in r.devices[:1]:
        t = {"plane": d.plane, "driver": d.driver, "address": d.address, **dict(d.options)}
        if d.username:
            t["username"] = d.username
        if d.password_env:
            t["password_env"] = d.password_env
        devices[d.name] = t
    devices.update(extra or {})
    path = tmp_path / "rack.toml"
    path.write_text(tomli_w.dumps({"rack": {"name": "lab-like", "reference": "realtime"},
                                   "devices": devices}))
    return path, r.devices[0].name


@pytest.fixture(scope="module")
def default_sim(tmp_path_factory):
    source = load_rack(DEFAULT_RACK)
    ensure_secrets(source)
    with SimRackThread(source, tmp_path_factory.mktemp("sim")) as sim:
        if not sim.rack.devices:
            pytest.skip(f"no emulator of the default rack starts: {sim.failed}")
        yield sim


def test_check_refuses_an_unverified_reference_but_still_checks_devices(default_sim, tmp_path,
                                                                        capsys):
    path, name = _real_rack_file(default_sim, tmp_path)
    rc = check.main(["--rack", str(path), "--ptp-uds", str(tmp_path / "no-ptp4l")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "REFUSED" in out and "--reference-allowance" in out
    assert _table(out)[name][3] == "ok", out
    rc = check.main(["--rack", str(path), "--ptp-uds", "none", "--reference-allowance", "1ms"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "UNVERIFIED (allowance)" in out and "uncertainty 1 ms" in out


def test_check_reports_unreachable_and_unknown_devices(default_sim, tmp_path, capsys):
    path, name = _real_rack_file(default_sim, tmp_path, {
        "gone": {"plane": "bmc", "driver": "redfish_bmc", "address": "https://127.0.0.1:1",
                 "username": "root", "password_env": "RACKCLOCK_SIM_BMC_PASSWORD",
                 "verify_tls": False}})
    rc = check.main(["--rack", str(path), "--reference-allowance", "0", "--timeout", "5"])
    out = capsys.readouterr().out
    rows = _table(out)
    assert rc == 1
    assert rows[name][3] == "ok"
    assert rows["gone"][3] not in ("ok",), out
    assert "1 of 2 devices usable" in out
    # an unknown driver is a mistake of the rack file: one line, exit 2, as for `run`
    path, _ = _real_rack_file(default_sim, tmp_path, {
        "odd": {"plane": "x", "driver": "no_such_driver", "address": "tcp://127.0.0.1:1"}})
    assert check.main(["--rack", str(path), "--reference-allowance", "0"]) == 2
    assert "no driver 'no_such_driver'" in capsys.readouterr().err


def test_check_rejects_bad_arguments(capsys):
    assert check.main(["--reference-allowance", "soon"]) == 2
    assert check.main(["--rack", "/nonexistent/rack.toml"]) == 2


def test_monitor_survives_a_broken_health_source_and_manifest_bound(tmp_path):
    class Broken(VirtualReference):
        def health(self):
            raise OSError("pmc vanished")

    mon = HealthMonitor(Broken(5), tmp_path / "ref.csv", interval_s=10)
    h = mon.sample()
    assert h.grade == "fail" and "pmc vanished" in h.problems[0]
    assert mon.worst()[0] == "fail" and not mon.run_health().verified
    from bench.model.rundata import bound_from_manifest
    assert bound_from_manifest({"reference": {"uncertainty_ns": 10},
                                "reference_run": {"uncertainty_ns": 30},
                                "reference_end": {"uncertainty_ns": 20}}) == 30
    assert bound_from_manifest({}) == 0


def test_run_reference_for_the_runner(tmp_path):
    from bench.config.inventory import rack_from_dict
    from bench.model.rundata import bound_from_manifest
    from bench.reference.monitor import RunReference

    sim = rack_from_dict({"rack": {"name": "s", "simulated": True}})
    rr = RunReference.open(sim, None, tmp_path, interval_s=0.05)
    manifest = {"reference": rr.start.as_dict()}
    time.sleep(0.2)
    manifest.update(rr.finish())
    assert manifest["reference"]["basis"] == "simulated" and manifest["reference_run"]["verified"]
    assert bound_from_manifest(manifest) == 0 == rr.uncertainty_ns
    rows = (tmp_path / "reference.csv").read_text().splitlines()[1:]
    assert int(rows[0].split(",")[0]) == rr.start.checked_ns and len(rows) >= 3
    lab = rack_from_dict({"rack": {"name": "lab", "ptp_uds": str(tmp_path / "none")}})
    with pytest.raises(ReferenceRefused):
        RunReference.open(lab, None, tmp_path / "lab")
    rr = RunReference.open(lab, 2_000, tmp_path / "lab", interval_s=0.05)
    manifest = {"reference": rr.start.as_dict(), **rr.finish()}
    assert bound_from_manifest(manifest) == 2_000 and not manifest["reference_run"]["verified"]


def test_sandwich_method_on_a_system_clock():
    """The user-space fallback, exercised on CLOCK_REALTIME itself (no PHC needed): the
    'PHC' read lies inside its bracket and the offset is within half the bracket of zero."""
    phc = Phc.__new__(Phc)
    phc.path, phc.fd, phc.clockid, phc._method = "CLOCK_REALTIME", -1, time.CLOCK_REALTIME, None
    so = phc._sandwich(9)
    assert so.sys_before_ns <= so.phc_ns <= so.sys_after_ns
    assert abs(so.offset_ns) <= so.bracket_ns // 2 + 1 and so.samples == 9
    phc._method = "sandwich"
    assert phc.sys_offset(3).method == "sandwich"


def test_run_refusals_are_one_exception():
    with pytest.raises(ReferenceRefused, match="/dev/ptp99"):
        reference_for_run("phc:/dev/ptp99", 1000, False, ptp_uds=None)
    with pytest.raises(ReferenceRefused, match="not supported"):
        reference_for_run("sundial", 1000, False, ptp_uds=None)


def test_phc2sys_is_detected_with_its_options(tmp_path):
    """A process named phc2sys (here a shell script of that name: a real phc2sys would steer a
    clock) is found, with its source, sinks and ptp4l socket."""
    import subprocess

    from bench.reference.ptp_health import phc2sys_processes

    fake = tmp_path / "phc2sys"
    fake.write_text("#!/bin/sh\nsleep 30\n:\n")
    fake.chmod(0o755)
    p = subprocess.Popen([str(fake), "-s", "eth3", "-c", "CLOCK_REALTIME", "-z",
                          "/var/run/ptp4l-x", "-w"], start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        mine = []
        while not mine and time.monotonic() < deadline:
            mine = [x for x in phc2sys_processes() if x["pid"] == p.pid]
            time.sleep(0.01)
    finally:
        os.killpg(p.pid, 9)
        p.wait()
    assert mine, "phc2sys not detected"
    assert mine[0]["source"] == "eth3" and mine[0]["sinks"] == ["CLOCK_REALTIME"]
    assert mine[0]["uds"] == "/var/run/ptp4l-x" and not mine[0]["automatic"]
