"""Regression run: the clock_offset measurement without the incident cascade, sized by a plan.

`rackclock run regression --decide latency,drift [--baseline RUN]` plans its length and its
stimulus interval (bench/compare/plan.py) so that the named measures are decidable by
`rackclock compare` at their tolerances, and says the plan before it starts (docs/REGRESSION.md).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from bench.run.runner import ProbePlan


@dataclass(frozen=True)
class Params:
    duration_s: float = 60.0
    stimulus_every_s: float | None = 3.0   # longer than a log latency and its poll: each entry
                                           # pairs with its own stimulus (slower loggers: more)
    log_poll_s: float = 2.0
    watch_poll_s: float = 0.1              # the log polled this often while an entry is awaited
                                           # (the plan's P): a latency's bound is the stamp's
                                           # tick below and the listing poll above, so at the
                                           # polite 1 s a regression under a tick hides
    tick_edge: bool = True
    burst: int = 2
    timeout_s: float = 5.0


def run(bench, params: Params) -> dict:
    bench.probe(ProbePlan(duration_s=params.duration_s, stimulus_every_s=params.stimulus_every_s,
                          log_poll_s=params.log_poll_s, watch_poll_s=params.watch_poll_s,
                          tick_edge=params.tick_edge,
                          burst=params.burst, timeout_s=params.timeout_s))
    return bench.summarize()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
