"""A real PDU as recorded: snmpsim (PyPI `snmpsim`, a third-party SNMP agent simulator) serves the
recording of an APC AP7902B switched rack PDU from PyPI `snmpsim-data`, on loopback. A variant of
the recording, written here, makes two of its objects behave:

- `sysUpTime.0` live through snmpsim's `numeric` variation module:
  `rate=100,atime=1,offset=-100*T0,initial=I` answers `int(100 * time.time() - 100*T0 + I)`
  ticks, time.time() taken by snmpsim as it answers. The truth is that formula on the host's
  CLOCK_REALTIME, the reference of these tests: the counter read zero at T0 - I/100 s and runs at
  exactly the reference's rate.
- the outlet command column (rPDUOutletControlOutletCommand) writable through `writecache`: a SET
  is remembered and reading the column back gives it, as the real PDU's reading of that column
  gives the outlet's state.

The driver picks APC's rPDU objects by the recording's own sysObjectID (1.3.6.1.4.1.318.1.3.4.8).
snmpsim refuses to run as root unless it drops to another user; on a host whose Python lives
under /root that user cannot import the modules snmpsim loads late, so as root it runs with
SNMPSIM_ALLOW_ROOT=true (its documented switch), on loopback only.
"""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from bench.analysis.counters import split_reboots
from bench.analysis.estimate import fit_clock
from bench.config.inventory import DeviceConfig
from bench.ports import free_port
from bench.reference.clock import Reference
from drivers.base import DeviceError
from drivers.snmp_pdu import SnmpPdu

pytest.importorskip("snmpsim", reason="snmpsim (pip: the test extra) not installed")
pytest.importorskip("snmpsim_data", reason="snmpsim-data (pip: the test extra) not installed")

NS = 1_000_000_000
TICK = 10_000_000
COMMUNITY = "ap7902b"                     # snmpsim: the v2c community names the data file
ENV = "RACKCLOCK_TEST_SNMPSIM_COMMUNITY"
UPTIME = "1.3.6.1.2.1.1.3.0"
CONTROL = "1.3.6.1.4.1.318.1.1.12.3.3.1.1.4"          # rPDUOutletControlOutletCommand
INITIAL_TICKS = 165660250                             # the recording's own sysUpTime


def variant(lines: list[str], t0_s: int) -> list[str]:
    """The recording with sysUpTime live and the outlet command column writable."""
    out = []
    for line in lines:
        oid, tag, value = line.split("|", 2)
        if oid == UPTIME:
            line = f"{oid}|67:numeric|rate=100,atime=1,offset={-100 * t0_s},initial={INITIAL_TICKS}"
        elif oid.startswith(CONTROL + ".") and tag == "2":
            line = f"{oid}|2:writecache|value={value}"
        out.append(line)
    return out


def wait_answering(port: int, proc: subprocess.Popen, log: Path, deadline_s: float = 60.0) -> None:
    """Until the agent answers a GET (it indexes the recording first); a deadline, no margin."""
    end = time.monotonic() + deadline_s
    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            asyncio.run(read_uptimes(port, 1))
            return
        except DeviceError:
            assert time.monotonic() < end, log.read_text()[-3000:]
            time.sleep(0.2)


@pytest.fixture(scope="module")
def snmpsim(tmp_path_factory):
    """(port, T0 in s) of a running snmpsim serving the AP7902B variant."""
    base = tmp_path_factory.mktemp("snmpsim")
    (base / "data").mkdir()
    (base / "cache").mkdir()
    rec = resources.files("snmpsim_data") / "data" / "UPS" / "apc-7902b.snmprec"
    t0_s = time.clock_gettime_ns(time.CLOCK_REALTIME) // NS - 1000
    (base / "data" / f"{COMMUNITY}.snmprec").write_text(
        "\n".join(variant(rec.read_text().splitlines(), t0_s)) + "\n")
    port = free_port(socket.SOCK_DGRAM)
    exe = Path(sys.executable).with_name("snmpsim-command-responder")
    env = {**os.environ, **({"SNMPSIM_ALLOW_ROOT": "true"} if os.geteuid() == 0 else {})}
    log = base / "snmpsim.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(exe), f"--data-dir={base / 'data'}",
                                 f"--cache-dir={base / 'cache'}",
                                 f"--agent-udpv4-endpoint=127.0.0.1:{port}"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env)
    os.environ[ENV] = COMMUNITY
    try:
        wait_answering(port, proc, log)
        yield port, t0_s
    finally:
        proc.terminate()
        proc.wait(10)


def device(port: int, stimuli=()) -> DeviceConfig:
    return DeviceConfig("ap7902b", "pdu", "snmp_pdu", f"udp://127.0.0.1:{port}",
                        stimuli=tuple(stimuli), options={"version": "2c", "community_env": ENV})


async def read_uptimes(port: int, n: int):
    d = SnmpPdu(device(port), Reference.now_ns, armed=True)
    await d.open()
    try:
        out = []
        for _ in range(n):
            out.append(await d.read_clock("sysuptime"))
            await asyncio.sleep(0.02)
        return out
    finally:
        await d.close()


def test_outlet_control_through_the_apc_backend_chosen_by_sys_object_id(snmpsim):
    port, _ = snmpsim

    async def go():
        d = SnmpPdu(device(port, ("outlet_off:1", "outlet_on:1")), Reference.now_ns, armed=True)
        await d.open()
        try:
            ident = await d.identity()
            before = (await d.outlet_states())[2]
            off = await d.stimulate("outlet_off", 1)
            after_off = (await d.outlet_states())[2]
            on = await d.stimulate("outlet_on", 1)
            after_on = (await d.outlet_states())[2]
            return ident, before, off, after_off, on, after_on
        finally:
            await d.close()

    ident, before, off, after_off, on, after_on = asyncio.run(go())
    assert (ident.vendor, ident.model, ident.serial, ident.firmware) == \
        ("APC", "AP7902B", "5A1551F39430", "v6.7.2")
    assert ident.extra["mib_chosen_by"] == "sysObjectID 1.3.6.1.4.1.318.1.3.4.8"
    assert ident.extra["mib"] == "PowerNet-MIB (rPDU)" and "traps are the log" in ident.extra["log"]
    assert before == {1: "on"}                            # as recorded
    assert off.sent and off.raw == f"SET {CONTROL}.1 = 2 -> 2"
    assert after_off == {1: "off"}                        # the SET remembered, read back
    assert on.raw == f"SET {CONTROL}.1 = 1 -> 1" and after_on == {1: "on"}


def test_sysuptime_bound_contains_the_numeric_modules_truth(snmpsim):
    port, t0_s = snmpsim
    reads = asyncio.run(read_uptimes(port, 60))
    # each read against the formula: int(100 t - 100 T0 + I) ticks at some t in its bracket
    for r in reads:
        lo = (r.s_ns - t0_s * NS) // TICK + INITIAL_TICKS
        hi = (r.e_ns - t0_s * NS) // TICK + INITIAL_TICKS
        assert lo * TICK <= r.value_ns <= hi * TICK, r
    s, e, v = (np.array([getattr(r, k) for r in reads], dtype=np.int64)
               for k in ("s_ns", "e_ns", "value_ns"))
    true_zero = t0_s * NS - INITIAL_TICKS * TICK          # the instant the counter read zero
    (seg,) = split_reboots(s, e, v, 2 ** 32 * TICK, TICK)
    assert seg["wraps"] == 0 and seg["kind"] == "first"
    (last,) = fit_clock(s, e, v, TICK).segments          # one segment: no step, no reboot
    b = last.offset_at(int(e[-1]))
    assert b.lo <= -true_zero <= b.hi, (b, -true_zero)   # offset = reading - reference time
    assert b.hi - b.lo <= 2 * TICK, b                    # a bound, not the whole line
