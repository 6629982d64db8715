"""Shared fixtures: a simulated rack built from a TOML snippet, served on loopback in a thread."""
from __future__ import annotations

import os
import secrets
import tomllib

import pytest

from bench.model.inventory import rack_from_dict
from bench.sim.thread import SimRackThread


@pytest.fixture
def sim_rack(tmp_path):
    """Factory: `sim_rack(toml_text)` serves the devices it describes and returns the running
    SimRackThread (`.rack` resolved with real addresses). Stopped at teardown."""
    started = []

    def make(text: str) -> SimRackThread:
        data = tomllib.loads(text)
        data.setdefault("rack", {}).setdefault("name", "test-rack")
        rack = rack_from_dict(data)
        for d in rack.devices:
            if d.password_env:
                os.environ.setdefault(d.password_env, secrets.token_urlsafe(9))
        sim = SimRackThread(rack, tmp_path / f"sim{len(started)}").start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()


@pytest.fixture
def real_rack(rack):
    """A real lab rack for the `*_with_device` tests (`pytest --rack FILE`); skipped without."""
    return rack


# pytest-xdist (`pytest -n 2 --dist loadgroup`, optional): each module's tests stay on one worker
# (its module fixtures, a simulated run read by several tests, are made once), the modules that
# share tests/firmware_runs.py's runs go together, and so do the tests of the rack given by
# --rack/RACKCLOCK_RACK. The longest modules are handed out first, so that no worker is left
# with one of them at the end while the other idles (an order only: every test still runs).
SHARED_GROUPS = {"test_compare": "firmware_runs", "test_report": "firmware_runs",
                 "test_notebook": "firmware_runs"}
LONGEST_FIRST = ("test_wheel", "test_experiments", "test_compare_repeats", "test_run",
                 "test_signals", "test_hostile", "test_config_errors", "test_soundness",
                 "test_fleet", "test_soundness_run", "test_compare", "test_new_planes_run",
                 "test_rundata_model", "test_redfish_validator")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else item.nodeid
        group = "with_device" if "real_rack" in getattr(item, "fixturenames", ()) else \
            SHARED_GROUPS.get(module, module)
        item.add_marker(pytest.mark.xdist_group(group))

    def rank(item):
        group = item.get_closest_marker("xdist_group").args[0]
        firsts = [k for k, m in enumerate(LONGEST_FIRST) if SHARED_GROUPS.get(m, m) == group]
        return firsts[0] if firsts else len(LONGEST_FIRST)
    items.sort(key=rank)
