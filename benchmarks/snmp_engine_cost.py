"""CPU cost of N SNMP PDU drivers in one process: an SnmpEngine per device (as before) against one
engine shared by every driver on the event loop (drivers/snmp_engine), side by side in one run.

N copies of the default rack's pdu-2 (SNMP v2c, trap listener on) served by the emulator in its
own process (`bench.run.simproc`). Per arm, in a fresh event loop of this process: open all N
drivers at once, then read each device's sysUpTime at `--rate-hz` from a random phase for
`--duration` s, then close them. Arms alternate (`--repeats`), so the machine's load falls on
both; a last run has both arms at once in one loop (devices alternating), so their brackets are
taken in the same instants. It prints, per arm: CPU seconds of this process to open all N (and per device),
the wall time of the opens, CPU ms per read over the reading phase (the dispatcher's timers included),
the bracket (e - s) p50 / p90 in µs (and each run's p50), and brackets that miss the emulator's sample instant
(must be 0). An open that fails (e.g. its first answer processed after its 0.5 s timeout while
the process loads engines) is counted and retried one device at a time (the CPU of these retries
is shown apart), so that both arms read N devices.

    nice .venv/bin/python benchmarks/snmp_engine_cost.py [--devices 40] [--duration 15]

Since drivers/snmp_v2c, a v2c PDU's reads no longer go through any engine (only its trap
listener does), so for pdu-2 the two arms differ only in that; benchmarks/snmp_read_cost.py
measures the read cost now.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tomli_w  # noqa: E402
from scale import scale_rack_dict  # noqa: E402
from spread import temp_dir  # noqa: E402

from bench.reference.clock import Reference  # noqa: E402
from bench.run.simproc import SimProcess  # noqa: E402
from bench.sim.rack import read_samples, samples_in  # noqa: E402
from drivers import snmp_engine  # noqa: E402
from drivers.snmp_pdu import SnmpPdu  # noqa: E402


class EnginePerDevice(SnmpPdu):
    """The driver as it was before the shared engine: an SnmpEngine (and dispatcher) of its own."""

    @staticmethod
    def _engine_for(user):
        share = snmp_engine.SharedEngine()
        share.members = 1
        return share


ARMS = {"engine per device": EnginePerDevice, "shared engine": SnmpPdu}


async def one_arm(cls, devices, duration_s: float, rate_hz: float) -> dict:
    """`cls`: the driver class, or one per device."""
    classes = cls if isinstance(cls, list) else [cls] * len(devices)
    drivers = [c(d, Reference.now_ns) for c, d in zip(classes, devices)]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    opened = await asyncio.gather(*(d.open() for d in drivers), return_exceptions=True)
    open_cpu, open_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    failed = [f"{d.name}: {x}" for d, x in zip(drivers, opened) if isinstance(x, BaseException)]
    for i, (d, x) in enumerate(zip(drivers, opened)):   # then one at a time, so that both
        if isinstance(x, BaseException):                  # arms read (nearly) N devices
            try:
                await d.open()
                opened[i] = None
            except Exception as exc:    # e.g. its trap port, picked by the simulator, since
                failed.append(f"again {d.name}: {exc}")   # taken by another client socket
    retry_cpu = time.process_time() - cpu0 - open_cpu
    drivers = [d for d, x in zip(drivers, opened) if not isinstance(x, BaseException)]
    engines = len({id(d.engine) for d in drivers})
    period = 1.0 / rate_hz
    reads: list[tuple[str, object]] = []

    async def poll(d):
        await asyncio.sleep(random.uniform(0, period))
        end = time.monotonic() + duration_s
        while time.monotonic() < end:
            reads.append((d.name, await d.read_clock("sysuptime")))
            await asyncio.sleep(period)

    cpu1 = time.process_time()
    await asyncio.gather(*(poll(d) for d in drivers))
    read_cpu = time.process_time() - cpu1
    await asyncio.gather(*(d.close() for d in drivers))
    return {"open_cpu_s": open_cpu, "open_wall_s": open_wall, "engines": engines, "failed": failed,
            "retry_cpu_s": retry_cpu,
            "read_cpu_s": read_cpu, "reads": reads}


def p50(reads) -> float:
    return statistics.median((r.e_ns - r.s_ns) / 1e3 for _, r in reads) if reads else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=40)
    ap.add_argument("--duration", type=float, default=15.0, help="reading phase per arm, s")
    ap.add_argument("--rate-hz", type=float, default=2.0, help="reads per second per device")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each arm, alternating")
    a = ap.parse_args(argv)
    tmp = temp_dir("rackclock-bench-snmp-engine-")
    rack = scale_rack_dict(a.devices, mix=(("pdu", "pdu-2", 1.0),))
    (tmp / "rack.in.toml").write_text(tomli_w.dumps(rack))
    rows: dict[str, list[dict]] = {name: [] for name in ARMS}
    with SimProcess(tmp / "rack.in.toml", tmp / "sim") as sim:
        devices = sim.rack.devices
        for cls in ARMS.values():           # warm-up: imports and pysnmp's first MIB load
            asyncio.run(one_arm(cls, devices[:1], 0.5, a.rate_hz))
        for _ in range(a.repeats):
            for name, cls in ARMS.items():
                rows[name].append(asyncio.run(one_arm(cls, devices, a.duration, a.rate_hz)))
                row = rows[name][-1]
                print(f"{name}: {row['open_cpu_s']:.2f} s CPU to open, {len(row['failed'])} "
                      f"opens failed {row['failed'][:2]}", flush=True)
        # both arms at once, devices alternating: their brackets taken in the same instants
        arm_of = {d.name: name for d, name in zip(devices, itertools.cycle(ARMS))}
        mixed = asyncio.run(one_arm([ARMS[arm_of[d.name]] for d in devices], devices,
                                    a.duration, a.rate_hz))
    samples = read_samples(tmp / "sim" / "sim_samples.csv")
    print(f"\n{a.devices} SNMP v2c PDUs (emulator in its own process), {a.rate_hz:g} reads/s "
          f"each for {a.duration:g} s per run, {a.repeats} runs per arm, alternating")
    print("| arm | engines | CPU to open all at once (s) | per device (ms) | open wall (s) | "
          "opens failed at once, retry CPU (s) | reads | CPU per read (ms) | bracket p50 / p90 (µs) | "
          "p50 per run (µs) | brackets missing the sample |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, runs in rows.items():
        open_cpu = statistics.median(r["open_cpu_s"] for r in runs)
        reads = [x for r in runs for x in r["reads"]]
        per_read = statistics.median(r["read_cpu_s"] / max(1, len(r["reads"])) for r in runs)
        widths = sorted((r.e_ns - r.s_ns) / 1e3 for _, r in reads)
        missing = sum(not samples_in(samples.get((dev, "sysuptime"), []), r.s_ns, r.e_ns)
                      for dev, r in reads)
        print(f"| {name} | {runs[0]['engines']} | {open_cpu:.2f} | "
              f"{1000 * open_cpu / a.devices:.1f} | "
              f"{statistics.median(r['open_wall_s'] for r in runs):.2f} | "
              f"{'+'.join(str(len(r['failed'])) for r in runs)}, "
              f"{'+'.join(format(r['retry_cpu_s'], '.2f') for r in runs)} | {len(reads)} | "
              f"{1000 * per_read:.3f} | {statistics.median(widths):.0f} / "
              f"{widths[int(0.9 * (len(widths) - 1))]:.0f} | "
              f"{', '.join(format(p50(r['reads']), '.0f') for r in runs)} | {missing} |")
    print(f"\nBoth arms in one loop at once (devices alternating, {a.duration:g} s):")
    for name in ARMS:
        reads = [(dev, r) for dev, r in mixed["reads"] if arm_of[dev] == name]
        widths = sorted((r.e_ns - r.s_ns) / 1e3 for _, r in reads)
        missing = sum(not samples_in(samples.get((dev, "sysuptime"), []), r.s_ns, r.e_ns)
                      for dev, r in reads)
        print(f"  {name}: {len(reads)} reads, bracket p50 / p90 {statistics.median(widths):.0f} / "
              f"{widths[int(0.9 * (len(widths) - 1))]:.0f} µs, missing the sample {missing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
