"""The minute after probing, made short: worker processes started while the rack is probed, so
that when the probing ends they have their imports done and the fits and figures are shared out.

`AfterPool` is the run's pool (one process per core, at most two): each device's summary record
(bench.model.summary.device_entry: its fits, truth checks and phase files) and each device's
offset figures (bench.output.plots) are made in a worker, in the order the one-process path
makes them, so the summary and the files are the same whichever made them. `background` runs one
long computation that needs nothing of the run (the incident's offline cascades) in a process of
its own at low priority while the rack is probed.

A worker ignores Ctrl-C: the run decides what to do with it, and ends its workers. Its log
records (INFO and above of the bench's loggers) come back through a queue and are handled by the
run's loggers, so its warnings land in the run's `bench.log` and on the terminal as this
process's do.
"""
from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from logging.handlers import QueueHandler, QueueListener
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from bench.model.runlog import BENCH_LOGGERS

log = logging.getLogger(__name__)

WARM = ("numpy", "bench.model.summary", "bench.model.phase_export",
        "bench.model.stability_export", "bench.output.plots")
MAX_WORKERS = 2          # a 2-core bench: two workers fill it once the probing has ended
MIN_DEVICES = 8          # a smaller rack's fits and figures take less than the workers' imports
START_AFTER_S = 10.0     # into the probing (at most half of it): its devices are open by then
BACKGROUND_NICE = 10     # the offline work yields to the probing (and to the rack it serves)


def workers_for(cpus: int | None = None) -> int:
    return max(1, min(MAX_WORKERS, cpus or os.cpu_count() or 1))


class _ToLogger(logging.Handler):
    """A worker's record handled by this process's logger of the same name, at its level."""

    def emit(self, record: logging.LogRecord) -> None:
        lg = logging.getLogger(record.name)
        if lg.isEnabledFor(record.levelno):
            lg.handle(record)


class _Pool(ProcessPoolExecutor):
    """Spawned workers whose log records come back through `queue` (QueueListener here)."""

    def __init__(self, workers: int, modules: tuple[str, ...], nice: int):
        queue = get_context("spawn").Queue()
        super().__init__(workers, mp_context=get_context("spawn"), initializer=_warm,
                         initargs=(modules, nice, queue))
        self.relay = QueueListener(queue, _ToLogger())
        self.relay.start()

    def stop_relay(self) -> None:
        """The records the workers sent handled, then the listener thread ended (once; a
        worker ended in the middle of a record leaves the thread, a daemon, waiting)."""
        thread = self.relay._thread
        if thread is not None:
            self.relay.enqueue_sentinel()
            thread.join(5)
            self.relay._thread = None


def _relay_to(queue: Any) -> None:
    root = logging.getLogger()
    root.handlers[:] = [QueueHandler(queue)]
    for name in BENCH_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


def _warm(modules: tuple[str, ...], nice: int, queue: Any = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the run's; the run ends us
    if queue is not None:
        _relay_to(queue)
    parent = multiprocessing.parent_process()
    if parent is not None:           # a run killed (SIGKILL) leaves no worker behind
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    if nice:
        os.nice(nice)
    for m in modules:
        importlib.import_module(m)


def _exit_with(parent: Any) -> None:
    parent.join()                    # returns when the process that started us has ended
    os._exit(0)


def _noop() -> None:
    return None


@contextmanager
def _main_unnamed() -> Iterator[None]:
    """A spawned worker imports the parent's main script again unless the script is unnamed:
    ours need nothing of it (their tasks are functions of bench and experiments), and a script
    without `if __name__ == "__main__":` would otherwise run its whole run again in each."""
    main = sys.modules.get("__main__")
    saved: dict[str, Any] = {k: main.__dict__[k] for k in ("__file__", "__spec__")
                             if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                main.__dict__.pop("__spec__", None)


def _executor(workers: int, modules: tuple[str, ...], nice: int = 0) -> ProcessPoolExecutor:
    """Spawned workers (never forked from a process with the probing's threads), started now."""
    ex = _Pool(workers, modules, nice)
    for _ in range(workers):         # a spawn pool starts a worker per task while none is idle
        _submit(ex, _noop)
    return ex


def _submit(ex: ProcessPoolExecutor, fn: Callable[..., Any], *args: Any) -> Future:
    with _main_unnamed():            # whenever it may start a worker
        return ex.submit(fn, *args)


END_GRACE_S = 2.0        # an idle worker's own exit: its log records flushed to the relay


def _end(ex: ProcessPoolExecutor) -> None:
    """Queued tasks cancelled, running ones ended: nothing outlives the run. An idle worker
    exits by itself first (within END_GRACE_S), so the records its queue still buffers reach
    the run's log: a worker's `Queue.put` hands them to a feeder thread, which a terminate
    would kill with them."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + END_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
    if isinstance(ex, _Pool):
        ex.stop_relay()


def _star(fn: Callable[..., Any], args: tuple) -> Any:
    return fn(*args)


_LOST = object()                     # a task whose worker died
_RUNS: dict[str, Any] = {}           # a worker's run folders read back, by path (summary written)


def _device_figures(path: str, device: str, cache: bool = True) -> list[str]:
    """One device's offset figures (a worker reads the run folder back once: `cache`)."""
    from bench.model.rundata import load_run
    from bench.output.plots import offset_plots
    run = _RUNS.get(path) if cache else None
    if run is None:
        run = load_run(path)
        if cache:
            _RUNS[path] = run
    return [str(p) for p in offset_plots(run, devices={device})]


class Figures:
    """Offset figures being drawn by the workers; `result` waits for them (their files in the
    order the one-process path writes them; this process draws those of a lost worker)."""

    def __init__(self, path: str, devices: list[str], futures: list[Future]):
        self.path, self.devices, self.futures = path, devices, futures

    def result(self) -> list[Path]:
        out: list[str] = []
        for d, f in zip(self.devices, self.futures):
            try:
                out += f.result()
            except BrokenProcessPool:
                out += _device_figures(self.path, d, cache=False)
        return [Path(p) for p in out]


class AfterPool:
    def __init__(self, workers: int | None = None):
        self.workers = workers or workers_for()
        self._ex: ProcessPoolExecutor | None = _executor(self.workers, WARM)

    @classmethod
    def start(cls, workers: int | None = None) -> AfterPool | None:
        """The pool, or None where processes cannot be started here (the run then does the
        work itself, as before)."""
        try:
            return cls(workers)
        except (OSError, RuntimeError) as exc:
            log.info("after-probing workers not started (%r): one process does it all", exc)
            return None

    def map(self, fn: Callable[..., Any], args: Iterable[tuple]) -> Iterator[Any]:
        """fn(*a) for each a, results in order; this process does what is left if a worker
        died (the results are the same)."""
        todo = list(args)
        futures = self._submit_all([(fn, a) for a in todo])
        for k, a in enumerate(todo):
            out = self._result(futures[k]) if futures is not None else _LOST
            if out is _LOST:
                futures = None
                out = fn(*a)
            yield out

    def _submit_all(self, tasks: list[tuple[Callable[..., Any], tuple]]) -> list[Future] | None:
        if self._ex is None:
            return None
        try:
            return [_submit(self._ex, _star, fn, a) for fn, a in tasks]
        except BrokenProcessPool as exc:
            self._lost(exc)
            return None

    def _result(self, future: Future) -> Any:
        try:
            return future.result()
        except BrokenProcessPool as exc:
            self._lost(exc)
            return _LOST

    def _lost(self, exc: BaseException) -> None:
        log.warning("after-probing worker lost (%r): this process does the rest", exc)
        self.close()

    def figures(self, path: Path, devices: Iterable[str]) -> Figures | None:
        """Each device's offset figures started in the workers (None: no workers)."""
        if self._ex is None:
            return None
        todo = list(devices)
        try:
            return Figures(str(path), todo,
                           [_submit(self._ex, _device_figures, str(path), d) for d in todo])
        except BrokenProcessPool as exc:
            self._lost(exc)
            return None

    def close(self) -> None:
        if self._ex is not None:
            _end(self._ex)
            self._ex = None


class Background:
    """fn(*args) in a process of its own at low priority, started now; `result` waits."""

    def __init__(self, fn: Callable[..., Any], *args: Any, modules: tuple[str, ...] = ()):
        self.name = getattr(fn, "__qualname__", repr(fn))
        self._ex = _executor(1, modules, BACKGROUND_NICE)
        self._future = _submit(self._ex, fn, *args)

    def result(self) -> Any:
        t0 = time.monotonic()
        try:
            return self._future.result()
        finally:
            log.info("background %s: waited %.2f s for it", self.name, time.monotonic() - t0)
            self.close()

    def close(self) -> None:
        _end(self._ex)


def background(fn: Callable[..., Any], *args: Any,
               modules: tuple[str, ...] = ()) -> Background | None:
    """A Background, or None where processes cannot be started here (the caller computes it)."""
    try:
        return Background(fn, *args, modules=modules)
    except (OSError, RuntimeError) as exc:
        log.info("background process not started (%r)", exc)
        return None
