"""Stimulus latency: N stimuli per device, the latency from each to the device's own log stamp.

Per device, in its own thread: read the clock twice (calibration reads of this same run), send
the device's allowed stimulus, wait for its log entry (a deadline, never a sleep), then a
jittered pause; N times. A device failure is that device's outcome (bench/run/lab_outcome.py):
a device that cannot be opened is skipped, one whose stimuli fail `give_up_after` times in a
row ends its series; both are recorded and fail the run's verdict, the other devices go on.
Each entry is fetched before the next stimulus is sent, so every entry
pairs with its stimulus without assuming the device logs in order. The run's summary fits every
clock and maps each log stamp through it: per device and event type, a proven latency bound per
event, their distribution (CDF in the report) and percentiles, as measurements.
"""
from __future__ import annotations

import logging
import random
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from bench.analysis.statuses import worst
from bench.model.summary_records import Summary

NS = 1_000_000_000

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Params:
    n: int = 100                      # stimuli per device
    devices: str = "*"                # glob(s) of device names
    planes: str = "bmc,cooling"       # planes whose stimuli log one entry each
    gap_s: float = 0.05               # mean pause after an entry appeared, jittered +-100%
    reads: int = 1                    # clock reads before each stimulus
    entry_timeout_s: float = 5.0      # deadline for the stimulus's log entry
    poll_s: float = 0.05              # log polls while waiting
    seed: int = 1
    give_up_after: int = 3            # a device's series ends after this many failed stimuli
                                      # in a row (recorded; the other devices go on)


def series(lab, device: str, stim: str, n: int, p, rng: random.Random) -> dict:
    """n times: `p.reads` clock reads, the stimulus, wait for its log entry, a jittered pause
    (p: gap_s, reads, entry_timeout_s, poll_s). Returns counts and the series' span."""
    name, _, target = stim.partition(":")
    t0 = lab.now_ns()
    sent = missed = failed = 0
    give_up = getattr(p, "give_up_after", 3)
    for _ in range(n):
        for _ in range(p.reads):
            lab.read_clock(device)
        if not lab.stimulate(device, name, target or None):
            failed += 1                                  # recorded and counted by the lab
            if failed >= give_up:
                break
            continue
        sent, failed = sent + 1, 0
        if not lab.wait_for(lambda: lab.logs(device), p.entry_timeout_s, p.poll_s,
                            what=f"{device}: the {stim} log entry", device=device):
            missed += 1
        lab.sleep(rng.uniform(0, 2 * p.gap_s))
    return {"sent": sent, "no_entry": missed, "gave_up": failed >= give_up,
            "span_ns": [t0, lab.now_ns()]}


def procedure(lab, device: str, stim: str, p: Params, rng: random.Random) -> dict | None:
    """The lab procedure for one device; returns its counts (None: it could not be opened)."""
    if not lab.identify(device):                     # recorded and counted by the lab
        return None
    lab.logs(device)                                 # entries already there are not ours
    out = series(lab, device, stim, p.n, p, rng)
    for _ in range(p.reads * 2):
        lab.read_clock(device)
    return out


def run(bench, p: Params) -> dict:
    lab = bench.lab
    devices = [d for d in lab.devices(name=p.devices, plane=p.planes)
               if lab.config(d).stimuli]
    counts, errors = {}, {}

    def one(dev: str, k: int) -> None:
        try:         # device failures are outcomes (recorded by the lab); this catches bugs
            counts[dev] = procedure(lab, dev, lab.config(dev).stimuli[0], p,
                                    random.Random(p.seed * 1000 + k))
        except Exception as exc:       # ... so that one device's bug does not stop the others
            errors[dev] = repr(exc)
            bench.store.journal(dev, "error", "experiment", repr(exc))

    threads = [threading.Thread(target=one, args=(d, k), daemon=True)
               for k, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bench.store.update_manifest(stimulus_latency={"devices": devices, "counts": counts,
                                                  "errors": errors})
    summary = bench.summarize()
    record(lab, summary, devices)
    log.info("%s", "\n".join(lines(lab.measurements)))   # the terminal shows them after the table
    return summary


def record(lab, summary: dict, devices: list[str]) -> None:
    """Per device and event type: the per-event proven bounds as a distribution measurement."""
    for dev in devices:
        d = Summary.of(summary).device(dev)
        for stim, L in sorted(d.latency.items() if d else ()):
            logged = [e for e in L.events if e.logged_ns is not None]
            evs = [e.logged_ns for e in L.events if e.logged_ns is not None]
            lab.distribution(f"stimulus_latency.{stim}", "ns", [b.lo for b in evs],
                             [b.hi for b in evs], device=dev,
                             basis=worst(e.logged_status for e in logged),
                             doc="stimulus sent -> the device's own log stamp, mapped through "
                                 "this run's calibration of its clock (each event's status: "
                                 "the summary's logged_via)")
            lab.measure(f"stimulus_latency.{stim}.unlogged", L.sent - len(evs),
                        "count", device=dev, doc="stimuli without a mapped log entry")


def lines(ms) -> list[str]:
    from bench.units import fmt_bounds_ns
    out = ["stimulus latency (per device and event type; per-event proven bounds, percentiles "
           "of their lower/upper ends):"]
    for m in ms:
        pc = m.extra.get("percentiles")
        if pc:
            out.append(f"  {m.device:<8} {m.name:<34} n={m.extra['n']:<4} "
                       + "  ".join(f"{k} {fmt_bounds_ns(a, b)}" for k, (a, b) in pc.items())
                       + f"  all within {fmt_bounds_ns(m.lo, m.hi)}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
