"""The IPMI plane against OpenIPMI's real `ipmi_sim` over RMCP+, and `ipmitool` reading the same.

Truth is the host's own clock: ipmi_sim's SEL time is floor(CLOCK_MONOTONIC s) + off, off = 0
until Set SEL Time ("pre-init": seconds since the host booted)."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import shutil
import socket
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

from bench.analysis.estimate import fit_clock
from bench.config.inventory import device_from_table
from bench.model.logformats import ns_to_sel_seconds, sel_zone
from bench.model.summary import zone_note
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.ipmi_bmc_emu import IpmiSim, host_clock_pair, ipmi_sim_path
from drivers.base import DeviceError
from drivers.ipmi_bmc import PRE_INIT_MAX, IpmiBMC

NS = 1_000_000_000
PW_ENV = "RACKCLOCK_TEST_IPMI_PASSWORD"

needs_ipmitool = pytest.mark.skipif(shutil.which("ipmitool") is None,
                                    reason="ipmitool not installed (Debian package ipmitool)")


@pytest.fixture
def bmc(tmp_path):
    """A running ipmi_sim and the device entry of the driver for it."""
    if ipmi_sim_path() is None:
        pytest.skip("ipmi_sim not installed (Debian package openipmi)")
    pw = secrets.token_urlsafe(12)
    os.environ[PW_ENV] = pw
    sim = IpmiSim("admin", pw, workdir=tmp_path / "ipmi").start()

    def device(**options):
        t = {"plane": "ipmi", "driver": "ipmi_bmc", "address": f"ipmi://127.0.0.1:{sim.port}",
             "username": "admin", "password_env": PW_ENV, "stimuli": ["sel_entry"], **options}
        return device_from_table("ipmi-t", t)

    yield sim, device
    sim.stop()


def run(coro):
    return asyncio.run(coro)


async def with_driver(dev, fn):
    drv = IpmiBMC(dev, Reference.now_ns, armed=True)
    await drv.open()
    try:
        return await fn(drv)
    finally:
        await drv.close()


def mono_minus_real() -> tuple[int, int]:
    _, m_minus_r, u = (lambda r, m, u: (r, m - r, u))(*host_clock_pair())
    return m_minus_r, u


async def paced_reads(d, n: int, spacing_s: float = 0.09):
    """n reads spread over several seconds at an irrational-ish pacing (crossing tick edges)."""
    out = []
    for k in range(n):
        out.append(await d.read_clock(d.clocks()[0].name))
        await asyncio.sleep(spacing_s * (1 + 0.37 * (k % 3)))
    return out


def check_reads_against_host(reads, off_s: int, zone_shift_s: int = 0):
    """Each read's value is floor(mono_s) + off - zone shift at some instant of its bracket."""
    d, u = mono_minus_real()
    for r in reads:
        lo = (r.s_ns + d - u) // NS + off_s - zone_shift_s
        hi = (r.e_ns + d + u) // NS + off_s - zone_shift_s
        assert lo <= r.value_ns // NS <= hi, (r, lo, hi)
        assert r.value_ns % NS == 0 and r.resolution_ns == NS and r.stamp == "socket"
        assert 0 < r.e_ns - r.s_ns         # (how wide a bracket gets is the load's, not the driver's)


def fitted_offset_contains(reads, truth_ns: int) -> tuple[int, int]:
    s = np.array([r.s_ns for r in reads], dtype=np.int64)
    e = np.array([r.e_ns for r in reads], dtype=np.int64)
    v = np.array([r.value_ns for r in reads], dtype=np.int64)
    fit = fit_clock(s, e, v, NS)
    seg = fit.segments[-1]
    b = seg.offset_at(int(e[-1]))
    assert b.lo <= truth_ns <= b.hi, (b, truth_ns)
    return b.lo, b.hi


def test_firmware_without_a_minor_is_served_as_minor_zero(bmc):
    """`firmware = "3"` (no minor) once failed the emulator's start: int(0, 16) is a TypeError."""
    sim, device = bmc
    sim3 = IpmiSim("admin", sim.password, firmware="3").start()
    try:
        dev = dataclasses.replace(device(), address=f"ipmi://127.0.0.1:{sim3.port}")
        assert run(with_driver(dev, lambda d: d.identity())).firmware == "3.00"
    finally:
        sim3.stop()


# -- the clock -----------------------------------------------------------------------------------
def test_pre_init_sel_clock_is_a_counter_from_boot_and_bounds_hold(bmc):
    sim, device = bmc
    dev = device()

    async def go(d):
        return d.clocks(), await d.identity(), await paced_reads(d, 40)

    clocks, ident, reads = run(with_driver(dev, go))
    assert [(c.name, c.counter) for c in clocks] == [("sel_init", True)]
    assert ident.extra["sel_clock"] == "sel_init" and ident.firmware == "1.00"
    sim2 = IpmiSim("admin", sim.password, firmware="2.10").start()
    try:
        assert run(with_driver(dataclasses.replace(dev, address=f"ipmi://127.0.0.1:{sim2.port}"),
                               lambda d: d.identity())).firmware == "2.10"
    finally:
        sim2.stop()
    assert ident.vendor == "IANA 4753" and ident.extra["ipmi_version"] == "2.0"
    assert all(r.clock == "sel_init" and "pre-init" in r.raw for r in reads)
    assert all(r.value_ns < PRE_INIT_MAX * NS for r in reads)
    check_reads_against_host(reads, 0)
    d, _ = mono_minus_real()
    lo, hi = fitted_offset_contains(reads, d)          # the init instant is the host's boot
    assert hi - lo < 1.2 * NS


def test_set_sel_time_gives_a_wall_clock_whose_bounds_contain_the_host_clock(bmc):
    sim, device = bmc
    sim.set_sel_time(Reference.now_ns() // NS + 5)      # 5 s fast (and the sub-second phase
    off = sim.sel_offset_s()                            # is CLOCK_MONOTONIC's, not realtime's)
    dev = device(sel_timezone="UTC")
    reads = run(with_driver(dev, lambda d: paced_reads(d, 40)))
    assert {r.clock for r in reads} == {"sel"} and "pre-init" not in reads[0].raw
    check_reads_against_host(reads, off)
    d, _ = mono_minus_real()
    truth = d + off * NS
    assert abs(truth - 5 * NS) < 1.01 * NS
    fitted_offset_contains(reads, truth)


def test_sel_timezone_declared_unknown_or_wrong(bmc):
    sim, device = bmc
    berlin = sel_zone("Europe/Berlin")
    now = Reference.now_ns()
    sim.set_sel_time(ns_to_sel_seconds(now, berlin))
    off = sim.sel_offset_s()
    shift = ns_to_sel_seconds(now, berlin) - now // NS            # 3600 or 7200
    declared = run(with_driver(device(sel_timezone="Europe/Berlin"),
                               lambda d: paced_reads(d, 6, 0.05)))
    check_reads_against_host(declared, off, shift)
    unknown = run(with_driver(device(), lambda d: paced_reads(d, 6, 0.05)))
    check_reads_against_host(unknown, off)
    mid = float(np.median([r.value_ns - r.s_ns for r in unknown]))
    note = zone_note(mid - NS, mid + NS)
    assert f"+0{shift // 3600}:00" in note and "local time" in note
    with pytest.raises(DeviceError) as e:
        IpmiBMC(device(sel_timezone="Mars/Olympus"), Reference.now_ns)
    assert e.value.kind == "error" and "Mars/Olympus" in e.value.message


# -- the log and the stimulus --------------------------------------------------------------------
def test_sel_entry_is_logged_and_a_pre_init_stamp_maps_through_the_init_instant(bmc):
    sim, device = bmc

    async def go(d):
        before, cursor = await d.log_entries(None)
        st = await d.stimulate("sel_entry")
        entries, cursor2 = await d.log_entries(cursor)
        again, _ = await d.log_entries(cursor2)
        return before, st, entries, again

    before, st, entries, again = run(with_driver(device(), go))
    assert before == [] and again == [] and len(entries) == 1
    (en,) = entries
    assert st.sent and st.s_ns < st.e_ns and en.clock == "sel_init" and "pre-init" in en.message
    d, u = mono_minus_real()
    # ipmi_sim stamps the record on arrival: floor(mono_s) inside the stimulus' bracket
    assert (st.s_ns + d - u) // NS <= en.value_ns // NS <= (st.e_ns + d + u) // NS
    # mapped through the init instant (reference = stamp - offset of the counter)
    assert st.s_ns - NS <= en.value_ns - d <= st.e_ns + NS
    assert en.s_ns <= en.e_ns and en.s_ns > st.e_ns


def test_stimulus_not_in_inventory_is_refused(bmc):
    sim, device = bmc
    dev = dataclasses.replace(device(), stimuli=())
    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, lambda d: d.stimulate("sel_entry")))
    assert e.value.kind == "refused"
    assert run(with_driver(device(), lambda d: d.log_entries(None)))[0] == []


# -- ipmitool reads the same ---------------------------------------------------------------------
def ipmitool(sim, *args: str) -> str:
    r = subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p",
                        str(sim.port), "-U", sim.username, "-P", sim.password, *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_ipmitool
def test_ipmitool_reads_the_same_sel_time_and_entries(bmc):
    sim, device = bmc
    sim.set_sel_time(Reference.now_ns() // NS - 100)
    off = sim.sel_offset_s()

    def tool_offset() -> int:
        for _ in range(20):
            m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            out = ipmitool(sim, "raw", "0x0a", "0x48")
            m2 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if m1 // NS == m2 // NS:
                return struct.unpack("<I", bytes.fromhex(out.replace(" ", "").strip()))[0] - m1 // NS
        raise AssertionError("no ipmitool read inside one monotonic second")

    assert tool_offset() == off

    async def go(d):
        st = await d.stimulate("sel_entry")
        entries, _ = await d.log_entries(None)
        return st, entries, await paced_reads(d, 5, 0.05)

    st, entries, reads = run(with_driver(device(sel_timezone="UTC"), go))
    check_reads_against_host(reads, off)
    (en,) = entries
    rec = ipmitool(sim, "raw", "0x0a", "0x43", "0", "0", en.cursor[2:], en.cursor[:2], "0", "0xff")
    data = bytes.fromhex(rec.replace(" ", "").replace("\n", ""))[2:]
    assert data.hex(" ") == en.raw
    assert struct.unpack("<I", data[3:7])[0] * NS == en.value_ns
    assert f"{int(en.cursor, 16):>4x}" in ipmitool(sim, "sel", "list").lower()


# -- failures ------------------------------------------------------------------------------------
def test_wrong_password_is_an_auth_error_without_the_password(bmc):
    sim, device = bmc
    wrong = "Wr0ng" + sim.password[::-1][:10]
    os.environ["RACKCLOCK_TEST_IPMI_WRONG"] = wrong
    bad = dataclasses.replace(device(), password_env="RACKCLOCK_TEST_IPMI_WRONG")
    with pytest.raises(DeviceError) as e:
        run(with_driver(bad, lambda d: d.identity()))
    assert e.value.kind == "auth" and "admin" in e.value.message
    assert wrong not in str(e.value) and sim.password not in str(e.value)
    nobody = dataclasses.replace(device(), username="nobody")
    with pytest.raises(DeviceError) as e:
        run(with_driver(nobody, lambda d: d.identity()))
    assert e.value.kind == "auth"


def test_closed_port_is_unreachable_at_once(bmc):
    sim, device = bmc
    port = free_port(socket.SOCK_DGRAM)
    dev = dataclasses.replace(device(timeout_s=600.0), address=f"ipmi://127.0.0.1:{port}")
    with pytest.raises(DeviceError) as e:     # kind unreachable: not the timeout's
        run(with_driver(dev, lambda d: d.identity()))
    assert e.value.kind == "unreachable" and str(port) in e.value.message


def test_silent_bmc_is_a_timeout(bmc):
    sim, device = bmc
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:     # bound, never answers
        s.bind(("127.0.0.1", 0))
        dev = dataclasses.replace(device(timeout_s=0.5),
                                  address=f"ipmi://127.0.0.1:{s.getsockname()[1]}")
        with pytest.raises(DeviceError) as e:
            run(with_driver(dev, lambda d: d.identity()))
    assert e.value.kind == "unreachable" and "no response" in e.value.message


class Proxy:
    """UDP relay between the driver and ipmi_sim; `mangle(datagram)` rewrites the BMC's answers."""

    def __init__(self, port: int):
        self.up = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.mangle = None
        self.client = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                data, addr = self.sock.recvfrom(4096)
            except OSError:
                continue
            if addr == self.up:
                if self.client:
                    self.sock.sendto(self.mangle(data) if self.mangle else data, self.client)
            else:
                self.client = addr
                self.sock.sendto(data, self.up)

    def close(self):
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


def test_malformed_answers_are_malformed_errors(bmc):
    sim, device = bmc
    proxy = Proxy(sim.port)
    try:
        dev = dataclasses.replace(device(timeout_s=2.0), address=f"ipmi://127.0.0.1:{proxy.port}")

        async def go(d):
            ok = await d.read_clock(d.clocks()[0].name)
            proxy.mangle = lambda b: b[:-1] + bytes([b[-1] ^ 0x5A])     # integrity trailer broken
            with pytest.raises(DeviceError) as e1:
                await d.read_clock(d.clocks()[0].name)
            proxy.mangle = lambda b: b[:4] + b"\x00garbage"              # not RMCP+ at all
            with pytest.raises(DeviceError) as e2:
                await d.read_clock(d.clocks()[0].name)
            return ok, e1.value, e2.value

        ok, e1, e2 = run(with_driver(dev, go))
        assert ok.value_ns > 0
        assert e1.kind == "malformed" and e2.kind == "malformed", (e1, e2)
        proxy.mangle = lambda b: b"\x06\x00\xff\x06junk"               # a broken ping answer
        with pytest.raises(DeviceError) as e:
            run(with_driver(dev, lambda d: d.identity()))
        assert e.value.kind == "malformed", e.value
    finally:
        proxy.close()


def test_without_ipmi_sim_the_rack_leaves_the_ipmi_devices_out_with_the_reason(monkeypatch,
                                                                               sim_rack):
    from racks import sim_rack_text

    import bench.sim.ipmi_bmc_emu
    monkeypatch.setattr(bench.sim.ipmi_bmc_emu, "ipmi_sim_path", lambda: None)
    os.environ.setdefault("RACKCLOCK_SIM_IPMI_PASSWORD", "pw-" + secrets.token_hex(4))
    sim = sim_rack(sim_rack_text(["ipmi-1", "ipmi-2", "bmc-1"]))
    assert [d.name for d in sim.rack.devices] == ["bmc-1"]
    assert set(sim.failed) == {"ipmi-1", "ipmi-2"}
    assert all("ipmi_sim is not installed" in why for why in sim.failed.values())


def test_log_reads_on_from_the_cursor_and_all_again_after_a_clear(bmc):
    sim, device = bmc

    async def go(d):
        for _ in range(3):
            await d.stimulate("sel_entry")
        first, cursor = await d.log_entries(None)
        await d.stimulate("sel_entry")
        more, cursor2 = await d.log_entries(cursor)
        none, _ = await d.log_entries(cursor2)
        # clear the SEL (Reserve SEL, then Clear SEL "CLR" initiate): the cursor's record is gone
        await d._call(lambda i: i.clear_sel(), "Clear SEL")
        await d.stimulate("sel_entry")
        after_clear, _ = await d.log_entries(cursor2)
        return first, more, none, after_clear

    first, more, none, after_clear = run(with_driver(device(), go))
    assert [e.cursor for e in first] == ["0001", "0002", "0003"]
    assert [e.cursor for e in more] == ["0004"] and none == []
    assert len(after_clear) == 1 and "data 00 05" in after_clear[0].message
