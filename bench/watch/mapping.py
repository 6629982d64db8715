"""Device stamps to reference intervals while the rack is watched: through the closed days'
folders (exactly as `rackclock timeline` maps a log line of that folder: its Calibrated fits and
bench/analysis/timeline_map.map_stamps) and, for stamps after them, through the live segments.

A stamp is answered by the newest closed day whose mapping places it inside that day's span
(its first to its last read), else by the live fits (the state's windows). Each answer says
where it came from: the day folder, or `live`.
"""
from __future__ import annotations

import json
import math
import tarfile
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from bench.analysis.timeline_map import calibrations, describe, map_stamps
from bench.errors import RackclockError
from bench.model.logformats import ISO, Context, Unparsed, iso_stamp
from bench.watch.estimator import bound_now
from bench.watch.retention import archive_of

DAYS_CACHED = 2          # closed days whose fits are kept in memory (each a day of segments)
NEAR_NS = 3600 * 10**9   # a day is asked only when its summary puts the stamp this near its span


class MapError(RackclockError, ValueError):
    """A request the mapping cannot answer (a bad stamp, a clock not fitted): 400."""


class UnknownDevice(MapError):
    """A device or clock the watch does not know: 404."""


@dataclass(frozen=True)
class Query:
    device: str
    clock: str
    value_ns: int
    resolution_ns: int = 1
    raw: str = ""


def parse_query(d: dict) -> Query:
    """A query from its fields: `device`, `clock`, and `stamp` (ISO 8601 wall time, as a log
    writes it) or `value_ns` (the device's own value: ns since the epoch, or since a counter's
    zero); optional `resolution_ns`."""
    device, clock = str(d.get("device") or ""), str(d.get("clock") or "")
    if not device or not clock:
        raise MapError("device and clock are required")
    res = d.get("resolution_ns")
    try:
        res = max(1, int(res)) if res not in (None, "") else None
        if d.get("value_ns") not in (None, ""):
            return Query(device, clock, int(d["value_ns"]), res or 1, str(d["value_ns"]))
    except (TypeError, ValueError):
        raise MapError("value_ns and resolution_ns are integers (ns)") from None
    stamp = str(d.get("stamp") or "").strip()
    m = ISO.fullmatch(stamp)
    if not m:
        raise MapError(f"stamp {stamp[:60]!r}: expected ISO 8601 (2026-12-01T13:00:00.123Z) "
                       f"or value_ns")
    try:
        v, q, _ = iso_stamp(m, Context())
    except Unparsed as exc:
        raise MapError(f"stamp {stamp[:60]!r}: {exc}") from None
    return Query(device, clock, v, res or q, stamp)


def answer(q: Query, cals: list, source: str, read_at: int, counter: bool) -> dict:
    """The mapping of one stamp through these calibrations, as the timeline maps a log line
    (bench/model/timeline.read_log: the clock's tick at least, read no later than now)."""
    fit_q = max(int(c.segment.resolution_ns or 1) for c in cals)
    m = map_stamps(cals, np.array([q.value_ns]), np.array([max(q.resolution_ns, fit_q)]), None,
                   wall=not counter, not_after_ns=read_at)
    st = m.status_of(0)
    placed = st not in ("presync", "unplaceable")
    return {"device": q.device, "clock": q.clock, "stamp": q.raw, "value_ns": q.value_ns,
            "lo_ns": int(m.lo_ns[0]) if placed else None,
            "hi_ns": int(m.hi_ns[0]) if placed else None, "status": st,
            "model": describe(m, 0), "calibration": m.calibration_of(0), "source": source}


class DayFits:
    """The closed days' fits, the latest DAYS_CACHED in memory."""

    def __init__(self):
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def of(self, path: Path):
        from bench.model.rundata import load_run
        from bench.model.timeline import Calibrated
        with self._lock:
            if path in self._cache:
                self._cache.move_to_end(path)
                return self._cache[path]
        if (Path(path) / "samples").is_dir() or not archive_of(Path(path)).exists():
            run = load_run(path)
            cal = (run, Calibrated.of([run]))
        else:                          # a packed day: its samples from the archive, for now
            with tempfile.TemporaryDirectory(prefix="rackclock-map-") as tmp:
                with tarfile.open(archive_of(Path(path)), "r:gz") as tar:
                    tar.extractall(tmp, filter="data")
                run = load_run(Path(tmp) / Path(path).name)
                cal = (run, Calibrated.of([run]))
        with self._lock:
            self._cache[path] = cal
            while len(self._cache) > DAYS_CACHED:
                self._cache.popitem(last=False)
        return cal


@lru_cache(maxsize=512)
def day_index(path: Path) -> tuple[int, int, dict]:
    """A closed day's span (started_ns, ended_ns) and per (device, clock) its segments' offset
    points and modulus, from its manifest and summary (a few numbers a day, kept)."""
    summary = json.loads((Path(path) / "summary.json").read_text())
    man = json.loads((Path(path) / "manifest.json").read_text())
    lo, hi = int(man["started_ns"]), int(man.get("ended_ns") or man["started_ns"])
    out = {}
    for dn, d in (summary.get("devices") or {}).items():
        mods = {c.get("name"): int(c.get("modulus_ns") or 0)
                for c in (man.get("devices", {}).get(dn, {}).get("clocks") or [])}
        for cn, c in (d.get("clocks") or {}).items():
            out[(dn, cn)] = ([float(sg["offset_ns"]["point"]) for sg in c.get("segments", [])],
                             mods.get(cn, 0))
    return lo, hi, out


def near(path: Path, q: Query) -> bool:
    """Whether the day's summary (its segments' offsets) puts the stamp within NEAR_NS of the
    day's span: a cheap test before the day's fits are loaded (a stamp of today must not load
    every day of the month)."""
    try:
        lo, hi, idx = day_index(Path(path))
    except (OSError, ValueError, KeyError, TypeError):
        return False                  # not summarised (yet): not asked
    points, modulus = idx.get((q.device, q.clock), ([], 0))
    if modulus:
        return bool(points)           # a wrapping counter: its turn is the mapping's to find
    return any(lo - NEAR_NS <= q.value_ns - p <= hi + NEAR_NS for p in points)


class Mapper:
    """`map(query)` through the closed days (`days()`: their folders, oldest first) and the
    live state."""

    def __init__(self, state=None, days=lambda: []):
        self.state, self.days, self.fits = state, days, DayFits()

    def map(self, q: Query) -> dict:
        now = time.time_ns()
        live = self._live(q)
        days = list(self.days())
        if live is not None:          # after every closed day: the live fits answer at once
            got = answer(q, live[0], "live", now, live[1])
            if got["lo_ns"] is not None and got["lo_ns"] > self._last_end(days):
                return got
        for path in reversed(days):
            day = self._day(q, Path(path), now)
            if day is not None:
                return day
        if live is None:
            raise MapError(f"{q.device} {q.clock}: no day folder places this stamp in its span "
                           f"and no live fit of the clock is there to map it")
        return answer(q, live[0], "live", now, live[1])

    def _day(self, q: Query, path: Path, now: int) -> dict | None:
        if not near(path, q):
            return None
        try:
            run, cal = self.fits.of(path)
        except (OSError, ValueError):
            return None
        cals = cal.clock(q.device, q.clock)
        if not cals:
            return None
        counter = bool(cal.clocks_of(q.device)[q.clock].meta.get("counter"))
        got = answer(q, cals, str(path), max(now, max(c.span[1] for c in cals)), counter)
        lo, hi = min(c.span[0] for c in cals), max(c.span[1] for c in cals)
        inside = got["lo_ns"] is not None and lo <= got["lo_ns"] and got["hi_ns"] <= hi
        return got if inside else None

    @staticmethod
    def _last_end(days: list) -> int:
        for path in reversed(days):
            try:
                return day_index(Path(path))[1]
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return -(2**63)

    def _live(self, q: Query):
        """(calibrations of the live fit, whether the clock is a counter) or None."""
        if self.state is None:
            return None
        with self.state.lock:
            d = self.state.devices.get(q.device)
            c = d.clocks.get(q.clock) if d else None
            fit = c.fit if c else None
            window = c.window if c else None
        if fit is None or not fit.segments or window is None:
            return None
        meta = {"wander_ppm": window.meta.wander_ppm}
        cals = calibrations([("live", window.result(fit), meta)])
        return cals, window.meta.counter

    def now(self, device: str, clock: str) -> dict:
        """The clock's offset bound at this instant (integers, ns; the epoch's bound beside it)."""
        if self.state is None:
            raise MapError("no live watch: the offset now is a running watch's")
        with self.state.lock:
            d = self.state.devices.get(device)
            if d is None:
                raise UnknownDevice(f"device {device!r} is not watched")
            c = d.clocks.get(clock)
            b = dict(c.bounds) if c is not None and c.bounds else None
            counter = bool(c.window.meta.counter) if c is not None else False
        if c is None:
            raise UnknownDevice(f"{device} has no clock {clock!r} (it has {sorted(d.clocks)})")
        if b is None:
            raise MapError(f"{device} {clock}: not fitted yet (fewer than two good reads)")
        at = self.state.now_ns()
        lo, hi = bound_now(b, at)
        return {"device": device, "clock": clock, "at_ns": at, "lo_ns": lo, "hi_ns": hi,
                "status": b["offset_status"], "counter": counter,
                "epoch_ns": b["epoch_ns"], "epoch_lo_ns": math.floor(b["offset_lo_ns"]),
                "epoch_hi_ns": math.ceil(b["offset_hi_ns"]),
                "model": f"the bound at the last read ({b['at_ns']} ns) widened at "
                         f"±{b['rate_ppm']:g} ppm since: holds while the clock's rate stays "
                         f"within that and it does not step"}

    def known(self) -> dict:
        """{device: [clock, ...]} the live state knows."""
        if self.state is None:
            return {}
        with self.state.lock:
            return {n: sorted(d.clocks) for n, d in self.state.devices.items()}
