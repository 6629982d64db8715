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


def schema_directory() -> Path | None:
    """DMTF's CSDL bundle: $RACKCLOCK_REDFISH_SCHEMAS, else `../shared/redfish/csdl` from the
    project's root (CI's layout), else two levels up (a worktree beside the shared folder)."""
    root = Path(__file__).resolve().parent.parent
    env = os.environ.get("RACKCLOCK_REDFISH_SCHEMAS")
    for d in ([Path(env)] if env else []) + [root.parent / "shared/redfish/csdl",
                                             root.parent.parent / "shared/redfish/csdl"]:
        if (d / "ServiceRoot_v1.xml").is_file():
            return d
    return None


def service_validator() -> str | None:
    here = Path(sys.executable).parent / "rf_service_validator"
    return str(here) if here.exists() else shutil.which("rf_service_validator")


# the closing table: | PASS | WARN | FAIL | NOT TESTED | over one row of counts
SERVICE_SUMMARY = re.compile(r"PASS\s*\|\s*WARN\s*\|\s*FAIL\s*\|\s*NOT TESTED\s*\|\s*\n"
                             r"\+[-+]+\n\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)")


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["openbmc", "idrac", "ilo", "supermicro"])
def test_service_validator_finds_no_failure(sim_rack, tmp_path, profile):
    """DMTF's Redfish Service Validator checks every payload the emulator serves against the
    schema versions it declares (offline, from the shared CSDL bundle): 0 failures."""
    exe, schemas = service_validator(), schema_directory()
    if exe is None:
        pytest.skip("rf_service_validator not installed (pip install redfish-service-validator)")
    if schemas is None:
        pytest.skip("DMTF's schema bundle not found at ../shared/redfish/csdl "
                    "(or $RACKCLOCK_REDFISH_SCHEMAS)")
    data = tomllib.loads(default_bmc_toml())
    data["devices"]["bmc-1"].setdefault("sim", {})["profile"] = profile
    sim = sim_rack(tomli_w.dumps(data))
    assert not sim.failed, sim.failed
    dev = sim.rack.devices[0]
    env = {**os.environ, "REQUESTS_CA_BUNDLE": dev.options["ca_file"]}
    r = subprocess.run([exe, "-r", dev.address, "-u", dev.username, "-p",
                        os.environ[dev.password_env], "--authtype", "Session",
                        "--schema_directory", str(schemas), "--skipschema",
                        "--logdir", str(tmp_path / "report")],
                       env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    m = SERVICE_SUMMARY.search(out)
    assert m, f"no summary table; rc {r.returncode}\n{out[-3000:]}"
    passed, warned, failed, not_tested = map(int, m.groups())
    fails = [x for x in out.splitlines() if "FAIL - " in x or ("Fail: " in x and
                                                               "Fail: 0" not in x)]
    assert failed == 0 and r.returncode == 0, "\n".join(fails) or out[-3000:]
    assert passed > 200, m.group(0)
