"""Bracket width (e - s) of a Modbus RTC read: the cooling driver vs plain pymodbus clients.

Serves emulated CDUs (no modelled sample delay or jitter) from `python -m bench.commands.sim` in a
separate process: family A over Modbus TCP, family B over RTU on a pty (no line time modelled,
and at 19200 baud with the line time modelled), and reads the RTC registers with:

- driver:   `drivers/modbus_cooling.py` on CLOCK_REALTIME (`e` the kernel's arrival stamp over
            TCP; on the pty, pymodbus' trace_packet hook)
- loop:     the driver on a reference that is not CLOCK_REALTIME (both stamps in pymodbus'
            trace_packet hook, on the loop)
- async:    `AsyncModbusTcpClient` / `AsyncModbusSerialClient`, stamps around the await
- sync:     `ModbusTcpClient` / `ModbusSerialClient`, stamps around the call

in alternating blocks, and checks that every bracket holds the emulator's recorded sample instant.

    .venv/bin/python benchmarks/modbus_bracket.py [--reads 300] [--warmup 30] [--repeats 3]

Each repeat is a fresh emulator process and the full alternating set; the closing table gives
every median as median [min–max] over the repeats, and the ratio of each client's median to the
driver's in the same repeat. Figures: benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pymodbus.client import AsyncModbusSerialClient, AsyncModbusTcpClient, ModbusSerialClient, ModbusTcpClient  # noqa: E402
from spread import scratch, spread  # noqa: E402

from bench.config.inventory import load_rack  # noqa: E402
from bench.reference.clock import Reference  # noqa: E402
from bench.sim.rack import read_samples, samples_in  # noqa: E402
from drivers.modbus_cooling import ModbusCooling  # noqa: E402

RACK = """
[rack]
name = "bench-modbus"
seed = 1
[devices.tcp]
plane = "cooling"
driver = "modbus_cooling"
address = "tcp://127.0.0.1:0"
map = "family_a"
timezone = "Europe/Berlin"
[devices.pty]
plane = "cooling"
driver = "modbus_cooling"
address = "serial://auto"
map = "family_b"
baudrate = 19200
[devices.pty-19200]
plane = "cooling"
driver = "modbus_cooling"
address = "serial://auto"
map = "family_b"
baudrate = 19200
[devices.pty-19200.sim]
line_delay = true
"""
RTC = {"tcp": 100, "pty": 1024, "pty-19200": 1024}
COUNT = {"tcp": 6, "pty": 2, "pty-19200": 2}
now_ns = Reference.now_ns


def start_sim(out: Path):
    (out / "rack.in.toml").write_text(RACK)
    proc = subprocess.Popen([sys.executable, "-m", "bench.commands.sim", "--rack",
                             str(out / "rack.in.toml"), "--out", str(out)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    for _ in range(200):
        if (out / "rack.toml").exists():
            return proc, {d.name: d for d in load_rack(out / "rack.toml").devices}
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("emulator did not start")


def _port(dev) -> int:
    return int(dev.address.rsplit(":", 1)[1])


def _path(dev) -> str:
    return dev.address[len("serial://"):]


def sync_reads(dev, n, warmup):
    c = (ModbusTcpClient("127.0.0.1", port=_port(dev), retries=0, timeout=1)
         if dev.address.startswith("tcp") else
         ModbusSerialClient(_path(dev), baudrate=19200, retries=0, timeout=1))
    c.connect()
    out = []
    try:
        for i in range(warmup + n):
            s = now_ns()
            rr = c.read_holding_registers(RTC[dev.name], count=COUNT[dev.name], device_id=1)
            e = now_ns()
            assert not rr.isError()
            if i >= warmup:
                out.append((s, e))
    finally:
        c.close()
    return out


async def async_reads(dev, n, warmup):
    c = (AsyncModbusTcpClient("127.0.0.1", port=_port(dev), retries=0, timeout=1)
         if dev.address.startswith("tcp") else
         AsyncModbusSerialClient(_path(dev), baudrate=19200, retries=0, timeout=1))
    await c.connect()
    out = []
    try:
        for i in range(warmup + n):
            s = now_ns()
            rr = await c.read_holding_registers(RTC[dev.name], count=COUNT[dev.name], device_id=1)
            e = now_ns()
            assert not rr.isError()
            if i >= warmup:
                out.append((s, e))
    finally:
        c.close()
    return out


async def driver_reads(dev, n, warmup, kernel: bool = True):
    d = ModbusCooling(dev, now_ns if kernel else lambda: now_ns())
    await d.open()
    out = []
    try:
        for i in range(warmup + n):
            r = await d.read_clock("rtc")
            if i >= warmup:
                out.append((r.s_ns, r.e_ns))
    finally:
        await d.close()
    return out


def measure(a, out: Path) -> dict[tuple[str, str], list]:
    """One repeat: a fresh emulator, every client on every device in alternating blocks."""
    proc, devs = start_sim(out)
    per = max(1, a.reads // a.blocks)
    got: dict[tuple[str, str], list] = {}
    try:
        for _ in range(a.blocks):
            for name, dev in devs.items():
                got.setdefault((name, "driver"), []).extend(
                    asyncio.run(driver_reads(dev, per, a.warmup)))
                got.setdefault((name, "loop"), []).extend(
                    asyncio.run(driver_reads(dev, per, a.warmup, kernel=False)))
                got.setdefault((name, "async"), []).extend(
                    asyncio.run(async_reads(dev, per, a.warmup)))
                got.setdefault((name, "sync"), []).extend(sync_reads(dev, per, a.warmup))
    finally:
        proc.terminate()
        proc.wait(10)
    samples = {d: rows for (d, _), rows in read_samples(out / "sim_samples.csv").items()}
    print(f"{'device':<10} {'client':<7} {'median':>8} {'p10':>8} {'p90':>8} {'p99':>8}  "
          f"brackets holding the sample")
    for (name, client), br in got.items():
        w = sorted((e - s) / 1e3 for s, e in br)
        smp = samples.get(name, [])
        held = sum(1 for s, e in br if samples_in(smp, s, e))
        q = statistics.quantiles(w, n=100)
        print(f"{name:<10} {client:<7} {statistics.median(w):8.0f} {q[9]:8.0f} {q[89]:8.0f} "
              f"{q[98]:8.0f}  {held}/{len(br)}", flush=True)
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=300, help="reads per client and device")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="full measurements, each a new emulator")
    a = ap.parse_args()
    print(f"Modbus RTC read, emulator in its own process; {max(1, a.reads // a.blocks) * a.blocks} "
          f"reads per client after {a.warmup} warm-up per block; bracket e - s in µs; "
          f"load average {os.getloadavg()[0]:.2f}")
    medians: dict[tuple[str, str], list[float]] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    with scratch("rackclock-bench-modbus-") as tmp:
        for r in range(a.repeats):
            print(f"-- repeat {r + 1}/{a.repeats}")
            out = tmp / f"r{r}"
            out.mkdir()
            got = measure(a, out)
            for (name, client), br in got.items():
                medians.setdefault((name, client), []).append(
                    statistics.median((e - s) / 1e3 for s, e in br))
            for name, client in got:
                ratios.setdefault((name, client), []).append(
                    medians[name, client][-1] / medians[name, "driver"][-1])
    print(f"-- over {a.repeats} repeats: median bracket µs, and × the driver's (same repeat); "
          f"load average {os.getloadavg()[0]:.2f}")
    for (name, client), m in medians.items():
        print(f"{name:<10} {client:<7} {spread(m):>24}   "
              f"× driver {spread(ratios[name, client], '{:.2f}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
