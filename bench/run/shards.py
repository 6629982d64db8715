"""The devices of a run sharded over worker processes, one event loop each (bench/run/runner.py's
tasks), so a large rack uses every core instead of one interpreter lock.

Each worker is a spawned process that opens the reference itself (CLOCK_REALTIME, or the PHC's
own file descriptor), writes its devices' samples/<device>.csv as it takes them, and sends the
parent what only the parent writes: journal lines, what a device told about itself (the
manifest), and twice a second the devices' live status with the reads since the last one (the
progress display and live bounds). A worker that dies costs its own devices only: they are
reported with an error, the others go on.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType

from bench import priority
from bench.config.inventory import DeviceConfig
from bench.model.store import SampleFiles, route_library_logs
from bench.reference.clock import PhcReference, Reference
from bench.run.runner import DeviceStatus, DeviceWorker, ProbePlan, deadline_of, mark_hung, run_workers
from bench.run.startline import Peers

STATUS_EVERY_S = 0.5
SPAWN_ALLOWANCE_S = 60.0       # a loaded machine can take long to start a Python process


# -- what crosses the process boundary --------------------------------------------------------------
def clock_spec(now_ns: Callable[[], int]) -> tuple | None:
    """How a worker opens the same reference: ("realtime",) or ("phc", path, utc_offset_s);
    None when it cannot (a virtual reference lives in one process only)."""
    owner = getattr(now_ns, "__self__", None)
    if isinstance(owner, PhcReference):
        return ("phc", owner.phc.path, owner.utc_offset_s)
    if now_ns is Reference.now_ns or (type(owner) is Reference):
        return ("realtime",)
    return None


def open_clock(spec: tuple) -> Callable[[], int]:
    if spec[0] == "phc":
        return PhcReference(spec[1], utc_offset_s=spec[2]).now_ns
    return Reference.now_ns


def to_wire(d: DeviceConfig) -> dict:
    out = {f.name: getattr(d, f.name) for f in fields(d)}
    for k in ("options", "sim"):
        if isinstance(out[k], MappingProxyType):
            out[k] = dict(out[k])
    return out


def from_wire(d: dict) -> DeviceConfig:
    d = dict(d)
    for k in ("options", "sim"):
        if d.get(k) is not None:
            d[k] = MappingProxyType(dict(d[k]))
    return DeviceConfig(**d)


def status_fields(st: DeviceStatus, sent: dict) -> dict:
    """The status as sent: counters whole, `recent` only the reads since the last send."""
    out = {k: v for k, v in st.__dict__.items() if k != "recent"}
    out["recent"] = {}
    for clock, rows in list(st.recent.items()):
        k = sent.get(clock, 0)
        if len(rows) > k:
            out["recent"][clock] = rows[k:]
            sent[clock] = len(rows)
    return out


def merge_status(st: DeviceStatus, f: dict) -> None:
    for k, v in f.items():
        if k == "recent":
            for clock, rows in v.items():
                st.recent.setdefault(clock, []).extend(rows)
        else:
            setattr(st, k, v)


# -- the worker process -------------------------------------------------------------------------------
class ShardStore(SampleFiles):
    """The run folder as a worker sees it: its devices' sample files; the rest to the parent."""

    def __init__(self, path: Path, out: multiprocessing.Queue):
        self.path = Path(path)
        self.q = out
        self.full: OSError | None = None

    def failed(self, exc: OSError) -> None:
        if self.full is None:
            self.full = exc
            self.q.put(("full", exc.errno, exc.strerror or str(exc)))

    def journal(self, device: str, level: str, kind: str, message: str) -> None:
        self.q.put(("journal", device, level, kind, message))

    def update_device(self, name: str, **fields) -> None:
        self.q.put(("device", name, fields))


def _worker(index: int, items: list[tuple[int, dict]], clock: tuple, path: str, plan: ProbePlan,
            armed: bool, seed: int, out: multiprocessing.Queue, stop_mp, deadline_s: float,
            peers: Peers | None = None) -> None:
    import asyncio

    from bench.run.simproc import die_with_parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # the parent handles Ctrl-C and says stop
    die_with_parent(os.getppid())
    store = ShardStore(Path(path), out)
    # a probe must start on time on a busy host: above its other jobs when allowed, and in real
    # time once the devices have opened (bench/priority.py)
    store.journal("", "info", "priority", f"worker {index} {priority.raise_nice()}")
    handler = route_library_logs(Path(path) / "library.log")
    stop = threading.Event()        # polled often by every device: a local flag, set from the
                                    # parent's by polling (a process waiting on it and then dying
                                    # would hang the parent's set(): no waiters, ever)
    now_ns = open_clock(clock)
    workers = [DeviceWorker(from_wire(d), now_ns, store, plan, armed, stop, seed=seed + i)
               for i, d in items]
    sent: dict[str, dict[str, int]] = {w.config.name: {} for w in workers}

    def report() -> None:
        out.put(("status", [(w.config.name, status_fields(w.status, sent[w.config.name]))
                            for w in workers]))

    def probing() -> None:
        def left(words: str) -> None:
            store.journal("", "warn", "priority", f"worker {index} {words}")
        store.journal("", "info", "priority", f"worker {index} {priority.realtime(left)}")

    async def main():
        async def reporter():
            k = 0
            while True:
                await asyncio.sleep(STATUS_EVERY_S / 5)
                if stop_mp.is_set():
                    stop.set()
                k += 1
                if k % 5 == 0:
                    report()
        rep = asyncio.create_task(reporter())
        try:
            await run_workers(workers, time.monotonic() + deadline_s, peers, on_start=probing)
        finally:
            rep.cancel()
    out.put(("started", index, os.getpid()))
    try:
        asyncio.run(main())
    finally:
        report()
        out.put(("done", index))
        handler.close()


# -- the parent -----------------------------------------------------------------------------------------
class _Parent:
    """The parent's side of a sharded run: the worker processes, the queue they send on, the
    devices' statuses as last sent, and which workers are done."""

    def __init__(self, devices: list[DeviceConfig], clock: tuple, store, plan: ProbePlan,
                 armed: bool, seed: int, processes: int):
        ctx = multiprocessing.get_context("spawn")
        self.store, self.plan = store, plan
        self.out = ctx.Queue()
        self.stop = ctx.Event()
        # the workers' loops start together; kept while the workers live (a spawned worker
        # unpickles its shared value's lock by name: freed here, it would find none)
        self.peers = Peers(ctx.Value("i", 0), processes)
        self.statuses = {d.name: DeviceStatus(d.name, d.plane) for d in devices}
        self.shards = [[(i, to_wire(d)) for i, d in enumerate(devices) if i % processes == k]
                       for k in range(processes)]
        self.procs = [ctx.Process(target=_worker, name=f"rackclock-shard-{k}", daemon=True,
                                  args=(k, items, clock, str(store.path), plan, armed, seed,
                                        self.out, self.stop, deadline_of(plan), self.peers))
                      for k, items in enumerate(self.shards)]
        self.done: set[int] = set()

    def start(self) -> None:
        for p in self.procs:
            p.start()
        self.store.update_manifest(runner={"processes": len(self.procs),
                                           "devices": len(self.statuses),
                                           "per_process": [len(x) for x in self.shards],
                                           "pids": [p.pid for p in self.procs]})

    def drain(self, wait_s: float) -> None:
        """Every message waiting (the first waited for up to `wait_s`)."""
        try:
            msg = self.out.get(timeout=wait_s)
        except queue.Empty:
            return
        while True:
            self._take(msg)
            try:
                msg = self.out.get_nowait()
            except queue.Empty:
                return

    def _take(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == "status":
            for name, f in msg[1]:
                merge_status(self.statuses[name], f)
        elif kind == "journal":
            self.store.journal(*msg[1:])
        elif kind == "device":
            self.store.update_device(msg[1], **msg[2])
        elif kind == "full":
            self.store.failed(OSError(msg[1], msg[2]))
        elif kind == "done":
            self.done.add(msg[1])

    def _reap(self) -> None:
        """A worker that exited without saying done: its devices are failed."""
        for k, p in enumerate(self.procs):
            if k not in self.done and not p.is_alive() and p.exitcode is not None:
                self.drain(0.2)                    # its last messages may still be in the pipe
                if k not in self.done:
                    _lost(self.store, self.statuses, self.shards[k],
                          f"worker process exited with {p.exitcode}")
                    self.done.add(k)

    def watch(self, on_tick, stop_when: threading.Event | None, t0: float) -> None:
        """Until every worker is done or the deadline passes: messages, dead workers, the
        progress every STATUS_EVERY_S, and the stop (a full disk, `stop_when`) passed on."""
        last_tick = 0.0
        while len(self.done) < len(self.procs):
            self.drain(0.1)
            self._reap()
            if on_tick and time.monotonic() - last_tick >= STATUS_EVERY_S:
                last_tick = time.monotonic()
                on_tick(list(self.statuses.values()), last_tick - t0)
            if self.store.full is not None or (stop_when is not None and stop_when.is_set()):
                self.stop.set()
            if time.monotonic() - t0 > deadline_of(self.plan) + SPAWN_ALLOWANCE_S:
                break

    def interrupt(self) -> None:
        """Ctrl-C: the workers are told to stop; their last messages are taken."""
        self.store.journal("-", "warn", "interrupted",
                           "stopped by the user; samples so far are kept")
        self.stop.set()
        end = time.monotonic() + self.plan.timeout_s + 5
        while len(self.done) < len(self.procs) and time.monotonic() < end:
            self.drain(0.1)

    def join(self) -> None:
        """Every worker stopped and joined; one that does not stop is terminated, its devices
        hung."""
        self.stop.set()
        for k, p in enumerate(self.procs):
            p.join(self.plan.timeout_s + 2 if k in self.done else 1)
            if p.is_alive():
                p.terminate()
                p.join(5)
                if k not in self.done:
                    _lost(self.store, self.statuses, self.shards[k],
                          "worker process did not stop in time", state="hung")
        self.drain(0)


def run_sharded(devices: list[DeviceConfig], clock: tuple, store, plan: ProbePlan, armed: bool,
                on_tick, seed: int, processes: int,
                stop_when: threading.Event | None = None) -> tuple[list[DeviceStatus], bool]:
    """runner.run_devices over `processes` spawned workers (devices dealt round-robin, so each
    worker gets a like share of every plane)."""
    parent = _Parent(devices, clock, store, plan, armed, seed, processes)
    parent.start()
    t0 = time.monotonic()
    interrupted = False
    try:
        parent.watch(on_tick, stop_when, t0)
    except KeyboardInterrupt:
        interrupted = True
        parent.interrupt()
    parent.join()
    statuses = list(parent.statuses.values())
    mark_hung(statuses, store)
    if on_tick:
        on_tick(statuses, time.monotonic() - t0)
    return statuses, interrupted


def _lost(store, statuses: dict, items, why: str, state: str = "failed") -> None:
    """A worker process gone: its devices that had not finished are failed with the reason."""
    for _, d in items:
        st = statuses[d["name"]]
        if st.state in ("done", "failed", "stopped"):
            continue
        st.state = state
        st.errors += 1
        st.last_error = f"error: {why}"
        store.journal(d["name"], "error", "worker", why)
