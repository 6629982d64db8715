"""The log and run-folder fuzz of tests/test_fuzz_logs.py run long: the same Hypothesis
properties (every log format's parser, format detection, samples/events files, manifest /
summary / truth documents, whole run folders never raise anything but RackclockError), with
--examples a property, randomized (a fresh seed each time unless --seed), and the counts
Hypothesis reports per property.

    nice .venv/bin/python benchmarks/fuzz_logs.py [--examples 2000] [--seed S]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=2000, help="examples a property")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args(argv)
    # above 100 examples the properties run randomized; at 100 or fewer derandomized, as in the
    # suite (the smoke run of tests/test_benchmarks_smoke.py)
    env = {**os.environ, "RACKCLOCK_FUZZ_EXAMPLES": str(a.examples)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
           "--hypothesis-show-statistics", "tests/test_fuzz_logs.py"]
    if a.seed is not None:
        cmd.append(f"--hypothesis-seed={a.seed}")
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    total = 0
    for name, block in re.findall(r"::(test_\S+?):\n(.*?)(?=\n\S|\Z)", r.stdout, re.S):
        counts = [list(map(int, c)) for c in
                  re.findall(r"(\d+) passing, (\d+) failing, and (\d+) invalid", block)]
        ok, bad, inv = (sum(c[k] for c in counts) for k in range(3))
        print(f"{name}: {ok} passing, {bad} failing, {inv} invalid")
        total += ok
    fails = re.findall(r"^FAILED .*$", r.stdout, re.M)
    print(f"{total} examples in {took:.0f} s; {len(fails)} properties failed")
    for f in fails:
        print(f)
    if r.returncode and not fails:
        print(r.stdout[-3000:], r.stderr[-3000:])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
