"""CPU cost of one clock read, driver and emulator apart from the runner: N simulated devices of
one plane served from their own process, N drivers in this process on one event loop, each read
at `--rate` probes/s in bursts of `--burst` (the runner's default shape, random phases), for
`--seconds` after the opens.

    nice .venv/bin/python benchmarks/read_cost.py --plane bmc --devices 16 --seconds 20 [--rows]
    nice .venv/bin/python benchmarks/read_cost.py --plane bmc,cooling --devices 16 --seconds 25 --runner

Prints, per plane, CPU ms per read of this process (`time.process_time`, all its threads) and of
the simulator's process (`/proc/PID/task/*/schedstat`, ns), over the steady window only (opens
excluded), and the bracket (e − s) median / p99 in µs. `--rows` also writes each read as a
sample row (bench/model/store.py's SampleWriter), as the runner does; the difference to a run
without it is the writer's cost. With `--pyspy DIR` both processes are profiled by py-spy
(`raw` format, 1000 Hz) into DIR for the steady window. The figures are CPU time, so they hold on
a loaded machine better than wall times; the machine's load average is printed with them.

`--runner` measures the same through the runner instead (bench/run/runner.py, log polls,
stimuli, sample rows, status: what `benchmarks/scale.py --calibrate N` measures per plane,
without writing bench/run/exchange_cost.json): the difference to the plain figures is the
runner's own cost per read.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tomli_w  # noqa: E402
from scale import run_size, scale_rack_dict  # noqa: E402
from spread import temp_dir  # noqa: E402

from bench.model.store import SampleWriter  # noqa: E402
from bench.reference.clock import Reference  # noqa: E402
from bench.run.simproc import SimProcess  # noqa: E402
from drivers import driver_class  # noqa: E402

PLANES = {"bmc": "bmc-1", "cooling": "cdu-1", "pdu": "pdu-2"}
NS = 1_000_000_000


def sim_cpu_ns(pid: int) -> int:
    """CPU time of every thread of process `pid` so far (ns, from the scheduler's statistics)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


async def measure(devices, seconds: float, rate: float, burst: int, rows: Path | None,
                  sim_pid: int, pyspy: Path | None) -> dict:
    now_ns = Reference.now_ns
    drivers = [driver_class(d.driver)(d, now_ns) for d in devices]
    for drv in drivers:
        await drv.open()
    clocks = [drv.clocks()[0].name for drv in drivers]
    writers = [SampleWriter(rows / f"{d.name}.csv") for d in devices] if rows else None
    brackets: list[int] = []
    errors: list[str] = []
    reads = 0
    stop = time.monotonic() + seconds

    async def device(i: int) -> None:
        nonlocal reads
        drv, clock = drivers[i], clocks[i]
        await asyncio.sleep(random.random() / rate)
        while time.monotonic() < stop:
            t0 = time.monotonic()
            for _ in range(burst):
                try:
                    r = await drv.read_clock(clock)
                except Exception as exc:           # counted and shown, never hidden
                    errors.append(f"{devices[i].name}: {exc}")
                    break
                reads += 1
                brackets.append(r.e_ns - r.s_ns)
                if writers:
                    writers[i].write("read", r.clock, r.s_ns, r.e_ns, r.value_ns,
                                     r.resolution_ns, r.stamp, "ok", r.raw, late_ns=0)
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - t0)))

    spies = []
    if pyspy:
        for name, pid in (("bench", os.getpid()), ("sim", sim_pid)):
            spies.append(subprocess.Popen(
                [str(Path(sys.executable).with_name("py-spy")), "record", "-p", str(pid), "-f",
                 "raw", "-r", "1000", "-d", str(int(seconds)), "-o",
                 str(pyspy / f"{devices[0].plane}-{name}.txt"), "--nonblocking"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    load = os.getloadavg()
    c0, s0 = time.process_time_ns(), sim_cpu_ns(sim_pid)
    await asyncio.gather(*(device(i) for i in range(len(drivers))))
    c1, s1 = time.process_time_ns(), sim_cpu_ns(sim_pid)
    for p in spies:
        p.wait()
    for drv in drivers:
        await drv.close()
    for w in writers or []:
        w.close()
    w = sorted(brackets)
    return {"plane": devices[0].plane, "devices": len(devices), "reads": reads,
            "errors": len(errors), "first_error": errors[0] if errors else "",
            "bench_ms_per_read": (c1 - c0) / 1e6 / max(1, reads),
            "sim_ms_per_read": (s1 - s0) / 1e6 / max(1, reads),
            "bracket_p50_us": w[len(w) // 2] / 1e3 if w else None,
            "bracket_p99_us": w[int(0.99 * (len(w) - 1))] / 1e3 if w else None,
            "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plane", default="bmc,cooling", help="bmc, cooling, pdu (comma-separated)")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=1.0, help="probes per second per device")
    ap.add_argument("--burst", type=int, default=2, help="reads per probe")
    ap.add_argument("--rows", action="store_true", help="write each read as a sample row")
    ap.add_argument("--pyspy", type=Path, default=None, help="profile both processes into DIR")
    ap.add_argument("--runner", action="store_true",
                    help="through the runner, as scale.py --calibrate (no file written)")
    ap.add_argument("--processes", type=int, default=None,
                    help="with --runner: the runner's worker processes (default: its choice)")
    a = ap.parse_args()
    work = temp_dir("read-cost-")
    if a.pyspy:
        a.pyspy.mkdir(parents=True, exist_ok=True)
    for plane in a.plane.split(","):
        if a.runner:
            run_kw = {} if a.processes is None else {"processes": a.processes}
            row = run_size(a.devices, a.seconds, work, None, run_kw,
                           mix=((plane, PLANES[plane], 1.0),))
            st, p = row["steady"], row["planes"][plane]
            print(f"{plane} through the runner: {a.devices} devices, {st.get('reads')} reads in "
                  f"the steady window: CPU per read bench {st.get('bench_ms_per_read')} ms, "
                  f"simulator {st.get('sim_ms_per_read')} ms; bracket p50 {p['bracket_p50_ms']} "
                  f"ms; load average before {row['load_before']}, after {row['load_after']}",
                  flush=True)
            continue
        data = scale_rack_dict(a.devices, mix=((plane, PLANES[plane], 1.0),))
        rack_file = work / f"rack-{plane}.toml"
        rack_file.write_text(tomli_w.dumps(data))
        rows = None
        if a.rows:
            rows = work / f"rows-{plane}"
            rows.mkdir()
        with SimProcess(rack_file, work / f"sim-{plane}", 120.0) as sim:
            r = asyncio.run(measure(list(sim.rack.devices), a.seconds, a.rate, a.burst, rows,
                                    sim.proc.pid, a.pyspy))
        print(f"{r['plane']}: {r['devices']} devices, {r['reads']} reads ({r['errors']} errors"
              f"{'; ' + r['first_error'] if r['errors'] else ''}){', rows written' if a.rows else ''}:"
              f" CPU per read bench {r['bench_ms_per_read']:.3f} ms, simulator "
              f"{r['sim_ms_per_read']:.3f} ms; bracket p50 {r['bracket_p50_us']:.0f} µs, p99 "
              f"{r['bracket_p99_us']:.0f} µs; load average before {r['load_before']}, after "
              f"{r['load_after']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
