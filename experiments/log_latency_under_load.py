"""Log latency under load: stimulus latency while the device log is large and while the other
devices are read at a high rate, beside the same device quiet.

For each target device, three series of `n` stimuli (each: a clock read, the stimulus, wait for
its log entry, a jittered pause; see stimulus_latency): "quiet"; "large_log", after `fill` test
events sent back to back (journalled, not paired) have filled its log; "loaded", while every
other device of the rack runs the probing loop with `load_burst` reads per probe. Per series:
the proven latency to the device's own log stamp, the latency until the bench saw the entry
(first fetch showing it), and the duration of one log fetch, as distributions. A target that
cannot be opened is skipped (recorded by the lab, counted in the verdict).
"""
from __future__ import annotations

import logging
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.analysis.statuses import worst
from bench.model.summary_records import Summary
from drivers.base import LogEntry
from experiments.stimulus_latency import series

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Params:
    n: int = 30                       # stimuli per series
    devices: str = "bmc-1"            # glob(s) of target devices
    fill: int = 800                   # back-to-back events that fill the log before "large_log"
    load_burst: int = 8               # reads per probe of every other device in "loaded"
    load_s: float = 30.0              # how long the other devices are loaded
    gap_s: float = 0.05
    reads: int = 1
    entry_timeout_s: float = 5.0
    poll_s: float = 0.05
    seed: int = 1


def run(bench, p: Params) -> dict:
    lab = bench.lab
    targets = [d for d in lab.devices(name=p.devices) if lab.config(d).stimuli]
    others = [d for d in lab.devices() if d not in targets]
    rng = random.Random(p.seed)
    phases: dict[str, dict] = {}
    for dev in targets:
        stim = lab.config(dev).stimuli[0]
        if not lab.identify(dev):                    # a device failure: recorded, counted
            continue
        lab.logs(dev)
        phases[f"{dev}/quiet"] = series(lab, dev, stim, p.n, p, rng)
        name, _, target = stim.partition(":")
        lab.bulk_stimulate(dev, name, p.fill, target or None)
        got: list[LogEntry] = []

        def filled() -> bool:
            got.extend(lab.logs(dev) or [])  # noqa: B023 (waited on here; a Failed is falsy)
            return len(got) >= p.fill  # noqa: B023

        lab.wait_for(filled, 60.0, 0.5, what=f"{dev}: the {p.fill} fill entries")
        phases[f"{dev}/large_log"] = series(lab, dev, stim, p.n, p, rng)
        load = lab.probe_in_background(p.load_s, others, burst=p.load_burst,
                                       stimulus_every_s=None, log_poll_s=0.5)
        lab.sleep(2.0)                                   # the load is running
        phases[f"{dev}/loaded"] = series(lab, dev, stim, p.n, p, rng)
        load.join()
        for _ in range(4):
            lab.read_clock(dev)
    bench.store.update_manifest(log_latency_under_load={"phases": phases, "targets": targets,
                                                         "load_devices": others})
    summary = bench.summarize()
    record(lab, summary, phases)
    log.info("%s", "\n".join(lines(lab.measurements)))   # the terminal shows them after the table
    return summary


def record(lab, summary: dict, phases: dict) -> None:
    from bench.model.rundata import load_run
    run = load_run(lab.store.path)
    for key, ph in phases.items():
        dev, phase = key.split("/")
        a, b = ph["span_ns"]
        d = Summary.of(summary).device(dev)
        for stim, L in (d.latency.items() if d else ()):
            evs = [e for e in L.events if a <= e.s_ns <= b]
            for kind, what in (("logged_ns", "stamped in the device log"),
                               ("observed_ns", "seen by the bench (first fetch showing it)")):
                has = [e for e in evs if getattr(e, kind) is not None]
                bs = [getattr(e, kind) for e in has]
                lab.distribution(f"log_latency_under_load.{phase}.{kind[:-3]}", "ns",
                                 [x.lo for x in bs], [x.hi for x in bs], device=dev,
                                 basis=worst(e.logged_status for e in has)
                                 if kind == "logged_ns" else "proven",
                                 doc=f"{stim} -> {what}, series '{phase}'")
        smp = run.samples(dev)
        ev = [i for i in smp.select("event") if a <= smp.s_ns[i] <= b]
        fetch = np.unique([(int(smp.s_ns[i]), int(smp.e_ns[i])) for i in ev], axis=0) \
            if ev else np.zeros((0, 2))
        if len(fetch):
            took = fetch[:, 1] - fetch[:, 0]
            lab.measure(f"log_latency_under_load.{phase}.fetch", float(np.median(took)), "ns",
                        lo=float(took.min()), hi=float(took.max()), device=dev, basis="observed",
                        doc=f"duration of a log fetch that returned an entry, series '{phase}' "
                            f"(median; bound: min-max)")


def lines(ms) -> list[str]:
    from bench.units import fmt_ns
    out = ["log latency under load (median of per-event midpoints; p95 of upper ends):"]
    for m in ms:
        pc = m.extra.get("percentiles")
        if pc:
            out.append(f"  {m.device:<8} {m.name:<42} n={m.extra['n']:<3} median {fmt_ns(m.point)}"
                       f"  p95 upper {fmt_ns(pc['p95'][1])}")
        elif m.name.endswith(".fetch"):
            out.append(f"  {m.device:<8} {m.name:<42} median {fmt_ns(m.point)} "
                       f"(max {fmt_ns(m.hi)})")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
