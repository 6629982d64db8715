"""The timeline written out: a terminal table, timeline.json and timeline.csv (every entry, its
raw stamp beside its interval and the calibration it came from), OpenTelemetry-style log
records (timeline.otel.json: the device's raw time as the record time, the interval bounds,
calibration and order as attributes; the OTLP/JSON shape of `resourceLogs`), and timeline.html
(one lane per plane, the user's own log lines marked). Every file is written a chunk of rows at
a time (bench.model.timeline_table.Timeline): memory does not grow with the number of entries."""
from __future__ import annotations

import csv
import json
from json.encoder import encode_basestring as js
from pathlib import Path

import numpy as np

from bench.model.timeline_table import BASES, STATUSES
from bench.units import fmt_ns

FIELDS = ("index", "block", "source", "plane", "label", "lo_ns", "hi_ns", "basis", "raw",
          "calibration", "status", "distance_ns", "unordered_count", "unordered_with",
          "device_time", "log")
CHUNK = 65_536
UNIX_AFTER_NS = 946_684_800 * 10**9     # a stamp after 2000 is a Unix time; a counter's is not
HTML_ROWS = 2000


def utc_text(ns, unit: str = "us") -> np.ndarray:
    """Unix ns (array) as ISO 8601 UTC text to `unit`."""
    a = np.asarray(ns, dtype=np.int64).astype("datetime64[ns]")
    return np.char.add(np.datetime_as_string(a, unit=unit), "Z")


def device_times(stamp: np.ndarray, has: np.ndarray, res: np.ndarray) -> list[str]:
    """Each stamp as a time: a wall stamp in UTC to its resolution, a counter's in seconds."""
    out = np.full(len(stamp), "", dtype=object)
    wall = has & (stamp > UNIX_AFTER_NS)
    for unit, lo_q in (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 0)):
        pick = wall & (res >= lo_q)
        wall &= ~pick
        if pick.any():
            out[pick] = utc_text(stamp[pick], unit)
    cnt = has & (stamp <= UNIX_AFTER_NS)
    if cnt.any():
        out[cnt] = [f"{v / 1e9:.9f} s (counter)" for v in stamp[cnt].tolist()]
    return out.tolist()


def records(tl, idx: np.ndarray):
    """(index, block, source, plane, label, lo, hi, basis, raw, calibration, status, distance,
    unordered count, unordered list, device time, log, raw_ns) of rows `idx`, a chunk at a time."""
    c, t = tl.c, tl.table
    for a in range(0, len(idx), CHUNK):
        ix = idx[a:a + CHUNK]
        lo, hi, dist, cnt, blk = (x[ix].tolist() for x in (c["lo"], c["hi"], c["dist"], tl.count,
                                                            tl.block))
        basis, status, cal, dev = (x[ix].tolist() for x in (c["basis"], c["status"], c["cal"],
                                                            c["dev"]))
        src, k = c["src"][ix].tolist(), c["idx"][ix].tolist()
        st, has = c["stamp"][ix], c["has_stamp"][ix]
        dtime = device_times(st, has, c["res"][ix])
        raw_ns = np.where(has & (c["basis"][ix] == 0) & (st > UNIX_AFTER_NS), st, -1).tolist()
        for j, i in enumerate(ix.tolist()):
            s = t.sources[src[j]]
            name, plane = t.devices[dev[j]]
            b = BASES[basis[j]]
            yield (i, blk[j], name, plane, s.label(k[j]), lo[j], hi[j], b, s.raw(k[j]),
                   t.cal_names[cal[j]], STATUSES[status[j]] if b in ("stamp", "event")
                   else "proven", dist[j], cnt[j], tl.unordered_with(i), dtime[j], s.log,
                   raw_ns[j])


def print_table(tl, t0: int, limit: int = 200) -> None:
    for rep in tl.reports:
        _print_report(rep)
    for u in tl.unplaced:
        print(f"{u['source']} event {u['line']} ({u['raw']}): {u['why']}")
    print(f"{'#':>5}  {'from (UTC)':<27} {'from (s)':>11} {'to (s)':>11} {'width':>9}  "
          f"{'status':<12} {'device':<10} {'device time':<27} {'order':<16} what")
    n = min(limit, len(tl))
    utc = utc_text(tl.c["lo"][:n]).tolist()
    for r, u in zip(records(tl, np.arange(n)), utc):
        i, _, src, _, label, lo, hi, basis, _, _, status, _, cnt, _, dtime, log, _ = r
        ordtxt = "proven" if not cnt else f"unordered with {cnt}"
        st = status if basis in ("stamp", "event") else basis
        mark = "*" if log else " "
        print(f"{i:>5}{mark} {u:<27} {(lo - t0) / 1e9:>11.6f} {(hi - t0) / 1e9:>11.6f} "
              f"{fmt_ns(hi - lo):>9}  {st:<12} {src[:10]:<10} {dtime[:27]:<27} {ordtxt:<16} "
              f"{label[:60]}")
    if len(tl) > limit:
        print(f"... {len(tl) - limit} more entries (all in timeline.json and timeline.csv; "
              f"--rows N to print more)")
    if any(rep.get("mapped") for rep in tl.reports):
        print("* a line of your log files")
    print(f"{len(tl)} entries in {tl.blocks} proven-ordered blocks; {tl.unordered} entries "
          f"unordered against another")


def _print_report(rep: dict) -> None:
    if "error" in rep:
        return                 # said once on stderr by the command
    print(f"{rep['file']} -> {rep['device']}: {rep['format']} ({rep['how']}), "
          f"{rep['lines']} lines, {rep['mapped']} mapped, order: {rep.get('order', '-')}"
          + (f", {rep['status']}" if rep.get("status") else ""))
    for nt in rep["notes"]:
        print(f"  assumed: {nt}" if not nt.startswith("lines over") else f"  {nt}")
    if rep["unparsed_count"]:
        print(f"  {rep['unparsed_count']} lines not parsed:")
        for u in rep["unparsed"][:20]:
            print(f"    line {u['line']}: {u['why']}: {u['text'][:80]!r}")
        if rep["unparsed_count"] > 20:
            print(f"    ... {rep['unparsed_count'] - 20} more (the first "
                  f"{len(rep['unparsed'])} in timeline.json)")
    for u in rep["unplaced"][:20]:
        print(f"  line {u['line']} ({u['raw']}): {u['why']}")
    if rep["unplaced_count"] > 20:
        print(f"  ... {rep['unplaced_count'] - 20} more unplaced (the first "
              f"{len(rep['unplaced'])} in timeline.json)")


def _json_row(r) -> str:
    (i, blk, src, plane, label, lo, hi, basis, raw, cal, status, dist, cnt, un, dtime, log,
     _) = r
    return (f'{{"index": {i}, "block": {blk}, "source": {js(src)}, "plane": {js(plane)}, '
            f'"label": {js(label)}, "lo_ns": {lo}, "hi_ns": {hi}, "basis": "{basis}", '
            f'"raw": {js(raw)}, "calibration": {js(cal)}, "status": "{status}", '
            f'"distance_ns": {dist}, "unordered_count": {cnt}, "unordered_with": {un}, '
            f'"device_time": {js(dtime)}, "log": {js(log)}}}')


def write_json_and_csv(tl, json_path: Path, csv_path: Path) -> None:
    with open(json_path, "w", encoding="utf-8") as fj, \
            open(csv_path, "w", newline="", encoding="utf-8") as fc:
        fj.write('{"schema": 2, "logs": ' + json.dumps(tl.reports) + ', "unplaced": '
                 + json.dumps(tl.unplaced) + ', "entries": [\n')
        w = csv.writer(fc)
        w.writerow(FIELDS)
        sep = ""
        for r in records(tl, np.arange(len(tl))):
            fj.write(sep + _json_row(r))
            sep = ",\n"
            w.writerow(r[:13] + (" ".join(map(str, r[13])),) + r[14:16])
        fj.write("]}\n")


def _otel_record(r) -> str:
    """One OTLP/JSON log record: timeUnixNano is the device's own time as written (0 when it is
    not a Unix time), the reference interval an attribute."""
    (_, blk, _, plane, label, lo, hi, basis, raw, cal, status, dist, cnt, _, _, _, raw_ns) = r
    return (f'{{"timeUnixNano": "{max(raw_ns, 0)}", "body": {{"stringValue": {js(label)}}}, '
            f'"attributes": [{{"key": "rackclock.interval.lo_ns", "value": {{"intValue": "{lo}"}}}}, '
            f'{{"key": "rackclock.interval.hi_ns", "value": {{"intValue": "{hi}"}}}}, '
            f'{{"key": "rackclock.raw_timestamp", "value": {{"stringValue": {js(raw)}}}}}, '
            f'{{"key": "rackclock.calibration", "value": {{"stringValue": {js(cal)}}}}}, '
            f'{{"key": "rackclock.status", "value": {{"stringValue": "{status}"}}}}, '
            f'{{"key": "rackclock.basis", "value": {{"stringValue": "{basis}"}}}}, '
            f'{{"key": "rackclock.order.block", "value": {{"intValue": "{blk}"}}}}, '
            f'{{"key": "rackclock.order.unordered_count", "value": {{"intValue": "{cnt}"}}}}, '
            f'{{"key": "rackclock.distance_ns", "value": {{"intValue": "{dist}"}}}}, '
            f'{{"key": "rackclock.plane", "value": {{"stringValue": {js(plane)}}}}}]}}')


def write_otel(tl, path: Path) -> None:
    """OTLP/JSON `resourceLogs`, one resource per source, its records in timeline order."""
    dev = tl.c["dev"]
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"resourceLogs": [')
        first = True
        for d, (name, _) in enumerate(tl.table.devices):
            idx = np.flatnonzero(dev == d)
            if not len(idx):
                continue
            f.write("" if first else ",\n")
            first = False
            f.write('{"resource": {"attributes": [{"key": "service.name", "value": '
                    f'{{"stringValue": {js(name)}}}}}]}}, "scopeLogs": [{{"scope": {{"name": '
                    '"rackclock.timeline"}, "logRecords": [\n')
            sep = ""
            for r in records(tl, idx):
                f.write(sep + _otel_record(r))
                sep = ",\n"
            f.write("]}]}")
        f.write("]}\n")


def write_html(tl, path: Path, t0: int, limit: int = HTML_ROWS) -> None:
    from bench.output.timeline_page import timeline_html
    rows = tl.rows(0, limit)
    head = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>rackclock timeline"
            "</title></head><body><h1>Cross-plane timeline</h1>")
    cut = (f"<p>The first {len(rows)} of {len(tl)} entries in proven order; all are in "
           f"timeline.json and timeline.csv.</p>" if len(tl) > len(rows) else "")
    path.write_text(head + cut + timeline_html(rows, t0) + "</body></html>", encoding="utf-8")


def write_outputs(folder: Path, tl, t0: int) -> list[Path]:
    paths = [folder / "timeline.json", folder / "timeline.csv", folder / "timeline.otel.json",
             folder / "timeline.html"]
    write_json_and_csv(tl, paths[0], paths[1])
    write_otel(tl, paths[2])
    write_html(tl, paths[3], t0)
    return paths
