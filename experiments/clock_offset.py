"""Clock offset: offset, drift and jitter of every device clock, with provable bounds.

Reads every clock of every device at its rate (coarse clocks aimed at their tick edges), sends
each allowed stimulus every `stimulus_every_s` and polls the device logs, then fits each clock,
bounds each stimulus-to-log latency, and draws one offset figure per device clock.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.run.runner import ProbePlan


@dataclass(frozen=True)
class Params:
    duration_s: float = 60.0
    stimulus_every_s: float | None = 15.0
    log_poll_s: float = 2.0
    tick_edge: bool = True
    burst: int = 2
    timeout_s: float = 5.0
    incident_at_s: float | None = 25.5    # the incident cascade (experiments/incident.py) starts
                                          # here, between the 20 s and 35 s stimuli; None: none
    incident_cascades: int = 600          # offline cascades for the incident curve (0: none)


def run(bench, params: Params) -> dict:
    steps: list[dict[str, Any]] = []
    if params.incident_at_s is not None and bench.simulated:
        from bench.sim.cascade import resolve
        steps, skipped = resolve(bench.rack, start_s=params.incident_at_s)
        if steps and steps[-1]["at_s"] + 6.0 > params.duration_s:   # no time to collect its logs
            skipped, steps = [f"run shorter than the cascade's {steps[-1]['at_s'] + 6.0:g} s"], []
        bench.store.update_manifest(incident={"steps": steps, "skipped": skipped})
    from experiments.incident import offline_later, report
    # the offline cascades need nothing of the run: computed while the rack is probed
    later = offline_later(params.incident_cascades, 24, 1) if steps else None
    try:
        bench.probe(ProbePlan(duration_s=params.duration_s,
                              stimulus_every_s=params.stimulus_every_s,
                              log_poll_s=params.log_poll_s, tick_edge=params.tick_edge,
                              burst=params.burst, timeout_s=params.timeout_s,
                              schedule=tuple((s["device"], s["at_s"], s["stimulus"])
                                             for s in steps)))
        summary = bench.summarize()
        bench.plot(wait=False)           # drawn by the workers while the incident is scored
        if steps:
            report(bench, params.incident_cascades, 24, 1, later)
    finally:
        if later is not None:
            later.close()
    return summary


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
