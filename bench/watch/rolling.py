"""The watch's run folder, rolled daily: each day is a complete run folder (manifest, samples,
events.csv, reference.csv, summary.json) that `report`, `compare` and `summarize` read.

`RollingStore` stands where the runner expects a RunStore (bench/run/runner.DeviceWorker uses
`samples`, `journal`, `update_device`, `full`): it writes to the current day's folder and hands
every sample row to the live state (bench/watch/state.py) as it is written. `roll()` opens the
next day, moves every device's sample stream to it under that stream's lock (no row is lost or
written twice), and returns the closed day for summarising.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from bench.model import provenance
from bench.model.run_statuses import RunStatus
from bench.model.store import RunStore, new_run_id, stamped, write_json
from bench.model.summary import summarize_run
from bench.reference.monitor import HealthMonitor

log = logging.getLogger(__name__)
EXPERIMENT = "watch"
SUMMARY_TIMEOUT_S = 3600.0
HEALTH_KEPT = 12      # a day's latest reference snapshots held (17,280 a day at 5 s: the series
                      # is reference.csv; the day's health is tallied as they come)


class Day:
    """One day's run folder and its reference health series."""

    def __init__(self, out: Path, reference, health, manifest: dict):
        self.store = RunStore(out, new_run_id(EXPERIMENT))
        self.path = self.store.path
        self.monitor = HealthMonitor(reference, self.path, manifest.pop("health_every_s", 5.0),
                                     keep=HEALTH_KEPT)
        self.started_ns = reference.now_ns()
        self.store.write_manifest({**manifest, "run_id": self.store.run_id,
                                   "started_ns": self.started_ns, "status": RunStatus.RUNNING,
                                   "pid": os.getpid(), "reference": health.as_dict()})
        self.monitor.start(first=health)
        self.t0 = time.monotonic()

    def close(self, devices: dict, status: str, stopped_by: str | None, truth=None) -> Path:
        """End the day: its devices' records, the reference's whole-day health, the summary."""
        end = self.store.manifest.get("ended_ns") or time.time_ns()
        run = self.monitor.stop()
        self.store.update_devices(devices, probed_until_ns=end, ended_ns=end,
                                  reference_run=run.as_dict(),
                                  reference_end=self.monitor.samples[-1].as_dict(),
                                  duration_s=round(time.monotonic() - self.t0, 3))
        if truth is not None:
            truth(self.path)
        error = summarize_day(self.path)
        if error:                       # one day's summary failing must not stop the watch
            self.store.journal("-", "error", "summary", error)
            self.store.update_manifest(status=RunStatus.FAILED, error=error)
        else:
            self.store.update_manifest(status=status, **({"stopped_by": stopped_by}
                                                          if stopped_by else {}))
        self.store.close()
        return self.path


def summarize_day(path: Path) -> str | None:
    """summary.json of a closed day, fitted in a child process (a day's samples and fits are
    large, once a day: the watch's own memory stays flat); None, or the error in one line."""
    try:
        r = subprocess.run([sys.executable, "-m", "bench.watch.rolling", str(path)],
                           cwd=Path(__file__).resolve().parents[2], capture_output=True,
                           text=True, timeout=SUMMARY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"summary of {path.name}: {exc}"
    if r.returncode != 0:
        return f"summary of {path.name} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def write_day_summary(path: Path) -> None:
    """In the child: the day's summary, against the simulator's truth where it has one."""
    from bench import saferead
    man = saferead.load_object(path / "manifest.json")
    t = path / "truth.json"
    summary = summarize_run(path, man, saferead.load_object(t) if t.exists() else None)
    write_json(path / "summary.json", stamped(summary))


class Tap:
    """A device's sample stream, moved from day to day; every row also goes to the state."""

    def __init__(self, rolling: RollingStore, device: str):
        self.rolling, self.device = rolling, device
        self.lock = threading.Lock()
        self.day = rolling.day
        self.out = self.day.store.samples(device)

    @property
    def seq(self) -> int:
        return self.out.seq

    def write(self, kind, clock, s_ns, e_ns, value_ns, resolution_ns, stamp, status, raw,
              late_ns=None) -> int:
        with self.lock:
            n = self.out.write(kind, clock, s_ns, e_ns, value_ns, resolution_ns, stamp, status,
                               raw, late_ns)
        self.rolling.state.row(self.device, kind, clock, s_ns, e_ns, value_ns, status)
        return n

    def move(self, day: Day) -> None:
        with self.lock:
            self.out.close()
            self.day, self.out = day, day.store.samples(self.device)

    def close(self) -> None:
        with self.lock:
            self.out.close()


class RollingStore:
    """The RunStore face the runner writes to, over the current Day."""

    def __init__(self, state, new_day):
        self.state = state
        self._new_day = new_day          # () -> Day
        self.day: Day = new_day()
        self.taps: dict[str, Tap] = {}
        self.devices: dict[str, dict] = {}      # what each device told (identity, clocks, plane)
        self._lock = threading.Lock()

    @property
    def full(self):
        return self.day.store.full

    @property
    def path(self) -> Path:
        return self.day.path

    def samples(self, device: str) -> Tap:
        with self._lock:
            tap = self.taps.get(device)
            if tap is None or tap.day is not self.day:
                tap = self.taps[device] = Tap(self, device)
            return tap

    def journal(self, device: str, level: str, kind: str, message: str) -> None:
        self.day.store.journal(device, level, kind, message)

    def update_device(self, name: str, **fields) -> None:
        with self._lock:
            self.devices.setdefault(name, {}).update(fields)
        if "clocks" in fields:
            self.state.define(name, fields.get("plane", ""), fields["clocks"])
        self.day.store.update_device(name, **fields)

    def update_manifest(self, **changes) -> None:
        self.day.store.update_manifest(**changes)

    def drop(self, device: str) -> None:
        """A device no longer probed: its stream closed, the next days do not name it."""
        with self._lock:
            tap = self.taps.pop(device, None)
            self.devices.pop(device, None)
        if tap:
            tap.close()

    def roll(self) -> Day:
        """Open the next day and move every stream to it; returns the day that ended."""
        old, new = self.day, self._new_day()
        with self._lock:
            for name, fields in self.devices.items():
                new.store.update_device(name, **fields)
            self.day = new
            for tap in self.taps.values():
                tap.move(new)
        old.store.update_manifest(ended_ns=new.started_ns)
        return old


def day_manifest(rack, plan, argv: list[str], rack_file: str, extra: dict) -> dict:
    """The manifest keys every day folder starts with (as bench/run/experiment.py writes)."""
    return {"experiment": EXPERIMENT, "parameters": asdict(plan), "probe_plan": asdict(plan),
            "experiment_file": "", "versions": provenance.versions(),
            "git": provenance.git_revision(), "host": provenance.host(), "argv": argv,
            "armed": False, "simulated": rack.simulated, "rack_file": rack_file,
            "inventory": rack.public(), "runner": {"processes": 1, "devices": len(rack.devices)},
            "devices": {d.name: {"plane": d.plane, "driver": d.driver} for d in rack.devices},
            **extra}


if __name__ == "__main__":
    write_day_summary(Path(sys.argv[1]))
