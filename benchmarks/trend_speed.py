"""How fast `rackclock trend` (N runs) and `rackclock compare` (two) are, beside their floors.

    .venv/bin/python benchmarks/trend_speed.py RUN [--runs 10] [--repeats 3] [--source DIR]

RUN is copied N times (a series of one rack: the verdicts do not matter, the reading does).
Each command runs as a user types it, a new process each repeat: wall time and CPU time (of it
and its children). Beside them the floors: `python -c "import numpy"` (every command imports
it) and a plain loop that reads the N summary.json files with `json.load`. `--figure`: trend
also draws its figure (on request since issue 46). `--source DIR`: another checkout's bench/
(e.g. `git archive fc3c331 | tar -x -C DIR`: the code before issue 46's item 3), same venv.
Printed: median [min-max] over the repeats.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SUMMARIES = ("import json, sys\n"
             "print(sum(len(json.load(open(p + '/summary.json'))['devices']) "
             "for p in sys.argv[1:]))\n")


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], source: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, exit status) of a command in a new process."""
    c0, t0 = _cpu_children(), time.perf_counter()
    p = subprocess.run(cmd, cwd=source, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(source)})
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1, 3):      # 1 REGRESSED, 3 UNDECIDED: verdicts, not failures
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return wall, _cpu_children() - c0, p.returncode


def line(name: str, xs: list[tuple[float, float, int]]) -> str:
    w, c = [x[0] for x in xs], [x[1] for x in xs]
    return (f"  {name:<44} wall {statistics.median(w):6.2f} s [{min(w):.2f}-{max(w):.2f}]  "
            f"CPU {statistics.median(c):6.2f} s [{min(c):.2f}-{max(c):.2f}]")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a run folder (copied --runs times)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--figure", action="store_true", help="trend also draws its figure")
    ap.add_argument("--source", type=Path, default=ROOT, help="the checkout whose bench/ runs")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rackclock-trend-"))
    try:
        runs = []
        for k in range(max(3, a.runs)):
            runs.append(tmp / f"run{k:02d}")
            shutil.copytree(a.run, runs[-1], ignore=shutil.ignore_patterns(
                "plots", "report.html", "trend.png", "timeline*"))
        names = [str(r) for r in runs]
        trend = [PY, "-m", "bench.cli", "trend", *names]
        trend += ["--figure", str(tmp / "trend.png")] if a.figure else []
        compare = [PY, "-m", "bench.cli", "compare", names[0], names[1]]
        rows = {f"rackclock trend ({len(runs)} runs)": trend,
                "rackclock compare (2 runs)": compare,
                "python -c 'import numpy' (floor)": [PY, "-c", "import numpy"],
                f"json.load of the {len(runs)} summaries (floor)": [PY, "-c", SUMMARIES, *names]}
        got: dict[str, list[tuple[float, float, int]]] = {k: [] for k in rows}
        for _ in range(a.repeats):
            for name, cmd in rows.items():
                got[name].append(timed(cmd, a.source))
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print(f"{len(runs)} copies of {a.run} ({a.repeats} repeats, load {load}, "
              f"{os.cpu_count()} CPUs; median [min-max]):")
        for name in rows:
            print(line(name, got[name]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
