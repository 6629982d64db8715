"""The long fuzz of the drivers' pure answer parsers (issue 31): the properties of
tests/test_fuzz_parsers.py with many more examples and a random seed, counted per property.

    nice .venv/bin/python benchmarks/fuzz/parsers.py --examples 3000 --seed 1

Prints, per property, how many examples ran and "ok", or the first failure (exit 1).
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.test_fuzz_parsers import PROPERTIES  # noqa: E402


def run_long(strategies: tuple, fn, examples: int, rng_seed: int) -> int:
    """Run `fn` over `examples` drawn from `strategies`; the number run (a failure raises)."""
    n = [0]

    @seed(rng_seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(*strategies)
    @functools.wraps(fn)             # @given reads the property's own signature
    def counted(*args, **kwargs):
        n[0] += 1
        fn(*args, **kwargs)

    counted()
    return n[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=3000, help="per property (default 3000)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    failed = 0
    for name, (strategies, fn) in PROPERTIES.items():
        t = time.perf_counter()
        try:
            n, verdict = run_long(strategies, fn, a.examples, a.seed), "ok"
        except Exception as exc:          # Hypothesis re-raises the shrunk failure
            failed += 1
            n, verdict = "-", f"FAILED: {type(exc).__name__}: {exc}"[:400]
        print(f"{name:66s} {n:>7} examples in {time.perf_counter() - t:6.1f} s: {verdict}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
