"""The vendor-shaped emulators through clients the project did not write: DMTF's Redfish
Tacklebox (PyPI `redfish-utilities`: `rf_manager_config.py`, `rf_logs.py`,
`rf_event_service.py`), each run as its own process against the emulated BMC over HTTPS
(trusting the simulator's CA through REQUESTS_CA_BUNDLE)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_redfish_bmc import PW_ENV, bmc_toml

from bench.sim.rack import read_samples
from drivers.redfish_bmc import parse_datetime_ns


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    exe = str(here) if here.exists() else shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} not installed (pip install redfish-utilities)")
    return exe


@pytest.fixture
def bmc(sim_rack):
    def make(**sim):
        s = sim_rack(bmc_toml(**sim))
        assert not s.failed, s.failed
        dev = s.rack.devices[0]

        def run(name: str, *args: str) -> str:
            r = subprocess.run([tool(name), "-u", "root", f"--password={os.environ[PW_ENV]}", "-r",
                                dev.address, *args], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "REQUESTS_CA_BUNDLE": dev.options["ca_file"]})
            assert r.returncode == 0, f"{name} {args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
            return r.stdout
        return s, dev, run
    return make


def events(sim, kind: str) -> list[dict]:
    return [e for e in sim.ctx.events["bmc-t"] if e["kind"] == kind]


def test_rf_manager_config_reads_and_sets_the_idrac_clock(bmc):
    sim, dev, run = bmc(profile="idrac", ntp=False)
    out = run("rf_manager_config.py", "-m", "iDRAC.Embedded.1", "info")
    line = next(x for x in out.splitlines() if x.strip().startswith("DateTime"))
    shown = parse_datetime_ns(line.split()[-1])
    model = sim.ctx.models(dev, ("datetime",))["datetime"]
    read = [v for rows in read_samples(sim.out_dir / "sim_samples.csv").values() for _, v in rows]
    assert shown in read                    # what the tool shows is a sample the model gave
    assert model.p.local_offset_min == 60
    run("rf_manager_config.py", "-m", "iDRAC.Embedded.1", "settime", "--datetime",
        "2030-01-01T00:00:00+00:00")
    (step,) = events(sim, "step")
    assert step["set_to"] == "2030-01-01T00:00:00+00:00"


@pytest.mark.parametrize("profile, where, count", [("ilo", ("-m", "1", "-l", "IEL"), 4),
                                                   ("supermicro", ("-s", "1", "-l", "Log1"), 2)])
def test_rf_logs_lists_the_log_the_driver_chooses(bmc, profile, where, count):
    """rf_logs.py reads the log the driver picks (its entries carry MessageIds: rf_logs 3.5.2
    stops with KeyError 'MessageId' on entries without one, such as iLO's IML records)."""
    sim, dev, run = bmc(profile=profile)
    out = run("rf_logs.py", *where)
    assert out.count("Seeded record") == count


def test_rf_event_service_subscribes_with_registries(bmc):
    sim, dev, run = bmc(profile="openbmc")
    out = run("rf_event_service.py", "info")
    assert "Base" in out
    run("rf_event_service.py", "subscribe", "--destination", "https://127.0.0.1:9/events",
        "--registries", "Base", "--context", "rf-utilities")
    (sub,) = events(sim, "subscribed")
    assert sub["prefixes"] == ["Base"]
    out = run("rf_event_service.py", "info")
    assert "https://127.0.0.1:9/events" in out and "rf-utilities" in out
    # a registry the service does not advertise is refused, as a strict service does
    r = subprocess.run([tool("rf_event_service.py"), "-u", "root", f"--password={os.environ[PW_ENV]}",
                        "-r", dev.address, "subscribe", "--destination",
                        "https://127.0.0.1:9/x", "--registries", "NoSuchRegistry"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "REQUESTS_CA_BUNDLE": dev.options["ca_file"]})
    assert r.returncode != 0 and "NoSuchRegistry" in r.stdout + r.stderr
