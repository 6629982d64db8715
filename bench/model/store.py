"""The run folder: manifest, per-device sample streams, the run journal, summary.

Every sample row is written and flushed as soon as its exchange completes, so a run that dies
keeps everything it measured. Layout and columns: results/README.md.
"""
from __future__ import annotations

import csv
import io
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import safeio, saferead
from bench.errors import RackclockError
from bench.model.file_schemas import CSV_VERSIONS, version
from bench.model.provenance import redact, redact_text
from bench.model.runlog import RUN_LOG, Redact, RunLog

SCHEMA = 1
SAMPLE_COLUMNS = ["seq", "kind", "clock", "s_ns", "e_ns", "value_ns", "resolution_ns", "stamp",
                  "status", "raw", "late_ns"]
EVENT_COLUMNS = ["t_ns", "device", "level", "kind", "message"]
RESERVE_BYTES = 256 << 10        # kept free for the last manifest and journal lines
RESERVE = ".reserve"             # its file in the run folder, removed when the run ends


def new_run_id(experiment: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{re.sub(r'[^A-Za-z0-9_-]', '_', experiment)}"


def stamped(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json as written: its format (`schema`) and `schema_version` first
    (bench.model.file_schemas; a summary read back keeps the version it was written with)."""
    return {"schema": SCHEMA, "schema_version": version("summary.json"), **summary}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (bench.safeio): a reader never sees half a file, and a failed write
    (disk full) leaves no `.part` behind."""
    safeio.write_json(path, data)


LIBRARY_LOGGERS = ("pymodbus", "pysnmp", "asyncio", "aiohttp", "redfish", "serial")


class _Shorten(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if len(msg) > 2000:                 # a frame dump of a flooding device
            record.msg, record.args = msg[:2000] + f" ... ({len(msg)} characters)", None
        return True


def route_library_logs(path: Path) -> logging.Handler:
    """The libraries' own log lines (pymodbus frame dumps, pysnmp and asyncio tracebacks) go to
    the run folder's library.log (at most 2 x 10 MB), not into the progress display."""
    from logging.handlers import RotatingFileHandler

    class _Handler(RotatingFileHandler):
        def _open(self):  # type: ignore[no-untyped-def]
            return safeio.append_text(self.baseFilename, self.encoding or "utf-8")

    h = _Handler(path, maxBytes=10 << 20, backupCount=1, delay=True, encoding="utf-8")
    h.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    h.addFilter(_Shorten())
    for name in LIBRARY_LOGGERS:
        lg = logging.getLogger(name)
        lg.addHandler(h)
        lg.propagate = False
    return h


class DiskFull(RackclockError, OSError):
    """The run folder's file system is full (or failing): what was written is kept."""


class _Nowhere(io.StringIO):
    """Rows of a device whose file could not be opened: dropped, memory not kept."""

    def write(self, s: str) -> int:
        return len(s)


class SampleWriter:
    """Appends rows to samples/<device>.csv, flushing each; safe to call from one thread.
    A failed write (disk full) is reported to `on_error` once; later rows are dropped."""

    def __init__(self, path: Path, on_error: Callable[[OSError], None] | None = None,
                 devnull: bool = False):
        self.path = path
        self.on_error = on_error
        self.failed = False
        self.seq = 0
        if devnull:
            self._f: Any = _Nowhere()
            self._w = csv.writer(self._f)
            return
        new = not path.exists()
        if not new:          # a second writer of the same device (the lab, then the loop) goes on
            try:
                self.seq = max(0, sum(1 for _ in saferead.csv_lines(path)) - 1)
            except saferead.FileFault as exc:
                raise safeio.UnsafeFolder(str(exc)) from None
        self._f = safeio.append_text(path)
        self._w = csv.writer(self._f)
        if new:
            self._guard(lambda: self._put(SAMPLE_COLUMNS))

    def _put(self, row: list[Any]) -> None:
        self._w.writerow(row)
        self._f.flush()

    def _guard(self, fn: Callable[[], None]) -> None:
        if self.failed:
            return
        try:
            fn()
        except OSError as exc:
            self.failed = True
            if self.on_error is None:
                raise
            self.on_error(exc)

    def write(self, kind: str, clock: str, s_ns: int | None, e_ns: int | None,
              value_ns: int | None, resolution_ns: int | None, stamp: str, status: str,
              raw: str, late_ns: int | None = None) -> int:
        self.seq += 1
        raw = raw.replace("\r", " ").replace("\n", " ")[:2000]
        row = [self.seq, kind, clock, s_ns, e_ns, "" if value_ns is None else value_ns,
               "" if resolution_ns is None else resolution_ns, stamp, status, raw,
               "" if late_ns is None else late_ns]
        self._guard(lambda: self._put(row))
        return self.seq

    def close(self) -> None:
        try:
            self._f.close()
        except OSError:           # the unflushed tail of a full disk: already reported
            pass


class SampleFiles:
    """A device's sample file in `self.path/samples`; a file that cannot be opened goes to
    `self.failed` and its rows to nowhere (the run and the other devices go on)."""
    path: Path                                  # the run folder (each store sets it)
    failed: Callable[[OSError], None]           # each store's method

    def samples(self, device: str) -> SampleWriter:
        try:
            return SampleWriter(self.path / "samples" / f"{device}.csv", self.failed)
        except OSError as exc:
            self.failed(exc)
            return SampleWriter(Path(os.devnull), lambda e: None, devnull=True)


class RunStore(SampleFiles):
    def __init__(self, root: str | Path, run_id: str):
        top = safeio.Folder.open(root, create=True)     # UnsafeFolder: another user's folder
        for n in range(1, 1000):          # two runs started within one second get -2, -3...
            self.run_id = run_id if n == 1 else f"{run_id}-{n}"
            self.path = Path(root) / self.run_id
            try:
                self.dir = top.new_sub(self.run_id)
                break
            except FileExistsError:
                continue
        top.close()
        self.manifest: dict[str, Any] = {}
        self.full: OSError | None = None     # the first failed write (disk full)
        self._closed = False
        self._reserve = self.path / RESERVE
        try:                  # first, freed when the disk fills, so the manifest can still say so
            self.dir.write_bytes(RESERVE, b"\0" * RESERVE_BYTES)
        except OSError as exc:               # less free than the reserve: the run ends at once
            self.failed(exc)
        self.dir.sub("samples").close()
        self.dir.sub("plots").close()
        self._lock = threading.Lock()
        self._events = self.dir.append_text("events.csv")
        self._ew = csv.writer(self._events)
        try:
            self._ew.writerow(EVENT_COLUMNS)
            self._events.flush()
        except OSError as exc:
            self.failed(exc)
        self._library_log = route_library_logs(self.path / "library.log")
        self._library_log.addFilter(Redact(lambda: self.manifest))
        self._run_log = RunLog(self.path / RUN_LOG, lambda: self.manifest)

    def failed(self, exc: OSError) -> None:
        """A write failed: remember the first failure and free the reserve for the manifest."""
        if self.full is None:
            self.full = exc
        self.dir.unlink(RESERVE)

    def disk_full(self) -> DiskFull:
        """The one-line error of a full disk, naming the folder."""
        full = self.full
        assert full is not None, "called after a failed write"
        rows = sum(max(0, sum(1 for _ in saferead.csv_lines(p)) - 1)
                   for p in (self.path / "samples").glob("*.csv"))
        return DiskFull(full.errno, f"cannot write in {self.path}: "
                        f"{full.strerror or full}; the {rows} sample rows written "
                        f"before are kept (free space, then `rackclock summarize {self.path}`)")

    def start_full(self) -> DiskFull:
        """The one-line error of a run folder with less free space than the reserve."""
        full = self.full
        assert full is not None, "called after a failed write"
        why = full.strerror or full
        return DiskFull(full.errno, f"cannot write in {self.path}: less than the "
                        f"{RESERVE_BYTES >> 10} KiB reserve free ({why}); nothing was measured "
                        f"(free space, then run again)")

    def journal(self, device: str, level: str, kind: str, message: str) -> None:
        """A run-level event (error, reconnect, stimulus printed unarmed...), written at once."""
        with self._lock:
            if self.full is not None:
                return
            try:
                self._ew.writerow([time.time_ns(), device, level, kind,
                                   redact_text(message.replace("\n", " "))])
                self._events.flush()
            except OSError as exc:
                self.failed(exc)

    def _write_manifest(self) -> None:
        try:
            self.dir.write_json("manifest.json", self.manifest)
        except OSError as exc:
            self.failed(exc)
            try:
                self.dir.write_json("manifest.json", self.manifest)   # in the freed reserve
            except OSError:          # no reserve left: the last manifest that fitted stays, and
                pass                 # `summarize` reads the missing reserve as disk_full

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.manifest = redact({"schema": SCHEMA, "schema_version": version("manifest.json"),
                                "csv_schema_versions": dict(CSV_VERSIONS), **manifest})
        self._write_manifest()

    def update_manifest(self, **changes: Any) -> None:
        with self._lock:
            self.manifest.update(redact(changes))
            self._write_manifest()

    def update_device(self, name: str, **fields: Any) -> None:
        """What a device told about itself (identity, clocks), written as soon as it is known,
        so that a run killed later can still be summarised (`rackclock summarize`)."""
        with self._lock:
            self.manifest.setdefault("devices", {}).setdefault(name, {}).update(redact(fields))
            self._write_manifest()

    def update_devices(self, per_device: dict[str, dict[str, Any]], **changes: Any) -> None:
        """Fields of several devices (and other manifest keys) in one manifest write."""
        with self._lock:
            devices = self.manifest.setdefault("devices", {})
            for name, fields in per_device.items():
                devices.setdefault(name, {}).update(redact(fields))
            self.manifest.update(redact(changes))
            self._write_manifest()

    def write_summary(self, summary: dict[str, Any]) -> None:
        """summary.json and, beside it, the flat bounds.csv (bench.model.bounds_csv) and
        stability.csv (bench.model.stability_export)."""
        from bench.model.bounds_csv import write_bounds_csv
        from bench.model.stability_export import write_stability_csv
        self.dir.write_json("summary.json", stamped(summary))
        write_bounds_csv(self.path, summary)
        write_stability_csv(self.path, summary)

    def close(self) -> None:
        """Idempotent: every way a run ends closes its store, the reserve goes."""
        if self._closed:
            return
        self._closed = True
        try:
            self._events.close()
        except OSError:
            pass
        self.dir.unlink(RESERVE)
        for name in LIBRARY_LOGGERS:
            logging.getLogger(name).removeHandler(self._library_log)
        self._library_log.close()
        self._run_log.close()
