"""`rackclock fleet run` with N simulated racks against `xargs -P N` running the same N
`rackclock run` commands, one after the other on this machine: what Ray costs and what it buys.

Per way, per repeat: wall time (the command's start to its end: Ray's start and stop included
for the fleet), late probes (summed over every rack's devices, from each run's manifest: probes
started 10 ms or more after their planned instant) and the latest start after plan, peak memory
(the most the command's whole process session held at once, sampled every 0.25 s: the sum of
each process's PSS, so shared pages are counted once), and how many racks' runs completed. The
fleet's racks take their fleet-file `cpus` (default 0.5; `--cpus`), so on a small machine some
queue; xargs starts all N at once.

    nice .venv/bin/python benchmarks/fleet_vs_xargs.py [--racks 4] [--duration 30] [--repeats 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from procs import SESSION, pids_where, reap_session  # noqa: E402
from racks import sim_rack_text  # noqa: E402

RACKCLOCK = [sys.executable, "-m", "bench.cli"]
DEVICES = ["bmc-1", "pdu-2"]          # the small rack of tests/test_fleet.py and fleet.py
SAMPLE_S = 0.25


def pss_kib(pid: int) -> int:
    """A process's proportional set size (KiB; its RSS where smaps_rollup is not readable)."""
    for name, key in (("smaps_rollup", "Pss:"), ("status", "VmRSS:")):
        try:
            for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
                if line.startswith(key):
                    return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return 0


def measured(argv: list[str], cwd: Path, stdin: str | None = None) -> dict:
    """Run `argv` in a session of its own; its wall time, exit status and peak session PSS."""
    peak = [0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], sum(pss_kib(p) for p in pids_where(SESSION, proc.pid)))
            done.wait(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate(stdin)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    left = reap_session(proc.pid, 60)
    if left:
        raise SystemExit(f"{argv[0]} left processes behind: {left}")
    return {"wall_s": wall, "exit": proc.returncode, "peak_mib": peak[0] / 1024,
            "stderr": err[-2000:]}


def lateness(run_manifests: list[Path]) -> dict:
    """Late probes summed over every device of the runs, the latest start after plan (ms), and
    how many of the runs completed."""
    late, worst, completed = 0, 0, 0
    for p in run_manifests:
        m = json.loads(p.read_text())
        completed += m.get("status") == "completed"
        for d in (m.get("devices") or {}).values():
            late += int(d.get("late_probes") or 0)
            worst = max(worst, int(d.get("late_max_ns") or 0))
    return {"late": late, "late_max_ms": worst / 1e6, "completed": completed}


def fleet_way(work: Path, k: int) -> dict:
    out = work / f"fleet-{k}"
    r = measured(RACKCLOCK + ["fleet", "run", "fleet.toml", "--out", str(out), "--quiet"], work)
    runs = sorted(out.glob("*/racks/*/*/manifest.json"))
    return {**r, **lateness(runs), "runs": len(runs)}


def xargs_way(work: Path, k: int, n: int, duration: float) -> dict:
    out = work / f"xargs-{k}"
    argv = ["xargs", "-P", str(n), "-n", "1"] + RACKCLOCK + [
        "run", "--duration", f"{duration:g}", "--quiet", "--out", str(out), "--rack"]
    r = measured(argv, work, "".join(f"rack-{i}.toml\n" for i in range(n)))
    runs = sorted(out.glob("*/manifest.json"))
    return {**r, **lateness(runs), "runs": len(runs)}


def fleet_file(work: Path, n: int, duration: float, cpus: float | None) -> None:
    lines = ["[fleet]", 'name = "vs"', f"duration_s = {duration:g}"]
    if cpus is not None:
        lines.append(f"cpus = {cpus:g}")
    for i in range(n):
        (work / f"rack-{i}.toml").write_text(sim_rack_text(DEVICES, name=f"r{i}", seed=i + 1))
        lines += [f"[racks.r{i}]", f'rack = "rack-{i}.toml"']
    (work / "fleet.toml").write_text("\n".join(lines) + "\n")


def med(xs, unit: str = "s", f: str = ".1f") -> str:
    xs = list(xs)
    return f"{statistics.median(xs):{f}}{' ' + unit if unit else ''} [{min(xs):{f}}–{max(xs):{f}}]"


def summary(name: str, rs: list[dict], n: int) -> str:
    late = med((r["late"] for r in rs), "", ".0f")
    latest = med((r["late_max_ms"] for r in rs), "ms")
    return (f"  {name:<6} wall {med(r['wall_s'] for r in rs)}, late probes {late}, latest "
            f"{latest}, peak memory {med((r['peak_mib'] for r in rs), 'MiB', '.0f')}, runs "
            f"completed {min(r['completed'] for r in rs)}/{n}")


def ratio(a: list[dict], b: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in a) / max(1e-9, statistics.median(r[key] for r in b))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--duration", type=float, default=30.0, help="each rack's run, s")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cpus", type=float, default=None,
                    help="each fleet rack's `cpus` (default: the fleet's, 0.5)")
    a = ap.parse_args(argv)
    ways: dict[str, list[dict]] = {"fleet": [], "xargs": []}
    loads = []
    with tempfile.TemporaryDirectory(prefix="rackclock-fleet-xargs-") as tmp:
        work = Path(tmp)
        fleet_file(work, a.racks, a.duration, a.cpus)
        for k in range(a.repeats):
            loads.append(os.getloadavg()[0])
            order = ["fleet", "xargs"] if k % 2 == 0 else ["xargs", "fleet"]  # neither always first
            for name in order:
                r = fleet_way(work, k) if name == "fleet" else \
                    xargs_way(work, k, a.racks, a.duration)
                ways[name].append(r)
                print(f"repeat {k + 1} {name}: wall {r['wall_s']:.1f} s, exit {r['exit']}, "
                      f"late probes {r['late']} (latest {r['late_max_ms']:.1f} ms), peak "
                      f"memory {r['peak_mib']:.0f} MiB, runs {r['completed']}/{r['runs']} "
                      f"completed", flush=True)
                if r["runs"] < a.racks:
                    raise SystemExit(f"{name}: {r['runs']} of {a.racks} runs:\n{r['stderr']}")
            loads.append(os.getloadavg()[0])
    print(f"\n{a.racks} racks of {len(DEVICES)} simulated devices, {a.duration:g} s runs, "
          f"{os.cpu_count()} CPUs, load average (1 min) {min(loads):.1f}–{max(loads):.1f}")
    for name, rs in ways.items():
        print(summary(name, rs, a.racks))
    print(f"  ratio fleet / xargs: wall {ratio(ways['fleet'], ways['xargs'], 'wall_s'):.2f}, "
          f"peak memory {ratio(ways['fleet'], ways['xargs'], 'peak_mib'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
