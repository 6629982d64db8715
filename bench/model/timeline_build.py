"""The timeline of a run folder: its device events, stimuli and clock breaks, and any log files
of the rack's planes, as Entries in reference time (built here, ordered by
bench/analysis/timeline_order.py, written by bench/output/timeline_write.py; the command is
bench/commands/timeline.py)."""
from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.timeline_map import (
    PRESYNC_BEFORE_NS,
    STATUS,
    Mapped,
    SegmentWindow,
    calibrations,
    describe,
    map_stamps,
)
from bench.analysis.timeline_order import Entry, order
from bench.logs.json_formats import K8S_FIELDS, REDFISH_FIELDS
from bench.logs.logfile import LogError
from bench.logs.logparse import parse_path
from bench.logs.logsources import Stamper, line_source, stamping_clock
from bench.logs.logstamps import (
    ISO,
    KINDS,
    NO_ORDER,
    NS,
    UNPARSED_KEEP,
    Context,
    ParsedLog,
    Stamps,
    iso_stamp,
    local_to_ns,
)
from bench.model.narrow import give_back
from bench.model.run_statuses import RowStatus
from bench.model.rundata import Run, Samples, bound_from_manifest, in_int64
from bench.model.stamps import log_of
from bench.model.summary import ClockResult, device_meta, fit_clocks
from bench.model.timeline_table import EntryTable, LogTexts, Timeline, device_times
from bench.units import fmt_ns

Fits = dict[str, dict[str, ClockResult]]   # per device, per clock, its fit
OBSERVED_BOUND = re.compile(r"in \((\d+), (\d+)\] ns")


@dataclass
class Calibrated:
    """The runs that calibrate a timeline: per run, its fits of every device clock."""
    runs: list[tuple[str, Run, Fits]]      # (run id, Run, {device: {clock: ClockResult}})

    @classmethod
    def of(cls, runs: Iterable[Run]) -> Calibrated:
        out = []
        for run in runs:
            unc = bound_from_manifest(run.manifest)
            fits = {n: fit_clocks(run.samples(n), device_meta(run.manifest.raw, n), unc)
                    for n in run.devices}
            out.append((run.run_id, run, fits))
        return cls(out)

    def clock(self, device: str, clock: str) -> list[SegmentWindow]:
        return calibrations([(rid, fits.get(device, {}).get(clock),
                              device_meta(run.manifest.raw, device))
                             for rid, run, fits in self.runs if clock in fits.get(device, {})])

    def clocks_of(self, device: str) -> dict[str, ClockResult]:
        out: dict[str, ClockResult] = {}
        for _, _, fits in self.runs:
            for c, r in fits.get(device, {}).items():
                out.setdefault(c, r)
        return out

    @property
    def devices(self) -> list[str]:
        return sorted({d for _, _, fits in self.runs for d in fits})


def _entries(device: str, plane: str, labels: list[str], raws: list[str], m: Mapped,
             vals: npt.NDArray[np.int64], qs: npt.NDArray[np.int64], basis: str = "stamp",
             clip_hi: npt.NDArray[np.int64] | None = None, key: str = "") -> list[Entry]:
    out = []
    for i in range(len(m)):
        st = m.status_of(i)
        if st in ("presync", "unplaceable"):
            continue
        hi = int(m.hi_ns[i]) if clip_hi is None else min(int(m.hi_ns[i]), int(clip_hi[i]))
        ck = None if st == "ambiguous" else f"{device}/{key}/{m.calibration_of(i)}"
        out.append(Entry(device, plane, labels[i], int(m.lo_ns[i]), hi, basis, ck, int(vals[i]),
                         int(qs[i]), raws[i], m.calibration_of(i), st, int(m.distance_ns[i])))
    return out


def device_value_text(value_ns: int, counter: bool, res_ns: int = 0) -> str:
    """A device's stamp as it claimed it: a wall time in UTC as the device gave it, or a
    counter's reading to its resolution (0: unknown, to the ns)."""
    if counter:
        from bench.model.timeline_table import decimals_of
        return f"{value_ns / NS:.{int(decimals_of([res_ns])[0])}f} s (counter)"
    from datetime import datetime
    s, f = divmod(value_ns, NS)
    return datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") + \
        (f".{f:09d}".rstrip("0") if f else "") + "Z"


def run_entries(run: Run, cal: Calibrated) -> tuple[list[Entry], list[dict[str, Any]]]:
    """Stimuli, device log events and clock breaks of a run folder, and the events that could
    not be placed (pre-sync, a time the clock never showed) with why."""
    out: list[Entry] = []
    unplaced: list[dict[str, Any]] = []
    fits = next(f for rid, r, f in cal.runs if r is run)
    for name in run.devices:
        smp = run.samples(name)
        plane = run.manifest.device(name).plane
        by_clock = _device_rows(smp, name, plane, fits, out)
        for (clock, _), rows in by_clock.items():
            _stamped_events(smp, name, plane, clock, rows, cal, fits, out, unplaced)
        out += _breaks(name, plane, fits)
    return out, unplaced


def _device_rows(smp: Samples, name: str, plane: str, fits: Fits,
                 out: list[Entry]) -> dict[tuple[str, str], list[int]]:
    """A device's stimuli and observed events into `out`; its stamped events by (clock, log)."""
    by_clock: dict[tuple[str, str], list[int]] = {}
    for i in range(len(smp)):
        if smp.status[i] != RowStatus.OK:
            continue
        s, e = int(smp.s_ns[i]), int(smp.e_ns[i])
        if smp.kind[i] == "stimulus":
            out.append(Entry(name, plane, f"stimulus {smp.clock[i]}", s, e, "reference"))
        elif smp.kind[i] == "event":
            if smp.has_value[i] and smp.clock[i] in fits.get(name, {}):
                # one order per log (a trap stream and an event log are two)
                by_clock.setdefault((smp.clock[i], log_of(smp.raw[i])), []).append(i)
                continue
            b = OBSERVED_BOUND.search(smp.raw[i])
            lo = int(b.group(1)) + 1 if b else s   # a latched flag: set after the last poll
            out.append(Entry(name, plane, f"seen: {smp.raw[i]}", lo, e, "observed"))
    return by_clock


def _stamped_events(smp: Samples, name: str, plane: str, clock: str, rows: list[int],
                    cal: Calibrated, fits: Fits, out: list[Entry],
                    unplaced: list[dict[str, Any]]) -> None:
    """A device's events stamped by one clock, mapped into `out` (or `unplaced`, with why)."""
    cals = cal.clock(name, clock)
    counter = bool(fits[name][clock].meta.get("counter"))
    vals = smp.value_ns[rows]
    qs = smp.resolution_ns[rows]
    # the run's own events are few: each through the segment's proven bound (one unseen break
    # inside it), never its line alone, which such a break puts off by up to its size
    m = map_stamps(cals, vals, qs, smp.seq[rows], wall=not counter, not_after_ns=smp.e_ns[rows],
                   proven=True)
    raws = [device_value_text(int(v), counter, int(q)) for v, q in zip(vals, qs)]
    out += _entries(name, plane, [smp.raw[i] for i in rows], raws, m, vals, qs,
                    clip_hi=smp.e_ns[rows], key=clock)
    unplaced += [{"source": name, "line": int(smp.seq[rows[i]]), "raw": raws[i],
                  "label": smp.raw[rows[i]][:160], "why": describe(m, i)}
                 for i in range(len(m)) if m.status_of(i) in ("presync", "unplaceable")]


def _breaks(name: str, plane: str, fits: Fits) -> list[Entry]:
    out = []
    for clock, r in fits.get(name, {}).items():
        for b in (r.fit.breaks if r.fit else []):
            size = f" of {fmt_ns(b.size_ns.point)}" if b.size_ns is not None else ""
            out.append(Entry(name, plane, f"{clock} {b.kind}{size}", int(b.after_ns),
                             int(b.before_ns), "break"))
    return out


OPTIONS = {"format": "the log's format (default: detected)",
           "tz": "IANA zone of zone-less stamps (default: the device's log_timezone, timezone or "
                 "sel_timezone in the rack file; none: zone-less stamps are refused)",
           "year": "year of year-less stamps (default: nearest the run)",
           "order": "id | file | none: the log's own order, used to decide a stamp's segment",
           "boot": "dmesg: the boot instant in the host's wall time (ISO 8601)",
           "stamp": "wall | monotonic (journald, snmptrapd) | relay (syslog re-stamped by a "
                    "relay: give receiver=)",
           "field": "the stamp field: Kubernetes eventTime | creationTimestamp | firstTimestamp "
                    "| lastTimestamp; Redfish Created | EventTimestamp (default: from the line)",
           "receiver": "DEVICE[:CLOCK] whose clock stamped received lines (snmptrapd's host, a "
                       "syslog relay)",
           "presync_before": "a wall stamp before this date was written before the clock was set"}
ZONE_KEYS = ("log_timezone", "timezone", "sel_timezone")   # a device's zone in the rack file


def parse_spec(spec: str) -> tuple[str, str, Path, dict[str, str]]:
    target, eq, rest = spec.partition("=")
    if not eq or not rest:
        raise LogError(f"{spec!r}: expected DEVICE[:CLOCK]=FILE[,key=value...]")
    path, *opts = rest.split(",")
    kv: dict[str, str] = {}
    for o in opts:
        k, e, v = o.partition("=")
        if not e:
            raise LogError(f"{spec!r}: option {o!r} is not key=value")
        kv[k.strip()] = v.strip()
    if set(kv) - set(OPTIONS):
        raise LogError(f"{spec!r}: unknown option(s) {sorted(set(kv) - set(OPTIONS))} "
                       f"(known: {', '.join(OPTIONS)})")
    device, _, clock = target.partition(":")
    return device, clock, Path(path), kv


def _wall_ns(text: str, what: str, zone: str = "") -> int:
    """An option's date and time: with its own offset, else in the log's zone (none: refused)."""
    m = ISO.fullmatch(text)
    try:
        v = iso_stamp(m, Context(zone=zone))[0] if m else None
    except ValueError:
        v = None
    if v is None or not in_int64(v):
        raise LogError(f"{what}={text!r}: expected an ISO 8601 date and time (years 1678-2261)"
                       + ("" if zone or (m and m.group(8)) else
                          " with its offset (Z, +01:00), or a tz= for the log"))
    return v


def _choice(kv: dict[str, str], key: str, allowed: tuple[str, ...], default: str) -> str:
    v = kv.get(key, default)
    if v not in allowed:
        raise LogError(f"{key}={v!r}: expected one of {', '.join(allowed)}")
    return v


def log_context(kv: dict[str, str], run: Run, device: str) -> Context:
    """The Context a log is read with, every option checked (one LogError naming it)."""
    year = _year(kv)
    zone, src = _zone(kv, run.manifest.inventory.device(device))
    near = run.manifest.started_ns
    ctx = Context(zone=zone, year=year, near_ns=int(near) if near and in_int64(near) else None,
                  boot_ns=_wall_ns(kv["boot"], "boot", zone) if kv.get("boot") else None,
                  stamp=_choice(kv, "stamp", ("auto", "wall", "monotonic", "relay"), "auto"),
                  field=_choice(kv, "field", ("auto", *K8S_FIELDS, *REDFISH_FIELDS), "auto"),
                  zone_from=src)
    if zone:
        local_to_ns(datetime(2000, 1, 1), ctx, 0)   # an unknown zone: said here, once
    return ctx


def _year(kv: dict[str, str]) -> int | None:
    """The `year=` option (for stamps that omit it), checked; None where not given."""
    if kv.get("year") is None:
        return None
    try:
        year = int(kv["year"])
    except ValueError:
        year = 0
    if not 1678 <= year <= 2261:
        raise LogError(f"year={kv['year']!r}: expected a year from 1678 to 2261")
    return year


def _zone(kv: dict[str, str], inv: dict[str, Any]) -> tuple[str, str]:
    """(zone, where it came from): the `tz=` option, else the rack file's zone key for the
    device; "" for none (or "unknown")."""
    zone, src = kv.get("tz", ""), "given"
    if not zone:
        key = next((k for k in ZONE_KEYS if isinstance(inv.get(k), str)), "")
        zone, src = (str(inv[key]), f"the rack file's {key}") if key else ("", "")
    if zone.lower() == "unknown":
        zone = ""
    return zone, src


def read_log(spec: str, run: Run, cal: Calibrated, defaults: dict[str, str], table: EntryTable,
             line_limit: int | None = None) -> dict[str, Any]:
    """A log file's entries into `table`, and its report: format, how it was known, which clock
    stamped which lines (bench.logs.logsources), assumptions, unparsed lines with their
    numbers, lines that could not be placed. LogError: this log is refused (which, and why),
    the others go on."""
    device, clock, path, kv = parse_spec(spec)
    kv = {**defaults, **kv}
    if device not in cal.devices:
        raise LogError(f"{spec!r}: no device {device!r} in the calibrating run(s) "
                       f"(devices: {', '.join(cal.devices)})")
    ctx = _with_clocks(log_context(kv, run, device), clock, cal.clocks_of(device))
    # its texts into files as they are read, then read again only as rows are written
    log: ParsedLog = parse_path(path, kv.get("format", "auto"), ctx, line_limit, spill=run.path)
    log.stamps.spill(run.path)
    give_back()
    report = _log_report(path, device, log)
    if not len(log.stamps):
        return report
    groups = _source_groups(log.stamps, log.format, ctx.stamp)
    found, refused = _stampers(groups, spec, device, clock, cal, kv.get("receiver", ""))
    if not found:
        raise LogError(refused[0][1])
    mapping = _Mapping(device, run.manifest.device(device).plane, LogTexts(log.stamps, path.name),
                       _choice(kv, "order", ("auto", "id", "file", "none"), "auto"),
                       _wall_ns(kv["presync_before"], "presync_before", ctx.zone)
                       if kv.get("presync_before") else PRESYNC_BEFORE_NS)
    for s, rows in found:
        mapping.group(s, rows, cal, table, report)
    _refused_lines(report, log.stamps, refused)
    log.stamps.keep_texts()       # the rows need only the lines' numbers and texts from here
    give_back()
    return report


def _with_clocks(ctx: Context, clock: str, clocks: dict[str, ClockResult]) -> Context:
    """The context with the clocks that may have stamped the log (the one named, else all of
    the device's); an "auto" stamp of a named clock is its kind (a counter's is monotonic)."""
    if ctx.stamp == "auto" and clock and clock in clocks:
        ctx = replace(ctx, stamp="monotonic" if clocks[clock].meta.get("counter") else "wall")
    return replace(ctx, clocks=(clock,) if clock else tuple(clocks))


def _stampers(groups: dict[tuple[str, str, str], npt.NDArray[np.int64]], spec: str, device: str,
              clock: str, cal: Calibrated, receiver: str
              ) -> tuple[list[tuple[Stamper, npt.NDArray[np.int64]]],
                         list[tuple[str, str, npt.NDArray[np.int64]]]]:
    """Each group's stamping clock with its rows, and the groups no fitted clock can have
    stamped as (field, why, rows)."""
    found: list[tuple[Stamper, npt.NDArray[np.int64]]] = []
    refused: list[tuple[str, str, npt.NDArray[np.int64]]] = []
    for (role, field, kind), rows in groups.items():
        try:
            s = stamping_clock(role, field, device, clock, kind, spec, cal.clocks_of, receiver)
            if not cal.clock(s.device, s.clock):
                raise LogError(f"{s.device}: clock {s.clock!r} has no fit in the calibrating "
                               f"run(s)")
            found.append((s, rows))
        except LogError as exc:
            refused.append((field, str(exc), rows))
    return found, refused


def _source_groups(st: Stamps, fmt: str, stamp: str
                   ) -> dict[tuple[str, str, str], npt.NDArray[np.int64]]:
    """A log's lines by (role, field, kind): each group stamped by one clock."""
    code = np.frombuffer(st.src, np.uint8).astype(np.int64) * 2 + \
        np.frombuffer(st.kind, np.uint8)
    out = {}
    for c in np.unique(code).tolist():
        kind = KINDS[c % 2]
        role, field = line_source(fmt, kind, st.src_names[c // 2], stamp)
        out[(role, field, kind)] = np.flatnonzero(code == c)
    return out


def _refused_lines(report: dict[str, Any], st: Stamps,
                   refused: list[tuple[str, str, npt.NDArray[np.int64]]]) -> None:
    """Lines no clock of the run can have stamped: counted, the first listed with why."""
    for field, why, rows in refused:
        report["stamped_by"].append({"field": field, "lines": len(rows), "refused": why})
        report["unplaced_count"] += len(rows)
        room = max(0, UNPARSED_KEEP - len(report["unplaced"]))
        report["unplaced"] += [{"line": st.line[i], "raw": st.raw[i], "device_time": "",
                                "why": why} for i in rows[:room].tolist()]
    report["unplaced"].sort(key=lambda u: u["line"])


@dataclass
class _Mapping:
    """What mapping a log's groups of lines shares: the device, its plane, the log's texts, the
    order option and the pre-sync date."""
    device: str
    plane: str
    texts: LogTexts
    how: str
    presync: int

    def group(self, s: Stamper, rows: npt.NDArray[np.int64], cal: Calibrated, table: EntryTable,
              report: dict[str, Any]) -> None:
        """One group's lines mapped through the clock that stamped them, into `table`."""
        st = self.texts.st
        cals = cal.clock(s.device, s.clock)
        kind = KINDS[st.kind[int(rows[0])]]
        vals, qs = _values(st, rows, cals, s.clock, report)
        key, report["order"] = _order_key(st, rows, self.how)
        read_at = max(time.time_ns(), max(c.span[1] for c in cals))
        m = map_stamps(cals, vals, qs, key, wall=kind != "monotonic", not_after_ns=read_at,
                       presync_before_ns=self.presync)
        report["notes"] += m.notes
        n = table.add_mapped(self.device, self.plane, self.texts, m, vals, qs, s.clock, rows,
                             s.device)
        report["mapped"] += n
        report["stamped_by"].append({"field": s.field, "clock": f"{s.device}/{s.clock}",
                                     "role": s.role, "lines": len(rows), "says": s.says()})
        _unplaced(report, st, rows, m, vals, kind)
        for k, name in enumerate(STATUS):
            c = int(np.sum(m.status == k))
            if c:
                report["status"][name] = report["status"].get(name, 0) + c


def _values(st: Stamps, rows: npt.NDArray[np.int64], cals: list[SegmentWindow], clock: str,
            report: dict[str, Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A group's stamps and resolutions as columns, each at least its clock's tick (said)."""
    vals = _column(st.value, rows)
    qs = np.maximum(_column(st.res, rows), 1)
    fit_q = max(int(c.segment.resolution_ns or 1) for c in cals)
    if np.any(qs < fit_q):   # a stamp finer than the clock it comes from: the clock's tick holds
        np.maximum(qs, fit_q, out=qs)
        report["notes"].append(f"stamps finer than {clock}'s {fit_q} ns tick read at that tick")
    return vals, qs


def _column(col: Any, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """A log's int64 column at `rows` (sorted, distinct): where they are all its rows, the
    column itself, not a copy (a million lines: 8 MB less each)."""
    a = np.frombuffer(col, dtype=np.int64)
    return a if len(rows) == len(a) else a[rows]


def _log_report(path: Path, device: str, log: ParsedLog) -> dict[str, Any]:
    """A log's report before its stamps are mapped."""
    report: dict[str, Any] = {
        "file": str(path), "device": device, "format": log.format, "how": log.detected,
        "lines": log.lines, "mapped": 0, "notes": list(log.notes), "stamped_by": [],
        "unparsed_count": log.unparsed_count, "lines_over_limit": log.over.over,
        "line_limit_bytes": log.over.limit,
        "unparsed": [{"line": n, "text": t, "why": w} for n, t, w in log.unparsed],
        "unplaced": [], "unplaced_count": 0, "status": {}}
    if log.over.note():
        report["notes"].append(log.over.note())
    return report


def _unplaced(report: dict[str, Any], st: Stamps, rows: npt.NDArray[np.int64], m: Mapped,
              vals: npt.NDArray[np.int64], kind: str) -> None:
    """A group's lines that could not be placed, counted, the first UNPARSED_KEEP listed."""
    bad = np.flatnonzero(m.status >= STATUS.index("presync"))
    report["unplaced_count"] += len(bad)
    shown = bad[:max(0, UNPARSED_KEEP - len(report["unplaced"]))]
    times = device_times(vals[shown], np.ones(len(shown), bool),
                         np.frombuffer(st.res, dtype=np.int64)[rows[shown]],
                         [kind == "wall"] * len(shown))
    report["unplaced"] += [{"line": st.line[i], "raw": st.raw[i], "device_time": t,
                            "why": describe(m, j) + _zone_said(st, i)}
                           for j, i, t in zip(shown.tolist(), rows[shown].tolist(), times)]


def _zone_said(st: Stamps, i: int) -> str:
    """For a line not placed: the zone its zone-less stamp was read in, if it was."""
    zn = next((n for n in st.note_sets[st.note_id[i]] if n.startswith("zone: ")), "")
    return (f" (its zone-less stamp was read as local time in {zn[6:]}: if the log is in "
            f"another zone, give tz=)") if zn else ""


def _order_key(st: Stamps, rows: npt.NDArray[np.int64], how: str
               ) -> tuple[npt.NDArray[np.int64] | None, str]:
    """The log's own order to decide segments by (ids where every line has one, else the file's
    line order, or none), and which it is."""
    ids = _column(st.order, rows)
    has_id = ids != NO_ORDER
    if how == "auto":
        how = "id" if has_id.any() else "file"
    if how == "id" and has_id.all():
        return ids, "id"
    if how in ("file", "id"):
        return _column(st.line, rows), "file"
    return None, "none"


def build(run: Run, logs: Sequence[str] = (), widen_latency: bool = False,
          calibration_runs: Sequence[Run] = (), defaults: dict[str, str] | None = None,
          line_limit: int | None = None) -> Timeline:
    """The timeline of a run and its logs, ordered (bench.model.timeline_table.Timeline): each
    log's report, or its error (a refused log is said and the rest goes on)."""
    cal = Calibrated.of([run, *calibration_runs])
    entries, unplaced = run_entries(run, cal)
    table = EntryTable()
    table.add_entries(entries)
    reports: list[dict[str, Any]] = []
    for spec in logs:
        try:
            reports.append(read_log(spec, run, cal, defaults or {}, table, line_limit))
        except LogError as exc:
            reports.append({"spec": spec, "error": str(exc)})
    return Timeline(table, reports, unplaced, _logged_latency(run) if widen_latency else {})


def _logged_latency(run: Run) -> dict[str, tuple[float, float]]:
    """Each device's union of its logged-latency bounds (lo, hi ns), where it has any."""
    lat: dict[str, tuple[float, float]] = {}      # Bound's lo/hi (ns)
    for name, d in run.summary.devices.items():
        b = [x.logged_ns for x in d.latency.values() if x.logged_ns is not None]
        if b:
            lat[name] = (min(x.lo for x in b), max(x.hi for x in b))
    return lat


def build_timeline(run: Run, logs: Sequence[str] = (),
                   widen_latency: bool = False) -> list[dict[str, Any]]:
    """The ordered timeline of a run folder as bench.analysis.timeline_order.order gives it (every
    entry's full unordered list), with any log files (then the lists of Timeline.rows)."""
    if not logs and not widen_latency:
        return order(run_entries(run, Calibrated.of([run]))[0])
    tl = build(run, logs, widen_latency)
    return tl.rows(0, len(tl))
