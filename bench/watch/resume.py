"""A restarted watch resumes its clocks' current segments from disk: the last day folder of the
same rack file gives each clock's latest reads (the window the live fit keeps), so the bounds
go on where they were instead of starting from nothing. A last day still marked `running` whose
process is gone (a killed watch) is summarised and marked `killed` first (`rackclock
summarize`'s own rule)."""
from __future__ import annotations

import logging
from pathlib import Path

from bench import saferead
from bench.model.rundata import load_samples
from bench.watch.estimator import WINDOW

log = logging.getLogger(__name__)


def last_day(out: Path, rack_file: str) -> Path | None:
    days = []
    for m in Path(out).glob("*-watch*/manifest.json"):
        try:
            man = saferead.load_object(m)
        except (OSError, ValueError):
            continue
        if man.get("experiment") == "watch" and man.get("rack_file") == rack_file:
            days.append((int(man.get("started_ns") or 0), m.parent, man))
    return max(days, key=lambda d: d[0])[1] if days else None


def resume(out: Path, rack_file: str, state) -> dict[str, int]:
    """Seed `state` from the last day folder; {device: reads resumed}."""
    from bench.resummarize import _alive, rebuild_summary
    day = last_day(out, rack_file)
    if day is None:
        return {}
    man = saferead.load_object(day / "manifest.json")
    if man.get("status") == "running" and not _alive(man.get("pid")):
        try:
            rebuild_summary(day)
        except Exception as exc:        # an unreadable old day costs only the resume
            log.warning("watch: %s could not be summarised: %r", day, exc)
    done = {}
    for name, d in (man.get("devices") or {}).items():
        p = day / "samples" / f"{name}.csv"
        if not d.get("clocks") or not p.exists():
            continue
        try:
            smp = load_samples(p)
        except (OSError, ValueError) as exc:
            log.warning("watch: %s: samples unreadable, not resumed: %r", name, exc)
            continue
        state.define(name, d.get("plane", ""), d["clocks"])
        n = 0
        for c in d["clocks"]:
            s, e, v, _ = smp.reads(c["name"])
            with state.lock:
                cs = state.devices[name].clocks[c["name"]]
                for k in range(max(0, len(s) - WINDOW), len(s)):
                    cs.window.add(int(s[k]), int(e[k]), int(v[k]))
                    cs.taken += 1
                    n += 1
        done[name] = n
    return done
