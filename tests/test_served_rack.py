"""`rackclock sim` serves the simulated rack to other clients as if it were hardware: a run
against its rack file is a lab-rack run, so stimuli are printed, not sent, unless armed."""
from __future__ import annotations

from pathlib import Path

import pytest
from racks import served_rack

from bench.config.inventory import load_rack
from bench.model.rundata import load_run
from bench.run.experiment import run_experiment

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def served(tmp_path, monkeypatch):
    with served_rack(tmp_path, monkeypatch, ["bmc-1", "pdu-2"]) as out:
        yield out


def test_served_rack_is_a_lab_rack_and_stimuli_need_arm(served, tmp_path, caplog):
    rack_file = served / "rack.toml"
    rack = load_rack(rack_file)
    assert not rack.simulated and rack.options["served_by"] == "rackclock sim"
    assert all(":0" not in d.address for d in rack.devices)
    params = {"duration_s": "6", "stimulus_every_s": "2"}
    unarmed = load_run(run_experiment("clock_offset", rack_file, tmp_path / "runs", params,
                                      allowance_ns=100_000, quiet=True))
    printed = caplog.text              # drivers log the unarmed stimulus (drivers/base.py)
    armed = load_run(run_experiment("clock_offset", rack_file, tmp_path / "runs", params,
                                    armed=True, allowance_ns=100_000, quiet=True))
    for run in (unarmed, armed):
        assert run.manifest["status"] == "completed" and not run.manifest["simulated"]
        assert run.summary["reference_uncertainty_ns"] == 100_000
    st = [unarmed.samples("bmc-1").status[i] for i in unarmed.samples("bmc-1").select("stimulus", ok=False)]
    assert st and set(st) == {"unarmed"}
    assert "[unarmed] would send test_event to bmc-1" in printed
    st = [armed.samples("bmc-1").status[i] for i in armed.samples("bmc-1").select("stimulus", ok=False)]
    assert st and set(st) == {"ok"}
    # the emulator saw only the armed run's test events
    assert armed.summary["devices"]["bmc-1"]["latency"]["test_event"]["events"]
    assert not unarmed.summary["devices"]["bmc-1"].get("latency")
