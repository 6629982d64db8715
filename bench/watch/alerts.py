"""Alerts in the journal: a break, a crossed limit, a stuck clock, a degraded reference each
write one line to the day's events.csv (level `warn`, kind `alert_<what>`) and one to the log at
WARNING, once per event: a state that persists (a clock stuck, a limit crossed, the reference
degraded) is said when it begins and again only after it has ended."""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from bench.reference.clock import worse_grade
from bench.units import fmt_bounds, fmt_interval_ns, fmt_ns

log = logging.getLogger(__name__)


def _ppm(x: float) -> str:
    return f"{x:g} ppm"


def _limit_checks(lim: dict, b: dict, counter: bool
                  ) -> list[tuple[str, float, float, float, Callable[[float], str]]]:
    """(measure, bound's lo, hi, limit, the limit's format) of each limit the device has and
    the clock's bounds `b` can be judged on (a counter has no offset limit)."""
    checks: list[tuple[str, float, float, float, Callable[[float], str]]] = []
    if "offset_within" in lim and b and not counter:
        checks.append(("offset", b["offset_lo_ns"], b["offset_hi_ns"], lim["offset_within"],
                       fmt_ns))
    if "drift_within_ppm" in lim and b:
        checks.append(("drift", b["drift_lo_ppm"], b["drift_hi_ppm"],
                       lim["drift_within_ppm"], _ppm))
    return checks


class Alerts:
    def __init__(self, journal, limits: Mapping[str, Any] | None = None):
        self.journal = journal             # journal(device, level, kind, message)
        self.limits = limits or {}
        self.reference_bad = False
        self.start_grade: str | None = None
        self.said = 0                      # alert lines written (this process)

    def _say(self, device: str, what: str, message: str) -> None:
        self.said += 1
        self.journal(device, "warn", f"alert_{what}", message)
        log.warning("%s: %s: %s", device or "reference", what, message)

    def breaks(self, device: str, clock: str, new: list) -> None:
        for b in new:
            size = "" if b.size_ns is None else f", size {fmt_interval_ns(b.size_ns.lo, b.size_ns.hi)}"
            self._say(device, "break", f"{clock}: {b.kind} between {b.after_ns} and "
                                       f"{b.before_ns} ns{size}")

    def stuck(self, device: str, clock: str, c) -> None:
        if c.stuck and "stuck" not in c.limits_failed:
            c.limits_failed.add("stuck")
            self._say(device, "stuck", f"{clock}: value {c.value} unchanged since "
                                       f"{c.value_since_ns} ns")
        elif not c.stuck:
            c.limits_failed.discard("stuck")

    def crossed(self, device: str, clock: str, c) -> None:
        """The rack file's [limits] (bench/model/limit_checks.py) judged on the current segment: a
        limit is crossed when every value the proven bounds allow is beyond it."""
        from bench.model.limit_checks import for_device  # scipy's stack: not on the start's path
        try:
            lim = for_device(self.limits, device, c.plane)
        except Exception:
            return
        for what, lo, hi, limit, fmt in _limit_checks(lim, c.bounds or {}, c.window.meta.counter):
            out = hi < -limit or lo > limit
            if out and what not in c.limits_failed:
                c.limits_failed.add(what)
                bound = fmt_bounds(lo, hi, "ns" if what == "offset" else "ppm")
                self._say(device, "limit", f"{clock}: {what} {bound} beyond "
                                           f"±{fmt(limit)}")
            elif not out:
                c.limits_failed.discard(what)

    def reference(self, health) -> None:
        if self.start_grade is None:
            self.start_grade = health.grade
            return
        bad = worse_grade(health.grade, self.start_grade) != self.start_grade
        if bad and not self.reference_bad:
            self._say("", "reference", f"grade {health.grade} (was {self.start_grade}): "
                                       f"{'; '.join(health.problems) or health.note}")
        self.reference_bad = bad
