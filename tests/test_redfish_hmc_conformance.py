"""The emulated GPU baseboard controller against DMTF's validators: the Redfish Interop
Validator with OCP's UBB baseline management profile (0 failures of a Mandatory requirement;
what fails of the profile's "Supported" ones is listed, not hidden) and the Redfish Service
Validator with DMTF's schema bundle (0 failures). Both skip with the reason where the tool or
the shared files are absent."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from racks import sim_rack_text
from test_redfish_validator import SERVICE_SUMMARY, schema_directory, service_validator

PROFILE = "OCP_UBB_BaselineManagement.v1.0.0.json"
VALIDATING = re.compile(r"Validating (/redfish/\S+?)\.\.\.")
SKIPPED = re.compile(r"SKIP - (/\S+) \(\[Not Present\]\)")
FAILED = re.compile(r"FAIL - (/\S+)(?: \(Write\))? \((.*?)\): (.*)$")
ANYWHERE = "not present on any instances"


def interop_validator() -> str | None:
    here = Path(sys.executable).parent / "rf_interop_validator"
    return str(here) if here.exists() else shutil.which("rf_interop_validator")


def profile_file() -> Path | None:
    csdl = schema_directory()
    p = csdl.parent / "ocp-profiles" / PROFILE if csdl else None
    return p if p and p.is_file() else None


def requirement(profile: dict, rtype: str, path: str) -> str:
    """The profile's ReadRequirement of `path` (`/A/B`) in resource type `rtype`."""
    node = profile["Resources"].get(rtype, {})
    req = "None"
    for part in path.strip("/").split("/"):
        node = (node.get("PropertyRequirements") or {}).get(part)
        if node is None:
            return "None"
        req = node.get("ReadRequirement", "Mandatory")
    return req


def mandatory_failures(log: str, profile: dict, type_of) -> tuple[list, list]:
    """(failures of Mandatory requirements, of others) in the validator's debug log: a failure
    on an instance counts as mandatory; one that a property is absent from every instance takes
    the requirement of the resource types it was absent from (`type_of(uri)`)."""
    uri, absent, mandatory, other = "", {}, [], []
    for line in log.splitlines():
        if m := VALIDATING.search(line):
            uri = m.group(1)
        elif m := SKIPPED.search(line):
            absent.setdefault(m.group(1), set()).add(uri)
        elif m := FAILED.search(line):
            path, why = m.group(1), m.group(3)
            if ANYWHERE not in why:
                mandatory.append((uri, path, why))
                continue
            reqs = {requirement(profile, type_of(u), path) for u in absent.get(path, {uri})}
            (mandatory if "Mandatory" in reqs else other).append((path, sorted(reqs)))
    return mandatory, other


@pytest.fixture
def hmc_service(sim_rack):
    # one GPU: every resource type the eight-GPU default serves, at an eighth of the requests
    sim = sim_rack(sim_rack_text(["hmc-1"], changes={"hmc-1": {"sim": {
        "gpus": 1, "throttle_gpu": 1, "xid_events": [{"at_s": 0.0, "gpu": 1, "xid": 79}]}}}))
    assert not sim.failed, sim.failed
    dev = sim.rack.devices[0]
    return dev, os.environ[dev.password_env]


def validate(tools: list, why: list[str], dev, password: str, args: list[str], tmp_path):
    """Run a DMTF validator (`tools[0]`) against the service, or skip with the reason of the
    first tool or file that is missing; (its output, its summary counts, its report folder)."""
    for tool, reason in zip(tools, why):
        if tool is None:
            pytest.skip(reason)
    env = {**os.environ, "REQUESTS_CA_BUNDLE": dev.options["ca_file"]}
    report = tmp_path / "report"
    r = subprocess.run([tools[0], "-u", dev.username, "-p", password, "-r", dev.address,
                        "--authtype", "Session", "--logdir", str(report), *args],
                       env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    m = SERVICE_SUMMARY.search(out)
    assert m, f"no summary table; rc {r.returncode}\n{out[-3000:]}"
    return out, r.returncode, tuple(map(int, m.groups())), report


@pytest.mark.slow
def test_interop_validator_ubb_profile_no_mandatory_failure(hmc_service, tmp_path):
    prof = profile_file()
    dev, password = hmc_service
    _, _, counts, report = validate(
        [interop_validator(), prof],
        ["rf_interop_validator not installed (pip install redfish-interop-validator)",
         f"OCP's {PROFILE} not found at ../shared/redfish/ocp-profiles"],
        dev, password, [str(prof)], tmp_path)
    log = next(report.rglob("*Debug*.log")).read_text()
    types: dict[str, str] = {}

    def type_of(uri: str) -> str:
        if uri not in types:
            body = requests.get(dev.address + uri, auth=(dev.username, password),
                                verify=dev.options["ca_file"], timeout=10).json()
            types[uri] = str(body.get("@odata.type", "#?.?")).lstrip("#").split(".")[0]
        return types[uri]

    mandatory, other = mandatory_failures(log, json.loads(prof.read_text()), type_of)
    assert not mandatory, mandatory
    assert counts[0] > 150, counts
    assert {req for _, reqs in other for req in reqs} <= {"Supported", "Recommended"}, other


def test_the_failure_classifier_takes_the_requirement_of_the_absent_resource():
    profile = {"Resources": {"Chassis": {"PropertyRequirements": {
        "EnvironmentMetrics": {"ReadRequirement": "Supported"}}},
        "Processor": {"PropertyRequirements": {"EnvironmentMetrics": {}}}}}
    types = {"/redfish/v1/Chassis/A": "Chassis", "/redfish/v1/Systems/S/Processors/P": "Processor"}
    log = ("Validating /redfish/v1/Chassis/A...\nSKIP - /EnvironmentMetrics ([Not Present]): x\n"
           "FAIL - /EnvironmentMetrics ([Not Present]): Read Requirement Error: The property is "
           "not present on any instances of the resource\n")
    mandatory, other = mandatory_failures(log, profile, types.get)
    assert not mandatory and other == [("/EnvironmentMetrics", ["Supported"])]
    log2 = log.replace("Chassis/A", "Systems/S/Processors/P")
    assert mandatory_failures(log2, profile, types.get)[0]          # Mandatory by default
    log3 = "Validating /redfish/v1/Chassis/A...\nFAIL - /Members (Write) ([Array]): Min Count\n"
    assert mandatory_failures(log3, profile, types.get)[0]          # on an instance: counted


@pytest.mark.slow
def test_service_validator_finds_no_failure_on_the_hmc(hmc_service, tmp_path):
    schemas = schema_directory()
    dev, password = hmc_service
    out, rc, counts, _ = validate(
        [service_validator(), schemas],
        ["rf_service_validator not installed (pip install redfish-service-validator)",
         "DMTF's schema bundle not found at ../shared/redfish/csdl (or $RACKCLOCK_REDFISH_SCHEMAS)"],
        dev, password, ["--schema_directory", str(schemas), "--skipschema"], tmp_path)
    assert counts[2] == 0 and rc == 0, out[-3000:]
    assert counts[0] > 500, counts
