"""Redfish services of every shape (issue 43 item 3), against the bench's emulator over real
sockets: every Manager examined and the one with DateTime read, the choice named; no guessed
paths; what discovery found kept across reconnects (counted at the emulator); plain http://
where the rack file says auth = "none"."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_redfish_bmc import bmc_toml
from test_redfish_events import bmc  # noqa: F401  (the fixture: a running emulated BMC)

from bench.config.inventory import device_from_table
from bench.config.keys import InventoryError
from bench.config.loader import check_device
from bench.reference.clock import Reference
from drivers import redfish_known
from drivers.base import DeviceError
from drivers.redfish_bmc import RedfishBMC


def by_path(sim, name: str = "bmc-t") -> dict:
    t = next(e for e in sim.ctx.events[name] if e["kind"] == "traffic")
    return dict(t["by_path"])


async def open_read(dev):
    drv = RedfishBMC(dev, Reference.now_ns, armed=True)
    await drv.open()
    try:
        return await drv.identity(), await drv.read_clock("datetime")
    finally:
        await drv.close()


def test_bladed_reads_the_blade_manager_and_names_the_choice(bmc):  # noqa: F811
    sim, dev = bmc(profile="bladed")
    ident, read = asyncio.run(open_read(dev))
    assert ident.extra["manager"] == "/redfish/v1/Managers/Blade1BMC"
    choice = ident.extra["manager_choice"]
    assert "/redfish/v1/Managers/MultiBladeBMC (no DateTime)" in choice, choice
    assert "/redfish/v1/Managers/Blade1BMC (DateTime)" in choice and "`manager`" in choice
    assert read.value_ns > 0


def test_no_manager_with_datetime_names_each_and_the_manager_key(bmc):  # noqa: F811
    sim, dev = bmc(profile="bladed", manager_datetime=False)
    redfish_known.forget(dev.name, dev.address)
    with pytest.raises(DeviceError) as e:
        asyncio.run(open_read(dev))
    msg = e.value.message
    assert "no Manager has DateTime" in msg and "MultiBladeBMC (no DateTime)" in msg
    assert "Blade1BMC (no DateTime)" in msg and "`manager`" in msg, msg


def test_a_root_without_managers_link_is_said_so_never_guessed(bmc):  # noqa: F811
    sim, dev = bmc(managers_linked=False)
    redfish_known.forget(dev.name, dev.address)
    with pytest.raises(DeviceError) as e:
        asyncio.run(open_read(dev))
    assert "no Managers linked" in e.value.message, e.value.message
    assert not [p for p in by_path(sim) if p.startswith("GET /redfish/v1/Managers")]


def test_discovery_is_kept_across_reconnects_while_the_root_is_the_same(bmc):  # noqa: F811
    sim, dev = bmc(profile="idrac")
    redfish_known.forget(dev.name, dev.address)
    asyncio.run(open_read(dev))
    first = by_path(sim)
    for _ in range(3):                                    # three reconnects
        ident, _ = asyncio.run(open_read(dev))
    assert "kept: the service root and the Manager are unchanged" in ident.extra["manager_choice"]
    assert "kept" in ident.extra["log_choice"]
    after = by_path(sim)
    grew = {p: after[p] - first.get(p, 0) for p in after if after[p] != first.get(p, 0)}
    # each reconnect: the root, a login and logout, the Manager (kept choice revalidated,
    # identity, read), its NetworkProtocol (the NTP state, at identity), the EventService: no
    # LogService, Entries or Managers collection asked again
    assert not [p for p in grew if "LogServices" in p or p == "GET /redfish/v1/Managers"], grew
    assert grew["GET /redfish/v1"] <= 2 * 3, grew     # ours and redfish.aio login's
    assert sum(grew.values()) <= 10 * 3, grew      # the Manager: revalidated, identity, read


def test_a_failed_discovery_is_repeated_at_most_once_a_minute(bmc):  # noqa: F811
    sim, dev = bmc(profile="bladed", manager_datetime=False)
    redfish_known.forget(dev.name, dev.address)
    for _ in range(4):
        with pytest.raises(DeviceError):
            asyncio.run(open_read(dev))
    assert by_path(sim)["GET /redfish/v1/Managers"] == 1          # examined once, not 4 times


def http_table(**extra) -> dict:
    return {"plane": "bmc", "driver": "redfish_bmc", "address": "http://127.0.0.1:8000",
            **extra}


def test_plain_http_only_where_the_rack_file_says_auth_none(sim_rack):
    ok = check_device(device_from_table("h", http_table(auth="none")), Path("."), lab=True)
    assert ok.address.startswith("http://")
    with pytest.raises(InventoryError) as e:
        check_device(device_from_table("h", http_table(username="root", password_env="PATH")),
                     Path("."), lab=True)
    assert "plain http:// only with auth" in str(e.value), str(e.value)
    text = bmc_toml(auth_required=False).replace("https://", "http://").replace(
        'username = "root"\n', 'auth = "none"\n')
    sim = sim_rack(text)
    assert not sim.failed, sim.failed
    (dev,) = sim.rack.devices
    assert dev.address.startswith("http://") and dev.options["auth"] == "none"
    ident, read = asyncio.run(open_read(dev))
    assert ident.extra["auth"] == "none" and read.value_ns > 0
