"""`rackclock run --until-decided`: measure until the named clocks' drifts are decided (their
proven mean drift at most a target wide, bench.model.decided), or the ceiling (the run's
duration) is reached.

The check rides on the probing loop's tick (twice a second, as the live display's fits do,
bench.output.live): each clock waited for is fitted from every read the runner handed over so
far (DeviceStatus.recent; the drift narrows with the whole span, so a window of the latest reads
would not do), every tenth of the run so far (from 1 s to CHECK_EVERY_S apart: a fit's cost
grows with its reads) and within BUDGET_S of fitting per tick, with the
summary's parameters (prior, wander, lag, an unwrapped counter). Once every clock waited for is
decided (with MARGIN to spare), the probing stops (the runner's stop event, not an
interruption); the summary's own fit then says the figures. A clock not waited for is still
measured and fitted as ever.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.analysis.counters import unwrap
from bench.analysis.estimate import DEFAULT_DRIFT_PRIOR_PPM, fit_clock, wander_allowance_ns_per_s
from bench.analysis.rate_check import DISCIPLINED_PRIOR_PPM
from bench.model.decided import target_ppm, width_ppm
from bench.model.summary import lag_ns

CHECK_EVERY_S = 10.0       # a clock's drift is checked every CHECK_SHARE of the run so far (at
CHECK_SHARE = 0.1          # least 1 s apart: early fits are cheap, few reads), at most this far
BUDGET_S = 0.05            # fitting per tick, at most (one fit is 10-30 ms at 2,000-7,000 reads)
MIN_READS = 8
MARGIN = 0.85              # the watch stops at this share of the target: the summary's own fit
                           # differs from the watch's (its mean drift's window is chosen among
                           # 400 instants of more reads; another clock's break cuts it): 6.7 and
                           # 13.6 % wider on the two of 12 clocks that differed at 60 ppm


@dataclass
class Waited:
    """One clock waited for: its last check and, once decided, when and how wide."""
    device: str
    clock: str
    checked_at: float = -1e9       # monotonic
    checked_reads: int = 0
    width_ppm: float | None = None
    target_ppm: float | None = None
    decided_s: float | None = None  # run time (s from the probing's start) first seen decided
    decided: bool = False           # at its latest check

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "clock": self.clock, "width_ppm": self.width_ppm,
                "target_ppm": self.target_ppm, "decided_after_s": self.decided_s}


@dataclass
class UntilDecided:
    """`update(statuses, elapsed_s)` from the probing tick; sets `stop` once every clock waited
    for is decided at its latest check (each is checked again after it was first seen decided:
    the mean drift's window moves as reads come, and its width with it). `names`: "DEVICE.CLOCK" or "DEVICE"
    (its every clock); empty: every clock the run reads. `inventory`: {device: its rack file
    keys (drift_prior_ppm, wander_ppm, tick_lag_ms)}."""
    names: tuple[str, ...] = ()
    decided_ppm: float | None = None
    inventory: dict[str, dict[str, Any]] = field(default_factory=dict)
    uncertainty_ns: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    waited: dict[tuple[str, str], Waited] = field(default_factory=dict)
    stopped_s: float | None = None   # run time at which every clock waited for was decided
    _turn: int = 0

    def wants(self, device: str, clock: str) -> bool:
        """A clock waited for ("": any clock of the device)."""
        return (not self.names or device in self.names or f"{device}.{clock}" in self.names
                or (not clock and any(n.startswith(device + ".") for n in self.names)))

    def update(self, statuses, elapsed_s: float) -> None:
        now = time.monotonic()
        for st in statuses:
            for c in st.clocks:
                name = c.get("name", "")
                if self.wants(st.name, name) and (st.name, name) not in self.waited:
                    self.waited[(st.name, name)] = Waited(st.name, name)
        for n in self.names:               # a clock named is waited for before it is read
            dev, _, clock = n.partition(".")
            if clock and (dev, clock) not in self.waited:
                self.waited[(dev, clock)] = Waited(dev, clock)
        by = {st.name: st for st in statuses}
        opening = any(self.wants(st.name, "") and not st.clocks for st in statuses
                      if st.state in ("starting", "connecting", "unreachable"))
        every = min(CHECK_EVERY_S, max(1.0, CHECK_SHARE * elapsed_s))
        due = [w for w in self.waited.values() if now - w.checked_at >= every
               and w.device in by and len(by[w.device].recent.get(w.clock, ()))
               >= max(MIN_READS, w.checked_reads + 1)]
        t0 = time.perf_counter()
        for k in range(len(due)):
            w = due[(self._turn + k) % len(due)]
            self._check(w, by[w.device], now, elapsed_s)
            if time.perf_counter() - t0 > BUDGET_S:
                break
        self._turn += 1
        if self.waited and not opening and all(w.decided for w in self.waited.values()) \
                and not self.stop.is_set():
            self.stopped_s = round(elapsed_s, 1)
            self.stop.set()

    def _check(self, w: Waited, st, now: float, elapsed_s: float) -> None:
        w.checked_at = now
        rows = list(st.recent[w.clock])     # a copy: the device threads append to it
        w.checked_reads = len(rows)
        spec: dict[str, Any] = next((c for c in st.clocks if c.get("name") == w.clock), {})
        try:
            fit, prior = self._fit(np.asarray(rows, dtype=np.int64), spec,
                                   self.inventory.get(w.device, {}))
        except Exception:      # a guide must never stop the run: the summary's fit decides
            return
        if fit is None or not fit.segments:
            return
        width = width_ppm(fit.segments[-1])
        w.width_ppm = None if width is None else round(width, 3)
        w.target_ppm = target_ppm(fit.drift_prior_ppm or prior, self.decided_ppm)
        w.decided = w.width_ppm is not None and w.width_ppm <= MARGIN * w.target_ppm
        if w.decided and w.decided_s is None:
            w.decided_s = round(elapsed_s, 1)

    def _fit(self, a: np.ndarray, spec: dict[str, Any], inv: dict[str, Any]):
        """The summary's fit of these reads (bench.model.summary.fit_clocks, without the cuts
        another clock's reboot would add)."""
        a = a[np.argsort(a[:, 0], kind="stable")]
        s, e, v = a[:, 0], a[:, 1], a[:, 2]
        q = int(spec.get("resolution_ns") or a[-1, 3] or 1)
        if spec.get("counter") and spec.get("modulus_ns"):
            v, _ = unwrap(s, e, v, int(spec["modulus_ns"]), q)
        declared = "drift_prior_ppm" in inv
        prior = float(inv.get("drift_prior_ppm", DEFAULT_DRIFT_PRIOR_PPM))
        wander = wander_allowance_ns_per_s(float(inv.get("wander_ppm", 0.0)),
                                           (int(s[-1]) - int(s[0])) / 1e9)
        return fit_clock(s, e, v, q, uncertainty_ns=self.uncertainty_ns, drift_prior_ppm=prior,
                         wander_ns_per_s=wander, lag_ns=lag_ns(inv, spec),
                         unchecked_prior_ppm=None if declared else DISCIPLINED_PRIOR_PPM), prior

    def record(self, ceiling_s: float) -> dict[str, Any]:
        """The manifest's `until_decided`: what was waited for, what was decided and when."""
        return {"names": list(self.names), "decided_ppm": self.decided_ppm,
                "ceiling_s": ceiling_s, "all_decided_after_s": self.stopped_s,
                "clocks": [w.to_dict() for w in self.waited.values()]}
