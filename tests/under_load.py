"""The whole suite, N times in a row, with CPU-bound hog processes running beside it.

    .venv/bin/python tests/under_load.py [--runs 3] [--hogs 2] [-- PYTEST_ARGS...]
    make test-under-load

A test never rests on a timing margin (faults are triggered by the test, waits are conditions with
deadlines), so the suite must pass on a loaded 2-core machine; this is how that is checked. Each
hog is a busy loop in its own process at normal priority. Prints, per run, pytest's counts and the
wall time, and the machine's load average; exits 1 when any run failed. The hogs are stopped
(by their process ids) however the script ends.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOG = "while True:\n    pass\n"


def counts(tail: str) -> dict[str, int]:
    """pytest's closing line ('3 failed, 250 passed, 12 skipped in 91.2s') as numbers."""
    last = [line for line in tail.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|"
                                             r"xpassed|deselected)", last[-1] if last else "")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--log-dir", type=Path, default=ROOT / "results" / "under_load",
                    help="where the output of a failed run is kept")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    a = ap.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(a.hogs)]
    results = []
    try:
        for i in range(1, a.runs + 1):
            load0 = os.getloadavg()[0]
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-ra", "-p",
                                "no:cacheprovider", *a.pytest_args], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            wall = time.monotonic() - t0
            c = counts(p.stdout)
            results.append((p.returncode, c, wall))
            failed = [line for line in p.stdout.splitlines()
                      if line.startswith(("FAILED", "ERROR"))]
            print(f"run {i}/{a.runs}: exit {p.returncode}, "
                  f"{', '.join(f'{n} {k}' for k, n in c.items())}, wall {wall:.1f} s, "
                  f"load average {load0:.2f} -> {os.getloadavg()[0]:.2f} "
                  f"(hogs: {a.hogs})", flush=True)
            for line in failed:
                print(f"  {line}", flush=True)
            if p.returncode != 0 and a.log_dir:
                a.log_dir.mkdir(parents=True, exist_ok=True)
                (a.log_dir / f"run{i}.log").write_text(p.stdout)
                print(f"  pytest's output: {a.log_dir / f'run{i}.log'}", flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    ok = all(rc == 0 for rc, _, _ in results)
    print(f"{sum(rc == 0 for rc, _, _ in results)} of {len(results)} runs passed with {a.hogs} "
          f"CPU hogs beside them; wall {sum(w for _, _, w in results):.1f} s in all")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
