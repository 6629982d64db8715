"""The GPU baseboard's management controller (HGX-style HMC): the emulator over real HTTPS
sockets through the driver (clock inside its brackets, event log, metric reports with their
device stamps), faults the test triggers, and the metric reports' pure parsing."""
from __future__ import annotations

import asyncio
import os
import time

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.reference.clock import Reference
from bench.sim.rack import read_samples, samples_in
from drivers.base import DeviceError
from drivers.redfish_hmc import RedfishHMC
from drivers.redfish_metrics import ReportState, report_entries, stamp_of

NS = 1_000_000_000
MS = 1_000_000
PW_ENV = "RACKCLOCK_TEST_HMC_PASSWORD"


def hmc_toml(name: str = "hmc-t", **sim) -> str:
    sim = {"offset_s": -7.25, "drift_ppm": 21.0, "resolution_s": 0.001, "gpus": 2,
           "log_latency_s": [0.05, 0.2], "report_period_s": 0.5, "throttle_on_test_event": True,
           "throttle_gpu": 2, "reboot_down_s": 1.0, **sim}
    return tomli_w.dumps({"devices": {name: {
        "plane": "gpu", "driver": "redfish_hmc", "address": "https://127.0.0.1:0",
        "username": "root", "password_env": PW_ENV, "stimuli": ["test_event"],
        "metric_poll_s": 0.1, "sim": sim}}})


@pytest.fixture
def hmc(sim_rack):
    def make(**kw):
        sim = sim_rack(hmc_toml(**kw))
        assert not sim.failed, sim.failed
        return sim, sim.rack.devices[0]
    return make


async def _until(drv, want, deadline_s: float = 10.0) -> list:
    """Poll the driver's log until `want(entries)` holds (a condition with a deadline)."""
    got, cursor, end = [], None, time.monotonic() + deadline_s
    while not want(got):
        assert time.monotonic() < end, [e.message for e in got]
        entries, cursor = await drv.log_entries(cursor)
        got += entries
        await asyncio.sleep(0.05)
    return got


def _truth(sim, kind: str) -> list[dict]:
    return [e for e in sim.ctx.events["hmc-t"] if e["kind"] == kind]


def test_clock_log_and_metric_reports_through_the_driver(hmc):
    sim, dev = hmc(xid_events=[{"at_s": 0.0, "gpu": 1, "xid": 79}])

    async def go():
        drv = RedfishHMC(dev, Reference.now_ns, armed=True)
        await drv.open()
        try:
            ident = await drv.identity()
            r = await drv.read_clock("datetime")
            await drv.stimulate("test_event")
            got = await _until(drv, lambda g: any("ThrottleCauses ThermalLimit" in e.message
                                                  for e in g)
                               and any("thermal limit" in e.message for e in g)
                               and any("Xid 79" in e.message for e in g))
            return ident, r, got
        finally:
            await drv.close()

    ident, r, got = asyncio.run(go())
    assert ident.extra["manager"] == "/redfish/v1/Managers/HGX_BMC_0"
    assert "2 metric report(s)" in ident.extra["telemetry"]
    assert "HGX_Baseboard_0/LogServices/EventLog" in ident.extra["log_service"]
    inside = samples_in(read_samples(sim.ctx.out_dir / "sim_samples.csv")[("hmc-t", "datetime")],
                        r.s_ns, r.e_ns)
    assert inside and all(v // NS * NS == r.value_ns for _, v in inside)
    # every report entry's stamp is the one the controller's clock gave that report
    stamps = {e["stamp_ns"] for e in _truth(sim, "metric_report")}
    reports = [e for e in got if e.cursor.startswith("metric/") and " report " in e.message]
    assert reports and all(e.value_ns in stamps and e.resolution_ns == MS for e in reports)
    # the throttle's metric is stamped after its true start, in the controller's clock
    onset = _truth(sim, "thermal_throttle")[0]
    model = sim.ctx._models["hmc-t"]["datetime"]
    thr = next(e for e in got if "GPU_SXM_2 ThrottleCauses ThermalLimit" in e.message)
    assert model.read_ns(onset["t_ns"]) <= thr.value_ns <= model.read_ns(onset["t_ns"] + NS)
    assert thr.cursor.split(":")[0] == "metric/HGX_ProcessorMetrics_0"
    log_entry = next(e for e in got if "thermal limit" in e.message)
    assert log_entry.clock == "datetime" and log_entry.resolution_ns == NS


def test_a_reboot_silences_the_controller_and_the_driver_comes_back(hmc):
    """While its model is down the controller answers nothing; afterwards the driver logs in
    again (its session died with the reboot) and reads the clock."""
    sim, dev = hmc(reboot_down_s=3.0)
    model = sim.ctx._models["hmc-t"]["datetime"]

    async def go():
        drv = RedfishHMC(dev, Reference.now_ns, armed=True)
        await drv.open()
        try:
            await drv.read_clock("datetime")
            sim.fault("hmc-t", "reboot").result(10)
            outcomes, end = [], time.monotonic() + 20
            while True:                      # it answers again once its down time is over
                t = Reference.now_ns()
                try:
                    r = await drv.read_clock("datetime")
                    return outcomes, r
                except DeviceError as exc:
                    outcomes.append((t, exc.kind))
                    assert time.monotonic() < end
                    await asyncio.sleep(0.2)
        finally:
            await drv.close()

    outcomes, r = asyncio.run(go())
    assert model._reboots
    down_until = model._reboots[0] + 3 * NS
    assert all(t < down_until for t, _ in outcomes)        # failures only while it was down
    assert r.e_ns >= down_until                            # the read that worked came after


def test_a_stuck_clock_stamps_every_report_alike(hmc):
    sim, dev = hmc(frozen_at_s=0.0)

    async def go():
        drv = RedfishHMC(dev, Reference.now_ns)
        await drv.open()
        try:
            return await _until(drv, lambda g: sum(" report " in e.message for e in g) >= 4)
        finally:
            await drv.close()

    got = asyncio.run(go())
    reports = [e for e in got if " report " in e.message]
    assert len({e.value_ns for e in reports}) == 1       # new reports, one frozen stamp
    assert len({e.message for e in reports}) == len(reports)


def test_metric_report_parsing_is_incremental_and_skips_bad_stamps():
    prop = "/redfish/v1/Systems/B/Processors/GPU_SXM_4#/ThrottleCauses"

    def body(seq, stamp, value, vstamp):
        return {"Id": "R", "ReportSequence": str(seq), "Timestamp": stamp,
                "MetricValues": [{"MetricProperty": prop, "MetricValue": value,
                                  "Timestamp": vstamp}, "not a value"]}

    st = ReportState()
    a = report_entries("R", body(1, "2026-12-01T10:00:01.500+00:00", "None",
                                 "2026-12-01T10:00:01.499+00:00"), st, 10, 20)
    assert [e.message for e in a] == ["R report 1: 1 values"]      # unthrottled at first: quiet
    assert a[0].value_ns == stamp_of("2026-12-01T10:00:01.5Z")[0] and a[0].resolution_ns == MS
    assert report_entries("R", body(1, "2026-12-01T10:00:01.500+00:00", "x", "y"), st, 30, 40) == []
    b = report_entries("R", body(2, "2026-12-01T10:00:02.500+00:00", "ThermalLimit",
                                 "2026-12-01T10:00:02+00:00"), st, 50, 60)
    assert [e.message for e in b] == ["GPU_SXM_4 ThrottleCauses ThermalLimit", "R report 2: 1 values"]
    assert b[0].resolution_ns == NS and b[0].s_ns == 50 and b[0].cursor == "metric/R:2"
    c = report_entries("R", body(3, "yesterday", "None", "2026-12-01T10:00:03.25+00:00"), st, 70, 80)
    assert [e.message for e in c] == ["GPU_SXM_4 ThrottleCauses None"] and st.bad == 1
    assert c[0].resolution_ns == 10 * MS
    assert stamp_of("2026-12-01T10:00:03") is None and stamp_of(None) is None


def test_the_password_stays_out_of_errors(hmc):
    sim, dev = hmc()
    import dataclasses
    bad = dataclasses.replace(dev, password_env="RACKCLOCK_TEST_HMC_WRONG")
    os.environ["RACKCLOCK_TEST_HMC_WRONG"] = "wrong-secret-123"

    async def go():
        drv = RedfishHMC(bad, Reference.now_ns)
        with pytest.raises(DeviceError) as exc:
            await drv.open()
        return str(exc.value)

    text = asyncio.run(go())
    assert "wrong-secret-123" not in text and "auth" in text


JSON = (st.none() | st.booleans() | st.integers() | st.text(max_size=12)
        | st.lists(st.integers(), max_size=3)
        | st.dictionaries(st.text(max_size=6), st.integers(), max_size=2))
STAMPS = st.sampled_from(["2026-12-01T10:00:01.5+00:00", "2026-12-01T10:00:01Z", "", "x",
                          "2026-13-01T10:00:01Z", "9999-12-31T23:59:59.999999999+14:00"])


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.fixed_dictionaries(
    {"ReportSequence": JSON, "Timestamp": STAMPS | JSON,
     "MetricValues": st.lists(st.fixed_dictionaries(
         {"MetricProperty": st.sampled_from(["/x#/ThrottleCauses", "/y#/Reading"]) | JSON,
          "MetricValue": JSON, "Timestamp": STAMPS | JSON}) | JSON, max_size=4) | JSON}),
    max_size=4))
def test_any_report_body_gives_entries_or_nothing_never_an_exception(bodies):
    st_ = ReportState()
    for body in bodies:
        for en in report_entries("R", body, st_, 1, 2):
            assert isinstance(en.value_ns, int) and en.resolution_ns >= 1
            assert en.cursor.startswith("metric/R:")
