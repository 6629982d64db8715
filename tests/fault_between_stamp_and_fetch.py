"""A lab procedure for tests/test_latency_across_faults.py: stimuli before, across and after a
clock fault the procedure triggers itself, on one simulated device.

The crossing stimulus's entry is stamped before the fault and fetched after it: a second session
of the device (its own driver on its own loop, which the run does not record) waits until the
entry is in the device's log, then the fault is triggered through the simulator's control socket
(bench/sim/faults.py), the clock is read after it (the segment after the fault has begun), and
then the run's own session fetches the entry. Every step waits on a
condition with a deadline, never on a margin. The manifest's `crossing` says when the stimulus
was sent, when the fault took effect and when the entry was fetched.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from drivers import driver_class


@dataclass(frozen=True)
class Params:
    device: str = "bmc-3"
    stimulus: str = "test_event"
    fault: str = "step"               # step | reboot
    step_back_s: float = 30.0         # a step sets the clock back this much
    stimuli: int = 3                  # stimuli before the crossing one, and as many after it
    reads: int = 8                    # clock reads before and after the fault
    timeout_s: float = 30.0           # deadline of every wait


class SecondSession:
    """The device's log as the device holds it, read by a session of its own: no row in the run."""

    def __init__(self, lab, device: str):
        cfg = lab.config(device)
        cls = driver_class(cfg.driver)
        if "events" in getattr(cls, "OPTIONS", {}):         # no event subscription of its own
            cfg = replace(cfg, options={**cfg.options, "events": "poll"})
        self.loop = asyncio.new_event_loop()
        self.drv = cls(cfg, lab.now_ns, armed=False)
        self.loop.run_until_complete(asyncio.wait_for(self.drv.open(), 30))
        _, self.cursor = self._call(self.drv.log_entries(None))

    def _call(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))

    def new_entries(self) -> list:
        return self._call(self.drv.log_entries(self.cursor))[0]

    def close(self) -> None:
        try:
            self._call(self.drv.close())
        finally:
            self.loop.close()


def run(bench, p: Params) -> None:
    lab = bench.lab
    dev = p.device
    name, _, target = p.stimulus.partition(":")

    def reads(n: int) -> None:
        for _ in range(n):
            lab.wait_for(lambda: lab.read_clock(dev), p.timeout_s, 0.1, what=f"{dev}: a read")
            lab.sleep(0.2)

    def fetch(what: str) -> list:
        return lab.wait_for(lambda: lab.logs(dev), p.timeout_s, 0.05, what=f"{dev}: {what}")

    def stimulus_and_entry() -> None:
        lab.stimulate(dev, name, target or None)
        fetch("the stimulus's log entry")
        reads(2)

    lab.identify(dev)
    lab.logs(dev)                                     # entries already there are not ours
    reads(p.reads)
    for _ in range(p.stimuli):
        stimulus_and_entry()
    second = SecondSession(lab, dev)
    try:
        st = lab.stimulate(dev, name, target or None)
        lab.wait_for(second.new_entries, p.timeout_s, 0.05,
                     what=f"{dev}: the crossing entry in the device's log (second session)")
    finally:
        second.close()
    how = {"size_s": -p.step_back_s} if p.fault == "step" else {}
    fault = bench.sim.fault(dev, p.fault, **how)      # in force when it answers
    reads(2)            # the clock after the fault, read before the fetch (as the bench may)
    s_fetch = lab.now_ns()
    entries = fetch("the crossing entry, fetched after the fault")
    bench.store.update_manifest(crossing={"s_ns": st.s_ns, "e_ns": st.e_ns,
                                          "fault_ns": fault["t_ns"], "fetch_from_ns": s_fetch,
                                          "entries": [e.cursor for e in entries]})
    reads(p.reads)
    for _ in range(p.stimuli):
        stimulus_and_entry()
    reads(2)
