"""The lab API reports, the experiment decides (issue 43 item 1): a device failure in a lab call
is an outcome for that device (recorded, shown, counted in the verdict), not an exception that
ends the experiment, unless the experiment asks to stop (`lab.on_error = "raise"`)."""
from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w
from racks import sim_rack_dict
from test_experiments import tutorial_code

from bench.commands.run import run_exit_status
from bench.model.rundata import load_measurements, load_run
from bench.output.closing import closing_text
from bench.run.experiment import run_experiment
from bench.sim import DEFAULT_RACK

DOWN = {"plane": "bmc", "driver": "redfish_bmc", "address": "https://127.0.0.1:0",
        "username": "root", "password_env": "RACKCLOCK_SIM_BMC_PASSWORD", "rate_hz": 1.0,
        "stimuli": ["test_event"], "sim": {"emulator": "redfish_unreachable"}}


def with_down_bmc(tmp_path: Path, data: dict) -> Path:
    data["devices"]["bmc-down"] = dict(DOWN)
    p = tmp_path / "rack.toml"
    p.write_text(tomli_w.dumps(data))
    return p


def verdict_of(run) -> str:
    return " ".join(closing_text(run.path, wide=True)[1].split())


def test_the_tutorial_on_the_default_rack_plus_a_down_bmc_completes(tmp_path):
    """The default rack (whole) plus one unreachable BMC: the tutorial's experiment, which asked
    to go on, completes; the down device's failure is recorded, counted, named in the verdict."""
    rack = with_down_bmc(tmp_path, tomllib.loads(DEFAULT_RACK.read_text()))
    exp = tmp_path / "event_echo.py"
    exp.write_text(tutorial_code())
    run = load_run(run_experiment(str(exp), rack, tmp_path / "runs", {"events": "1"},
                                  quiet=True))
    assert run.manifest["status"] == "completed", run.manifest.get("error")
    ms = load_measurements(run.path)
    (down,) = [m for m in ms if m["name"] == "lab.device_errors"]
    assert down["device"] == "bmc-down" and down["point"] >= 1 and down["outcome"] == "fail"
    assert down["extra"]["by_kind"] == {"unreachable": down["point"]}
    for dev in ("bmc-1", "bmc-2"):          # the others went on and were measured
        assert [m for m in ms if m["device"] == dev and m["name"] == "echo.offset"]
    assert "bmc-down lab.device_errors" in verdict_of(run)
    assert "lab read" in (run.path / "events.csv").read_text()
    assert run_exit_status(run) == 1        # a used device gave no usable read


STRICT = '''
from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    pass


def run(bench, p):
    lab = bench.lab
    lab.on_error = "raise"                  # stop at the first device failure
    for dev in ("bmc-1", "bmc-down", "bmc-2"):
        lab.read_clock(dev)
    lab.measure("reached_the_end", 1, "count")
    return bench.summarize()
'''


def test_an_experiment_that_asks_to_stop_stops_at_the_failure(tmp_path):
    """A small copy of the default rack (bmc-1, bmc-2) plus the down BMC."""
    rack = with_down_bmc(tmp_path, sim_rack_dict(["bmc-1", "bmc-2"]))
    exp = tmp_path / "strict.py"
    exp.write_text(STRICT)
    run = load_run(run_experiment(str(exp), rack, tmp_path / "runs", {}, quiet=True))
    assert run.manifest["status"] == "failed"
    assert "bmc-down: unreachable" in run.manifest["error"], run.manifest["error"]
    assert not [m for m in load_measurements(run.path) if m["name"] == "reached_the_end"]
    assert len(run.samples("bmc-1").select("read")) == 1     # read before the failure
    assert not (run.path / "samples" / "bmc-2.csv").exists()     # never reached
    assert run_exit_status(run) == 1


EXPECT = STRICT.replace('"raise"', '"expect"').replace("stop at the first device failure",
                                                       "failures are ours to judge")


def test_expected_failures_are_reported_not_judged(tmp_path):
    rack = with_down_bmc(tmp_path, sim_rack_dict(["bmc-1"]))
    exp = tmp_path / "expect.py"
    exp.write_text(EXPECT.replace(', "bmc-2"', ""))
    run = load_run(run_experiment(str(exp), rack, tmp_path / "runs", {}, quiet=True))
    assert run.manifest["status"] == "completed"
    ms = {m["name"]: m for m in load_measurements(run.path)}
    assert ms["reached_the_end"]["point"] == 1
    errs = ms["lab.device_errors"]
    assert errs["point"] == 0 and errs["extra"]["expected"] == 1 and errs["outcome"] == "no limit"
    assert "lab.device_errors" not in verdict_of(run)
