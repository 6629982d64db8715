"""Why the runner probes in bursts of two: the first exchange after an idle pause has a wider
bracket than one sent right after it (docs/protocol_floors.md: idle costs ~0.3 ms a hop on this
kind of VM).

Serves the default simulated rack from `python -m bench.commands.sim` in a separate process and,
for one device per plane, repeats: sleep `--idle` s, read, read again at once; prints the median
bracket of the first read, of the second, and their ratio, side by side in one run; `--repeats`
times (fresh drivers, the same emulator process), closing with each figure's median [min–max].

    .venv/bin/python benchmarks/idle_burst.py [--pairs 40] [--idle 0.3] [--repeats 3]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from spread import scratch, spread  # noqa: E402

from bench.reference.clock import Reference  # noqa: E402
from bench.run.simproc import SimProcess  # noqa: E402
from bench.sim.serve import DEFAULT_RACK  # noqa: E402
from drivers import driver_class  # noqa: E402

DEVICES = ("bmc-1", "pdu-2", "cdu-1", "optic-1")


async def measure(device, pairs: int, idle_s: float) -> tuple[float, float]:
    drv = driver_class(device.driver)(device, Reference.now_ns, armed=False)
    await drv.open()
    try:
        clock = drv.clocks()[0].name
        first, second = [], []
        for _ in range(pairs):
            await asyncio.sleep(idle_s)
            a = await drv.read_clock(clock)
            b = await drv.read_clock(clock)
            first.append(a.e_ns - a.s_ns)
            second.append(b.e_ns - b.s_ns)
        return float(np.median(first)), float(np.median(second))
    finally:
        await drv.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--idle", type=float, default=0.3, help="pause before each pair, s")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    got: dict[str, list[tuple[float, float]]] = {}
    print(f"load average {os.getloadavg()[0]:.2f}")
    with scratch("idle-burst-") as out, SimProcess(DEFAULT_RACK, out) as sim:
        for r in range(a.repeats):
            print(f"-- repeat {r + 1}/{a.repeats}")
            print(f"{'device':<9} {'after idle µs':>14} {'right after µs':>15} {'ratio':>6}")
            for d in sim.rack.devices:
                if d.name in DEVICES:
                    f, s = asyncio.run(measure(d, a.pairs, a.idle))
                    got.setdefault(d.name, []).append((f, s))
                    print(f"{d.name:<9} {f / 1e3:>14.0f} {s / 1e3:>15.0f} {f / s:>6.2f}",
                          flush=True)
    print(f"-- over {a.repeats} repeats, median [min–max]; load average {os.getloadavg()[0]:.2f}")
    for name, fs in got.items():
        print(f"{name:<9} after idle {spread([f / 1e3 for f, _ in fs])} µs, right after "
              f"{spread([s / 1e3 for _, s in fs])} µs, "
              f"ratio {spread([f / s for f, s in fs], '{:.2f}')}")


if __name__ == "__main__":
    main()
