"""The long fuzz of the rack loader (issue 31): the properties of tests/test_fuzz_rackfile.py with
many more examples and a random seed, counted per source and outcome.

    nice .venv/bin/python benchmarks/fuzz/rackfile.py --examples 3000 --seed 1

Prints, per source (generated documents, structural mutations of the default rack, text
mutations of it), how many examples ran, how many TOML could not hold (skipped), how many the
loader accepted and refused with its one-line error, and the first failure with its example
(exit 1) should anything else be raised.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.rackfuzz import document, mutation, outcome, text_mutation, write  # noqa: E402

SOURCES = {"generated": document, "mutated": mutation, "text-mutated": text_mutation}


def fuzz(name: str, examples: int, rng_seed: int, counts: Counter) -> None:
    @seed(rng_seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(SOURCES[name]())
    def run(doc):
        with tempfile.TemporaryDirectory() as tmp:
            path = write(Path(tmp), doc)
            counts[name, "skipped" if path is None else outcome(path)] += 1

    run()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=3000, help="per source (default 3000)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    counts: Counter = Counter()
    failed = 0
    for name in SOURCES:
        t = time.perf_counter()
        try:
            fuzz(name, a.examples, a.seed, counts)
            verdict = "ok"
        except Exception as exc:          # Hypothesis re-raises the shrunk failure
            failed += 1
            verdict = f"FAILED: {type(exc).__name__}: {exc}"[:400]
        n = sum(v for (src, _), v in counts.items() if src == name)
        print(f"{name:13s} {n:6d} examples in {time.perf_counter() - t:6.1f} s: "
              f"accepted {counts[name, 'accepted']}, refused {counts[name, 'refused']}, "
              f"skipped {counts[name, 'skipped']}; {verdict}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
