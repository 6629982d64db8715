"""The timeline of a run folder: its device events, stimuli and clock breaks, and any log files
of the rack's planes, as Entries in reference time (built here, ordered by
bench/analysis/timeline.py, shown by bench/output/timeline.py; the command is bench/timeline_cli.py)."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.model.rundata import bound_from_manifest
from bench.model.logformats import ISO, NS, Context, ParsedLog, iso_stamp, parse_log
from bench.model.stamps import log_of
from bench.model.statuses import RowStatus
from bench.model.summary import device_meta, fit_clocks
from bench.analysis.timeline import Entry, order, widen
from bench.analysis.timeline_map import PRESYNC_BEFORE_NS, STATUS, calibrations, describe, map_stamps

OBSERVED_BOUND = re.compile(r"in \((\d+), (\d+)\] ns")


@dataclass
class Calibrated:
    """The runs that calibrate a timeline: per run, its fits of every device clock."""
    runs: list            # [(run id, Run, {device: {clock: ClockResult}})]

    @classmethod
    def of(cls, runs) -> "Calibrated":
        out = []
        for run in runs:
            unc = bound_from_manifest(run.manifest)
            fits = {n: fit_clocks(run.samples(n), device_meta(run.manifest.raw, n), unc)
                    for n in run.devices}
            out.append((run.run_id, run, fits))
        return cls(out)

    def clock(self, device: str, clock: str) -> list:
        return calibrations([(rid, fits.get(device, {}).get(clock),
                              device_meta(run.manifest.raw, device))
                             for rid, run, fits in self.runs if clock in fits.get(device, {})])

    def clocks_of(self, device: str) -> dict:
        out = {}
        for _, _, fits in self.runs:
            for c, r in fits.get(device, {}).items():
                out.setdefault(c, r)
        return out

    @property
    def devices(self) -> list:
        return sorted({d for _, _, fits in self.runs for d in fits})


def _entries(device, plane, labels, raws, m, vals, qs, basis="stamp", clip_hi=None, key=""):
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


def device_value_text(value_ns: int, counter: bool) -> str:
    """A device's stamp as it claimed it: a wall time in UTC as the device gave it, or a
    counter's reading."""
    if counter:
        return f"{value_ns / NS:.9g} s (counter)"
    from datetime import datetime, timezone
    s, f = divmod(value_ns, NS)
    return datetime.fromtimestamp(s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + \
        (f".{f:09d}".rstrip("0") if f else "") + "Z"


def run_entries(run, cal: Calibrated) -> tuple[list[Entry], list[dict]]:
    """Stimuli, device log events and clock breaks of a run folder, and the events that could
    not be placed (pre-sync, a time the clock never showed) with why."""
    out, unplaced = [], []
    fits = next(f for rid, r, f in cal.runs if r is run)
    for name in run.devices:
        smp = run.samples(name)
        plane = run.manifest.device(name).plane
        by_clock: dict[tuple, list[int]] = {}
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
        for (clock, _), rows in by_clock.items():
            cals = cal.clock(name, clock)
            counter = bool(fits[name][clock].meta.get("counter"))
            vals = smp.value_ns[rows]
            qs = smp.resolution_ns[rows]
            m = map_stamps(cals, vals, qs, smp.seq[rows], wall=not counter,
                           not_after_ns=smp.e_ns[rows])
            raws = [device_value_text(int(v), counter) for v in vals]
            out += _entries(name, plane, [smp.raw[i] for i in rows], raws, m, vals, qs,
                            clip_hi=smp.e_ns[rows], key=clock)
            unplaced += [{"source": name, "line": int(smp.seq[rows[i]]), "raw": raws[i],
                          "label": smp.raw[rows[i]][:160], "why": describe(m, i)}
                         for i in range(len(m)) if m.status_of(i) in ("presync", "unplaceable")]
        for clock, r in fits.get(name, {}).items():
            for b in (r.fit.breaks if r.fit else []):
                from bench.units import fmt_ns
                size = f" of {fmt_ns(b.size_ns.point)}" if b.size_ns is not None else ""
                out.append(Entry(name, plane, f"{clock} {b.kind}{size}", int(b.after_ns),
                                 int(b.before_ns), "break"))
    return out, unplaced


def parse_spec(spec: str) -> tuple[str, str, Path, dict]:
    target, eq, rest = spec.partition("=")
    if not eq or not rest:
        raise SystemExit(f"{spec!r}: expected DEVICE[:CLOCK]=FILE[,key=value...]")
    path, *opts = rest.split(",")
    kv = {}
    for o in opts:
        k, e, v = o.partition("=")
        if not e:
            raise SystemExit(f"{spec!r}: option {o!r} is not key=value")
        kv[k.strip()] = v.strip()
    known = {"format", "tz", "year", "order", "boot", "stamp", "presync_before"}
    if set(kv) - known:
        raise SystemExit(f"{spec!r}: unknown option(s) {sorted(set(kv) - known)} "
                         f"(known: {', '.join(sorted(known))})")
    device, _, clock = target.partition(":")
    return device, clock, Path(path), kv


def _wall_ns(text: str, what: str) -> int:
    m = ISO.fullmatch(text)
    if not m:
        raise SystemExit(f"{what} {text!r}: expected an ISO 8601 date and time")
    return iso_stamp(m, Context())[0]


def read_log(spec: str, run, cal: Calibrated, defaults: dict) -> tuple[list[Entry], dict]:
    """A log file's entries, and its report: format, how it was known, assumptions, unparsed
    lines with their numbers, lines that could not be placed."""
    device, clock, path, kv = parse_spec(spec)
    kv = {**defaults, **kv}
    if device not in cal.devices:
        raise SystemExit(f"{spec!r}: no device {device!r} in the calibrating run(s) "
                         f"(devices: {', '.join(cal.devices)})")
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise SystemExit(f"log {path}: {exc.strerror or exc}") from None
    near = run.manifest.started_ns
    ctx = Context(zone=kv.get("tz", ""), year=int(kv["year"]) if kv.get("year") else None,
                  near_ns=int(near) if near else None,
                  boot_ns=_wall_ns(kv["boot"], "boot") if kv.get("boot") else None,
                  stamp=kv.get("stamp", "auto"))
    clocks = cal.clocks_of(device)
    if ctx.stamp == "auto" and clock and clock in clocks:
        ctx = Context(**{**ctx.__dict__, "stamp": "monotonic" if clocks[clock].meta.get("counter")
                         else "wall"})
    log: ParsedLog = parse_log(text, kv.get("format", "auto"), ctx)
    kinds = {s.kind for s in log.stamps}
    report = {"file": str(path), "device": device, "format": log.format, "how": log.detected,
              "lines": log.lines, "mapped": 0, "notes": list(log.notes),
              "unparsed": [{"line": n, "text": t[:200], "why": w} for n, t, w in log.unparsed],
              "unplaced": []}
    if not log.stamps:
        return [], report
    kind = kinds.pop() if len(kinds) == 1 else "wall"
    want_counter = kind == "monotonic"
    if not clock:
        clock = next((c for c, r in clocks.items() if bool(r.meta.get("counter")) == want_counter),
                     "")
        if not clock:
            raise SystemExit(f"{spec!r}: the log's stamps are {kind} but {device} has no "
                             f"{'counter' if want_counter else 'wall'} clock "
                             f"(clocks: {', '.join(clocks) or 'none'})")
    if clock not in clocks:
        raise SystemExit(f"{spec!r}: {device} has no clock {clock!r} "
                         f"(clocks: {', '.join(clocks) or 'none'})")
    if bool(clocks[clock].meta.get("counter")) != want_counter:
        raise SystemExit(f"{spec!r}: the log's stamps are {kind} "
                         f"({'since boot' if want_counter else 'wall-clock dates'}) but clock "
                         f"{clock!r} is {'a counter' if not want_counter else 'a wall clock'}: "
                         f"give a matching clock (or boot=... for a kernel log)")
    cals = cal.clock(device, clock)
    if not cals:
        raise SystemExit(f"{device}: clock {clock!r} has no fit in the calibrating run(s)")
    st = log.stamps
    vals = np.array([s.value_ns for s in st], dtype=np.int64)
    qs = np.array([max(s.resolution_ns, 1) for s in st], dtype=np.int64)
    fit_q = max(int(c.segment.resolution_ns or 1) for c in cals)
    if np.any(qs < fit_q):   # a stamp finer than the clock it comes from: the clock's tick holds
        qs = np.maximum(qs, fit_q)
        report["notes"].append(f"stamps finer than {clock}'s {fit_q} ns tick read at that tick")
    how = kv.get("order", "id" if any(s.order is not None for s in st) else "file")
    if how == "id" and all(s.order is not None for s in st):
        key = np.array([s.order for s in st], dtype=np.int64)
    elif how in ("file", "id"):
        key = np.array([s.line for s in st], dtype=np.int64)
        how = "file"
    else:
        key, how = None, "none"
    report["order"] = how
    presync = _wall_ns(kv["presync_before"], "presync_before") if kv.get("presync_before") \
        else PRESYNC_BEFORE_NS
    read_at = max(time.time_ns(), max(c.span[1] for c in cals))
    m = map_stamps(cals, vals, qs, key, wall=not want_counter, not_after_ns=read_at,
                   presync_before_ns=presync)
    report["notes"] += m.notes
    plane = run.manifest.device(device).plane
    labels = [f"{path.name}:{s.line} {s.text}"[:200] for s in st]
    entries = _entries(device, plane, labels, [s.raw for s in st], m, vals, qs, key=clock)
    report["mapped"] = len(entries)
    report["unplaced"] = [{"line": st[i].line, "raw": st[i].raw, "why": describe(m, i)}
                          for i in range(len(m)) if m.status_of(i) in ("presync", "unplaceable")]
    report["status"] = {s: int(np.sum(m.status == k)) for k, s in enumerate(STATUS)
                        if np.any(m.status == k)}
    return entries, report


def build(run, logs=(), widen_latency: bool = False, calibration_runs=(),
          defaults: dict | None = None) -> tuple[list[dict], list[dict], list[dict]]:
    """(ordered rows as bench.analysis.timeline.order gives them, log reports, unplaced run events)."""
    cal = Calibrated.of([run, *calibration_runs])
    entries, unplaced = run_entries(run, cal)
    reports = []
    for spec in logs:
        ents, rep = read_log(spec, run, cal, defaults or {})
        entries += ents
        reports.append(rep)
    if widen_latency:
        lat = {}
        for name, d in run.summary.devices.items():
            b = [x.logged_ns for x in d.latency.values() if x.logged_ns is not None]
            if b:
                lat[name] = (min(x.lo for x in b), max(x.hi for x in b))
        entries = [widen(en, *lat[en.source]) if en.basis == "stamp" and en.source in lat else en
                   for en in entries]
    return order(entries), reports, unplaced


def build_timeline(run, logs=(), widen_latency: bool = False) -> list[dict]:
    """The ordered timeline of a run folder (see bench.analysis.timeline.order), with any log files."""
    return build(run, logs, widen_latency)[0]
