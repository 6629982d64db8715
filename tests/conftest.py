"""Shared fixtures: a simulated rack built from a TOML snippet, served on loopback in a thread."""
from __future__ import annotations

import os
import secrets
import time
import tomllib

import pytest
from tcp_pair import stamped_pair

from bench.config.inventory import rack_from_dict
from bench.pytest_plugin import holding_rack
from bench.sim.thread import SimRackThread

# the output is checked at the width a log gets (120); a test of a terminal's width sets COLUMNS
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


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


@pytest.fixture(scope="session")
def kernel_rx_stamps():
    """Holds a socket with arrival stamps open for the session, once a stamped segment came
    through it. While no socket wants stamps, the kernel turns them on from a work queue, so a
    socket's first segments may go unstamped (the drivers then fall back to the loop's stamp);
    with one held, every new socket's segments are stamped."""
    client, peer = stamped_pair()
    deadline = time.monotonic() + 60
    while True:
        peer.sendall(b"x")
        client.recv(16)
        if client.rx_ns:
            break
        assert time.monotonic() < deadline, "the kernel never stamped a TCP segment"
        time.sleep(0.01)
    yield
    client.close()
    peer.close()


@pytest.fixture
def real_rack(request, rack):
    """A real lab rack for the `*_with_device` tests (`pytest --rack FILE`); skipped without.
    Held for the test (bench.config.racklock): they open the rack file's own devices, which one
    session at a time may do (a PDU's one trap port), so another xdist worker's test or another
    session on the same rack waits."""
    with holding_rack(request.config, rack.source):
        yield rack


# pytest-xdist (`make test`: `-n 2 --dist loadfile`): each module's tests stay on one worker, so
# its module fixtures (a simulated run read by several tests) are made once. (`--dist loadgroup`
# would put test_compare/test_report/test_notebook, which share tests/firmware_runs.py's runs, on
# one worker, but xdist 3.8 under pytest 9 ignores the groups.) The longest modules are handed
# out first, so that no worker is left with one of them at the end while the other idles: an
# order only, every test still runs.
LONGEST_FIRST = ("test_wheel", "test_experiments", "test_compare_repeats", "test_run",
                 "test_signals", "test_hostile", "test_config_errors", "test_soundness",
                 "test_fleet", "test_benchmarks_smoke", "test_soundness_run", "test_compare",
                 "test_new_planes_run", "test_rundata_model", "test_redfish_validator")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def rank(item):
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)
