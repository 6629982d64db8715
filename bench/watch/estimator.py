"""The one place `rackclock watch` calls the estimator (issue 28 changes its internals: this
adapter is what follows it).

A clock keeps a bounded window of its latest reads (WINDOW reads), never the whole series: the
samples stay on disk. A fit of the window is a fit of a subset of the constraints, so its proven
bounds hold whenever the full series' do (fewer constraints, a larger polygon); they are only
wider than a fit of every read since the segment began would be.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.analysis.counters import AMBIGUOUS, step_wraps, unwrap
from bench.analysis.estimate import ClockFit, fit_clock, wander_allowance_ns_per_s
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.analysis.rate_check import DISCIPLINED_PRIOR_PPM
from bench.model.summary import ClockResult

__all__ = ["ClockFit", "ClockMeta", "ClockWindow", "WINDOW", "current_bounds"]
WINDOW = 600          # reads kept per clock: at 0.2-0.5 Hz, 20-50 minutes of reads


@dataclass(frozen=True)
class ClockMeta:
    """What a fit needs of a clock beside its reads (the manifest's clock entry, the
    inventory's priors)."""
    name: str
    resolution_ns: int
    counter: bool = False
    modulus_ns: int = 0
    drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM
    wander_ppm: float = 0.0
    lag_ns: int = 0                  # the reading may lag its clock by this much (summary.lag_ns)
    free_running: str = ""           # the device's word that nothing disciplines it
    prior_declared: bool = False     # the inventory declares the rate bound: it stands

    def as_manifest(self) -> dict:
        return {"name": self.name, "resolution_ns": self.resolution_ns,
                "counter": self.counter, "modulus_ns": self.modulus_ns or None}


class ClockWindow:
    """The latest reads of one clock, (s, e, value) ns each, at most `size`: a ring of int64
    allocated whole at the start (a clock's memory does not grow as its window fills)."""

    def __init__(self, meta: ClockMeta, size: int = WINDOW):
        self.meta = meta
        self.size = size
        self.ring = np.zeros((size, 3), dtype=np.int64)
        self.n = 0           # reads held
        self.head = 0        # the slot of the oldest read held
        self.carry = 0       # a wrapping counter's wraps before the window's first read

    @property
    def reads(self) -> list[tuple[int, int, int]]:
        """The reads held, oldest first (a copy)."""
        return [tuple(r) for r in self._ordered().tolist()]

    def _ordered(self) -> np.ndarray:
        return np.roll(self.ring, -self.head, axis=0)[:self.n] if self.n == self.size \
            else self.ring[:self.n].copy()

    def add(self, s_ns: int, e_ns: int, value_ns: int) -> None:
        """One read (in time order); a wrapping counter's wrap between the read that leaves the
        full window and the next is carried, so the window's values stay on the same turn as
        it slides (the offset does not jump by the modulus)."""
        m = self.meta
        if m.counter and m.modulus_ns and self.n == self.size > 1:
            (s0, e0, v0), (s1, e1, v1) = self.ring[self.head], self.ring[(self.head + 1) % self.size]
            k = int(step_wraps(np.array([s0, s1]), np.array([e0, e1]), np.array([v0, v1]),
                               int(m.modulus_ns), int(m.resolution_ns))[0])
            self.carry = 0 if k < 0 and k != AMBIGUOUS else self.carry + max(k, 0)
        self.ring[(self.head + self.n) % self.size] = (int(s_ns), int(e_ns), int(value_ns))
        if self.n < self.size:
            self.n += 1
        else:
            self.head = (self.head + 1) % self.size

    def copy(self) -> ClockWindow:
        w = ClockWindow.__new__(ClockWindow)
        w.meta, w.size, w.ring = self.meta, self.size, self.ring.copy()
        w.n, w.head, w.carry = self.n, self.head, self.carry
        return w

    def __len__(self) -> int:
        return self.n

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = self._ordered()
        a = a[np.argsort(a[:, 0], kind="stable")]
        s, e, v = a[:, 0], a[:, 1], a[:, 2]
        m = self.meta
        if len(v) and m.counter and m.modulus_ns:      # as the summary unwraps (rundata)
            v, _ = unwrap(s, e, v, int(m.modulus_ns), int(m.resolution_ns))
            v = v + np.int64(self.carry) * np.int64(m.modulus_ns)
        return s, e, v

    def fit(self, uncertainty_ns: int = 0, cuts_ns: Sequence[tuple[int, int]] = ()
            ) -> ClockFit | None:
        """The estimator's fit of the window, as the summary fits a run (bench.model.summary
        .fit_clocks: the declared lag, the device's claim, a declared rate bound standing, split
        at `cuts_ns`, the device's breaks seen on its other clocks), or None with fewer than
        two reads."""
        if self.n < 2:
            return None
        s, e, v = self.arrays()
        m = self.meta
        wander = wander_allowance_ns_per_s(m.wander_ppm, (int(s[-1]) - int(s[0])) / 1e9)
        return fit_clock(s, e, v, int(m.resolution_ns), uncertainty_ns=int(uncertainty_ns),
                         drift_prior_ppm=m.drift_prior_ppm, wander_ns_per_s=wander,
                         lag_ns=int(m.lag_ns), free_running=m.free_running, cuts_ns=cuts_ns,
                         unchecked_prior_ppm=None if m.prior_declared else DISCIPLINED_PRIOR_PPM)

    def result(self, fit: ClockFit | None) -> ClockResult:
        """The fit as the timeline's mapping takes it (bench.analysis.timeline_map.calibrations)."""
        m = self.meta
        return ClockResult(m.name, {**m.as_manifest(), "modulus_ns": m.modulus_ns},
                           m.resolution_ns, self.n, fit)


def current_bounds(fit: ClockFit | None, rate_ppm: float = DEFAULT_DRIFT_PRIOR_PPM
                   ) -> dict | None:
    """The current (last) segment's offset and drift bounds and statuses, as plain numbers, and
    the offset bound at its last read (`at_ns`, `at_lo_ns`, `at_hi_ns`, integers) that
    `bound_now` carries to any later instant at the model's rate bound: `rate_ppm`, the
    inventory's, or the rate the fit was made under where that is wider (a clock whose reads do
    not check R is fitted under a disciplined clock's rate, bench.analysis.rate_check)."""
    if fit is None or not fit.segments:
        return None
    rate_ppm = max(float(rate_ppm), float(fit.drift_prior_ppm))
    sg = fit.segments[-1]
    md = sg.mean_drift or {}
    at = sg.proven_offset_at(int(sg.end_ns))
    at_ns = int(sg.end_ns) if at is not None else int(sg.epoch_ns)
    at = at if at is not None else sg.offset_ns
    return {"at_ns": at_ns, "at_lo_ns": math.floor(at.lo), "at_hi_ns": math.ceil(at.hi),
            "rate_ppm": float(rate_ppm),
            "epoch_ns": int(sg.epoch_ns), "offset_lo_ns": float(sg.offset_ns.lo),
            "offset_hi_ns": float(sg.offset_ns.hi), "offset_status": str(sg.offset_status),
            "drift_lo_ppm": float(sg.drift_ppm.lo), "drift_hi_ppm": float(sg.drift_ppm.hi),
            "mean_drift_ppm": md.get("point"), "mean_drift_status": md.get("status"),
            "start_ns": int(sg.start_ns), "end_ns": int(sg.end_ns), "reads": int(sg.reads)}


def bound_now(b: dict, now_ns: int) -> tuple[int, int]:
    """The offset bound at reference instant `now_ns` (ns, rounded outward): the bound at the
    segment's last read widened by the model's rate bound over the time since, as AWS
    ClockBound's clock error bound grows with the time since its last sync. Holds when the
    clock's rate stayed within ±rate_ppm and it did not step since that read."""
    age = max(0, int(now_ns) - int(b["at_ns"]))
    grow = math.ceil(age * float(b["rate_ppm"]) * 1e-6)
    return int(b["at_lo_ns"]) - grow, int(b["at_hi_ns"]) + grow
