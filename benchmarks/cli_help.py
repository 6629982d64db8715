"""`rackclock --help` and each command's `--help`: wall time, median of N runs each, beside
`python -c pass` (the interpreter's own start) measured in the same rounds, interleaved; and
the CPU time (user + system) each took, which a loaded host inflates less than the wall time.

    .venv/bin/python benchmarks/cli_help.py [--repeats 7]

The modules a command's help imports are asserted in tests/test_cli_lazy.py; this measures the
time (`python -X importtime -m bench.cli CMD --help` shows where it goes)."""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.commands import names  # noqa: E402


def wall(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds, and the CPU seconds (user + system) the command took: on a shared host the
    CPU time is what the command costs, the wall time also its wait for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, cwd=ROOT)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    cases = {"python -c pass": [sys.executable, "-c", "pass"],
             "rackclock --help": [sys.executable, "-m", "bench.cli", "--help"]}
    cases |= {f"rackclock {c} --help": [sys.executable, "-m", "bench.cli", c, "--help"]
              for c in names()}
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(a.repeats):
        for k, cmd in cases.items():
            w, c = wall(cmd)
            times[k].append(w)
            cpu[k].append(c)
    base = statistics.median(times["python -c pass"])
    print(f"| command | median wall s ({a.repeats} runs) | × python -c pass | median CPU s |\n"
          f"|---|---|---|---|")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"| `{k}` | {m:.3f} | {m / base:.1f} | {statistics.median(cpu[k]):.3f} |")


if __name__ == "__main__":
    main()
