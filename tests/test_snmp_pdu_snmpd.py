"""The PDU driver against net-snmp's own agent, snmpd: an agent whose sysObjectID names no PDU MIB
(NET-SNMP-MIB's linux agent). The driver says so, refuses outlet stimuli with that reason, and its
sysUpTime bound on the counter's zero meets the interval the truth is independently known in:
snmpd's sysUpTime counts from the agent's start (not the host's boot), which lies between the
kernel's start time of the process (/proc/PID/stat, in clock ticks since boot, mapped to
CLOCK_REALTIME) and the end of the first exchange it answered (measured here: the bound lies
4-16 ms after the process start, the interval spans 0-725 ms).

Its hrSystemDate is the host's CLOCK_REALTIME through libc time(), the kernel's coarse clock: in
UTC (the driver takes off the offset the agent states) the truth is offset 0 against a
CLOCK_REALTIME reference, seen through a tick that flips a few ms after the true second. A whole
run of it, with the lag the driver declares, holds that truth; the runner aims at its 1 s tick
(declared 100 ms) from any phase of its slot grid."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

from bench.analysis.counters import split_reboots
from bench.config.inventory import DeviceConfig
from bench.model.rundata import load_run
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.run.experiment import run_experiment
from bench.run.runner import DeviceWorker, ProbePlan
from drivers.base import DeviceError
from drivers.snmp_pdu import HR_DATE_LAG_NS, SnmpPdu

pytestmark = pytest.mark.skipif(not shutil.which("snmpd"), reason="net-snmp's snmpd (apt: snmpd)")
ENV = "RACKCLOCK_TEST_SNMPD_COMMUNITY"
NS = 1_000_000_000
TICK = 10_000_000


def process_start_realtime_ns(pid: int) -> tuple[int, int]:
    """(earliest, latest) CLOCK_REALTIME instant the kernel says the process started (its
    starttime is in clock ticks since boot, on CLOCK_BOOTTIME)."""
    hz = os.sysconf("SC_CLK_TCK")
    ticks = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
    real0 = time.clock_gettime_ns(time.CLOCK_REALTIME)
    boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    real1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
    start = ticks * NS // hz
    return real0 - boot + start, real1 - boot + start + NS // hz


def device(port: int) -> DeviceConfig:
    return DeviceConfig("snmpd", "pdu", "snmp_pdu", f"udp://127.0.0.1:{port}",
                        stimuli=("outlet_off:1",),
                        options={"version": "2c", "community_env": ENV, "timeout_s": 0.5})


async def session(port: int, n: int):
    d = SnmpPdu(device(port), Reference.now_ns, armed=True)
    await d.open()
    try:
        ident = await d.identity()
        reads = [await d.read_clock("sysuptime") for _ in range(n)]
        try:
            await d.stimulate("outlet_off", 1)
            refused = None
        except DeviceError as exc:
            refused = exc
        return ident, reads, refused
    finally:
        await d.close()


def start_snmpd(tmp) -> tuple[subprocess.Popen, int]:
    """net-snmp's agent on a free loopback port, read community rc-snmpd-ro, no MIB files."""
    port = free_port(socket.SOCK_DGRAM)
    (tmp / "snmpd.conf").write_text("rocommunity rc-snmpd-ro 127.0.0.1\n")
    agent = subprocess.Popen(["snmpd", "-f", "-Lo", "-C", "-c", str(tmp / "snmpd.conf"),
                              "-p", str(tmp / "pid"), f"udp:127.0.0.1:{port}"],
                             env={**os.environ, "MIBS": "", "SNMP_PERSISTENT_DIR": str(tmp)},
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    return agent, port


def test_snmpd_no_outlet_mib_and_uptime_bound_holds_its_start(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "rc-snmpd-ro")
    agent, port = start_snmpd(tmp_path)
    try:
        started_lo, _ = process_start_realtime_ns(agent.pid)
        deadline = time.monotonic() + 20
        while True:                                # until the agent answers
            try:
                ident, reads, refused = asyncio.run(session(port, 30))
                break
            except DeviceError:
                assert time.monotonic() < deadline and agent.poll() is None
                time.sleep(0.1)
    finally:
        agent.terminate()
        agent.wait(10)
    assert ident.vendor == "" and ident.extra["sysObjectID"].startswith("1.3.6.1.4.1.8072.")
    assert ident.extra["mib_chosen_by"].startswith("none: no outlet MIB known for sysObjectID")
    assert refused is not None and refused.kind == "refused" and "no outlet control" in str(refused)
    s, e, v = (np.array([getattr(r, k) for r in reads], dtype=np.int64)
               for k in ("s_ns", "e_ns", "value_ns"))
    (seg,) = split_reboots(s, e, v, 2 ** 32 * TICK, TICK)
    # the truth: the agent started after its process did, and before the first read's answer
    assert seg["zero_lo_ns"] <= int(e[0]) and seg["zero_hi_ns"] >= started_lo, \
        (seg, started_lo, int(e[0]))
    assert seg["zero_hi_ns"] - seg["zero_lo_ns"] < 1 * NS, seg      # a bound, not everything


@pytest.fixture(scope="module")
def snmpd_port(tmp_path_factory):
    """A net-snmp agent on loopback, answering; its v2c read community in ENV."""
    agent, port = start_snmpd(tmp_path_factory.mktemp("snmpd"))
    os.environ[ENV] = "rc-snmpd-ro"
    try:
        deadline = time.monotonic() + 20
        while True:                                # until the agent answers
            try:
                asyncio.run(session(port, 1))
                break
            except DeviceError:
                assert time.monotonic() < deadline and agent.poll() is None
                time.sleep(0.1)
        yield port
    finally:
        os.environ.pop(ENV, None)
        agent.terminate()
        agent.wait(10)


def rack_text(port: int, extra: str = "") -> str:
    return (f'[rack]\nname = "snmpd"\nreference = "realtime"\nsimulated = false\n\n'
            f'[devices.snmpd]\nplane = "pdu"\ndriver = "snmp_pdu"\n'
            f'address = "udp://127.0.0.1:{port}"\nversion = "2c"\ncommunity_env = "{ENV}"\n'
            f'rate_hz = 2.0\n{extra}')


def shown_late(s, v) -> list[int]:
    """Reads whose bracket started after a whole second of the reference and that still showed
    the second before it: how far past that second they started (ns). Without a lag a read
    proves D(s) < v + 1 s, which the truth (offset 0) breaks at each of them."""
    return [int(si - (vi + NS)) for si, vi in zip(s, v) if si > vi + NS]


@pytest.mark.slow
def test_snmpd_hrsystemdate_run_holds_the_host_clock_with_the_declared_lag(snmpd_port, tmp_path):
    """A 60 s run at 2 Hz through the runner. The reference is CLOCK_REALTIME and so is the
    agent's clock: every published bound of hrsystemdate (the epoch offset and every band point)
    holds offset 0. The allowance is 0: the truth is the reference itself."""
    rack = tmp_path / "rack.toml"
    rack.write_text(rack_text(snmpd_port))
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "60", "stimulus_every_s": "none"}, quiet=True,
                                  allowance_ns=0))
    meta = {c["name"]: c for c in run.manifest["devices"]["snmpd"]["clocks"]}
    assert meta["hrsystemdate"]["lag_ns"] == HR_DATE_LAG_NS and meta["sysuptime"]["lag_ns"] == 0
    hr = run.summary["devices"]["snmpd"]["clocks"]["hrsystemdate"]
    a = hr["assumptions"]
    assert a["tick_lag_ns"] == HR_DATE_LAG_NS and "lags its clock" in a["model"], a
    assert a["resolution_ns"] == NS and a["resolution_basis"] == "observed", a
    assert hr["segments"] and hr["reads"] >= 60, hr.get("note")
    for seg in hr["segments"]:
        o, b = seg["offset_ns"], seg["band"]
        assert o["lo"] <= 0 <= o["hi"], o
        out = [(t, lo, hi) for t, lo, hi in zip(b["t_ns"], b["lo"], b["hi"]) if not lo <= 0 <= hi]
        assert b["t_ns"] and not out, out[:3]
        assert o["hi"] - o["lo"] < NS, o                  # a bound, not everything
    # the lag is real: reads that began after the true second still showed the one before
    s, _, v = run.clock_reads("snmpd", "hrsystemdate")[:3]
    late = shown_late(s, v)
    assert late and max(late) <= HR_DATE_LAG_NS, sorted(late)[-5:]


async def aimed_session(port: int, origin_ns: int, probes: int) -> list[tuple[int, int, int]]:
    """hrSystemDate read as the runner reads it (DeviceWorker._next_read: bursts, slots, aims,
    exploration), on a slot grid whose origin the test sets: (where each probe was aimed, the
    first read's e and value). The aim, not the start: a loaded host wakes the sleep late."""
    d = SnmpPdu(device(port), Reference.now_ns, armed=False)
    await d.open()
    worker = DeviceWorker(dataclasses.replace(device(port), rate_hz=2.0), Reference.now_ns, None,
                          ProbePlan(), False, None, seed=7)
    spec = next(c for c in d.clocks() if c.name == "hrsystemdate")
    worker._grid = {spec.name: [origin_ns, -1]}
    reads: list = []
    starts = []
    try:
        due = worker._next_read(spec, reads, Reference.now_ns())
        for _ in range(probes):
            await asyncio.sleep(max(0, due - Reference.now_ns()) / NS)
            for _ in range(worker.plan.burst):
                r = await d.read_clock(spec.name)
                reads.append((r.s_ns, r.e_ns, r.value_ns))
            starts.append((due, *reads[-worker.plan.burst][1:]))
            due = worker._next_read(spec, reads, Reference.now_ns())
    finally:
        await d.close()
    return starts


@pytest.mark.slow
def test_runner_aims_at_the_tick_the_values_prove_from_any_slot_phase(snmpd_port):
    """hrSystemDate is declared 100 ms and ticks 1 s; read at 2 Hz. The slot grid is set so
    that every tick edge falls 90 ms before a slot's centre (or 410 ms after it): aiming with the
    declared tick reached only edges from 50 ms before a centre to 375 ms after it, so no read was
    ever aimed and every probe read at a random phase (about 4 % of them near an edge by chance,
    the bound tens of ms wide). Aiming with the proven 1 s tick reaches the edge from the slot
    after it: most probes that do not explore start within a few ms of an edge."""
    now = Reference.now_ns()
    origin = (now // NS + 2) * NS + 93_000_000
    starts = asyncio.run(aimed_session(snmpd_port, origin, 50))
    # where each probe was aimed relative to the apparent edge: past the true second by the lag
    phase_ms = [((s - NS // 2) % NS - NS // 2) / 1e6 for s, _, _ in starts[10:]]
    near = [p for p in phase_ms if -5 <= p <= 15]
    assert len(near) >= 8, sorted(phase_ms)
