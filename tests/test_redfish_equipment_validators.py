"""DMTF's Redfish Interop Validator (each equipment emulator against its OCP profile) and DMTF's
Redfish Service Validator (every payload against DMTF's schema bundle) on the Redfish CDU, rack
PDU and power shelf: 0 failures. One simulator serves the three services for the module; the
validators run as their own processes over HTTPS, trusting the simulator's CA. Profiles and
schemas come from `../shared/redfish/` (skipped, with the reason, where absent)."""
from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_redfish_equipment import PW_ENV, equipment_toml
from test_redfish_validator import SERVICE_SUMMARY, schema_directory, service_validator

from bench.config.inventory import rack_from_dict
from bench.sim.thread import SimRackThread

PROFILES = {"cdu": "OCPCoolantDistributionUnit.v1_0_0.json",
            "rack_pdu": "OCPRackPDU.v1_0_0.json",
            "power_shelf": "OCPPowerShelfManagement.v1_0_0.json"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def profile_directory() -> Path | None:
    schemas = schema_directory()
    d = schemas.parent / "ocp-profiles" if schemas else None
    return d if d is not None and (d / PROFILES["cdu"]).is_file() else None


def interop_validator() -> str | None:
    here = Path(sys.executable).parent / "rf_interop_validator"
    return str(here) if here.exists() else shutil.which("rf_interop_validator")


@pytest.fixture(scope="module")
def equipment(tmp_path_factory):
    """The three services in one simulator: {kind: resolved DeviceConfig}."""
    os.environ.setdefault(PW_ENV, secrets.token_urlsafe(9))
    text = "".join(equipment_toml(k, f"eq-{k}") for k in PROFILES)
    data = tomllib.loads(text)
    data["rack"] = {"name": "validators"}
    sim = SimRackThread(rack_from_dict(data), tmp_path_factory.mktemp("eqv")).start()
    try:
        assert not sim.failed, sim.failed
        yield dict(zip(PROFILES, sim.rack.devices))
    finally:
        sim.stop()


def run_tool(args: list[str], dev, tmp_path) -> tuple[int, int, int, int, str]:
    env = {**os.environ, "REQUESTS_CA_BUNDLE": dev.options["ca_file"]}
    r = subprocess.run([*args[:1], "-r", dev.address, "-u", dev.username, "-p",
                        os.environ[dev.password_env], "--authtype", "Session",
                        "--logdir", str(tmp_path / "report"), *args[1:]],
                       env=env, capture_output=True, text=True, timeout=600)
    out = ANSI.sub("", r.stdout + r.stderr)
    m = SERVICE_SUMMARY.search(out)
    assert m, f"no summary table; rc {r.returncode}\n{out[-3000:]}"
    return (*map(int, m.groups()), out)


def failures(out: str) -> str:
    return "\n".join(x for x in out.splitlines() if "FAIL" in x and "PASS" not in x)[-4000:]


def validate(tool: str, where: Path | None, args: list[str], dev, tmp_path, at_least: int) -> None:
    """Run DMTF's `tool` (skipped, with the reason, where it or the shared files are missing):
    0 failures, and at least `at_least` passes (the tool looked at the service)."""
    exe = {"interop": interop_validator, "service": service_validator}[tool]()
    if exe is None:
        pytest.skip(f"rf_{tool}_validator not installed (pip install redfish-{tool}-validator)")
    if where is None:
        pytest.skip("DMTF's schemas or OCP's profiles not found in ../shared/redfish "
                    "(or $RACKCLOCK_REDFISH_SCHEMAS)")
    passed, _, failed, _, out = run_tool([exe, *args], dev, tmp_path)
    assert failed == 0, failures(out) or out[-3000:]
    assert passed > at_least, out[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cdu", "power_shelf", pytest.param("rack_pdu", marks=pytest.mark.xfail(
    strict=True, reason="OCPRackPDU's Circuit use case 'Branches' compares CircuitType by AnyOf, "
    "which redfish-interop-validator 3.0.4's helper.evaluate_comparison never matches for a "
    "single value (no AnyOf branch in its loop): 'Resource not found' whatever is served"))])
def test_interop_validator_passes_the_ocp_profile(equipment, tmp_path, kind):
    profiles = profile_directory()
    validate("interop", profiles, [str(profiles / PROFILES[kind])] if profiles else [],
             equipment[kind], tmp_path, 20)


# The BMC core (sessions, accounts, events, logs, the service baseline's resources) is the same
# code in every service: it is walked whole once, on the CDU; the power equipment's own trees on
# the others (a whole walk takes 3-4 times as long).
TREES = [("cdu", None, 300), ("rack_pdu", "/redfish/v1/PowerEquipment", 60),
         ("power_shelf", "/redfish/v1/PowerEquipment", 60),
         ("power_shelf", "/redfish/v1/Chassis", 60)]


@pytest.mark.slow
@pytest.mark.parametrize("kind, tree, at_least", TREES)
def test_service_validator_finds_no_failure(equipment, tmp_path, kind, tree, at_least):
    schemas = schema_directory()
    validate("service", schemas, ["--schema_directory", str(schemas), "--skipschema",
                                  *(["--payload", "Tree", tree] if tree else [])],
             equipment[kind], tmp_path, at_least)
