"""The reference's health sampled through a run, as its own series: `reference.csv` in the run
folder, one row per snapshot, flushed as taken, and the run's bound on the reference's error."""
from __future__ import annotations

import csv
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bench.reference.clock import Health, Reference, worse_grade

if TYPE_CHECKING:
    from _csv import Writer  # what csv.writer returns (typeshed's name)

COLUMNS = ("t_ns", "grade", "verified", "basis", "uncertainty_ns", "master_offset_ns",
           "offset_from_master_ns", "mean_path_delay_ns", "sync_age_ns", "gm_present",
           "gm_identity", "port_states", "rx_sync", "phc_sys_offset_ns", "phc2sys", "problems")


def health_row(h: Health) -> list:
    d = h.detail
    return [h.checked_ns, h.grade, int(h.verified), h.basis, h.uncertainty_ns,
            d.get("master_offset_ns", ""), d.get("offset_from_master_ns", ""),
            d.get("mean_path_delay_ns", ""), d.get("sync_age_ns", ""),
            "" if d.get("gm_present") is None else int(d["gm_present"]), d.get("gm_identity", ""),
            " ".join(d.get("port_states", [])), d.get("rx_sync", ""),
            "" if d.get("phc_sys_offset_ns") is None else d["phc_sys_offset_ns"],
            len(d.get("phc2sys", [])) if "phc2sys" in d else "", "; ".join(h.problems)]


@dataclass
class _Tally:
    """What the run's health needs of every snapshot, kept as they come (no list of them)."""
    n: int = 0
    first_ns: int = 0
    grade: str = "ok"
    off: int | None = None
    bound: int = 0
    bad: int = 0
    first_bad_ns: int = 0
    problems: set = field(default_factory=set)
    bases: set = field(default_factory=set)
    path_delay: int = 0

    def add(self, h: Health) -> None:
        if not self.n:
            self.first_ns, self.bound = h.checked_ns, h.uncertainty_ns
        self.n += 1
        self.grade = worse_grade(self.grade, h.grade)
        o = h.detail.get("abs_offset_ns")
        if o is not None:
            self.off = o if self.off is None else max(self.off, o)
        self.bound = max(self.bound, h.uncertainty_ns)
        if not h.verified:
            self.first_bad_ns = self.first_bad_ns if self.bad else h.checked_ns
            self.bad += 1
        self.problems.update(h.problems)
        self.bases.add(h.basis)
        self.path_delay = max(self.path_delay, h.detail.get("mean_path_delay_ns") or 0)


class HealthMonitor:
    """`HealthMonitor(reference, run_folder).start()` ... `.stop()`: a daemon thread appends a
    row to `reference.csv` every `interval_s`; `worst()` and `run_health()` summarise the series.
    `path` may be the run folder or the CSV file itself. `keep`: the latest snapshots kept in
    `samples` (None: all; a watch's day keeps a few, its memory flat); the summaries count
    every one either way."""

    def __init__(self, reference: Reference, path: Path, interval_s: float = 1.0,
                 keep: int | None = None):
        path = Path(path)
        self.path = path if path.suffix == ".csv" else path / "reference.csv"
        self.reference = reference
        self.interval_s = float(interval_s)
        self.samples: list[Health] | deque[Health] = [] if keep is None else deque(maxlen=keep)
        self._tally = _Tally()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._file: TextIO | None = None
        self._writer: Writer | None = None

    def start(self, first: Health | None = None) -> HealthMonitor:
        """Open the series (`first`, e.g. the run's start snapshot, becomes its first row) and
        start sampling."""
        from bench import safeio
        new = not self.path.exists() or self.path.stat().st_size == 0
        f = safeio.append_text(self.path)
        self._file, self._writer = f, csv.writer(f)
        if new:
            self._writer.writerow(COLUMNS)
            f.flush()
        if first is not None:
            self._record(first)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="reference-health", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self) -> Health:
        """Take one snapshot now, record it and return it (never raises on a bad snapshot)."""
        try:
            h = self.reference.health()
        except Exception as exc:     # a broken health source must not stop the run
            h = Health(self.reference.source, self.reference.now_ns(), grade="fail",
                       problems=(f"fail: health read raised {exc!r}",), note=str(exc))
        self._record(h)
        return h

    def _record(self, h: Health) -> None:
        with self._lock:
            self.samples.append(h)
            self._tally.add(h)
            if self._writer is not None and self._file is not None:    # set together
                try:
                    self._writer.writerow(health_row(h))
                    self._file.flush()
                except OSError:         # disk full: the run records it; the series stays here
                    self._writer = None

    def stop(self) -> Health:
        """Stop sampling (after one last snapshot) and return the run's health."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(30)
            self._thread = None
            self.sample()
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file, self._writer = None, None
        return self.run_health()

    def __enter__(self) -> HealthMonitor:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- summaries --------------------------------------------------------------------------------
    def worst(self) -> tuple[str, int | None]:
        """The worst grade seen and the largest |offset from GM| seen (ns; None if none read)."""
        with self._lock:
            t = self._tally
            return (t.grade if t.n else "unverified"), t.off

    def run_health(self) -> Health:
        """One Health for the whole run: the worst grade, the largest bound of any snapshot,
        verified only if every snapshot was. This is the `uncertainty_ns` to add to every bracket."""
        with self._lock:
            t, last = self._tally, (self.samples[-1] if self.samples else None)
            if last is None:
                return self.reference.health()
            problems, bases = sorted(t.problems), sorted(t.bases)
        basis = last.basis if len(bases) == 1 else "+".join(bases)
        note = (f"{t.n} snapshots from {t.first_ns} to {last.checked_ns} ns; "
                f"worst grade {t.grade}; max |offset from GM| "
                f"{'not read' if t.off is None else f'{t.off} ns'}; bound {t.bound} ns")
        if t.bad:
            note += (f"; UNVERIFIED: {t.bad} snapshots could not vouch for the reference "
                     f"(first at {t.first_bad_ns} ns)")
        detail = {"abs_offset_ns": t.off, "snapshots": t.n, "unverified_snapshots": t.bad,
                  "first_ns": t.first_ns, "last_ns": last.checked_ns, "series": self.path.name,
                  "max_mean_path_delay_ns": t.path_delay}
        return Health(last.source, last.checked_ns, verified=not t.bad, grade=t.grade,
                      uncertainty_ns=t.bound, detail=detail, note=note, basis=basis,
                      problems=tuple(problems))


class RunReference:
    """The reference of one run, as the runner uses it:

        rr = RunReference.open(rack, allowance_ns, run_folder)   # ReferenceRefused: print, exit
        manifest["reference"] = rr.start.as_dict()
        ... drivers get rr.reference.now_ns ...
        manifest.update(rr.finish())      # reference_run (the series' bound), reference_end

    Rack-file keys read from `[rack]`: `reference`, `simulated`, and optionally `ptp_uds` (ptp4l's
    management socket, default /var/run/ptp4l or /var/run/ptp/ptp4l) and `ptp_domain`.
    """

    def __init__(self, reference: Reference, start: Health, monitor: HealthMonitor):
        self.reference, self.start, self.monitor = reference, start, monitor
        self.run: Health | None = None

    @classmethod
    def open(cls, rack, allowance_ns: int | None, run_folder: Path, interval_s: float = 1.0,
             **kw) -> RunReference:
        from bench.reference.clock import reference_for_run

        kw.setdefault("ptp_uds", rack.options.get("ptp_uds", "auto"))
        kw.setdefault("domain", int(rack.options.get("ptp_domain", 0)))
        ref, start = reference_for_run(rack.reference, allowance_ns, rack.simulated, **kw)
        mon = HealthMonitor(ref, run_folder, interval_s).start(first=start)
        return cls(ref, start, mon)

    @property
    def uncertainty_ns(self) -> int:
        """The bound so far (the run's, once finished): add it to every bracket."""
        return (self.run or self.monitor.run_health()).uncertainty_ns

    def finish(self) -> dict:
        """Stop sampling; the manifest entries for the run's and the last snapshot's health."""
        if self.run is None:
            self.run = self.monitor.stop()
            self.reference.close()
        end = self.monitor.samples[-1]
        return {"reference_run": self.run.as_dict(), "reference_end": end.as_dict()}
