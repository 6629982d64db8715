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
