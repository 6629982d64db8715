"""Real PDU MIBs through the driver and the emulator: each vendor's agent (`[sim] vendor`)
announces its sysObjectID, the driver picks that vendor's objects by it (or by the inventory's
`vendor`), switches an outlet, hears the vendor's trap, reads the outlet's state back, and counts
a trap the agent lost."""
from __future__ import annotations

import asyncio
import time

import pytest

from bench.reference.clock import Reference
from tests.test_snmp_pdu import credentials, driver, pdu_toml, run  # noqa: F401  (fixture)

# sim vendor -> (inventory override, Identity.vendor, MIB, chosen by, the trap's message)
VENDORS = {
    "apc": ("", "APC", "PowerNet-MIB (rPDU)", "sysObjectID 1.3.6.1.4.1.318.1.3.4.5",
            "trap rPDUOutletOff outlet 2 off"),
    "apc_rpdu2": ("apc_rpdu2", "APC", "PowerNet-MIB (rPDU2)", "inventory key vendor",
                  "trap rPDUOutletOff outlet 2 off"),
    "apc_spdu": ("apc_spdu", "APC", "PowerNet-MIB (sPDU, MasterSwitch)", "inventory key vendor",
                 "trap outletOff outlet 2 off"),
    "raritan": ("", "Raritan", "PDU2-MIB", "sysObjectID 1.3.6.1.4.1.13742.6",
                "trap outletSensorStateChange outlet 2"),
    "eaton": ("", "Eaton", "EATON-EPDU-MIB", "sysObjectID 1.3.6.1.4.1.534.6.6.7",
              "trap notifyOutletControlStatus outlet 2 off"),
    "sentry4": ("", "Server Technology", "Sentry4-MIB", "sysObjectID 1.3.6.1.4.1.1718.4",
                "trap st4OutletStateChangeEvent outlet 2 off"),
}


def poll_until(d, done, deadline_s: float = 20.0) -> list:
    """log_entries until `done(entries so far)`; a deadline, not a margin."""
    async def go():
        got, cursor = [], None
        end = time.monotonic() + deadline_s
        while not done(got):
            assert time.monotonic() < end, [e.message for e in got]
            entries, cursor = await d.log_entries(cursor)
            got += entries
            await asyncio.sleep(0.05)
        return got
    return go()


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_vendor_mib_chosen_switched_trapped_and_read_back(sim_rack, vendor):
    override, name, mib, chosen, message = VENDORS[vendor]
    sim = sim_rack(pdu_toml(vendor=vendor, override=override, hrsystemdate=False,
                            stimuli=("outlet_off:2", "outlet_on:2")))
    dev = sim.rack.devices[0]

    async def go():
        d = driver(dev)
        await d.open()
        try:
            ident = await d.identity()
            await d.log_entries(None)              # the first state read: outlet 2 on
            await d.stimulate("outlet_off", 2)
            got = await poll_until(d, lambda es: any(e.message.startswith("trap") for e in es)
                                   and d.watch.read.get(2, ("",))[0] == "off")
            return ident, got, d.watch.lost
        finally:
            await d.close()

    ident, entries, lost = run(go())
    assert (ident.vendor, ident.extra["mib"], ident.extra["mib_chosen_by"]) == (name, mib, chosen)
    assert "traps are the log" in ident.extra["log"]
    assert ident.model and ident.serial and ident.firmware == "1.0.0"
    events = sim.ctx.events[dev.name]
    assert [e["kind"] for e in events][:2] == ["outlet_command", "outlet_off"]
    (trap,) = [e for e in entries if e.message.startswith("trap")]
    assert trap.message == message and trap.value_ns is not None
    logged = [e for e in events if e["kind"] == "outlet_log"]
    assert trap.value_ns == logged[0]["stamp_ns"]                # the agent's sysUpTime stamp
    assert not [e for e in entries if e.cursor.startswith("log:")]   # no vendor log table
    assert lost == 0


def test_a_lost_trap_is_logged_and_counted(sim_rack):
    """The agent loses its first outlet trap; the state read shows the outlet off and no trap
    comes within the grace period: one lost trap. The second change's trap arrives: not lost."""
    sim = sim_rack(pdu_toml(vendor="eaton", hrsystemdate=False, sim="drop_traps = 1",
                            stimuli=("outlet_off:2", "outlet_on:2")).replace(
        'trap_listen', 'trap_grace_s = 0.3\ntrap_listen'))
    dev = sim.rack.devices[0]

    async def go():
        d = driver(dev)
        await d.open()
        try:
            await d.log_entries(None)
            await d.stimulate("outlet_off", 2)
            first = await poll_until(d, lambda es: any(e.message.startswith("lost trap") for e in es))
            await d.stimulate("outlet_on", 2)

            seen_on = []

            def settled(es):          # the change was seen, its trap came, the grace has passed
                if d.watch.read.get(2, ("",))[0] == "on" and not seen_on:
                    seen_on.append(Reference.now_ns())
                return bool(seen_on) and Reference.now_ns() - seen_on[0] > d.watch.grace_ns \
                    and any(e.message.startswith("trap") for e in es)
            second = await poll_until(d, settled)
            return first, second, d.watch.lost
        finally:
            await d.close()

    first, second, lost = run(go())
    assert [e["kind"] for e in sim.ctx.events[dev.name] if e["kind"] == "trap_lost"] == ["trap_lost"]
    (gone,) = [e for e in first if e.message.startswith("lost trap")]
    assert "outlet 2 off" in gone.message and "(lost traps: 1)" in gone.message
    assert not [e for e in first if e.message.startswith("trap")]
    assert lost == 1 and not [e for e in second if e.message.startswith("lost trap")]


def test_lost_traps_are_counted_in_the_summary(tmp_path):
    """A whole run: the agent loses its first outlet trap; summary.json's device-level
    `traps_lost` counts what the emulator's truth says it dropped (one), and a PDU whose traps
    are not received says nothing (it cannot tell). hrSystemDate's fit takes the lag the driver
    declares, or the rack file's `tick_lag_ms`."""
    from bench.model.rundata import load_run
    from bench.run.experiment import run_experiment
    from drivers.snmp_pdu import HR_DATE_LAG_NS
    lossy = pdu_toml(vendor="eaton", sim="drop_traps = 1",
                     stimuli=("outlet_off:2", "outlet_on:2")).replace(
        'trap_listen', 'trap_grace_s = 0.3\ntrap_listen')
    deaf = pdu_toml("pdu-deaf", vendor="eaton", trap=False).replace(
        'driver = "snmp_pdu"\n', 'driver = "snmp_pdu"\ntick_lag_ms = 2.5\n')
    rack = tmp_path / "rack.toml"
    rack.write_text('[rack]\nname = "lost"\nsimulated = true\n\n' + lossy + deaf)
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "14", "stimulus_every_s": "3"}, quiet=True))
    dropped = [e for e in run.truth["devices"]["pdu-t"]["events"] if e["kind"] == "trap_lost"]
    assert len(dropped) == 1, run.truth["devices"]["pdu-t"]["events"]
    assert run.summary["devices"]["pdu-t"]["traps_lost"] == 1
    assert "traps_lost" not in run.summary["devices"]["pdu-deaf"]
    lags = {d: run.summary["devices"][d]["clocks"]["hrsystemdate"]["assumptions"]["tick_lag_ns"]
            for d in ("pdu-t", "pdu-deaf")}
    assert lags == {"pdu-t": HR_DATE_LAG_NS, "pdu-deaf": 2_500_000}, lags
