"""The timeline written out: a terminal table, timeline.json and timeline.csv (every entry, its
raw stamp beside its interval and the calibration it came from), OpenTelemetry-style log
records (timeline.otel.json: the device's raw time as the record time, the interval bounds,
calibration and order as attributes; the OTLP/JSON shape of `resourceLogs`), and timeline.html
(one lane per plane, the user's own log lines marked). Every file is written a chunk of rows at
a time (bench.model.timeline_table.Timeline): memory does not grow with the number of entries."""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from json.encoder import encode_basestring as js
from pathlib import Path

import numpy as np

from bench.model.timeline_table import BASES, STATUSES, UNIX_AFTER_NS, device_times, utc_text
from bench.units import fmt_ns

FIELDS = ("index", "block", "source", "plane", "label", "lo_ns", "hi_ns", "basis", "raw",
          "calibration", "status", "distance_ns", "unordered_count", "unordered_with",
          "device_time", "log")
CHUNK = 8192                # rows formatted at a time (their text: a few MB)
HTML_ROWS = 2000
NEEDS_QUOTE = re.compile(r'[",\r\n]')


def records(tl, idx: np.ndarray):
    """Lists of rows `idx`, a chunk at a time, each row (index, block, source, plane, label, lo,
    hi, basis, raw, calibration, status, distance, unordered count, unordered list, device
    time, log, raw_ns)."""
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
        near = tl.near[ix]
        got = np.count_nonzero(near >= 0, axis=1).tolist()
        near = np.sort(np.where(near < 0, np.iinfo(np.int32).max, near), axis=1).tolist()
        sources, devices, cals = t.sources, t.devices, t.cal_names
        label, raw = _texts(sources, src, k)
        out = []
        for j, i in enumerate(ix.tolist()):
            s = sources[src[j]]
            b = BASES[basis[j]]
            out.append((i, blk[j], *devices[dev[j]], label[j], lo[j], hi[j], b, raw[j],
                        cals[cal[j]], STATUSES[status[j]] if b in ("stamp", "event")
                        else "proven", dist[j], cnt[j], str(near[j][:got[j]]), dtime[j], s.log,
                        raw_ns[j]))
        yield out


def _texts(sources: list, src: list[int], k: list[int]) -> tuple[list, list]:
    """Labels and raw stamps of a chunk of rows, fetched a source at a time."""
    label, raw = [""] * len(k), [""] * len(k)
    for s in set(src):
        pos = [j for j, x in enumerate(src) if x == s] if len(set(src)) > 1 else range(len(k))
        lab, rw = sources[s].labels_raws([k[j] for j in pos])
        for j, a, b in zip(pos, lab, rw):
            label[j], raw[j] = a, b
    return label, raw


def table_lines(tl, t0: int, limit: int = 200) -> Iterator[str]:
    """The terminal table of a timeline, a line at a time (the command prints them)."""
    for rep in tl.reports:
        yield from _report_lines(rep)
    for u in tl.unplaced:
        yield (f"{u['source']} event {u['line']} ({u['raw']}): {u['why']}")
    yield (f"{'#':>5}  {'from (UTC)':<27} {'from (s)':>11} {'to (s)':>11} {'width':>9}  "
          f"{'status':<12} {'device':<10} {'device time':<27} {'order':<16} what")
    n = min(limit, len(tl))
    utc = utc_text(tl.c["lo"][:n]).tolist()
    rows = [r for chunk in records(tl, np.arange(n)) for r in chunk]
    for r, u in zip(rows, utc):
        i, _, src, _, label, lo, hi, basis, _, _, status, _, cnt, _, dtime, log, _ = r
        ordtxt = "proven" if not cnt else f"unordered with {cnt}"
        st = status if basis in ("stamp", "event") else basis
        mark = "*" if log else " "
        yield (f"{i:>5}{mark} {u:<27} {(lo - t0) / 1e9:>11.6f} {(hi - t0) / 1e9:>11.6f} "
              f"{fmt_ns(hi - lo):>9}  {st:<12} {src[:10]:<10} {dtime[:27]:<27} {ordtxt:<16} "
              f"{label[:60]}")
    if len(tl) > limit:
        yield (f"... {len(tl) - limit} more entries (all in timeline.json and timeline.csv; "
              f"--rows N to print more)")
    if any(rep.get("mapped") for rep in tl.reports):
        yield ("* a line of your log files")
    yield (f"{len(tl)} entries in {tl.blocks} proven-ordered blocks; {tl.unordered} entries "
          f"unordered against another")


def _report_lines(rep: dict) -> Iterator[str]:
    if "error" in rep:
        return                 # said once on stderr by the command
    yield (f"{rep['file']} -> {rep['device']}: {rep['format']} ({rep['how']}), "
          f"{rep['lines']} lines, {rep['mapped']} mapped, order: {rep.get('order', '-')}"
          + (f", {rep['status']}" if rep.get("status") else ""))
    for nt in rep["notes"]:
        yield (f"  assumed: {nt}" if not nt.startswith("lines over") else f"  {nt}")
    if rep["unparsed_count"]:
        yield (f"  {rep['unparsed_count']} lines not parsed:")
        for u in rep["unparsed"][:20]:
            yield (f"    line {u['line']}: {u['why']}: {u['text'][:80]!r}")
        if rep["unparsed_count"] > 20:
            yield (f"    ... {rep['unparsed_count'] - 20} more (the first "
                  f"{len(rep['unparsed'])} in timeline.json)")
    for u in rep["unplaced"][:20]:
        yield (f"  line {u['line']} ({u['device_time']}): {u['why']}")
    if rep["unplaced_count"] > 20:
        yield (f"  ... {rep['unplaced_count'] - 20} more unplaced (the first "
              f"{len(rep['unplaced'])} in timeline.json)")


def _json_row(r, e) -> str:
    """A row as JSON; `e`: its label, raw, calibration and (source, plane, log) JSON-escaped
    (a device time is ISO 8601 or a number of seconds: nothing to escape)."""
    (i, blk, _, _, _, lo, hi, basis, _, _, status, dist, cnt, un, dtime, _, _) = r
    return (f'{{"index": {i}, "block": {blk}, "source": {e[3][0]}, "plane": {e[3][1]}, '
            f'"label": {e[0]}, "lo_ns": {lo}, "hi_ns": {hi}, "basis": "{basis}", '
            f'"raw": {e[1]}, "calibration": {e[2]}, "status": "{status}", '
            f'"distance_ns": {dist}, "unordered_count": {cnt}, "unordered_with": {un}, '
            f'"device_time": "{dtime}", "log": {e[3][2]}}}')


def _q(s: str) -> str:
    """A CSV field as csv.writer's default dialect writes it."""
    return f'"{s.replace(chr(34), chr(34) * 2)}"' if NEEDS_QUOTE.search(s) else s


def _csv_row(r, cq: dict) -> str:
    """A row of timeline.csv (csv's excel dialect, without a call per field for the columns
    whose values repeat: device, plane, calibration, log, cached in `cq`)."""
    (i, blk, src, plane, label, lo, hi, basis, raw, cal, status, dist, cnt, un, dtime, log,
     _) = r
    rep = cq.get((src, plane, cal, log))
    if rep is None:
        rep = cq[(src, plane, cal, log)] = tuple(map(_q, (src, plane, cal, log)))
    return (f"{i},{blk},{rep[0]},{rep[1]},{_q(label)},{lo},{hi},{basis},{_q(raw)},{rep[2]},"
            f"{status},{dist},{cnt},{un[1:-1].replace(',', '')},{dtime},{rep[3]}\r\n")


def _otel_record(r, e) -> str:
    """One OTLP/JSON log record: timeUnixNano is the device's own time as written (0 when it is
    not a Unix time), the reference interval an attribute (the distance from the calibrated
    span only where there is one)."""
    (_, blk, _, _, _, lo, hi, basis, _, _, status, dist, cnt, _, _, _, raw_ns) = r
    return (f'{{"timeUnixNano": "{max(raw_ns, 0)}", "body": {{"stringValue": {e[0]}}}, '
            f'"attributes": [{{"key": "rackclock.interval.lo_ns", "value": {{"intValue": "{lo}"}}}}, '
            f'{{"key": "rackclock.interval.hi_ns", "value": {{"intValue": "{hi}"}}}}, '
            f'{{"key": "rackclock.raw_timestamp", "value": {{"stringValue": {e[1]}}}}}, '
            f'{{"key": "rackclock.calibration", "value": {{"stringValue": {e[2]}}}}}, '
            f'{{"key": "rackclock.status", "value": {{"stringValue": "{status}"}}}}, '
            f'{{"key": "rackclock.basis", "value": {{"stringValue": "{basis}"}}}}, '
            f'{{"key": "rackclock.order.block", "value": {{"intValue": "{blk}"}}}}, '
            f'{{"key": "rackclock.order.unordered_count", "value": {{"intValue": "{cnt}"}}}}'
            + (f', {{"key": "rackclock.distance_ns", "value": {{"intValue": "{dist}"}}}}]}}'
               if dist else "]}"))


class OtelSink:
    """timeline.otel.json written as the rows come: OTLP/JSON `resourceLogs`, one resource
    per device (its plane a resource attribute), records in timeline order. The first device's
    records go straight into the file; each other device's into an unlinked temporary file
    beside it, appended at the end."""

    def __init__(self, path: Path):
        self.f = open(path, "wb")
        self.f.write(b'{"resourceLogs": [')
        self.first = None
        self.parts: dict[tuple, list] = {}

    @staticmethod
    def _resource(dev: tuple) -> bytes:
        return ('{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": '
                f'{js(dev[0])}}}}}, {{"key": "rackclock.plane", "value": {{"stringValue": '
                f'{js(dev[1])}}}}}]}}, "scopeLogs": [{{"scope": {{"name": "rackclock.timeline"}}, '
                '"logRecords": [\n').encode()

    def add(self, dev: tuple, recs: list[str]) -> None:
        from tempfile import TemporaryFile
        if self.first is None:
            self.first = dev
            self.f.write(self._resource(dev))
        part = self.parts.get(dev)
        if part is None:
            part = self.parts[dev] = [self.f if dev == self.first else
                                      TemporaryFile("w+b", dir=Path(self.f.name).parent), 0]
        part[0].write((",\n" if part[1] else "").encode() + ",\n".join(recs).encode())
        part[1] += len(recs)

    def close(self) -> None:
        import shutil
        try:
            if self.first is not None:
                self.f.write(b"]}]}")
            for dev, (part, _) in self.parts.items():
                if part is self.f:
                    continue
                self.f.write(b",\n" + self._resource(dev))
                part.seek(0)
                shutil.copyfileobj(part, self.f, 1 << 20)
                self.f.write(b"]}]}")
            self.f.write(b"]}\n")
        finally:
            for part, _ in self.parts.values():
                part.close()
            self.f.close()


def write_files(tl, json_path: Path, csv_path: Path, otel_path: Path) -> None:
    """timeline.json, timeline.csv and timeline.otel.json in one pass over the rows, a chunk
    at a time."""
    otel = OtelSink(otel_path)
    try:
        with open(json_path, "w", encoding="utf-8") as fj, \
                open(csv_path, "w", newline="", encoding="utf-8") as fc:
            fj.write('{"schema": 2, "logs": ' + json.dumps(tl.reports) + ', "unplaced": '
                     + json.dumps(tl.unplaced) + ', "entries": [\n')
            csv.writer(fc).writerow(FIELDS)
            cal_js, src_js, cq = {}, {}, {}
            for chunk in records(tl, np.arange(len(tl))):
                esc = [(js(r[4]), js(r[8]),
                        cal_js.get(r[9]) or cal_js.setdefault(r[9], js(r[9])),
                        src_js.get(r[2:4] + r[15:16])
                        or src_js.setdefault(r[2:4] + r[15:16], tuple(map(js, r[2:4] + r[15:16]))))
                       for r in chunk]
                fj.write(("" if chunk[0][0] == 0 else ",\n")
                         + ",\n".join([_json_row(r, e) for r, e in zip(chunk, esc)]))
                fc.write("".join([_csv_row(r, cq) for r in chunk]))
                by_dev: dict[tuple, list] = {}
                for r, e in zip(chunk, esc):
                    by_dev.setdefault(r[2:4], []).append(_otel_record(r, e))
                for dev, recs in by_dev.items():
                    otel.add(dev, recs)
            fj.write("]}\n")
    finally:
        otel.close()


def write_html(tl, path: Path, t0: int, limit: int = HTML_ROWS) -> None:
    from bench.output.timeline_page import timeline_html
    rows = tl.rows(0, limit)
    head = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>rackclock timeline"
            "</title></head><body><h1>Cross-plane timeline</h1>")
    cut = (f"<p>The first {len(rows)} of {len(tl)} entries in proven order; all are in "
           f"timeline.json and timeline.csv.</p>" if len(tl) > len(rows) else "")
    path.write_text(head + cut + timeline_html(rows, t0) + "</body></html>", encoding="utf-8")


def write_outputs(folder: Path, tl, t0: int) -> list[Path]:
    """The four files, each written under a fresh temporary name (O_EXCL) and renamed into
    place: a name planted in the folder (a symlink) is replaced, never written through, and a
    reader never sees half a file."""
    import os
    import tempfile
    paths = [folder / "timeline.json", folder / "timeline.csv", folder / "timeline.otel.json",
             folder / "timeline.html"]
    parts = []
    try:
        for p in paths:
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=folder)
            os.close(fd)
            parts.append(Path(tmp))
        write_files(tl, *parts[:3])
        write_html(tl, parts[3], t0)
        for tmp, p in zip(parts, paths):
            os.chmod(tmp, 0o644)
            os.replace(tmp, p)
    finally:
        for tmp in parts:
            tmp.unlink(missing_ok=True)
    return paths
