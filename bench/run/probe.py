"""Probe a rack's devices for a plan: below the sharding threshold a thread and loop per device
(bench/run/runner.py's workers), above it worker processes (bench/run/shards.py)."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from bench.config.inventory import DeviceConfig
from bench.model.store import RunStore
from bench.run import shards
from bench.run.runner import (
    DeviceStatus,
    DeviceWorker,
    ProbePlan,
    deadline_of,
    mark_hung,
    processes_for,
    run_workers,
)


def run_devices(devices: list[DeviceConfig], now_ns: Callable[[], int], store: RunStore,
                plan: ProbePlan, armed: bool, on_tick: Callable[[list[DeviceStatus], float], None]
                | None = None, seed: int = 0, processes: int | None = None,
                stop: threading.Event | None = None) -> tuple[list[DeviceStatus], bool]:
    """Probe all devices for the plan's duration; `on_tick(statuses, elapsed_s)` twice a second.
    Returns the statuses and whether the user stopped the run (Ctrl-C): what was measured until
    then is kept either way. `processes`: worker processes (processes_for); the devices are
    sharded over them when more than one and the reference can be opened in each. `stop`: an
    event that ends the probing early (as Ctrl-C does, without counting as interrupted)."""
    n = processes_for(len(devices), processes)
    clock = shards.clock_spec(now_ns)
    if n > 1 and clock is not None:
        return shards.run_sharded(devices, clock, store, plan, armed, on_tick, seed, n, stop)
    store.update_manifest(runner={"processes": 1, "devices": len(devices)})
    stop = stop or threading.Event()
    workers = [DeviceWorker(d, now_ns, store, plan, armed, stop, seed=seed + i)
               for i, d in enumerate(devices)]
    t0 = time.monotonic()
    # a small rack: each device's task on a loop of its own in a thread of its own, so that even
    # a device whose answers cost the bench CPU (a flood) is time-sliced with the others
    threads = _started_threads(workers, t0 + deadline_of(plan))
    interrupted = _wait_threads(threads, workers, store, plan, on_tick, stop, t0)
    stop.set()
    mark_hung([w.status for w in workers], store)
    if on_tick:
        on_tick([w.status for w in workers], time.monotonic() - t0)
    return [w.status for w in workers], interrupted


def _started_threads(workers: list[DeviceWorker], deadline_s: float) -> list[threading.Thread]:
    """Each device's worker on a loop of its own in a thread of its own, started."""
    threads = [threading.Thread(target=lambda w=w: asyncio.run(
        run_workers([w], deadline_s)), name=f"dev-{w.config.name}", daemon=True)
        for w in workers]
    for t in threads:
        t.start()
    return threads


def _wait_threads(threads: list[threading.Thread], workers: list[DeviceWorker], store: RunStore,
                  plan: ProbePlan, on_tick: Callable[[list[DeviceStatus], float], None] | None,
                  stop: threading.Event, t0: float) -> bool:
    """Until every device's thread ends, the stop, a full disk or the deadline; `on_tick` twice a
    second. Whether the user stopped the run (Ctrl-C)."""
    try:
        while any(t.is_alive() for t in threads):
            if on_tick:
                on_tick([w.status for w in workers], time.monotonic() - t0)
            for t in threads:
                t.join(0.5 / len(threads))
            if store.full is not None or stop.is_set():  # disk full: what was written is kept
                _stop_all(stop, threads, plan.timeout_s + 2)
                break
            if time.monotonic() - t0 > deadline_of(plan) + 10:
                break            # a hung loop must not hold the run: it is reported as such
    except KeyboardInterrupt:
        store.journal("-", "warn", "interrupted", "stopped by the user; samples so far are kept")
        _stop_all(stop, threads, plan.timeout_s + 2)
        return True
    return False


def _stop_all(stop: threading.Event, threads: list[threading.Thread], wait_s: float) -> None:
    """Tell every device's thread to stop, and wait for each up to `wait_s`."""
    stop.set()
    for t in threads:
        t.join(wait_s)
