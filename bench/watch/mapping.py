"""Device stamps to reference intervals while the rack is watched: through the closed days'
folders (exactly as `rackclock timeline` maps a log line of that folder: its Calibrated fits and
bench/analysis/timeline_map.map_stamps) and, for stamps after them, through the live segments.

A stamp is answered by the newest closed day whose mapping places it inside that day's span
(its first to its last read), else by the live fits (the state's windows). Each answer says
where it came from: the day folder, or `live`.
"""
from __future__ import annotations

import datetime as dt
import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from bench import saferead
from bench.analysis.timeline_map import calibrations, describe, map_stamps
from bench.errors import RackclockError
from bench.model.logformats import ISO, Context, Unparsed, iso_stamp
from bench.watch.estimator import bound_now
from bench.watch.retention import PackedRun, archive_of

NS = 10**9
DAYS_CACHED = 2          # closed days whose fits are kept in memory (each a day of segments)
NEAR_NS = 3600 * 10**9   # a day is asked only when its summary puts the stamp this near its span
ASSUMED = ("assumed_lo_ns/assumed_hi_ns: through the segment's line, which holds only with no "
           "unseen step inside the segment (lo_ns/hi_ns allow one)")


class MapError(RackclockError, ValueError):
    """A request the mapping cannot answer (a bad stamp, a clock not fitted): 400."""


class UnknownDevice(MapError):
    """A device or clock the watch does not know: 404."""


@dataclass(slots=True)
class Query:
    device: str
    clock: str
    value_ns: int
    resolution_ns: int = 1
    raw: str = ""
    iso: bool = False           # a wall stamp (never a counter's value)


INT64 = (-(2**63), 2**63 - 1)
MAX_NAME = 200


def _int64(x, what: str) -> int:
    try:
        v = int(x)
    except (TypeError, ValueError, OverflowError):
        raise MapError(f"{what} {str(x)[:40]!r}: expected an integer (ns)") from None
    if not INT64[0] <= v <= INT64[1]:
        raise MapError(f"{what} {str(x)[:40]!r}: out of range (int64 ns, years 1678-2261)")
    return v


def parse_query(d: dict) -> Query:
    """A query from its fields: `device`, `clock`, and `stamp` (RFC 3339: ISO 8601 with seconds
    and a zone, as a log writes it; a leap second 23:59:60 is the next day's 00:00:00 of POSIX
    time) or `value_ns` (the device's own value: ns since the epoch, or since a counter's zero);
    optional `resolution_ns`."""
    device, clock = str(d.get("device") or "")[:MAX_NAME], str(d.get("clock") or "")[:MAX_NAME]
    if not device or not clock:
        raise MapError("device and clock are required")
    res = d.get("resolution_ns")
    res = max(1, _int64(res, "resolution_ns")) if res not in (None, "") else None
    if d.get("value_ns") not in (None, ""):
        return Query(device, clock, _int64(d["value_ns"], "value_ns"), res or 1,
                     str(d["value_ns"])[:40])
    stamp = str(d.get("stamp") or "").strip()[:100]
    v, q = parse_stamp(stamp)
    return Query(device, clock, v, res or q, stamp, iso=True)


RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):([0-5]\d)(?:\.(\d{1,9}))?"
                     r"(Z|z|[+-]\d{2}:\d{2})")


@lru_cache(maxsize=4096)
def _minute_ns(date: str, h: str, mi: str, tz: str) -> int:
    """ns since the epoch of a minute's start (a batch's stamps share few minutes)."""
    z = dt.UTC if tz in ("Z", "z") else dt.timezone(
        (1 if tz[0] == "+" else -1) * dt.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6])))
    t = dt.datetime.fromisoformat(date).replace(hour=int(h), minute=int(mi), tzinfo=z)
    return int(t.timestamp()) * NS


def _fast_stamp(stamp: str) -> tuple[int, int] | None:
    """The common RFC 3339 stamp (seconds 00-59, a zone) without the general parser."""
    m = RFC3339.fullmatch(stamp)
    if m is None:
        return None
    date, h, mi, sec, frac, tz = m.groups()
    try:
        base = _minute_ns(date, h, mi, tz)
    except (ValueError, OverflowError):
        return None                   # the general parser says why
    f = (frac or "").ljust(9, "0")
    return base + int(sec) * NS + int(f), 10 ** (9 - len(frac)) if frac else NS


def parse_many(items: list) -> list[Query | MapError]:
    """`parse_query` of each item; the common stamps (UTC, "Z", seconds given) parsed together
    by numpy's datetime64 (C), the rest one by one."""
    out: list[Query | MapError | None] = [None] * len(items)
    _parse_fast(items, [k for k, it in enumerate(items) if _is_fast(it)], out)
    for k, it in enumerate(items):
        if out[k] is None:
            try:
                out[k] = parse_query(it if isinstance(it, dict) else {})
            except MapError as exc:
                out[k] = exc
    return [o for o in out if o is not None]


def _is_fast(it: object) -> bool:
    """An item whose stamp numpy's datetime64 parses as it is (_utc_shape), with a device and a
    clock and no value or resolution of its own."""
    return (isinstance(it, dict) and _utc_shape(it.get("stamp"))
            and it.get("value_ns") in (None, "") and it.get("resolution_ns") in (None, "")
            and bool(it.get("device")) and bool(it.get("clock")))


def _utc_shape(st: object) -> bool:
    """A stamp in UTC ("Z") with its seconds given, not a leap second."""
    return (isinstance(st, str) and 20 <= len(st) <= 30 and st[-1] == "Z" and st[10] == "T"
            and st[16] == ":" and st[17:19] != "60")


def _parse_fast(items: list, fast: list[int], out: list) -> None:
    """The queries of items[k] for k in `fast` into out[k], parsed together; none where numpy
    refuses one of them (each is then parsed alone)."""
    if not fast:
        return
    stamps = [items[k]["stamp"] for k in fast]
    try:
        v = np.array([x[:-1] for x in stamps], dtype="datetime64[ns]").astype(np.int64)
    except (ValueError, OverflowError):
        return
    for k, x, val in zip(fast, stamps, v.tolist()):
        it = items[k]
        n = len(x) - 21                 # digits of the fraction (0: none)
        out[k] = Query(str(it["device"])[:MAX_NAME], str(it["clock"])[:MAX_NAME], val,
                       10 ** (9 - n) if n > 0 else NS, x, iso=True)


def parse_stamp(stamp: str) -> tuple[int, int]:
    """(value_ns, resolution_ns) of an RFC 3339 stamp; MapError for anything else, a stamp
    without a zone included (its instant would be a guess)."""
    fast = _fast_stamp(stamp)
    if fast is not None and INT64[0] <= fast[0] <= INT64[1]:
        return fast
    m = ISO.fullmatch(stamp)
    if not m:
        raise MapError(f"stamp {stamp[:60]!r}: expected ISO 8601 (2026-12-01T13:00:00.123Z) "
                       f"or value_ns")
    if m.group(8) is None:
        raise MapError(f"stamp {stamp[:60]!r}: no zone (Z or +hh:mm): refused, its instant "
                       f"would be a guess")
    leap = m.group(6) == "60"          # RFC 3339's leap second: one second after :59
    if leap:
        m = ISO.fullmatch(stamp[:m.start(6)] + "59" + stamp[m.end(6):])
        assert m is not None
    try:
        v, q, _ = iso_stamp(m, Context())
    except Unparsed as exc:
        raise MapError(f"stamp {stamp[:60]!r}: {exc}") from None
    return _int64(v + (NS if leap else 0), "stamp"), q


def answers(qs: list[Query], cals: list, source: str, read_at: int, counter: bool
            ) -> list[dict]:
    """The mappings of stamps of one clock through these calibrations, in one vectorised pass,
    as the timeline maps log lines (bench/model/timeline_build.read_log: the clock's tick at least,
    read no later than now); the words of each answer made once per kind of answer."""
    m = _mapped(qs, cals, read_at, counter)
    lo, hi = m.lo_ns.tolist(), m.hi_ns.tolist()
    alo = (m.lo_ns if m.assumed_lo_ns is None else m.assumed_lo_ns).tolist()
    ahi = (m.hi_ns if m.assumed_hi_ns is None else m.assumed_hi_ns).tolist()
    keys = _answer_kinds(m, len(qs))
    words: dict[tuple, tuple[str, str, str]] = {}
    out = []
    for i, q in enumerate(qs):
        w = words.get(keys[i])
        if w is None:
            w = words[keys[i]] = (m.status_of(i), describe(m, i), m.calibration_of(i))
        out.append(_answer_row(q, w, source, (lo[i], hi[i], alo[i], ahi[i])))
    return out


def _answer_row(q: Query, w: tuple[str, str, str], source: str,
                bounds: tuple[int, int, int, int]) -> dict:
    """One stamp's answer: its words `w` (status, model, calibration) and, when it was placed,
    its interval and the segment line's (`bounds`: lo, hi, assumed lo, assumed hi)."""
    lo, hi, alo, ahi = bounds
    placed = w[0] not in ("presync", "unplaceable")
    return {"device": q.device, "clock": q.clock, "stamp": q.raw, "value_ns": q.value_ns,
            "lo_ns": lo if placed else None, "hi_ns": hi if placed else None,
            "status": w[0], "model": w[1], "calibration": w[2], "source": source,
            # the segment's line (no unseen step inside it), inside [lo_ns, hi_ns]
            "assumed_lo_ns": alo if placed else None,
            "assumed_hi_ns": ahi if placed else None,
            "assumed": ASSUMED if placed else None}


def _mapped(qs: list[Query], cals: list, read_at: int, counter: bool) -> Any:
    """The stamps mapped through the calibrations (map_stamps), each read to at least the
    fit's tick and no later than `read_at`."""
    fit_q = max(int(c.segment.resolution_ns or 1) for c in cals)
    v = np.fromiter((q.value_ns for q in qs), dtype=np.int64, count=len(qs))
    r = np.fromiter((q.resolution_ns for q in qs), dtype=np.int64, count=len(qs))
    return map_stamps(cals, v, np.maximum(r, fit_q), None, wall=not counter,
                      not_after_ns=read_at)


def _answer_kinds(m: Any, n: int) -> list[tuple]:
    """Per answer its kind (status, distance, candidate calibrations): answers of one kind
    share their words."""
    cand = np.asarray(m.candidates, dtype=bool).reshape(len(m.names) or 1, -1)
    code = (cand.astype(np.int64) << np.arange(len(cand), dtype=np.int64)[:, None]).sum(axis=0) \
        if len(cand) < 63 else np.arange(n)
    return list(zip(m.status.tolist(), m.distance_ns.tolist(), code.tolist()))


def answer(q: Query, cals: list, source: str, read_at: int, counter: bool) -> dict:
    return answers([q], cals, source, read_at, counter)[0]


class DayFits:
    """The closed days' fits, the latest DAYS_CACHED in memory."""

    def __init__(self):
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def of(self, path: Path):
        from bench.model.rundata import load_run
        from bench.model.timeline_build import Calibrated
        with self._lock:
            if path in self._cache:
                self._cache.move_to_end(path)
                return self._cache[path]
        if (Path(path) / "samples").is_dir() or not archive_of(Path(path)).exists():
            run = load_run(path)
            cal = (run, Calibrated.of([run]))
        else:                          # a packed day: its samples read from the archive in memory
            packed = PackedRun.of(Path(path))
            with packed.reading():
                cal = (packed, Calibrated.of([packed]))
        with self._lock:
            self._cache[path] = cal
            while len(self._cache) > DAYS_CACHED:
                self._cache.popitem(last=False)
        return cal


@lru_cache(maxsize=512)
def day_index(path: Path) -> tuple[int, int, dict]:
    """A closed day's span (started_ns, ended_ns) and per (device, clock) its segments' offset
    points and modulus, from its manifest and summary (a few numbers a day, kept)."""
    summary = saferead.load_object(Path(path) / "summary.json")
    man = saferead.load_object(Path(path) / "manifest.json")
    lo, hi = int(man["started_ns"]), int(man.get("ended_ns") or man["started_ns"])
    out = {}
    for dn, d in (summary.get("devices") or {}).items():
        mods = {c.get("name"): int(c.get("modulus_ns") or 0)
                for c in (man.get("devices", {}).get(dn, {}).get("clocks") or [])}
        for cn, c in (d.get("clocks") or {}).items():
            out[(dn, cn)] = ([float(sg["offset_ns"]["point"]) for sg in c.get("segments", [])],
                             mods.get(cn, 0))
    return lo, hi, out


def near_mask(path: Path, dev: str, clk: str, v: np.ndarray) -> np.ndarray:
    """`near` for many stamps (values `v`) of one clock at once."""
    try:
        lo, hi, idx = day_index(Path(path))
    except (OSError, ValueError, KeyError, TypeError):
        return np.zeros(len(v), dtype=bool)
    points, modulus = idx.get((dev, clk), ([], 0))
    if modulus:
        return np.full(len(v), bool(points))
    out = np.zeros(len(v), dtype=bool)
    for p in points:
        d = v.astype(np.float64) - p
        out |= (lo - NEAR_NS <= d) & (d <= hi + NEAR_NS)
    return out


@lru_cache(maxsize=512)
def day_counters(path: Path) -> dict[tuple[str, str], bool]:
    """Per (device, clock) of a day's manifest whether the clock is a counter."""
    man = saferead.load_object(Path(path) / "manifest.json")
    return {(str(dn), str(c.get("name"))): bool(c.get("counter"))
            for dn, d in (man.get("devices") or {}).items() if isinstance(d, dict)
            for c in d.get("clocks") or [] if isinstance(c, dict)}


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
        got = self.map_many([q])[0]
        if isinstance(got, MapError):
            raise got
        return got

    def map_many(self, qs: list[Query]) -> list[dict | MapError]:
        """Each query's answer or its MapError, the stamps of one clock mapped together."""
        groups: dict[tuple[str, str], list[int]] = {}
        for i, q in enumerate(qs):
            groups.setdefault((q.device, q.clock), []).append(i)
        days = list(self.days())
        now, last_end = time.time_ns(), self._last_end(days)
        out: list[dict | MapError] = [MapError("not mapped")] * len(qs)
        for idx in groups.values():
            group = [qs[i] for i in idx]
            try:
                got = self._group(group, days, now, last_end)
            except MapError as exc:
                got = [exc] * len(group)
            for i, g in zip(idx, got):
                out[i] = g
        return out

    def _group(self, qs: list[Query], days: list, now: int, last_end: int
               ) -> list[dict | MapError]:
        """Stamps of one clock: the live fits where they fall after every closed day, else the
        newest day that places them in its span, else the live fits."""
        dev, clk = qs[0].device, qs[0].clock
        self._known(dev, clk, days)
        live = self._live(qs[0])
        res: list[dict | MapError | None] = [None] * len(qs)
        if live is not None and live[1] or self._day_counter(dev, clk, days):
            for k, q in enumerate(qs):
                if q.iso:
                    res[k] = MapError(f"{dev} {clk} is a counter: give its value_ns (since its "
                                      f"zero), not a wall stamp")
        if live is not None:
            _fill(qs, res, live, now, after=last_end)
        self._from_days(qs, res, days, now)
        if live is not None:
            _fill(qs, res, live, now)
        return [r if r is not None else MapError(
            f"{dev} {clk}: no day folder places this stamp in its span and no live fit of the "
            f"clock is there to map it") for r in res]

    def _from_days(self, qs: list[Query], res: list, days: list, now: int) -> None:
        """The stamps not yet answered that a day folder places in its span, newest day first."""
        dev, clk = qs[0].device, qs[0].clock
        v = np.fromiter((q.value_ns for q in qs), dtype=np.int64, count=len(qs))
        for path in reversed(days):
            mask = near_mask(Path(path), dev, clk, v)
            todo = [k for k in np.flatnonzero(mask).tolist() if res[k] is None]
            if todo:
                for k, got in zip(todo, self._day([qs[k] for k in todo], Path(path), now)):
                    res[k] = got

    def _known(self, dev: str, clk: str, days: list) -> None:
        """UnknownDevice unless the live state or a closed day knows the device and clock."""
        devices: dict[str, set] = {k: set(v) for k, v in self.known().items()}
        for path in days:
            try:
                for d, c in day_index(Path(path))[2]:
                    devices.setdefault(d, set()).add(c)
            except (OSError, ValueError, KeyError, TypeError):
                continue
        if dev not in devices:
            raise UnknownDevice(f"device {dev!r} is not watched (known: "
                                f"{', '.join(sorted(devices)[:20]) or 'none'})")
        if clk not in devices[dev]:
            raise UnknownDevice(f"{dev} has no clock {clk!r} (it has "
                                f"{', '.join(sorted(devices[dev])) or 'none yet'})")

    @staticmethod
    def _day_counter(dev: str, clk: str, days: list) -> bool:
        for path in reversed(days):
            try:
                got = day_counters(Path(path)).get((dev, clk))
            except (OSError, ValueError):
                continue
            if got is not None:
                return got
        return False

    def _day(self, qs: list[Query], path: Path, now: int) -> list[dict | None]:
        """The day's answers, None for a stamp it does not place inside its span."""
        try:
            run, cal = self.fits.of(path)
        except (OSError, ValueError):       # saferead.FileFault is a ValueError
            return [None] * len(qs)
        cals = cal.clock(qs[0].device, qs[0].clock)
        if not cals:
            return [None] * len(qs)
        counter = bool(cal.clocks_of(qs[0].device)[qs[0].clock].meta.get("counter"))
        lo, hi = min(c.span[0] for c in cals), max(c.span[1] for c in cals)
        got = answers(qs, cals, str(path), max(now, hi), counter)
        return [a if a["lo_ns"] is not None and lo <= a["lo_ns"] and a["hi_ns"] <= hi else None
                for a in got]

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


def _fill(qs: list[Query], res: list, live: tuple, now: int, after: int | None = None) -> None:
    """The stamps not yet answered, mapped through the live fits (`live`: calibrations and
    whether the clock is a counter); with `after`, only the answers that fall after it."""
    todo = [k for k in range(len(qs)) if res[k] is None]
    if not todo:
        return
    for k, a in zip(todo, answers([qs[k] for k in todo], live[0], "live", now, live[1])):
        if after is None or a["lo_ns"] is not None and a["lo_ns"] > after:
            res[k] = a
