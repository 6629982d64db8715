"""Bracket width (e - s) of SNMP PDU clock reads through the driver, on loopback.

Serves two emulated PDUs (APC layout, no modelled sample delay: the agent's delay is pysnmp's own
processing) from `python -m bench.commands.sim` in a separate process: one SNMPv2c, one SNMPv3
(SHA + AES-128), both with hrSystemDate. For each read it records

- socket:  the driver's bracket (stamps in pysnmp's UDP transport: before sendto, at arrival)
- await:   stamps around `await driver.read_clock()` (what a bracket around pysnmp's `get_cmd`
           would be)

plus the round trip of a hand-built v2c GET datagram to the same agent (the floor: the agent's own
time), and checks that every socket bracket holds the emulator's recorded sample instant.

    .venv/bin/python benchmarks/snmp_pdu_bracket.py [--reads 300] [--snmpd]

`--snmpd` measures the driver against net-snmp's `snmpd` instead (a fast C agent, v2c only;
no sample instants to check), which separates the driver's share from the agent's.

Latest figures (2026-11-29, 2 vCPU VM shared with other jobs at load 1.3-1.9, Python 3.11,
pysnmp 7.1.30, net-snmp 5.9.3), median / p99 in µs, 400 reads, every bracket holding its sample:
    emulator v2c  sysuptime      socket 1471 / 4555    await 2951 / 7074    raw GET 1489 / 6525
    emulator v2c  hrsystemdate   socket 1445 / 27365   await 2948 / 29217
    emulator v3   sysuptime      socket 2475 / 7236    await 4993 / 9974
    emulator v3   hrsystemdate   socket 2540 / 7828    await 5372 / 11810
    snmpd v2c     sysuptime      socket  265 / 4836    await 1651 / 6154    raw GET  176 / 2625
    snmpd v2c     hrsystemdate   socket  339 / 4548    await 1904 / 6310
The socket bracket sits on the raw round trip: what is left is the agent's own time (pysnmp's
agent takes about 1 ms a request here, snmpd about 0.1 ms).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from spread import temp_dir  # noqa: E402

from bench.reference.clock import Reference  # noqa: E402
from bench.run.simproc import SimProcess  # noqa: E402
from bench.sim.rack import read_samples, samples_in  # noqa: E402
from drivers.snmp_pdu import SnmpPdu  # noqa: E402

COMM, PW = "RACKCLOCK_BENCH_PDU_COMMUNITY", "RACKCLOCK_BENCH_PDU_PASSWORD"
RACK = f"""
[rack]
name = "bench-snmp"
simulated = true
seed = 1
[devices.pdu-v2c]
plane = "pdu"
driver = "snmp_pdu"
address = "udp://127.0.0.1:0"
password_env = "{COMM}"
[devices.pdu-v2c.sim.clocks.sysuptime]
uptime_s = 1000.0
[devices.pdu-v2c.sim.clocks.hrsystemdate]
offset_s = 0.25
[devices.pdu-v3]
plane = "pdu"
driver = "snmp_pdu"
address = "udp://127.0.0.1:0"
username = "bench"
password_env = "{PW}"
[devices.pdu-v3.sim.clocks.sysuptime]
uptime_s = 1000.0
[devices.pdu-v3.sim.clocks.hrsystemdate]
offset_s = 0.25
"""


def raw_get_us(address: str, community: str, n: int) -> list[float]:
    from pyasn1.codec.ber import encoder
    from pysnmp.proto import api
    p = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]
    pdu = p.GetRequestPDU()
    p.apiPDU.set_defaults(pdu)
    p.apiPDU.set_varbinds(pdu, [((1, 3, 6, 1, 2, 1, 1, 3, 0), p.Null(""))])
    msg = p.Message()
    p.apiMessage.set_defaults(msg)
    p.apiMessage.set_community(msg, community)
    p.apiMessage.set_pdu(msg, pdu)
    data = encoder.encode(msg)
    host, port = address.split("//")[1].rsplit(":", 1)
    out = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(1.0)
        s.connect((host, int(port)))
        for _ in range(n):
            t = time.perf_counter_ns()
            s.send(data)
            s.recv(4096)
            out.append((time.perf_counter_ns() - t) / 1e3)
            time.sleep(random.uniform(0.01, 0.03))
    return out


async def measure(dev, n: int) -> dict:
    d = SnmpPdu(dev, Reference.now_ns)
    await d.open()
    out = {}
    try:
        for c in d.clocks():
            rows = []
            for _ in range(n):
                s0 = Reference.now_ns()
                r = await d.read_clock(c.name)
                e0 = Reference.now_ns()
                rows.append((r, e0 - s0))
                await asyncio.sleep(random.uniform(0.01, 0.03))
            out[c.name] = rows
    finally:
        await d.close()
    return out


def stats(xs) -> str:
    xs = sorted(xs)
    return f"{statistics.median(xs):7.0f} / {xs[int(0.99 * (len(xs) - 1))]:7.0f}"


def against_snmpd(n: int) -> int:
    import subprocess

    from bench.config.inventory import DeviceConfig
    tmp = temp_dir("rackclock-bench-snmpd-")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp / "snmpd.conf").write_text(f"rocommunity {os.environ[COMM]} 127.0.0.1\n")
    proc = subprocess.Popen(["snmpd", "-f", "-Lo", "-C", "-c", str(tmp / "snmpd.conf"), "-p",
                             str(tmp / "pid"), f"udp:127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "MIBS": ""})
    try:
        time.sleep(1.0)
        dev = DeviceConfig(name="snmpd", plane="pdu", driver="snmp_pdu",
                           address=f"udp://127.0.0.1:{port}", password_env=COMM)
        rows = asyncio.run(measure(dev, n))
        raw = raw_get_us(dev.address, os.environ[COMM], n)
    finally:
        proc.terminate()
        proc.wait(5)
    print(f"{'agent':8} {'clock':13} {'socket bracket µs':>20} {'await µs':>18}   median / p99, "
          f"{n} reads")
    for clock, rs in rows.items():
        print(f"{'snmpd':8} {clock:13} {stats([(r.e_ns - r.s_ns) / 1e3 for r, _ in rs]):>20} "
              f"{stats([w / 1e3 for _, w in rs]):>18}")
    print(f"raw hand-built v2c GET round trip to snmpd: {stats(raw)} µs")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--snmpd", action="store_true", help="measure against net-snmp's snmpd")
    a = ap.parse_args(argv)
    os.environ.setdefault(COMM, secrets.token_urlsafe(9))
    os.environ.setdefault(PW, secrets.token_urlsafe(12))
    if a.snmpd:
        return against_snmpd(a.reads)
    tmp = temp_dir("rackclock-bench-snmp-")
    (tmp / "rack.in.toml").write_text(RACK)
    with SimProcess(tmp / "rack.in.toml", tmp / "sim") as sim:
        results = {dev.name: asyncio.run(measure(dev, a.reads)) for dev in sim.rack.devices}
        v2c = next(d for d in sim.rack.devices if d.name == "pdu-v2c")
        raw = raw_get_us(v2c.address, os.environ[COMM], a.reads)
    samples = read_samples(tmp / "sim" / "sim_samples.csv")
    print(f"{'device':8} {'clock':13} {'socket bracket µs':>20} {'await µs':>18}   median / p99, "
          f"{a.reads} reads")
    bad = 0
    for dev, clocks in results.items():
        for clock, rows in clocks.items():
            taken = samples.get((dev, clock), [])
            for r, _ in rows:
                bad += not samples_in(taken, r.s_ns, r.e_ns)
            print(f"{dev:8} {clock:13} {stats([(r.e_ns - r.s_ns) / 1e3 for r, _ in rows]):>20} "
                  f"{stats([w / 1e3 for _, w in rows]):>18}")
    print(f"raw hand-built v2c GET round trip to the agent: {stats(raw)} µs")
    print(f"brackets missing their sample: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
