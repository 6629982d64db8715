"""DMTF's Redfish Protocol Validator against the simulated BMC: the emulator must not drift from
the specification. The validator (PyPI `redfish-protocol-validator`, in the test extra) runs as
its own process against bmc-1 of the default rack over HTTPS, trusting the simulator's CA."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
import tomli_w

SUMMARY = re.compile(r"Summary - PASS: (\d+), WARN: (\d+), FAIL: (\d+), NOT_TESTED: (\d+)")


def validator() -> str | None:
    here = Path(sys.executable).parent / "rf_protocol_validator"
    return str(here) if here.exists() else shutil.which("rf_protocol_validator")


def default_bmc_toml() -> str:
    rack = tomllib.loads((files("bench") / "sim/default_rack.toml").read_text())
    return tomli_w.dumps({"rack": {"name": "validator", "seed": rack["rack"]["seed"]},
                          "devices": {"bmc-1": rack["devices"]["bmc-1"]}})


@pytest.mark.slow
def test_protocol_validator_finds_no_failure(sim_rack, tmp_path):
    exe = validator()
    if exe is None:
        pytest.skip("rf_protocol_validator not installed (pip install redfish-protocol-validator)")
    sim = sim_rack(default_bmc_toml())
    assert not sim.failed, sim.failed
    dev = sim.rack.devices[0]
    ca = dev.options["ca_file"]
    # requests reads the CA from the environment for some of its sessions, --ca-bundle for others
    env = {**os.environ, "REQUESTS_CA_BUNDLE": ca}
    r = subprocess.run([exe, "-r", dev.address, "-u", dev.username, "-p",
                        os.environ[dev.password_env], "--ca-bundle", ca,
                        "--report-dir", str(tmp_path / "report")],
                       env=env, capture_output=True, text=True, timeout=600)
    m = SUMMARY.search(r.stdout)
    assert m, f"no summary line; rc {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    passed, warned, failed, not_tested = map(int, m.groups())
    report = next((tmp_path / "report").glob("*.tsv"))
    fails = [line for line in report.read_text().splitlines() if "\tFAIL\t" in line]
    assert failed == 0, "\n".join(fails)
    # the run did test the service: most assertions pass, including the ones that once failed
    assert passed >= 250, m.group(0)
    text = report.read_text()
    for assertion in ("/redfish/v1/$metadata", "/redfish/v1/odata",
                      "/redfish/v1/EventService/Subscriptions"):
        assert f"\t{assertion}\tPASS\t" in text, assertion
