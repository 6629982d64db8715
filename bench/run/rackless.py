"""The rack-less mode: an experiment that measures the host itself, not a rack's devices.

An experiment module that sets `RACKLESS = True` (experiments/collective_clock.py) is run here
instead of by bench.run.experiment: no simulated rack is started, no reference is opened, no
device is probed and nothing is fitted. Its optional `refusal(params)` names what the host lacks
(a missing package or library) in one line, raised before any run folder is made. The run folder
holds the manifest (provenance, the parameters, `rackless: true`, how the run ended, and the
experiment's `decided`: False makes the run UNDECIDED, exit status 3) and whatever the
experiment writes into it; `run(bench, params)` receives a `RacklessBench`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.config.inventory import InventoryError
from bench.config.rackfile import check_out
from bench.model import provenance
from bench.model.manifest import RunEnd
from bench.model.run_statuses import RunStatus
from bench.model.store import DiskFull, RunStore, new_run_id
from bench.run.signals import interrupt_on_signals

log = logging.getLogger(__name__)


@dataclass
class RacklessBench:
    """What a rack-less experiment receives: its run folder and whether to stay quiet."""
    store: RunStore
    quiet: bool = False
    decided: bool | None = None     # the experiment's verdict decided something (None: no verdict)

    def say(self, line: str = "") -> None:
        if not self.quiet:
            print(line, flush=True)


def is_rackless(exp) -> bool:
    return getattr(exp, "RACKLESS", False) is True


def _start(store: RunStore, name: str, exp, params) -> None:
    store.write_manifest({
        "experiment": name, "run_id": store.run_id, "parameters": asdict(params),
        "experiment_file": str(getattr(exp, "__file__", "") or ""),
        "versions": provenance.versions(), "git": provenance.git_revision(),
        "host": provenance.host(), "argv": sys.argv, "rackless": True, "simulated": False,
        "started_ns": time.time_ns(), "status": RunStatus.RUNNING, "pid": os.getpid()})


def _execute(exp, bench: RacklessBench, params) -> tuple[str, str | None]:
    try:
        exp.run(bench, params)
        return RunStatus.COMPLETED, None
    except KeyboardInterrupt:
        return RunStatus.INTERRUPTED, None
    except DiskFull as exc:
        return RunStatus.DISK_FULL, exc.strerror
    except Exception as exc:
        bench.store.journal("-", "error", "experiment", traceback.format_exc())
        return RunStatus.FAILED, "".join(traceback.format_exception_only(exc)).strip()


def run_rackless(exp, name: str, params, out: Path, quiet: bool = False) -> Path:
    """Run a rack-less experiment; returns its run folder. What the host lacks is an
    InventoryError (one line) before anything is made."""
    refusal = getattr(exp, "refusal", None)
    why = refusal(params) if refusal else None
    if why:
        raise InventoryError(f"{name} refused: {why}")
    check_out(out)
    store = RunStore(out, new_run_id(name))
    t0 = time.monotonic()
    bench = RacklessBench(store, quiet)
    with contextlib.ExitStack() as stack:
        stack.callback(store.close)
        signals = stack.enter_context(interrupt_on_signals())
        _start(store, name, exp, params)
        status, error = _execute(exp, bench, params)
        store.update_manifest(decided=bench.decided, **RunEnd(
            status, error, time.time_ns(), round(time.monotonic() - t0, 3),
            signals[0] if signals else "").to_dict())
        log.info("run %s %s%s", store.run_id, status, f": {error}" if error else "")
    if error:
        print(f"experiment {name} failed: {error}", file=sys.stderr)
    print(f"run folder: {store.path}")
    return store.path
