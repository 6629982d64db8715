"""Cooling plane over Modbus: emulated CDUs (families A and B; TCP, RTU on a pty, RTU over TCP)
read through the driver, pymodbus' synchronous client and mbpoll, over real sockets and ptys."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import shutil
import subprocess
import threading
import time
import tomllib
from dataclasses import replace
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pymodbus.client import ModbusSerialClient, ModbusTcpClient

from bench.config.inventory import rack_from_dict
from bench.reference.clock import Reference
from bench.sim.rack import read_samples, samples_in
from drivers import driver_class
from drivers.base import DeviceError, StimulusRefused
from drivers.modbus_map import MAP_DIR, MapError, load_map

NS = 1_000_000_000
ADDRESSES = {"tcp": "tcp://127.0.0.1:0", "rtu": "serial://auto", "socket": "socket://127.0.0.1:0"}


def cdu(name: str, family: str, transport: str = "tcp", stimuli=(), extra: str = "",
        sim: str = "") -> str:
    return f"""
[devices.{name}]
plane = "cooling"
driver = "modbus_cooling"
address = "{ADDRESSES[transport]}"
map = "{family}"
timezone = "Europe/Berlin"
stimuli = {json.dumps(list(stimuli))}
{extra if "timeout_s" in extra else "timeout_s = 0.5"}
{extra if "timeout_s" not in extra else ""}
[devices.{name}.sim]
{sim}
"""


def driver(sim, name: str, armed: bool = True):
    dev = sim.rack.device(name)
    return driver_class(dev.driver)(dev, Reference.now_ns, armed=armed)


def samples(sim, name: str) -> list[tuple[int, int]]:
    return read_samples(sim.out_dir / "sim_samples.csv").get((name, "rtc"), [])


inside = samples_in


async def read_n(drv, n: int):
    await drv.open()
    try:
        return [await drv.read_clock("rtc") for _ in range(n)]
    finally:
        await drv.close()


def zone_offset_ns(zone: str) -> int:
    return int(dt.datetime.now(ZoneInfo(zone)).utcoffset().total_seconds()) * NS


# -- maps ------------------------------------------------------------------------------------------
def test_maps_describe_two_families():
    a, b = load_map("family_a"), load_map("family_b")
    assert (a.rtc.encoding, a.rtc.time_base, a.rtc.span.count) == ("fields", "local", 6)
    assert a.rtc.fields == ("year", "month", "day", "hour", "minute", "second")
    assert (b.rtc.encoding, b.rtc.time_base, b.rtc.span.count, b.word_order) == \
        ("epoch32", "utc", 2, "little")
    assert type(a.alarm_log).__name__ == "RingLogSpec"
    assert type(b.alarm_log).__name__ == "WindowLogSpec"
    assert {s.name for s in a.sensors} == {s.name for s in b.sensors} == \
        {"supply_temp", "return_temp", "flow", "pump_speed"}
    assert a.local_time and not b.local_time


def test_bad_map_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((MAP_DIR / "family_a.toml").read_text().replace('encoding = "fields"',
                                                                    'encoding = "weird"'))
    with pytest.raises(MapError, match="rtc.encoding"):
        load_map(str(bad))
    with pytest.raises(MapError, match="known maps"):
        load_map("no_such_family")


def test_driver_config_errors():
    rack = rack_from_dict(tomllib.loads(cdu("x", "family_a").replace(
        'timezone = "Europe/Berlin"\n', "")))
    with pytest.raises(DeviceError, match="must declare its zone"):
        driver_class("modbus_cooling")(rack.device("x"), Reference.now_ns)
    rack = rack_from_dict(tomllib.loads(cdu("x", "family_c")))
    with pytest.raises(DeviceError, match="no register map"):
        driver_class("modbus_cooling")(rack.device("x"), Reference.now_ns)


# -- the RTC through the driver ------------------------------------------------------------------
@pytest.mark.parametrize("family,transport", [("family_a", "tcp"), ("family_b", "tcp"),
                                              ("family_a", "rtu"), ("family_b", "rtu"),
                                              ("family_b", "socket")])
@pytest.mark.usefixtures("kernel_rx_stamps")
def test_rtc_bracket_contains_the_sample(sim_rack, family, transport):
    """Over TCP on the CLOCK_REALTIME reference `e` is the kernel's arrival stamp, on any other
    reference (and on a serial line) the loop's: every bracket holds the device's sample."""
    sim = sim_rack(cdu("cdu", family, transport, extra="baudrate = 38400",
                       sim="offset_s = -3.25\ndrift_ppm = 100.0"))
    assert not sim.failed, sim.failed
    drv = driver(sim, "cdu")
    assert [(c.name, c.resolution_ns) for c in drv.clocks()] == [("rtc", NS)]
    reads = asyncio.run(read_n(drv, 20))
    assert {r.stamp for r in reads} == {"user" if transport == "rtu" else "kernel"}
    dev = sim.rack.device("cdu")
    by_loop = asyncio.run(read_n(driver_class(dev.driver)(dev, lambda: Reference.now_ns()), 5))
    assert {r.stamp for r in by_loop} == {"user"}          # not CLOCK_REALTIME's own function
    smp = samples(sim, "cdu")
    for r in reads + by_loop:
        hit = inside(smp, r.s_ns, r.e_ns)
        assert len(hit) == 1, (r, hit)                   # one request, one sample, inside [s, e]
        assert hit[0][1] == r.value_ns                   # and the value is that sample's
        assert r.resolution_ns == NS and r.value_ns % NS == 0
        assert -4.5 * NS < r.value_ns - r.s_ns < -2 * NS  # offset -3.25 s at 1 s resolution


def test_identity_and_sensors(sim_rack):
    sim = sim_rack(cdu("a", "family_a", sim='firmware = "3.1.4"\nserial = "NK0001234"')
                   + cdu("b", "family_b", "rtu", sim='firmware = "7.0.2"\nserial = "KW-99"'))

    async def go(name):
        d = driver(sim, name)
        await d.open()
        try:
            return await d.identity(), await d.read_sensors()
        finally:
            await d.close()

    ida, sa = asyncio.run(go("a"))
    idb, sb = asyncio.run(go("b"))
    assert (ida.vendor, ida.firmware, ida.serial) == ("Nordkuehl GmbH", "3.1.4", "NK0001234")
    assert (idb.vendor, idb.firmware, idb.serial) == ("Kaltwerk Systems", "7.0.2", "KW-99")
    assert ida.extra["map_matches"] and idb.extra["map_matches"]
    for s in (sa, sb):
        assert 15 < s["supply_temp"]["value"] < 21 and s["supply_temp"]["unit"] == "degC"
        assert s["return_temp"]["value"] > s["supply_temp"]["value"]
        assert 250 < s["flow"]["value"] < 350 and 2000 < s["pump_speed"]["value"] < 2800


def test_identity_without_device_identification_comes_from_the_map(sim_rack):
    sim = sim_rack(cdu("old", "family_b", "rtu", sim="identification = false"))

    async def go():
        d = driver(sim, "old")
        await d.open()
        try:
            return await d.identity()
        finally:
            await d.close()

    ident = asyncio.run(go())
    assert (ident.vendor, ident.firmware) == ("Kaltwerk Systems", "")
    assert "illegal function" in ident.extra["source"]


def test_zone_mismatch_shows_as_the_zones_difference(sim_rack):
    sim = sim_rack(cdu("wrong", "family_a", sim='rtc_timezone = "Asia/Kolkata"')
                   + cdu("right", "family_a", sim='rtc_timezone = "Europe/Berlin"'))
    wrong = asyncio.run(read_n(driver(sim, "wrong"), 3))
    right = asyncio.run(read_n(driver(sim, "right"), 3))
    diff = zone_offset_ns("Asia/Kolkata") - zone_offset_ns("Europe/Berlin")
    for r in right:      # sampled at t in [s, e], the reading floor(t) lies in (s - 1 s, e]
        assert r.value_ns - r.e_ns <= 0 < r.value_ns - r.s_ns + NS
    for r in wrong:
        assert r.value_ns - diff - r.e_ns <= 0 < r.value_ns - diff - r.s_ns + NS
    # and the emulator's truth carries the same error, so bounds can be checked against it
    truth = sim.ctx.truth()["devices"]["wrong"]["clocks"]["rtc"]
    assert truth["tz_error_ns"] == diff


def test_no_torn_second(sim_rack):
    """A read across the RTC registers comes from one sample, even where it straddles the
    controller's second edge: reads are packed around edges, with sampling and answering apart
    (reply delay); first alone (exactly the sample in its bracket), then while a second client
    hammers the device (one of the samples in its bracket)."""
    sim = sim_rack(cdu("cdu", "family_a", sim="reply_delay_s = 0.002\nsample_delay_s = 0.001"))
    port = int(sim.rack.device("cdu").address.rsplit(":", 1)[1])
    stop = threading.Event()

    def hammer():
        c = ModbusTcpClient("127.0.0.1", port=port, retries=0, timeout=1)
        c.connect()
        while not stop.is_set():
            c.read_holding_registers(100, count=6, device_id=1)
        c.close()

    async def around_edges(d, edges: int):
        """Reads packed around `edges` of the device's second edges (offset 0, drift 0); an
        edge whose reads did not start before it (a loaded machine woke us late) is tried again
        at the next one, for at most 120 edges."""
        out: list = []
        for _ in range(120):
            edge = (time.time_ns() // NS + 1) * NS
            await asyncio.sleep(max(0.0, (edge - 15_000_000 - time.time_ns()) / NS))
            got = []
            while time.time_ns() < edge + 15_000_000:
                got.append(await d.read_clock("rtc"))
            out += got
            edges -= any(r.s_ns < edge for r in got) and any(r.e_ns > edge for r in got)
            if edges <= 0:
                break
        return out

    async def go():
        d = driver(sim, "cdu")
        await d.open()
        alone = await around_edges(d, 2)
        th.start()
        together = await around_edges(d, 2)
        await d.close()
        return alone, together

    th = threading.Thread(target=hammer)
    try:
        alone, together = asyncio.run(go())
    finally:
        stop.set()
        if th.is_alive():
            th.join()
    smp = samples(sim, "cdu")
    assert len({r.value_ns for r in alone}) >= 2         # the reads did straddle edges
    assert len({r.value_ns for r in together}) >= 2
    for r in alone:
        [(t, v)] = inside(smp, r.s_ns, r.e_ns)
        assert r.value_ns == v, r
    assert len(smp) > len(alone) + len(together)         # the other client did interleave
    for r in together:
        assert r.value_ns in {v for _t, v in inside(smp, r.s_ns, r.e_ns)}, r


# -- second clients --------------------------------------------------------------------------------
def decode_family_a(regs, zone="Europe/Berlin") -> int:
    t = dt.datetime(*regs, tzinfo=ZoneInfo(zone))
    return int(t.timestamp()) * NS


def test_pymodbus_sync_client_tcp_and_rtu(sim_rack):
    sim = sim_rack(cdu("a", "family_a") + cdu("b", "family_b", "rtu"))
    port = int(sim.rack.device("a").address.rsplit(":", 1)[1])
    c = ModbusTcpClient("127.0.0.1", port=port, retries=0, timeout=1)
    assert c.connect()
    s = time.time_ns()
    rr = c.read_holding_registers(100, count=6, device_id=1)
    e = time.time_ns()
    info = c.read_device_information(read_code=1, device_id=1).information
    bad = c.read_holding_registers(99, count=2, device_id=1)
    c.close()
    [(t, v)] = inside(samples(sim, "a"), s, e)
    assert decode_family_a(rr.registers) == v
    assert info[0] == b"Nordkuehl GmbH" and info[1] == b"NK-CDU-A"
    assert bad.isError() and bad.exception_code == 2

    path = sim.rack.device("b").address[len("serial://"):]
    c = ModbusSerialClient(path, baudrate=19200, retries=0, timeout=1)
    assert c.connect()
    s = time.time_ns()
    rr = c.read_holding_registers(1024, count=2, device_id=1)
    e = time.time_ns()
    info = c.read_device_information(read_code=4, object_id=0x80, device_id=1).information
    c.close()
    lo, hi = rr.registers                                 # family B: low word first
    [(t, v)] = inside(samples(sim, "b"), s, e)
    assert (hi << 16 | lo) * NS == v
    assert info[0x80].startswith(b"SN")


@pytest.mark.skipif(shutil.which("mbpoll") is None, reason="mbpoll not installed")
def test_mbpoll_reads_the_rtc_over_tcp_and_rtu(sim_rack):
    sim = sim_rack(cdu("a", "family_a") + cdu("b", "family_b", "rtu"))
    port = sim.rack.device("a").address.rsplit(":", 1)[1]
    path = sim.rack.device("b").address[len("serial://"):]
    common = ["-a", "1", "-0", "-t", "4", "-1", "-o", "2"]
    runs = {"a": ["-m", "tcp", "-p", port, "-r", "100", "-c", "6", "127.0.0.1"],
            "b": ["-m", "rtu", "-b", "19200", "-P", "none", "-r", "1024", "-c", "2", path]}
    for name, args in runs.items():
        s = time.time_ns()
        p = subprocess.run(["mbpoll", *common, *args], capture_output=True, text=True, timeout=10)
        e = time.time_ns()
        assert p.returncode == 0, p.stdout + p.stderr
        regs = [int(x) for x in re.findall(r"^\[\d+\]:\s+(-?\d+)", p.stdout, re.M)]
        hit = inside(samples(sim, name), s, e)
        assert len(hit) == 1
        if name == "a":
            assert decode_family_a(regs) == hit[0][1]
        else:
            lo, hi = (r & 0xFFFF for r in regs)
            assert (hi << 16 | lo) * NS == hit[0][1]
    p = subprocess.run(["mbpoll", *common, "-m", "tcp", "-p", port, "-r", "99", "-c", "1",
                        "127.0.0.1"], capture_output=True, text=True, timeout=10)
    assert "Illegal data address" in p.stdout + p.stderr


# -- the test alarm and the alarm log -------------------------------------------------------------
@pytest.mark.parametrize("family,transport", [("family_a", "tcp"), ("family_b", "rtu")])
def test_test_alarm_is_logged_with_the_controller_stamp(sim_rack, family, transport):
    sim = sim_rack(cdu("cdu", family, transport, stimuli=["test_alarm"],
                       sim='rtc_timezone = "Asia/Kolkata"\nlog_latency_s = [0.1, 0.2]\n'
                           'offset_s = 7.5'))

    async def go():
        d = driver(sim, "cdu")
        await d.open()
        try:
            before, cursor = await d.log_entries(None)
            st = await d.stimulate("test_alarm")
            seen = []
            for _ in range(40):
                await asyncio.sleep(0.05)
                got, cursor = await d.log_entries(cursor)
                seen += got
                if seen:
                    break
            again, cursor2 = await d.log_entries(cursor)
            return before, st, seen, again, cursor, cursor2
        finally:
            await d.close()

    before, st, seen, again, cursor, cursor2 = asyncio.run(go())
    assert before == [] and again == [] and cursor2 == cursor
    assert st.sent and st.s_ns <= st.e_ns
    [entry] = seen
    events = sim.ctx.events["cdu"]
    [stim] = [ev for ev in events if ev["kind"] == "test_alarm"]
    [log] = [ev for ev in events if ev["kind"] == "log"]
    assert st.s_ns <= stim["t_ns"] <= st.e_ns            # the write arrived inside its bracket
    assert entry.clock == "rtc" and entry.resolution_ns == NS
    assert entry.value_ns == log["created_ns"]           # the controller's own stamp, as UTC ns
    assert log["t_ns"] <= entry.e_ns                     # logged before the fetch that saw it
    code = load_map(family).test_alarm.code
    assert f"alarm {code}" in entry.message


def test_stimulus_refused_or_unarmed(sim_rack):
    sim = sim_rack(cdu("no", "family_a") + cdu("yes", "family_b", stimuli=["test_alarm"]))

    async def go():
        d = driver(sim, "no")
        await d.open()
        with pytest.raises(StimulusRefused):
            await d.stimulate("test_alarm")
        await d.close()
        d = driver(sim, "yes", armed=False)
        await d.open()
        st = await d.stimulate("test_alarm")
        await d.close()
        return st

    assert not asyncio.run(go()).sent
    time.sleep(0.05)
    assert not [ev for ev in sim.ctx.events.get("yes", []) if ev["kind"] == "test_alarm"]


# -- errors ----------------------------------------------------------------------------------------
def test_exception_responses_are_clear_errors(sim_rack):
    sim = sim_rack(cdu("wrongmap", "family_a", sim='map = "family_b"')
                   + cdu("busy", "family_b", "rtu", sim="busy_every = 3"))

    async def go():
        d = driver(sim, "wrongmap")
        await d.open()
        with pytest.raises(DeviceError) as e1:
            await d.read_clock("rtc")
        await d.close()
        d = driver(sim, "busy")
        await d.open()
        kinds = []
        for _ in range(6):
            try:
                await d.read_clock("rtc")
                kinds.append("ok")
            except DeviceError as exc:
                kinds.append(exc)
        await d.close()
        return e1.value, kinds

    e1, kinds = asyncio.run(go())
    assert e1.device == "wrongmap" and e1.kind == "protocol"
    assert "illegal data address" in e1.message and "RTC" in e1.message
    assert [k if k == "ok" else k.kind for k in kinds] == ["ok", "ok", "protocol"] * 2
    assert "exception 6 (server device busy)" in kinds[2].message


def test_dropped_connection_and_silent_line(sim_rack):
    """A reboot closes the TCP connection ("reset"), the port then refuses ("unreachable"); an
    RTU controller that is down does not answer ("timeout"). Both recover. The reboots come
    after each driver's first read, on the test's command."""
    sim = sim_rack(cdu("tcp", "family_a", sim="reboot_down_s = 1.0")
                   + cdu("rtu", "family_b", "rtu", sim="reboot_down_s = 1.0"))

    async def go(name):
        d = driver(sim, name)
        await d.open()
        first = await d.read_clock("rtc")
        await asyncio.to_thread(lambda: sim.fault(name, "reboot").result(10))
        kinds = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                await d.read_clock("rtc")
                kinds.append("ok")
                break
            except DeviceError as exc:
                kinds.append(exc.kind)
                await asyncio.sleep(0.1)
        await d.close()
        return first, kinds

    async def both():
        return await asyncio.gather(go("tcp"), go("rtu"))

    (_, tcp), (_, rtu) = asyncio.run(both())
    assert tcp[0] == "reset" and tcp[-1] == "ok", tcp
    assert set(tcp[1:-1]) <= {"unreachable"}
    assert rtu[0] == "timeout" and rtu[-1] == "ok" and set(rtu[1:-1]) <= {"timeout"}, rtu
    assert [ev["kind"] for ev in sim.ctx.events["tcp"]] == ["reboot", "up"]


def test_connection_dropped_during_a_request_is_a_reset(sim_rack):
    """The reboot comes while the answer is being prepared (it is armed to follow the next clock
    sample; the reply comes 0.3 s after that sample): the request fails at once as "reset", not
    after the timeout."""
    sim = sim_rack(cdu("slow", "family_a", extra="timeout_s = 2.0",
                       sim="reboot_down_s = 0.5\nreply_delay_s = 0.3"))

    async def go():
        d = driver(sim, "slow")
        await d.open()
        armed = await asyncio.to_thread(sim.fault, "slow", "reboot", after_samples=1)
        s = time.time_ns()
        try:
            await d.read_clock("rtc")
            return None, 0, armed.result(10)
        except DeviceError as exc:
            return exc, time.time_ns() - s, armed.result(10)
        finally:
            await d.close()

    exc, took, reboot = asyncio.run(go())
    assert exc is not None and exc.kind == "reset" and "during read RTC" in exc.message, exc
    assert took < 2 * NS                                 # not the 2 s timeout
    [(t_sample, _)] = [x for x in samples(sim, "slow") if x[0] <= reboot]
    assert t_sample <= reboot < t_sample + round(0.3 * NS)   # inside the reply delay


def test_rtu_line_delay_models_the_baud_rate(sim_rack):
    sim = sim_rack(cdu("slow", "family_b", "rtu", extra="baudrate = 9600", sim="line_delay = true"))
    dev = sim.rack.device("slow")
    dev = replace(dev, address=dev.address + "?baud=9600&parity=N")   # the URL form of the port
    reads = asyncio.run(read_n(driver_class(dev.driver)(dev, Reference.now_ns), 3))
    # request 8 bytes + answer 9 bytes at 10 bits each: at least 17.7 ms on the modelled line
    assert min(r.e_ns - r.s_ns for r in reads) >= 17 * 10 * NS // 9600
    smp = samples(sim, "slow")
    assert all(len(inside(smp, r.s_ns, r.e_ns)) == 1 for r in reads)


def test_a_new_controller_is_a_new_map_file(sim_rack, tmp_path):
    """Family C: family A's layout moved, serial as an MEI object, 32-bit RTC big-endian in local
    time -- served and read with no new code."""
    text = (MAP_DIR / "family_b.toml").read_text()
    text = text.replace('family = "family_b"', 'family = "family_c"')
    text = text.replace('word_order = "little"', 'word_order = "big"')
    text = text.replace("address = 1024", "address = 2048")
    text = text.replace('encoding = "epoch32"\ntime_base = "utc"',
                        'encoding = "epoch32"\ntime_base = "local"')
    path = tmp_path / "family_c.toml"
    path.write_text(text)
    assert load_map(str(path)).rtc.time_base == "local"
    sim = sim_rack(cdu("c", str(path), "socket", sim='rtc_timezone = "America/New_York"'))
    reads = asyncio.run(read_n(driver(sim, "c"), 3))
    diff = zone_offset_ns("America/New_York") - zone_offset_ns("Europe/Berlin")
    smp = samples(sim, "c")
    for r in reads:
        [(t, v)] = inside(smp, r.s_ns, r.e_ns)
        assert r.value_ns == v and r.value_ns - diff - r.e_ns <= 0 < r.value_ns - diff - r.s_ns + NS


# -- the default rack ------------------------------------------------------------------------------
def test_default_rack_cooling_devices(sim_rack):
    text = (Path(__file__).parents[1] / "bench" / "sim" / "default_rack.toml").read_text()
    data = tomllib.loads(text)
    cooling = {k: v for k, v in data["devices"].items() if v.get("driver") == "modbus_cooling"}
    if not cooling:
        pytest.skip("no modbus_cooling device in the default rack")
    sub = {"rack": {"name": "default-cooling", "seed": data["rack"].get("seed", 1)},
           "devices": cooling}
    import tomli_w
    sim = sim_rack(tomli_w.dumps(sub))
    assert not sim.failed, sim.failed
    assert {load_map(v["map"]).name for v in cooling.values()} >= {"family_a", "family_b"}
    for name in cooling:
        reads = asyncio.run(read_n(driver(sim, name), 2))
        smp = samples(sim, name)
        assert all(len(inside(smp, r.s_ns, r.e_ns)) == 1 for r in reads)


# -- a real rack -----------------------------------------------------------------------------------
@pytest.mark.with_device
def test_modbus_cooling_with_device(real_rack):
    devices = [d for d in real_rack.devices if d.driver == "modbus_cooling"]
    if not devices:
        pytest.skip("the rack file has no modbus_cooling device")

    async def go(dev):
        d = driver_class(dev.driver)(dev, Reference.now_ns, armed=False)
        await d.open()
        try:
            ident = await d.identity()
            reads = [await d.read_clock("rtc") for _ in range(5)]
            entries, _cursor = await d.log_entries(None)
            return ident, reads, entries
        finally:
            await d.close()

    for dev in devices:
        ident, reads, entries = asyncio.run(go(dev))
        assert ident.vendor or ident.model
        for r in reads:
            assert r.s_ns <= r.e_ns and r.resolution_ns > 0
            assert abs(r.value_ns - r.s_ns) < 10 * 365 * 86400 * NS   # a date, not garbage
        assert all(e.clock == "rtc" for e in entries)
