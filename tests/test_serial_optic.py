"""Optics plane: the bridge's line protocol, the CMIS map behind it, and the serial_optic driver,
all against the emulator over a real pty pair and over TCP (the way a ser2net server is).

`python tests/test_serial_optic.py` measures the median counter-read bracket at 115200 baud with
a 16 ms and a 1 ms latency timer.
"""
from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from pathlib import Path

import pytest
import serial

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reference.clock import Reference  # noqa: E402
from bench.sim.rack import read_samples  # noqa: E402
from drivers.base import DeviceError, StimulusRefused  # noqa: E402
from drivers.serial_optic import SerialOptic  # noqa: E402

NOW = Reference.now_ns


def optic_toml(name: str = "optic-1", address: str = "serial://auto", latency_ms: float = 1,
               stimuli: str = '["tx_disable:1", "tx_enable:1", "vdm_freeze:2"]',
               extra: str = "", sim_extra: str = "") -> str:
    return f"""
[devices.{name}]
plane = "optic"
driver = "serial_optic"
address = "{address}"
baudrate = 115200
ports = [1, 2]
counter_ports = [1]
stimuli = {stimuli}
{extra}
[devices.{name}.sim]
latency_timer_ms = {latency_ms}
serial = "BR-{name}"
{sim_extra}
[devices.{name}.sim.modules.1]
vendor = "ACME OPTICS"
oui = "00:11:22"
part = "AC-800G-2xDR4"
revision = "B1"
serial = "ACM{name}"
date_code = "250704AB"
firmware = "7.13"
far_end = 2
[devices.{name}.sim.modules.1.clock]
counter = true
resolution_s = 0.001
uptime_s = 86400.0
drift_ppm = 23.0
[devices.{name}.sim.modules.2]
vendor = "NOCLOCK INC"
part = "NC-400G-FR4"
serial = "NC{name}"
firmware = "2.1"
far_end = 1
"""


def run(coro):
    return asyncio.run(coro)


async def opened(sim, name: str = "optic-1", **options) -> SerialOptic:
    from dataclasses import replace
    dev = sim.rack.device(name)
    if options:
        dev = replace(dev, options={**dev.options, **options})
    drv = SerialOptic(dev, NOW, armed=True)
    await drv.open()
    return drv


def samples(sim, device: str) -> list[tuple[str, int, int]]:
    return [(clock, t, v) for (d, clock), rows in
            read_samples(sim.out_dir / "sim_samples.csv").items() if d == device for t, v in rows]


def bridge(sim, name: str = "optic-1"):
    from bench.sim.serial_optic_emu import bridge_of
    return bridge_of(sim.ctx, name)


# -- the line protocol, spoken by hand ------------------------------------------------------------
def framed(payload: str) -> bytes:
    c = 0
    for b in payload.encode():
        c ^= b
    return f"{payload}*{c:02X}\r\n".encode()


def ask(port: serial.Serial, line: bytes) -> str:
    port.reset_input_buffer()
    port.write(line)
    answer = port.read_until(b"\n")
    assert answer.endswith(b"\r\n"), answer
    body, _, check = answer.decode().strip().rpartition("*")
    c = 0
    for b in body.encode():
        c ^= b
    assert int(check, 16) == c, answer
    return body


def hand_protocol(url: str) -> None:
    with serial.serial_for_url(url, baudrate=115200, timeout=2) as p:
        assert ask(p, framed("0001 ID")).startswith("0001 OK ID vendor=")
        assert ask(p, framed("0001 ID")).endswith(" ports=1,2,3")
        assert ask(p, b"0002 ID*00\r\n") .startswith("0002 ERR 01 ")          # bad checksum
        assert ask(p, b"0003 ID\r\n").startswith("0003 ERR 02 ")             # no checksum
        assert ask(p, framed("0004 FLY 1")).startswith("0004 ERR 02 ")
        assert ask(p, framed("0005 SEL 9")).startswith("0005 ERR 03 ")
        assert ask(p, framed("0006 SEL 1")) == "0006 OK SEL 1"
        body = ask(p, framed("0007 RD 00 81 16"))                             # vendor name
        assert body.startswith("0007 OK RD 00 81 ")
        assert bytes.fromhex(body.split()[-1]) == b"ACME OPTICS".ljust(16)
        assert ask(p, framed("0008 RD 00 00 200")).startswith("0008 ERR 05 ")
        assert ask(p, framed("0009 WR 00 81 41")).startswith("0009 ERR 05 ")  # read-only
        assert ask(p, framed("000A SEL 2")) == "000A OK SEL 2"
        assert ask(p, framed("000B RD A0 80 4")).startswith("000B ERR 05 ")   # no counter page
        assert ask(p, framed("000C HIST 0")) == "000C OK HIST 0"
        assert ask(p, framed("000D SEL 3")) == "000D OK SEL 3"                # an empty cage
        assert ask(p, framed("000E RD 00 00 1")).startswith("000E ERR 04 ")


EMPTY_CAGE = "bridge_ports = [1, 2, 3]"


def test_protocol_by_hand_on_pty(sim_rack):
    sim = sim_rack(optic_toml(sim_extra=EMPTY_CAGE))
    address = sim.rack.device("optic-1").address
    assert address.startswith("serial:///dev/pts/")
    hand_protocol(address[len("serial://"):])


def test_protocol_by_hand_over_tcp(sim_rack):
    sim = sim_rack(optic_toml(address="socket://127.0.0.1:0", sim_extra=EMPTY_CAGE))
    address = sim.rack.device("optic-1").address
    assert address.startswith("socket://127.0.0.1:") and not address.endswith(":0")
    hand_protocol(address)


# -- identity -------------------------------------------------------------------------------------
def test_identity_fields_at_their_cmis_places(sim_rack):
    sim = sim_rack(optic_toml())
    url = sim.rack.device("optic-1").address[len("serial://"):]
    with serial.serial_for_url(url, timeout=2) as p:
        ask(p, framed("0001 SEL 1"))
        lower = bytes.fromhex(ask(p, framed("0002 RD 00 00 41")).split()[-1])
        upper = bytes.fromhex(ask(p, framed("0003 RD 00 80 62")).split()[-1])
    assert lower[0] == 0x18 and lower[1] == 0x50 and (lower[39], lower[40]) == (7, 13)
    at = lambda a, b: upper[a - 128:b - 128 + 1]  # noqa: E731
    assert at(129, 144) == b"ACME OPTICS     "
    assert at(145, 147) == bytes([0x00, 0x11, 0x22])
    assert at(148, 163) == b"AC-800G-2xDR4   "
    assert at(164, 165) == b"B1"
    assert at(166, 181) == b"ACMoptic-1".ljust(16)
    assert at(182, 189) == b"250704AB"

    async def go():
        drv = await opened(sim)
        try:
            return await drv.identity()
        finally:
            await drv.close()
    ident = run(go())
    assert (ident.vendor, ident.serial) == ("RACKCLOCK", "BR-optic-1")
    m1, m2 = ident.extra["modules"]["1"], ident.extra["modules"]["2"]
    assert m1 == {"identifier": "0x18", "cmis_revision": "5.0", "vendor": "ACME OPTICS",
                  "oui": "00:11:22", "part_number": "AC-800G-2xDR4", "revision": "B1",
                  "serial": "ACMoptic-1", "date_code": "250704AB", "firmware": "7.13",
                  "counter": True}
    assert (m2["vendor"], m2["serial"], m2["firmware"], m2["counter"]) == \
        ("NOCLOCK INC", "NCoptic-1", "2.1", False)


# -- the counter ----------------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["serial://auto", "socket://127.0.0.1:0"])
def test_counter_brackets_contain_the_sample_instant(sim_rack, address):
    sim = sim_rack(optic_toml(address=address, latency_ms=16))

    async def go():
        drv = await opened(sim)
        assert [(c.name, c.resolution_ns, c.counter, c.modulus_ns) for c in drv.clocks()] == \
            [("counter1", 1_000_000, True, 2 ** 32 * 1_000_000)]
        with pytest.raises(DeviceError) as err:
            await drv.read_clock("counter2")            # that module has no clock
        assert err.value.kind == "refused"
        reads = []
        for _ in range(12):
            reads.append(await drv.read_clock("counter1"))
            await asyncio.sleep(random.uniform(0, 0.02))
        await drv.close()
        return reads
    reads = run(go())
    got = [s for s in samples(sim, "optic-1") if s[0] == "counter1"]
    assert len(got) == len(reads)
    wire_ns = (len("0001 RD A0 80 4*XX\r\n") + len("0001 OK RD A0 80 XXXXXXXX*XX\r\n")) * 10 * 10**9 // 115200
    for r, (_, t, v) in zip(reads, got):
        assert r.s_ns <= t <= r.e_ns
        assert r.value_ns == v % (2 ** 32 * 1_000_000)
        assert r.e_ns - r.s_ns >= wire_ns                 # the sideband's bytes take their time
    # a day of uptime, counted by a 23 ppm clock
    assert abs(reads[0].value_ns - 86400 * 10**9) < 60 * 10**9


# -- stimuli and flags ----------------------------------------------------------------------------
def test_tx_disable_leads_to_a_bounded_los_seen_by_polling(sim_rack):
    sim = sim_rack(optic_toml())

    async def go():
        drv = await opened(sim)
        entries, cursor = await drv.log_entries(None)            # first poll: nothing latched
        assert [e for e in entries if "RxLOS" in e.message] == []
        with pytest.raises(StimulusRefused):
            await drv.stimulate("tx_disable", 2)                  # not allowed on port 2
        stim = await drv.stimulate("tx_disable", 1)
        seen = []
        for _ in range(50):
            new, cursor = await drv.log_entries(cursor)
            seen += new
            if any("RxLOS" in e.message for e in new):
                break
        again, cursor = await drv.log_entries(cursor)            # clear on read: seen once
        await drv.stimulate("tx_enable", 1)
        await drv.close()
        return stim, seen, again
    stim, seen, again = run(go())
    events = sim.stop()["devices"]["optic-1"]["events"]
    t_off = next(e["t_ns"] for e in events if e["kind"] == "tx_disable")
    t_los = next(e["t_ns"] for e in events if e["kind"] == "rx_los")
    assert stim.s_ns <= t_off <= stim.e_ns
    los = [e for e in seen if "RxLOS" in e.message]
    assert len(los) == 1
    entry = los[0]
    raw = json.loads(entry.raw)
    assert raw["port"] == 2 and raw["lanes"] == 0b1111
    assert entry.clock == "" and entry.value_ns is None           # port 2 has no clock
    assert raw["prev_s_ns"] < t_los <= entry.e_ns                 # bounded by the polls
    assert entry.s_ns <= entry.e_ns
    assert not [e for e in again if "RxLOS" in e.message]
    assert any(e["kind"] == "tx_enable" for e in events)
    assert any(json.loads(e.raw).get("pin") == "INT" for e in seen)   # the bridge saw IntL


def test_los_on_a_module_with_a_counter_carries_its_value(sim_rack):
    toml = optic_toml(stimuli='["tx_disable:2"]')
    sim = sim_rack(toml)

    async def go():
        drv = await opened(sim)
        _, cursor = await drv.log_entries(None)
        await drv.stimulate("tx_disable", 2)                      # port 2 feeds port 1's RX
        for _ in range(50):
            new, cursor = await drv.log_entries(cursor)
            los = [e for e in new if "RxLOS" in e.message]
            if los:
                break
        await drv.close()
        return los[0]
    entry = run(go())
    t_los = next(e["t_ns"] for e in sim.stop()["devices"]["optic-1"]["events"]
                 if e["kind"] == "rx_los")
    assert entry.clock == "counter1" and entry.resolution_ns == 1_000_000
    assert json.loads(entry.raw)["prev_s_ns"] < t_los <= entry.e_ns
    counter_at = {v: t for c, t, v in samples(sim, "optic-1") if c == "counter1"}
    assert counter_at[entry.value_ns] >= entry.s_ns              # read after the flags


def test_vdm_freeze_handshake_is_seen_and_bounded(sim_rack):
    sim = sim_rack(optic_toml())

    async def go():
        drv = await opened(sim)
        stim = await drv.stimulate("vdm_freeze", 2)
        cursor, done = None, []
        for _ in range(50):
            new, cursor = await drv.log_entries(cursor)
            done = [e for e in new if "VdmFreezeDone" in e.message]
            if done:
                break
        await drv.close()
        return stim, done
    stim, done = run(go())
    events = sim.stop()["devices"]["optic-1"]["events"]
    t_req = next(e["t_ns"] for e in events if e["kind"] == "vdm_freeze_request")
    t_done = next(e["t_ns"] for e in events if e["kind"] == "vdm_freeze_done")
    assert stim.s_ns <= t_req <= stim.e_ns
    assert len(done) == 1 and json.loads(done[0].raw)["prev_s_ns"] < t_done <= done[0].e_ns


def test_scheduled_tx_fault_is_latched_until_read(sim_rack):
    toml = optic_toml().replace("far_end = 2", "far_end = 2\ntx_fault_at_s = [0.2]")
    sim = sim_rack(toml)

    async def go():
        drv = await opened(sim)
        first, cursor = await drv.log_entries(None)
        await asyncio.sleep(0.3)
        second, cursor = await drv.log_entries(cursor)
        third, _ = await drv.log_entries(cursor)
        await drv.close()
        return first, second, third
    first, second, third = run(go())
    t_fault = next(e["t_ns"] for e in sim.stop()["devices"]["optic-1"]["events"]
                   if e["kind"] == "tx_fault")
    faults = lambda es: [e for e in es if "TxFault" in e.message]  # noqa: E731
    assert faults(third) == []
    (entry,) = faults(first + second)                 # seen once (first poll if it was late)
    assert entry.clock == "counter1" and "port 1 TxFault" in entry.message
    prev = json.loads(entry.raw)["prev_s_ns"]
    assert (prev is None or prev < t_fault) and t_fault <= entry.e_ns


def test_unarmed_stimulus_is_not_sent(sim_rack):
    sim = sim_rack(optic_toml())

    async def go():
        drv = SerialOptic(sim.rack.device("optic-1"), NOW, armed=False)
        await drv.open()
        st = await drv.stimulate("tx_disable", 1)
        await drv.close()
        return st
    assert run(go()).sent is False
    assert not sim.stop()["devices"]["optic-1"]["events"]


# -- faults: clear per-device errors, the other device goes on --------------------------------------
def two_bridges(sim_rack, address_b: str = "serial://auto", sim_extra: str = ""):
    return sim_rack(optic_toml("optic-a", sim_extra=sim_extra)
                    + optic_toml("optic-b", address=address_b))


def test_checksum_error_and_garbled_line_are_malformed(sim_rack):
    sim = two_bridges(sim_rack)

    async def go():
        a, b = await opened(sim, "optic-a"), await opened(sim, "optic-b")
        await a.read_clock("counter1")
        kinds = []
        for fault in ("checksum", "garble"):
            sim.loop.call_soon_threadsafe(bridge(sim, "optic-a").inject, fault)
            time.sleep(0.01)
            with pytest.raises(DeviceError) as err:
                await a.read_clock("counter1")
            kinds.append((err.value.kind, err.value.device, str(err.value)))
            await b.read_clock("counter1")                   # the other device goes on
        ok = await a.read_clock("counter1")                  # and so does this one
        await a.close()
        await b.close()
        return kinds, ok
    kinds, ok = run(go())
    assert [k[:2] for k in kinds] == [("malformed", "optic-a")] * 2
    assert "checksum mismatch" in kinds[0][2] and "garbled" in kinds[1][2]
    assert ok.value_ns > 0


@pytest.mark.parametrize("bridge_timeout_ms, driver_timeout_s", [(100, 1.0), (900, 0.3)])
def test_module_that_stops_answering_times_out(sim_rack, bridge_timeout_ms, driver_timeout_s):
    sim = two_bridges(sim_rack, sim_extra=f"i2c_timeout_ms = {bridge_timeout_ms}")

    async def go():
        a = await opened(sim, "optic-a", timeout_s=driver_timeout_s)
        b = await opened(sim, "optic-b")
        bridge(sim, "optic-a").modules[1].stalled = True
        t = time.monotonic()
        with pytest.raises(DeviceError) as err:
            await a.read_clock("counter1")
        took = time.monotonic() - t
        await b.read_clock("counter1")                       # the other device goes on
        a.link.timeout_s = 2.0                               # the bridge itself still answers
        ident = await a.identity()
        bridge(sim, "optic-a").modules[1].stalled = False
        back = await a.read_clock("counter1")
        await a.close()
        await b.close()
        return err.value, took, ident, back
    exc, took, ident, back = run(go())
    assert (exc.kind, exc.device) == ("timeout", "optic-a")
    assert took < driver_timeout_s + 0.5                    # never a hang
    assert "timeout" in ident.extra["modules"]["1"]["error"]
    assert ident.extra["modules"]["2"]["vendor"] == "NOCLOCK INC"
    assert back.value_ns > 0


def test_stalled_module_and_empty_cage_from_the_rack_file(sim_rack):
    toml = optic_toml(sim_extra="i2c_timeout_ms = 50\n" + EMPTY_CAGE)
    sim = sim_rack(toml.replace("far_end = 1", "far_end = 1\nstalled = true"))

    async def go():
        drv = await opened(sim, ports=[1, 2, 3])
        ident = await drv.identity()
        with pytest.raises(DeviceError) as err:
            await drv.log_entries(None)
        read = await drv.read_clock("counter1")
        await drv.close()
        return ident, err.value, read
    ident, exc, read = run(go())
    mods = ident.extra["modules"]
    assert mods["1"]["vendor"] == "ACME OPTICS"
    assert mods["2"]["error"].startswith("timeout: ") and "ERR 06" in mods["2"]["error"]
    assert mods["3"]["error"].startswith("unreachable: ") and "ERR 04" in mods["3"]["error"]
    assert exc.kind in ("timeout", "unreachable") and exc.device == "optic-1"
    assert read.value_ns > 0


@pytest.mark.parametrize("address", ["serial://auto", "socket://127.0.0.1:0"])
def test_unplugged_bridge_is_reset_then_unreachable(sim_rack, address):
    sim = sim_rack(optic_toml("optic-a", address=address) + optic_toml("optic-b"))

    async def go():
        a, b = await opened(sim, "optic-a"), await opened(sim, "optic-b")
        await a.read_clock("counter1")
        sim.loop.call_soon_threadsafe(bridge(sim, "optic-a").unplug)
        time.sleep(0.05)
        kinds = []
        for _ in range(2):
            t = time.monotonic()
            with pytest.raises(DeviceError) as err:
                await a.read_clock("counter1")
            kinds.append((err.value.kind, time.monotonic() - t))
        with pytest.raises(DeviceError) as err:
            await a.log_entries(None)
        kinds.append((err.value.kind, 0.0))
        ok = await b.read_clock("counter1")
        await a.close()
        await b.close()
        return kinds, ok
    kinds, ok = run(go())
    assert kinds[0][0] in ("reset", "unreachable") and kinds[1][0] == "unreachable"
    assert kinds[2][0] == "unreachable"
    assert all(took < 1.5 for _, took in kinds)
    assert ok.value_ns > 0


def test_unresolved_address_is_unreachable():
    from bench.config.inventory import device_from_table
    dev = device_from_table("optic-x", {"plane": "optic", "driver": "serial_optic",
                                        "address": "serial:///dev/nonexistent-rackclock"})
    with pytest.raises(DeviceError) as err:
        run(SerialOptic(dev, NOW).open())
    assert err.value.kind == "unreachable" and "optic-x" in str(err.value)


# -- a real rack --------------------------------------------------------------------------------------
def test_counter_and_identity_with_device(real_rack):
    devices = [d for d in real_rack.devices if d.driver == "serial_optic"]
    if not devices:
        pytest.skip("the real rack has no serial_optic device")

    async def go(dev):
        drv = SerialOptic(dev, NOW, armed=False)
        await drv.open()
        try:
            ident = await drv.identity()
            reads = [await drv.read_clock(c.name) for c in drv.clocks()]
            entries, _ = await drv.log_entries(None)
            return ident, reads, entries
        finally:
            await drv.close()
    for dev in devices:
        ident, reads, _ = run(go(dev))
        assert ident.vendor or ident.model
        for r in reads:
            assert r.s_ns < r.e_ns and r.value_ns >= 0


# -- measurement: `python tests/test_serial_optic.py` ---------------------------------------------
def measure(latency_ms: float, reads: int = 300) -> dict:
    """Counter reads with the runner's random dither; brackets, and the offset/drift bounds that
    bench/analysis/estimate.py proves from them (checked against the emulator's truth)."""
    import tomllib

    from bench.analysis.estimate import fit_clock
    from bench.config.inventory import rack_from_dict
    from bench.sim.thread import SimRackThread
    rack = rack_from_dict(tomllib.loads('[rack]\nname = "m"\n' + optic_toml(latency_ms=latency_ms)))
    with SimRackThread(rack) as sim:
        async def go():
            drv = await opened(sim)
            out = []
            for _ in range(reads):
                await asyncio.sleep(random.uniform(0.0, 0.05))       # the runner's dither
                out.append(await drv.read_clock("counter1"))
            await drv.close()
            return out
        rs = run(go())
        model = sim.ctx._models["optic-1"]["counter1"]
        fit = fit_clock([r.s_ns for r in rs], [r.e_ns for r in rs], [r.value_ns for r in rs],
                        1_000_000)
        seg = fit.segments[0]
        truth = model.offset_ns(seg.epoch_ns)
    widths = sorted(r.e_ns - r.s_ns for r in rs)
    q = lambda f: widths[int(f * (len(widths) - 1))] / 1e6  # noqa: E731
    return {"latency_timer_ms": latency_ms, "reads": reads,
            "span_s": (rs[-1].e_ns - rs[0].s_ns) / 1e9, "segments": len(fit.segments),
            "bracket_min_ms": q(0), "bracket_median_ms": q(0.5), "bracket_p90_ms": q(0.9),
            "bracket_max_ms": q(1.0),
            "offset_bound_width_ms": seg.offset_ns.width / 1e6,
            "offset_truth_inside": seg.offset_ns.lo <= truth <= seg.offset_ns.hi,
            "drift_bound_ppm": [round(seg.drift_ppm.lo, 1), round(seg.drift_ppm.hi, 1)]}


if __name__ == "__main__":
    for lat in (16, 1):
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                          for k, v in measure(lat).items()}))
