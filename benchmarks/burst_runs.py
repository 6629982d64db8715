"""Proven offset-bound width with single reads against bursts of two, side by side: alternate
clock_offset runs of the default simulated rack with `burst=1` and `burst=2`.

    .venv/bin/python benchmarks/burst_runs.py [--duration 30] [--pairs 1] [--devices bmc-1,pdu-2]

Each width is printed as median [min–max] over the pairs of runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from racks import sim_rack_text  # noqa: E402
from spread import spread, temp_dir  # noqa: E402

from bench.model.rundata import load_run  # noqa: E402
from bench.run.experiment import run_experiment  # noqa: E402


def widths(path: Path) -> dict[str, float]:
    """Last segment's offset-bound width per device clock, ms."""
    out = {}
    for d, x in load_run(path).summary["devices"].items():
        for c, cc in x["clocks"].items():
            if cc.get("segments"):
                o = cc["segments"][-1]["offset_ns"]
                out[f"{d}/{c}"] = (o["hi"] - o["lo"]) / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="30")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--devices", default=None, help="devices of the default rack (default: all)")
    a = ap.parse_args()
    out = temp_dir("burst-runs-")
    rack = None
    if a.devices:
        rack = out / "rack.toml"
        rack.write_text(sim_rack_text(a.devices.split(",")))
    res: dict[str, list[dict]] = {"1": [], "2": []}
    for _ in range(a.pairs):
        for burst in ("1", "2"):
            res[burst].append(widths(run_experiment("clock_offset", rack, out, {
                "duration_s": a.duration, "burst": burst}, quiet=True)))
    keys = sorted(set(res["1"][0]) & set(res["2"][0]))
    print(f"offset-bound width, ms, median [min–max] over {a.pairs} pair(s) of runs")
    print(f"{'clock':<22} {'burst 1':>24} {'burst 2':>24}")
    for k in keys:
        w1 = [r[k] for r in res["1"] if k in r]
        w2 = [r[k] for r in res["2"] if k in r]
        print(f"{k:<22} {spread(w1, '{:.2f}'):>24} {spread(w2, '{:.2f}'):>24}")


if __name__ == "__main__":
    main()
