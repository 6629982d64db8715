"""The PDU driver against net-snmp's own agent, snmpd: an agent whose sysObjectID names no PDU MIB
(NET-SNMP-MIB's linux agent). The driver says so, refuses outlet stimuli with that reason, and its
sysUpTime bound on the counter's zero meets the interval the truth is independently known in:
snmpd's sysUpTime counts from the agent's start (not the host's boot), which lies between the
kernel's start time of the process (/proc/PID/stat, in clock ticks since boot, mapped to
CLOCK_REALTIME) and the end of the first exchange it answered (measured here: the bound lies
4-16 ms after the process start, the interval spans 0-725 ms)."""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

from bench.analysis.counters import split_reboots
from bench.model.inventory import DeviceConfig
from bench.ports import free_port
from bench.reference.clock import Reference
from drivers.base import DeviceError
from drivers.snmp_pdu import SnmpPdu

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


def test_snmpd_no_outlet_mib_and_uptime_bound_holds_its_start(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "rc-snmpd-ro")
    port = free_port(socket.SOCK_DGRAM)
    (tmp_path / "snmpd.conf").write_text("rocommunity rc-snmpd-ro 127.0.0.1\n")
    agent = subprocess.Popen(["snmpd", "-f", "-Lo", "-C", "-c", str(tmp_path / "snmpd.conf"),
                              "-p", str(tmp_path / "pid"), f"udp:127.0.0.1:{port}"],
                             env={**os.environ, "MIBS": "", "SNMP_PERSISTENT_DIR": str(tmp_path)},
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
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
