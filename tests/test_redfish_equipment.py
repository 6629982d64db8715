"""Redfish cooling and power equipment (bench/sim/redfish_equipment_emu.py, drivers/redfish_equipment.py)
over real HTTPS sockets on loopback: the equipment found by link, its Manager's DateTime read
inside the bracket, a CDU's pump fault logged and heard, a rack PDU outlet's PowerControl
stamped by its log entry, stimuli refused without the allow-list, a controller reboot, and a
short run whose truth check passes. Waits are conditions with deadlines."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import pytest
from racks import sim_rack_text
from test_redfish_bmc import bmc_toml

from bench.model.rundata import load_run
from bench.reference.clock import Reference
from bench.run.experiment import run_experiment
from bench.sim.rack import read_samples
from drivers.base import DeviceError, StimulusRefused
from drivers.redfish_equipment import RedfishEquipment

PW_ENV = "RACKCLOCK_SIM_BMC_PASSWORD"
MANAGER = {"cdu": "/redfish/v1/Managers/CDU", "rack_pdu": "/redfish/v1/Managers/BMC",
           "power_shelf": "/redfish/v1/Managers/BMC"}
EQUIPMENT = {"cdu": "/redfish/v1/ThermalEquipment/CDUs/1",
             "rack_pdu": "/redfish/v1/PowerEquipment/RackPDUs/1",
             "power_shelf": "/redfish/v1/PowerEquipment/PowerShelves/1"}


def equipment_toml(kind: str, name: str, stimuli=("test_event",), options=None, **sim) -> str:
    sim = {"equipment": kind, "offset_s": -3.7, "drift_ppm": 17.0, "local_offset_min": 60,
           "log_latency_s": [0.05, 0.15], **sim}
    opts = "".join(f"{k} = {json.dumps(v)}\n" for k, v in (options or {}).items())
    return (f'[devices.{name}]\nplane = "cooling"\ndriver = "redfish_equipment"\n'
            f'address = "https://127.0.0.1:0"\nusername = "root"\npassword_env = "{PW_ENV}"\n'
            f"stimuli = {json.dumps(list(stimuli))}\n{opts}[devices.{name}.sim]\n"
            + "\n".join(f"{k} = {json.dumps(v)}" for k, v in sim.items()) + "\n")


def events(sim, device: str, kind: str) -> list[dict]:
    return [e for e in list(sim.ctx.events[device]) if e["kind"] == kind]


async def wait_entries(drv, cursor, text: str, deadline_s: float = 10.0):
    end, got = time.monotonic() + deadline_s, []
    while not got:
        assert time.monotonic() < end, f"no log entry with {text!r} within {deadline_s} s"
        rows, cursor = await drv.log_entries(cursor)
        got = [e for e in rows if text in e.message]
        await asyncio.sleep(0.05)
    return got


def opened(dev, armed=True):
    drv = RedfishEquipment(dev, Reference.now_ns, armed=armed)

    class _Ctx:
        async def __aenter__(self):
            await drv.open()
            return drv

        async def __aexit__(self, *exc):
            await drv.close()
    return _Ctx()


def test_each_kind_found_by_link_and_its_manager_clock_read_inside_the_bracket(sim_rack):
    sim = sim_rack("".join(equipment_toml(k, f"eq-{k}") for k in MANAGER))
    assert not sim.failed, sim.failed

    async def one(dev):
        async with opened(dev) as drv:
            return await drv.identity(), await drv.read_clock("datetime")
    for kind, dev in zip(MANAGER, sim.rack.devices):
        ident, read = asyncio.run(one(dev))
        assert ident.extra["equipment"] == EQUIPMENT[kind], ident.extra
        assert ident.extra["manager"] == MANAGER[kind]
        assert ident.extra["log_service"] == f"{MANAGER[kind]}/LogServices/Log"
        assert ident.extra["equipment_type"] == {"cdu": "CDU", "rack_pdu": "RackPDU",
                                                 "power_shelf": "PowerShelf"}[kind]
        samples = read_samples(sim.out_dir / "sim_samples.csv")
        got = [v for t, v in samples.get((dev.name, "datetime"), [])
               if read.s_ns <= t <= read.e_ns]
        assert got == [read.value_ns], (kind, got, read)


def test_a_cdu_pump_fault_is_logged_heard_and_shown(sim_rack):
    sim = sim_rack(equipment_toml("cdu", "cdu-t", options={
        "test_message_id": "Environmental.1.2.PumpFailed"}))
    dev = sim.rack.devices[0]

    async def go():
        async with opened(dev) as drv:
            _, cursor = await drv.log_entries(None)
            stim = await drv.stimulate("test_event")
            (entry,) = await wait_entries(drv, cursor, "rackclock test event")
            end, heard = time.monotonic() + 10, []
            while not heard:
                assert time.monotonic() < end, "the pump fault's event never came"
                heard += drv.pushed_events()
                await asyncio.sleep(0.02)
            pump, *_ = await drv._get_json(f"{EQUIPMENT['cdu']}/Pumps/1", "GET pump")
            return stim, entry, heard, pump
    stim, entry, heard, pump = asyncio.run(go())
    (fault,) = events(sim, "cdu-t", "pump_fault")
    (logged,) = events(sim, "cdu-t", "log")
    assert fault["pump"] == "1" and stim.s_ns <= fault["t_ns"] <= stim.e_ns
    assert entry.value_ns == logged["created_ns"]
    assert pump["Status"]["Health"] == "Critical"
    (ev,) = heard
    assert ev.value_ns is not None and "PumpFailed" in ev.raw


def test_an_outlet_power_control_is_stamped_by_its_log_entry(sim_rack):
    sim = sim_rack(equipment_toml("rack_pdu", "rpdu-t", stimuli=("outlet_off:3", "outlet_on:3"),
                                  outlets=4))
    dev = sim.rack.devices[0]

    async def go():
        async with opened(dev) as drv:
            _, cursor = await drv.log_entries(None)
            stim = await drv.stimulate("outlet_off", 3)
            (entry,) = await wait_entries(drv, cursor, "Outlet 3 power off")
            outlet, *_ = await drv._get_json(f"{EQUIPMENT['rack_pdu']}/Outlets/3", "GET outlet")
            await labels(drv)
            return stim, entry, outlet
    stim, entry, outlet = asyncio.run(go())
    (cmd,) = events(sim, "rpdu-t", "outlet_command")
    (off,) = events(sim, "rpdu-t", "outlet_off")
    (logged,) = events(sim, "rpdu-t", "log")
    assert cmd["outlet"] == 3 and cmd["state"] == "Off" and stim.s_ns <= cmd["t_ns"] <= stim.e_ns
    assert off["outlet"] == 3 and off["t_ns"] >= cmd["t_ns"]
    assert entry.value_ns == logged["created_ns"] and logged["t_ns"] >= off["t_ns"]
    assert outlet["PowerState"] == "Off"


async def labels(drv) -> None:
    """The OCP profiles' writable UserLabel and placement: written, shown, others refused."""
    uri = EQUIPMENT["rack_pdu"]
    await drv._exchange("PATCH", uri, {"UserLabel": "row 4 left",
                                       "Location": {"Placement": {"Rack": "R4"}}})
    pdu, *_ = await drv._get_json(uri, "GET PDU")
    assert pdu["UserLabel"] == "row 4 left"
    assert pdu["Location"]["Placement"] == {"Row": "North 1", "Rack": "R4"}
    with pytest.raises(DeviceError, match="PropertyNotWritable|400"):
        await drv._exchange("PATCH", uri, {"Model": "other"})


def test_stimuli_refused_without_the_allow_list_and_not_sent_unarmed(sim_rack):
    sim = sim_rack(equipment_toml("rack_pdu", "rpdu-r", stimuli=("outlet_off:2",), outlets=4))
    dev = sim.rack.devices[0]

    async def go():
        async with opened(dev, armed=True) as drv:
            for name, target in (("outlet_off", 3), ("outlet_on", 2), ("test_event", None)):
                with pytest.raises(StimulusRefused, match="not allowed by the inventory"):
                    await drv.stimulate(name, target)
        async with opened(dev, armed=False) as drv:
            return await drv.stimulate("outlet_off", 2)
    unsent = asyncio.run(go())
    assert unsent.sent is False
    assert not events(sim, "rpdu-r", "outlet_command")     # nothing reached the PDU


async def down_and_back(drv, deadline_s: float = 15.0):
    """Read until a read fails (the controller went down), then until one succeeds."""
    end, failed = time.monotonic() + deadline_s, None
    while failed is None:
        assert time.monotonic() < end, "the controller never went down"
        try:
            await drv.read_clock("datetime")
        except DeviceError as exc:
            failed = exc
        await asyncio.sleep(0.05)
    while True:
        assert time.monotonic() < end, "the controller never came back"
        try:
            return failed, await drv.read_clock("datetime")
        except DeviceError:
            await asyncio.sleep(0.1)


def test_a_controller_reboot_and_a_manager_reset_drop_then_answer_again(sim_rack):
    sim = sim_rack(equipment_toml("power_shelf", "shelf-t", reboot_down_s=1.0))
    dev = sim.rack.devices[0]

    async def go():
        async with opened(dev) as drv:
            await drv.read_clock("datetime")
            sim.fault("shelf-t", "reboot")
            first = await down_and_back(drv)
            await drv._exchange("POST", f"{MANAGER['power_shelf']}/Actions/Manager.Reset",
                                {"ResetType": "GracefulRestart"})
            return first, await down_and_back(drv)
    for failed, read in asyncio.run(go()):
        assert failed.kind in ("reset", "unreachable", "timeout", "protocol", "error"), failed
        assert read.value_ns > 0
    assert [f["kind"] for f in sim.ctx.faults.fired] == ["reboot"]
    assert [e["reset_type"] for e in events(sim, "shelf-t", "reset")] == ["GracefulRestart"]


def test_a_plain_bmc_is_not_equipment(sim_rack):
    sim = sim_rack(bmc_toml(name="bmc-q"))
    dev = dataclasses.replace(sim.rack.devices[0], driver="redfish_equipment")
    with pytest.raises(DeviceError, match="links no ThermalEquipment or PowerEquipment"):
        asyncio.run(opened(dev).__aenter__())


def test_a_short_run_with_the_redfish_cdu_and_power_shelf_holds_the_truth(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-3", "cdu-rf-1", "shelf-1"]))   # bmc-3: one CA each
    path = run_experiment("clock_offset", rack, tmp_path / "runs",
                          {"duration_s": "6", "stimulus_every_s": "2"}, quiet=True)
    run = load_run(path)
    assert run.manifest["status"] == "completed"
    for name in ("cdu-rf-1", "shelf-1"):
        d = run.summary["devices"][name]
        assert d["clocks"], name
        for c in d["clocks"].values():
            for seg in c["segments"]:
                assert seg["truth"]["offset_in"] and seg["truth"]["drift_in"], (name, seg)
        assert d["latency"], f"{name}: no stimulus-to-log latency"


def test_the_redfish_cdu_can_start_the_incident_cascade():
    """Its pump fault replaces the Modbus CDU's pump trip as the cascade's first cause; the
    rest of the cascade is unchanged."""
    from bench.config.inventory import load_rack
    from bench.run.experiment import DEFAULT_RACK
    from bench.sim.cascade import STEPS, resolve, steps_for

    rack = load_rack(DEFAULT_RACK)
    modbus, _ = resolve(rack, steps_for("modbus"))
    redfish, _ = resolve(rack, steps_for("redfish"))
    assert modbus[0]["device"] == "cdu-2" and steps_for() == STEPS
    first = redfish[0]
    assert (first["device"], first["stimulus"], first["truth_kind"]) == \
        ("cdu-rf-1", "test_event", "pump_fault")
    assert [s["at_s"] for s in redfish] == [s["at_s"] for s in modbus]
    assert [s["name"] for s in redfish[1:]] == [s["name"] for s in modbus[1:]]
    assert rack.device("cdu-rf-1").options["test_message_id"].endswith("PumpFailed")
    with pytest.raises(ValueError, match="first_cause"):
        steps_for("snmp")
