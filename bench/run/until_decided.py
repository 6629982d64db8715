"""`rackclock run --until-decided`: measure until the named clocks' drifts are decided (their
proven mean drift at most a target wide, bench.model.decided), or the ceiling (the run's
duration) is reached.

The check rides on the probing loop's tick (twice a second, as the live display's fits do,
bench.output.live): each device with a clock waited for is fitted as the summary fits it
(bench.model.summary.fit_clocks) from its samples written so far, every read since the start
(the drift narrows with the whole span, so a window of the latest reads would not do), every
tenth of the run so far (from 1 s to CHECK_EVERY_S apart: a fit's cost grows with its reads)
and within BUDGET_S of fitting per tick. Once every clock waited for is
decided (with MARGIN to spare), the probing stops (the runner's stop event, not an
interruption); the summary's own fit then says the figures. A clock not waited for is still
measured and fitted as ever.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.model.decided import target_ppm, width_ppm
from bench.model.rundata import load_samples
from bench.model.summary import device_meta, fit_clocks

CHECK_EVERY_S = 10.0       # a clock's drift is checked every CHECK_SHARE of the run so far (at
CHECK_SHARE = 0.1          # least 1 s apart: early fits are cheap, few reads), at most this far
BUDGET_S = 0.05            # fitting per tick, at most (one device at a time is always fitted)
MIN_READS = 8
MARGIN = 0.85              # the watch stops at this share of the target: the summary's fit
                           # has a few more reads, and the mean drift's window is chosen among
                           # 400 instants of them (cdu-2 rtc: 6.7 % wider than its last check)


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
    (its every clock); empty: every clock the run reads. `folder`, `manifest`: the run folder
    and a function giving its manifest as it stands (Bench sets them)."""
    names: tuple[str, ...] = ()
    decided_ppm: float | None = None
    folder: Path | None = None       # the run folder (its samples/)
    manifest: Callable[[], Mapping[str, Any]] | None = None    # the manifest as it stands
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
        self._register(statuses)
        by = {st.name: st for st in statuses}
        opening = self._opening(statuses)
        due = self._due(by, now, min(CHECK_EVERY_S, max(1.0, CHECK_SHARE * elapsed_s)))
        t0 = time.perf_counter()
        for k in range(len(due)):
            self._check(due[(self._turn + k) % len(due)], by, now, elapsed_s)
            if time.perf_counter() - t0 > BUDGET_S:
                break
        self._turn += 1
        if self._all_decided(opening):
            self.stopped_s = round(elapsed_s, 1)
            self.stop.set()

    def _opening(self, statuses) -> bool:
        """A device waited for is still opening (no clocks named yet)."""
        return any(self.wants(st.name, "") and not st.clocks for st in statuses
                   if st.state in ("starting", "connecting", "unreachable"))

    def _due(self, by: dict, now: float, every: float) -> list[str]:
        """The devices to check again, sorted: a clock of theirs waited for was last checked
        `every` seconds ago or more and has a read more since (MIN_READS at least)."""
        return sorted({w.device for w in self.waited.values() if now - w.checked_at >= every
                       and w.device in by and len(by[w.device].recent.get(w.clock, ()))
                       >= max(MIN_READS, w.checked_reads + 1)})

    def _all_decided(self, opening: bool) -> bool:
        """Every clock waited for is decided, no device waited for is still opening, and the
        run was not stopped yet."""
        return bool(self.waited and not opening and all(w.decided for w in self.waited.values())
                    and not self.stop.is_set())

    def _register(self, statuses) -> None:
        """The clocks waited for: those the devices opened so far name, and every clock named
        (waited for before it is read)."""
        for st in statuses:
            for c in st.clocks:
                name = c.get("name", "")
                if self.wants(st.name, name) and (st.name, name) not in self.waited:
                    self.waited[(st.name, name)] = Waited(st.name, name)
        for n in self.names:
            dev, _, clock = n.partition(".")
            if clock and (dev, clock) not in self.waited:
                self.waited[(dev, clock)] = Waited(dev, clock)

    def _check(self, device: str, by: dict, now: float, elapsed_s: float) -> None:
        """The summary's own fit of the device (bench.model.summary.fit_clocks: its clocks
        together, a reboot one shows cutting the others) from its samples as written so far
        (each row is flushed as it is taken); each clock waited for judged by it."""
        ws = self._mark_checked(device, by, now)
        if self.folder is None or self.manifest is None:
            return
        try:
            res = fit_clocks(load_samples(self.folder / "samples" / f"{device}.csv"),
                             device_meta(self.manifest(), device), self.uncertainty_ns)
        except Exception:      # a guide must never stop the run: the summary's fit decides
            return
        for w in ws:
            fit = res[w.clock].fit if w.clock in res else None
            if fit is not None and fit.segments:
                self._judge(w, fit, elapsed_s)

    def _mark_checked(self, device: str, by: dict, now: float) -> list[Waited]:
        """The device's clocks waited for, each marked checked `now` with its reads so far."""
        ws = [w for w in self.waited.values() if w.device == device]
        for w in ws:
            w.checked_at = now
            w.checked_reads = len(by[device].recent.get(w.clock, ()))
        return ws

    def _judge(self, w: Waited, fit, elapsed_s: float) -> None:
        """One clock waited for, by its fit's last segment: its drift width against the
        target; decided (and when) once within MARGIN of it."""
        width = width_ppm(fit.segments[-1])
        w.width_ppm = None if width is None else round(width, 3)
        w.target_ppm = target_ppm(fit.drift_prior_ppm, self.decided_ppm)
        w.decided = w.width_ppm is not None and w.width_ppm <= MARGIN * w.target_ppm
        if w.decided and w.decided_s is None:
            w.decided_s = round(elapsed_s, 1)

    def record(self, ceiling_s: float) -> dict[str, Any]:
        """The manifest's `until_decided`: what was waited for, what was decided and when."""
        return {"names": list(self.names), "decided_ppm": self.decided_ppm,
                "ceiling_s": ceiling_s, "all_decided_after_s": self.stopped_s,
                "clocks": [w.to_dict() for w in self.waited.values()]}
