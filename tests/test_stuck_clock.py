"""A clock that never advances (a BMC whose DateTime stopped, a PDU agent whose sysUpTime froze,
`[devices.NAME.sim] frozen_at_s`) is verdict `stuck`, with how many reads over how long, and
nothing is published for it: no segment, no offset, no drift."""
from __future__ import annotations

from racks import UTC_BMC2, sim_rack_text

from bench.model.rundata import load_run
from bench.run.experiment import run_experiment


def test_a_stuck_datetime_and_a_frozen_sysuptime_are_stuck(tmp_path):
    rack = tmp_path / "stuck.toml"
    rack.write_text(sim_rack_text(["bmc-1", "bmc-2", "pdu-2"], changes={
        **UTC_BMC2,
        "bmc-1": {"sim": {"frozen_at_s": 0.0}},
        "pdu-2": {"sim": {"clocks": {"sysuptime": {"frozen_at_s": 0.0}}}},
    }))
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "8", "stimulus_every_s": "none"}, quiet=True))
    for dev, clock in (("bmc-1", "datetime"), ("pdu-2", "sysuptime")):
        c = run.summary["devices"][dev]["clocks"][clock]
        assert c["verdict"] == "stuck", (dev, c["verdict"])
        assert c["stuck"]["reads"] >= 3 and c["stuck"]["span_s"] > 2.0
        assert c["segments"] == [] and "did not advance" in c["note"]
    # a clock that moves beside them is fitted as ever
    assert run.summary["devices"]["bmc-2"]["clocks"]["datetime"]["verdict"] != "stuck"


def test_a_clock_that_stops_mid_run_keeps_what_it_showed_before(tmp_path):
    """bmc-1's DateTime stops 6 s in: the segment before is published and holds the truth, the
    clock's verdict is stuck from the first read that showed the last value."""
    rack = tmp_path / "stops.toml"
    rack.write_text(sim_rack_text(["bmc-1"], changes={"bmc-1": {"sim": {"frozen_at_s": 6.0}}}))
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "12", "stimulus_every_s": "none"}, quiet=True))
    c = run.summary["devices"]["bmc-1"]["clocks"]["datetime"]
    assert c["verdict"] == "stuck" and c["stuck"]["reads"] >= 3
    assert c["segments"] and all(sg["end_ns"] < c["stuck"]["since_ns"] for sg in c["segments"])
    assert all(sg["truth"]["offset_in"] and sg["truth"]["band_in"] for sg in c["segments"])
