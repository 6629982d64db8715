"""The watch's devices, each probed by the runner's own DeviceWorker (bench/run/runner.py) on a
loop and thread of its own, as a small rack's run does; here each device also has its own stop,
so that a reloaded rack file adds and removes devices without touching the others."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, replace

from bench.config.inventory import DeviceConfig
from bench.run.runner import DeviceWorker, ProbePlan, run_workers

log = logging.getLogger(__name__)
FOREVER_S = 100 * 365 * 86400.0       # the plan's duration: the watch runs until stopped

# Polite long-run rates by driver (Hz), unless --rate says otherwise: a BMC vendor accepts a
# Redfish GET every few seconds from a monitoring tool; SNMP and Modbus agents take more.
RATES = {"redfish_bmc": 0.2, "ipmi_bmc": 0.2, "k8s_scheduler": 0.2, "host_kernel": 1.0, "snmp_pdu": 0.5,
         "modbus_cooling": 0.5, "serial_optic": 0.5}
DEFAULT_RATE = 0.2
TRAFFIC_MINUTES = 5                   # the runner's per-minute traffic rows kept per device (unused by
                                      # the watch: a few, so that they are all there within minutes)


def watch_plan(timeout_s: float = 5.0) -> ProbePlan:
    """The runner's plan for a watch: no end, no stimuli (a watch observes), a log poll every
    30 s (a BMC's log is not read at a run's pace for weeks)."""
    return ProbePlan(duration_s=FOREVER_S, stimulus_every_s=None, log_poll_s=30.0,
                     timeout_s=timeout_s)


def polite(device, rates: dict[str, float]):
    """The device at its watch rate: --rate by device name, then by driver, then for all
    ("*"), then RATES."""
    hz = rates.get(device.name, rates.get(device.driver, rates.get(
        "*", RATES.get(device.driver, DEFAULT_RATE))))
    return replace(device, rate_hz=float(hz))


@dataclass
class Probed:
    config: DeviceConfig
    worker: DeviceWorker
    thread: threading.Thread
    stop: threading.Event


class Supervisor:
    def __init__(self, now_ns, store, plan: ProbePlan, seed: int = 0):
        self.now_ns, self.store, self.plan, self.seed = now_ns, store, plan, seed
        self.probed: dict[str, Probed] = {}
        self._n = 0

    def start(self, config) -> None:
        stop = threading.Event()
        w = DeviceWorker(config, self.now_ns, self.store, self.plan, False, stop,
                         seed=self.seed + self._n)
        self._n += 1
        t0 = time.monotonic()
        t = threading.Thread(target=lambda: asyncio.run(run_workers([w], t0 + FOREVER_S)),
                             name=f"watch-{config.name}", daemon=True)
        self.probed[config.name] = Probed(config, w, t, stop)
        t.start()

    def stop(self, name: str, wait_s: float | None = None) -> None:
        p = self.probed.pop(name, None)
        if p is None:
            return
        p.stop.set()
        p.thread.join(wait_s if wait_s is not None else self.plan.timeout_s + 5)
        self.store.drop(name)

    def stop_all(self) -> None:
        for p in self.probed.values():
            p.stop.set()
        for name in list(self.probed):
            self.stop(name)

    def apply(self, devices) -> tuple[list[str], list[str]]:
        """Make the probed devices these: stop the removed and the changed, start the new and
        the changed; the others go on untouched. Returns (added, removed) names."""
        want = {d.name: d for d in devices}
        gone = [n for n, p in self.probed.items() if n not in want or want[n] != p.config]
        new = [n for n, d in want.items() if n not in self.probed or n in gone]
        for n in gone:
            self.stop(n)
        for n in new:
            self.start(want[n])
        return new, gone

    def states(self) -> dict[str, str]:
        return {n: p.worker.status.state for n, p in list(self.probed.items())}

    def records(self) -> dict[str, dict]:
        """Per device what a day's manifest says of it."""
        return {n: {"identity": p.worker.status.identity, "clocks": p.worker.status.clocks,
                    "plane": p.config.plane, "state": p.worker.status.state}
                for n, p in self.probed.items()}

    def trim(self) -> None:
        """The runner's live reads for the progress display are not used by the watch: drop
        them, so memory stays flat (the state keeps its own window); of its per-minute traffic
        rows (a row a minute, for a run's manifest) keep the last TRAFFIC_MINUTES, in place
        (the device's thread appends to that list)."""
        for p in self.probed.values():
            p.worker.status.recent = {}
            rows = p.worker.status.traffic.get("per_minute")
            if rows is not None and len(rows) > TRAFFIC_MINUTES:
                del rows[:-TRAFFIC_MINUTES]
