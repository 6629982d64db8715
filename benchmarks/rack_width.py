"""The default rack's widths against the issue's baseline (issue 39, "Done when": median width
<= 1.1x today's on a quiet host): each run folder summarised three ways on the same reads.

    nice .venv/bin/python benchmarks/rack_width.py [--runs 2] [--duration 60]
    nice .venv/bin/python benchmarks/rack_width.py --folders RUN [RUN ...]

Each run is `python -m bench.cli run --duration D --out TMP --quiet` on the simulated rack (or
the folders given). A copy of each folder is re-summarised by `rackclock summarize`:

- `baseline`: the default `drift_prior_ppm = 600` declared for every device in the manifest's
  inventory and no device's free-running claim, so no clock falls back to the disciplined
  rate: the widths of the estimator before the rate check (issue 39's "today's");
- `no claim`: the free-running claims removed (Redfish `NTP.ProtocolEnabled=false`);
- `as run`: the folder as the run wrote it.

The figure is the median over the clocks of the last segment's offset width (bounds.csv), and
its ratio to the baseline's; the per-clock table says which clocks moved and their status.
Read it with the load average it prints: brackets widen under load, and a clock whose reads
then no longer check 600 ppm falls back to 2,500.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from spread import scratch  # noqa: E402

from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM  # noqa: E402

WAYS = ("baseline", "no claim", "as run")


def last_widths(folder: Path) -> dict[str, tuple[float, str]]:
    """(offset width ms, status) of each clock's last segment with bounds, from bounds.csv."""
    last = {}
    with open(folder / "bounds.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["offset_lo_ns"] and r["offset_hi_ns"]:
                width = (int(r["offset_hi_ns"]) - int(r["offset_lo_ns"])) / 1e6
                last[f"{r['device']}.{r['clock']}"] = (width, r["offset_status"])
    return last


def restated(manifest: dict, way: str) -> dict:
    """The manifest as `way` reads the run."""
    if way == "as run":
        return manifest
    for dev in manifest["devices"].values():
        for clock in dev.get("clocks", []):
            clock.pop("free_running", None)
    if way == "baseline":
        inv = manifest.setdefault("inventory", {}).setdefault("devices", {})
        for name in manifest["devices"]:
            inv.setdefault(name, {})["drift_prior_ppm"] = DEFAULT_DRIFT_PRIOR_PPM
    return manifest


def summarised(run: Path, way: str, tmp: Path) -> dict[str, tuple[float, str]]:
    copy = tmp / f"{run.name}-{way.replace(' ', '_')}"
    shutil.copytree(run, copy)
    manifest = restated(json.loads((copy / "manifest.json").read_text()), way)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    subprocess.run([sys.executable, "-m", "bench.cli", "summarize", str(copy), "--quiet"],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return last_widths(copy)


def new_runs(n: int, duration: float, out: Path) -> list[Path]:
    for _ in range(n):
        print(f"run ({duration:g} s), load {os.getloadavg()[0]:.2f}", flush=True)
        subprocess.run([sys.executable, "-m", "bench.cli", "run", "--duration", str(duration),
                        "--out", str(out), "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL)
    return sorted(out.iterdir())


def report(run: Path, ways: dict[str, dict[str, tuple[float, str]]]) -> None:
    med = {w: statistics.median(v[0] for v in ways[w].values()) for w in WAYS}
    print(f"\n{run.name}: median last-segment offset width, ms (load "
          f"{os.getloadavg()[0]:.2f})")
    print("| clock | " + " | ".join(WAYS) + " | status as run |")
    print("|---|" + "---|" * (len(WAYS) + 1))
    for clock in sorted(ways["as run"]):
        cells = " | ".join(f"{ways[w].get(clock, (float('nan'), ''))[0]:.3f}" for w in WAYS)
        print(f"| {clock} | {cells} | {ways['as run'][clock][1]} |")
    print("| median | " + " | ".join(f"{med[w]:.3f}" for w in WAYS) + " | |")
    print(f"ratio to baseline: no claim {med['no claim'] / med['baseline']:.2f}, "
          f"as run {med['as run'] / med['baseline']:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--folders", nargs="+", type=Path, help="run folders to re-summarise")
    a = ap.parse_args(argv)
    with scratch("rack-width-") as tmp:
        runs = a.folders or new_runs(a.runs, a.duration, tmp / "runs")
        for run in runs:
            report(run, {w: summarised(run.resolve(), w, tmp) for w in WAYS})
    return 0


if __name__ == "__main__":
    sys.exit(main())
