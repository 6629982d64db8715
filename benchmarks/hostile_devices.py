"""Hostile devices beside a clean one, side by side in one run: clock read count, offset width
and errors per device, the bench's peak memory, and each server's session counts.

    .venv/bin/python benchmarks/hostile_devices.py [--duration 30] [--only clean,slowlog]

Every device is its own server process on loopback (tests/hostile.py) whose clock is
CLOCK_REALTIME + offset_s, so each proven offset bound is checked against the truth here.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile import PROFILES, run_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--only", default=",".join(PROFILES))
    ap.add_argument("--bench-root", type=Path, default=ROOT,
                    help="checkout whose bench is measured (e.g. `git archive` of an older commit)")
    a = ap.parse_args()
    names = a.only.split(",")
    with tempfile.TemporaryDirectory(prefix="rackclock-hostile-bench-") as tmp:
        r = run_bench(names, a.duration, Path(tmp), a.bench_root.resolve())
    print(f"{'device':<14}{'reads':>6}  {'width':>10}  truth   errors / server counts")
    for n, d in r["devices"].items():
        w = f"{d['width_ms']:.2f} ms" if d["width_ms"] is not None else "-"
        print(f"{n:<14}{d['reads']:>6}  {w:>10}  {str(d['truth_inside']):<6}  {d['errors']} "
              f"{d['server']}")
    print(f"exit status {r['exit']}; bench peak RSS {r.get('peak_rss_mb')} MB")


if __name__ == "__main__":
    main()
