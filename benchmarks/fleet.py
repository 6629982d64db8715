"""A fleet of three simulated racks on an embedded Ray instance against one rack alone, side by
side in one run: wall time of `rackclock run` (one rack) and of `rackclock fleet run` (three
copies of that rack, each with its own simulator on its own loopback ports), as a ratio.

Printed per repeat and as median [min-max]: the one-rack run, the fleet end to end (Ray's start
and stop included), the fleet's racks from the first start to the last stop (Ray excluded), the
Ray start (the command's start to the first rack's start: ray.init, then a worker process per
rack importing the bench), and the load average around it.

    .venv/bin/python benchmarks/fleet.py [--duration 30] [--repeats 2] [--racks 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from racks import sim_rack_text  # noqa: E402

from bench.fleet.fleet_verdict import RAN  # noqa: E402

RACKCLOCK = [sys.executable, "-m", "bench.cli"]
DEVICES = ["bmc-1", "pdu-2"]          # the small rack of tests/test_fleet.py


def timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    t0 = time.perf_counter()
    cp = subprocess.run(RACKCLOCK + argv, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if cp.returncode not in ok:
        raise SystemExit(f"rackclock {' '.join(argv)} failed ({cp.returncode}):\n{cp.stderr}")
    return took


def one_rack(work: Path, duration: float) -> float:
    # exit 3 is a verdict (UNDECIDED: a 2 s run may decide nothing), not a failed run
    return timed(["run", "--rack", "rack-0.toml", "--duration", f"{duration:g}", "--quiet",
                  "--out", "one"], work, (0, 3))


def fleet(work: Path, duration: float, n: int) -> dict:
    out = work / "fleets"
    # `fleet run` exits by the fleet's verdict (0 PASS, 1 FAIL, 3 UNDECIDED; a 2 s rack on a
    # loaded host may well be FAIL or UNDECIDED): timed whatever it says, so long as every rack ran
    took = timed(["fleet", "run", "fleet.toml", "--out", str(out), "--quiet"], work, (0, 1, 3))
    m = json.loads((sorted(out.iterdir())[-1] / "fleet.json").read_text())
    racks = m["racks"].values()
    if any(r.get("status") not in RAN for r in racks):
        raise SystemExit("racks that did not run: " + "; ".join(
            f"{n} {r.get('status')}: {r.get('error', '')}" for n, r in m["racks"].items()
            if r.get("status") not in RAN))
    first = min(r["started_ns"] for r in racks)
    return {"wall_s": took, "racks_s": (max(r["stopped_ns"] for r in racks) - first) / 1e9,
            "ray_start_s": (first - m["started_ns"]) / 1e9, "ray_init_s": m["ray"]["init_s"],
            "per_rack_s": [r.get("wall_s") for r in racks]}


def med(xs) -> str:
    return f"{statistics.median(xs):.1f} s [{min(xs):.1f}–{max(xs):.1f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=30.0, help="each rack's run, s")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--racks", type=int, default=3)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rackclock-fleet-bench-") as tmp:
        work = Path(tmp)
        lines = ["[fleet]", 'name = "bench"', f"duration_s = {a.duration:g}"]
        for i in range(a.racks):
            (work / f"rack-{i}.toml").write_text(sim_rack_text(DEVICES, name=f"r{i}", seed=i + 1))
            lines += [f"[racks.r{i}]", f'rack = "rack-{i}.toml"']
        (work / "fleet.toml").write_text("\n".join(lines) + "\n")
        ones, fleets, loads = [], [], []
        for k in range(a.repeats):
            loads.append(os.getloadavg()[0])
            if k % 2 == 0:         # alternate the order: neither always runs on a warmer machine
                ones.append(one_rack(work, a.duration))
                fleets.append(fleet(work, a.duration, a.racks))
            else:
                fleets.append(fleet(work, a.duration, a.racks))
                ones.append(one_rack(work, a.duration))
            loads.append(os.getloadavg()[0])
            f = fleets[-1]
            print(f"repeat {k + 1}: one rack {ones[-1]:.1f} s; fleet of {a.racks}: "
                  f"{f['wall_s']:.1f} s end to end (Ray start {f['ray_start_s']:.1f} s of which "
                  f"ray.init {f['ray_init_s']:.1f} s, racks "
                  f"{f['racks_s']:.1f} s, each " + ", ".join(f"{x:.1f}" for x in f["per_rack_s"])
                  + f" s); ratio {f['wall_s'] / ones[-1]:.2f} ({f['racks_s'] / ones[-1]:.2f} "
                  f"without Ray's start)", flush=True)
    one = statistics.median(ones)
    print(f"\n{a.racks} racks of {len(DEVICES)} simulated devices, {a.duration:g} s runs, "
          f"{os.cpu_count()} CPUs, load average (1 min) {min(loads):.1f}–{max(loads):.1f}")
    print(f"  one rack alone (rackclock run):            {med(ones)}")
    print(f"  fleet, end to end (rackclock fleet run):   {med([f['wall_s'] for f in fleets])}")
    print(f"  fleet, first rack start to last rack stop: {med([f['racks_s'] for f in fleets])}")
    print(f"  Ray start (command start to first rack):   "
          f"{med([f['ray_start_s'] for f in fleets])}")
    print(f"  of which ray.init:                         {med([f['ray_init_s'] for f in fleets])}")
    print(f"  ratio fleet / one rack: {statistics.median(f['wall_s'] for f in fleets) / one:.2f} "
          f"end to end, {statistics.median(f['racks_s'] for f in fleets) / one:.2f} without "
          f"Ray's start (1.0: the fleet takes one rack's time; {a.racks}: no parallelism)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
