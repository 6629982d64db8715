"""The live state of a watched rack: per device its counts, per clock a bounded window of reads
(bench/watch/estimator.py), its current segment's bounds, the breaks seen, whether it is stuck
or beyond a limit. Everything here is bounded whatever the run's length: counters, the last
minute's request instants, a window of reads per clock, the breaks of the last MAX_BREAKS.

Rows arrive from the probing threads (bench/watch/rolling.py taps every sample row); fits run on
the watch's own fitter thread (`refit`), which also raises the alerts (bench/watch/alerts.py).
"""
from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.analysis.device_breaks import OUTAGE_MIN_FAILED, cuts_for, splits_inside
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.model.summary import lag_ns
from bench.watch.estimator import ClockFit, ClockMeta, ClockWindow, current_bounds

MAX_BREAKS = 64                  # per clock, the latest breaks kept for the mapping's windows
STUCK_TICKS = 2.0                # a value unchanged over this many ticks' time ...
STUCK_MIN_NS = 30_000_000_000    # ... and at least this long: the clock is stuck (a declared
                                 # tick finer than the one shown must not look stuck)
MEASURED_NS = 300_000_000_000    # a device is measured when it gave a good read this recently


@dataclass
class ClockState:
    window: ClockWindow
    plane: str
    fit: ClockFit | None = None
    fitted_reads: int = 0          # reads taken when it was last fitted
    taken: int = 0                 # ok reads ever (this process)
    bounds: dict | None = None
    breaks: Counter = field(default_factory=Counter)      # kind -> count
    recent_breaks: deque = field(default_factory=lambda: deque(maxlen=MAX_BREAKS))
    last_read_ns: int | None = None
    value: int | None = None        # the last value and the first bracket's end showing it
    value_since_ns: int | None = None
    stuck: bool = False
    limits_failed: set = field(default_factory=set)
    seen_until_ns: int | None = None    # the end of the latest break said (this watch or before)


@dataclass
class DeviceState:
    plane: str
    declared_ns: int = 0            # when the watch began to probe it (its read age before a read)
    last_read_ns: int | None = None     # the end of its last good read
    rows: int = 0
    reads: int = 0
    errors: Counter = field(default_factory=Counter)    # error class -> count
    requests: deque = field(default_factory=lambda: deque(maxlen=6000))   # instants, last minute
    clocks: dict = field(default_factory=dict)          # name -> ClockState
    outages: deque = field(default_factory=lambda: deque(maxlen=MAX_BREAKS))  # (after, before)
    failed_run: int = 0             # failed reads in a row since the last good one
    failed_after_ns: int | None = None   # the end of the good read before them

    def read_row(self, ok: bool, s_ns: int) -> None:
        """A read row (any clock) as device_breaks.outages takes it: OUTAGE_MIN_FAILED failed
        reads in a row, between two good ones, are an outage every clock splits at."""
        if not ok:
            if self.failed_run == 0:
                self.failed_after_ns = self.last_read_ns
            self.failed_run += 1
            return
        if self.failed_run >= OUTAGE_MIN_FAILED and self.failed_after_ns is not None:
            self.outages.append((self.failed_after_ns, int(s_ns)))
        self.failed_run = 0


class WatchState:
    """Thread-safe: `row()` from the probing threads, `refit()` from the fitter, `snapshot()`
    from the metrics and mapping handlers."""

    def __init__(self, now_ns, priors: dict | None = None):
        self.now_ns = now_ns
        self.priors = priors or {}     # device -> {"drift_prior_ppm", "wander_ppm", "tick_lag_ms"}
        self.devices: dict[str, DeviceState] = {}
        self.lock = threading.Lock()
        self.uncertainty_ns = 0
        self.reference = None                  # the latest Health snapshot
        self.gm_changes = 0
        self.states: Callable[[], dict[str, str]] = dict    # {device: its worker's state}
        self.starting = False        # the watch serves, its devices not yet read back and probed

    def rebase(self, now_ns) -> None:
        """The reference's clock from now on (the watch serves before its reference is made):
        the devices not yet read count their read age from now on this clock."""
        with self.lock:
            self.now_ns = now_ns
            now = now_ns()
            for d in self.devices.values():
                if d.last_read_ns is None:
                    d.declared_ns = now

    def declare(self, devices: list[tuple[str, str]]) -> None:
        """The rack file's devices (name, plane), known before any of them connects: each has
        its series from the first scrape."""
        now = self.now_ns()
        with self.lock:
            for name, plane in devices:
                if name not in self.devices:
                    self.devices[name] = DeviceState(plane, declared_ns=now)

    def measured(self) -> tuple[list[str], list[str]]:
        """(declared devices, those with a good read within MEASURED_NS)."""
        now = self.now_ns()
        with self.lock:
            names = sorted(self.devices)
            ok = [n for n in names if (t := self.devices[n].last_read_ns) is not None
                  and now - t <= MEASURED_NS]
        return names, ok

    # -- from the probing threads ---------------------------------------------------------------
    def define(self, device: str, plane: str, clocks: list[dict]) -> None:
        """A device opened and named its clocks (the manifest's `clocks` entries)."""
        pri = self.priors.get(device, {})
        with self.lock:
            d = self.devices.setdefault(device, DeviceState(plane, declared_ns=self.now_ns()))
            d.plane = plane or d.plane
            for c in clocks:
                meta = ClockMeta(c["name"], int(c.get("resolution_ns") or 1),
                                 bool(c.get("counter")), int(c.get("modulus_ns") or 0),
                                 float(pri.get("drift_prior_ppm", DEFAULT_DRIFT_PRIOR_PPM)),
                                 float(pri.get("wander_ppm", 0.0)), lag_ns(pri, c),
                                 str(c.get("free_running") or ""), "drift_prior_ppm" in pri)
                old = d.clocks.get(c["name"])
                if old is None or old.window.meta != meta:
                    d.clocks[c["name"]] = ClockState(ClockWindow(meta), plane)

    def forget(self, device: str) -> None:
        with self.lock:
            self.devices.pop(device, None)

    def row(self, device: str, kind: str, clock: str, s_ns, e_ns, value_ns, status: str) -> None:
        """One sample row as it was written."""
        with self.lock:
            d = self.devices.get(device)
            if d is None:
                return
            d.rows += 1
            now = time.monotonic()
            d.requests.append(now)
            while d.requests[0] < now - 60.0:       # the last minute's, scraped or not
                d.requests.popleft()
            if kind == "read":
                d.read_row(status == "ok" and value_ns is not None, int(s_ns))
            if status not in ("ok", "unarmed"):
                d.errors[status] += 1
                return
            c = d.clocks.get(clock) if kind == "read" else None
            if c is None or value_ns is None:
                return
            d.reads += 1
            d.last_read_ns = int(e_ns)
            c.taken += 1
            c.window.add(s_ns, e_ns, value_ns)
            c.last_read_ns = int(e_ns)
            self._stuck(c, int(s_ns), int(e_ns), int(value_ns))

    @staticmethod
    def _stuck(c: ClockState, s: int, e: int, v: int) -> None:
        """A clock whose value stays the same over more than STUCK_TICKS of its ticks while the
        reference ran on is stuck (it cannot have ticked that slowly within any drift prior)."""
        if v != c.value:
            c.value, c.value_since_ns, c.stuck = v, e, False
            return
        q = max(1, c.window.meta.resolution_ns)
        if c.fit is not None and str(c.fit.resolution_basis) != "unproven":
            q = max(q, int(c.fit.resolution_ns))     # the tick the values show (a coarser one)
        if c.value_since_ns is not None and s - c.value_since_ns > max(STUCK_TICKS * q,
                                                                       STUCK_MIN_NS):
            c.stuck = True

    # -- from the fitter ------------------------------------------------------------------------
    def due(self) -> list[tuple[str, str, ClockState]]:
        """Clocks with reads not fitted yet, the longest waiting first."""
        with self.lock:
            out = [(dn, cn, c) for dn, d in self.devices.items() for cn, c in d.clocks.items()
                   if c.taken != c.fitted_reads and len(c.window) >= 2]
        return sorted(out, key=lambda x: x[2].fitted_reads - x[2].taken)

    def refit(self, device: str, clock: str, c: ClockState) -> list:
        """Fit the clock's window; returns the breaks not seen before (the alerts' input)."""
        with self.lock:
            taken = c.taken
            window = c.window.copy()
            unc = self.uncertainty_ns
            d = self.devices.get(device)
            others = {n: o.fit for n, o in d.clocks.items()} if d is not None else {}
            down = list(d.outages) if d is not None else []
        try:
            fit = window.fit(unc)
            cuts = cuts_for(clock, others, down)
            if splits_inside(fit, cuts):      # another clock rebooted, or the device was out
                fit = window.fit(unc, cuts)
        except Exception:            # a live fit must never stop the watch; the summary tells
            fit = None
        new = []
        with self.lock:
            c.fitted_reads = taken
            c.fit, c.bounds = fit, current_bounds(fit, window.meta.drift_prior_ppm)
            for b in (fit.breaks if fit else ()):
                if c.seen_until_ns is None or b.after_ns >= c.seen_until_ns:
                    c.recent_breaks.append(b)
                    c.breaks[str(b.kind)] += 1
                    c.seen_until_ns = int(b.before_ns)
                    new.append(b)
        return new

    # -- resumed from disk ----------------------------------------------------------------------
    def resume_reads(self, device: str, clock: str, reads: list) -> int:
        """A clock's reads of the earlier days (oldest first): its window and read age."""
        with self.lock:
            d = self.devices[device]
            c = d.clocks.get(clock)
            if c is None:
                return 0
            for s, e, v in reads:
                c.window.add(s, e, v)
                c.taken += 1
            if reads:
                c.last_read_ns = max(c.last_read_ns or 0, reads[-1][1])
                d.last_read_ns = max(d.last_read_ns or 0, reads[-1][1])
        return len(reads)

    def breaks_said(self) -> dict:
        """{device: {clock: {"until_ns", "kinds"}}} of the breaks said (watch-breaks.json)."""
        with self.lock:
            return {dn: {cn: {"until_ns": c.seen_until_ns, "kinds": dict(c.breaks)}
                         for cn, c in d.clocks.items() if c.seen_until_ns is not None}
                    for dn, d in self.devices.items()
                    if any(c.seen_until_ns is not None for c in d.clocks.values())}

    def restore_breaks(self, said: dict) -> None:
        """The breaks an earlier watch said: not said again, their counts go on."""
        with self.lock:
            for dn, clocks in said.items():
                d = self.devices.get(dn)
                if d is None or not isinstance(clocks, dict):
                    continue
                for cn, b in clocks.items():
                    c = d.clocks.get(cn)
                    if c is not None and isinstance(b, dict) and b.get("until_ns") is not None:
                        _restore_clock_breaks(c, b)

    def requests_last_minute(self, d: DeviceState) -> int:
        cut = time.monotonic() - 60.0
        with self.lock:
            while d.requests and d.requests[0] < cut:
                d.requests.popleft()
            return len(d.requests)

    def set_reference(self, health) -> None:
        with self.lock:
            old = self.reference
            if old is not None and health.detail.get("gm_identity") and \
                    old.detail.get("gm_identity") not in (None, "", health.detail["gm_identity"]):
                self.gm_changes += 1
            self.reference = health
            self.uncertainty_ns = max(self.uncertainty_ns, int(health.uncertainty_ns or 0))


def _restore_clock_breaks(c: ClockState, b: dict) -> None:
    """One clock's breaks said before (`b`: until_ns and the counts by kind): not said again,
    their counts go on."""
    c.seen_until_ns = max(c.seen_until_ns or 0, int(b["until_ns"]))
    c.breaks.update({str(k): int(n) for k, n in (b.get("kinds") or {}).items()})
