"""timeline.json, timeline.csv and timeline.otel.json, written a chunk of rows at a time from the
timeline's columns (bench.model.timeline_table.Timeline): each chunk's columns are made text
once with numpy (the unordered lists digit by digit) and shared by the files; repeated values
(device, plane, calibration, log) are escaped once per timeline; each row is then one f-string
per file. Memory does not grow with the number of entries."""
from __future__ import annotations

import csv
import json
import re
import shutil
from dataclasses import dataclass
from json.encoder import encode_basestring as js
from pathlib import Path
from tempfile import TemporaryFile

import numpy as np

from bench.model.timeline_table import BASES, STATUSES, UNIX_AFTER_NS, device_times

FIELDS = ("index", "block", "source", "plane", "label", "lo_ns", "hi_ns", "basis", "raw",
          "calibration", "status", "distance_ns", "unordered_count", "unordered_with",
          "device_time", "log")
CHUNK = 8192                # rows formatted at a time (their text: a few MB)
NEEDS_QUOTE = re.compile(r'[",\r\n]')
NO_INDEX = np.iinfo(np.int64).max


def csv_field(s: str) -> str:
    """A CSV field as csv.writer's default dialect writes it."""
    return f'"{s.replace(chr(34), chr(34) * 2)}"' if NEEDS_QUOTE.search(s) else s


def index_lists(near: np.ndarray) -> list[str]:
    """Each row's indices (-1: none), ascending, as decimal text joined by single spaces: the
    digits of the whole chunk made with numpy (a digit place at a time), one slice per row."""
    n, k = near.shape
    v = np.sort(np.where(near < 0, NO_INDEX, near.astype(np.int64)), axis=1).ravel()
    valid = v != NO_INDEX
    x = np.where(valid, v, 0)
    width = len(str(int(x.max()))) if len(x) else 1
    cells = np.empty((width + 1, len(x)), np.uint8)     # digit places, then a space
    keep = np.empty((width + 1, len(x)), bool)
    y = x
    for j in range(width - 1, -1, -1):
        q = y // 10
        cells[j] = y - q * 10 + ord("0")
        keep[j] = (x >= 10 ** (width - 1 - j)) & valid if j < width - 1 else valid
        y = q
    cells[width] = ord(" ")                         # after each index but a row's last
    keep[width] = (np.arange(k) < (valid.reshape(n, k).sum(axis=1) - 1)[:, None]).ravel()
    keep = np.ascontiguousarray(keep.T)
    text = np.ascontiguousarray(cells.T)[keep].tobytes().decode("ascii")
    lens = keep.reshape(n, -1).sum(axis=1)
    ends = np.cumsum(lens).tolist()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]


class Vocabulary:
    """The repeated values of a timeline, each escaped once: per device its source and plane,
    per calibration its name, per source its log file (JSON, CSV and OTLP forms)."""

    def __init__(self, tl):
        t = tl.table
        self.dev_json = np.array([f'"source": {js(d)}, "plane": {js(p)}' for d, p in t.devices]
                                 + [""], dtype=object)
        self.dev_csv = np.array([f"{csv_field(d)},{csv_field(p)}" for d, p in t.devices] + [""],
                                dtype=object)
        self.cal_json = np.array([js(c) for c in t.cal_names], dtype=object)
        self.cal_csv = np.array([csv_field(c) for c in t.cal_names], dtype=object)
        self.log_json = np.array([js(s.log) for s in t.sources] + [""], dtype=object)
        self.log_csv = np.array([csv_field(s.log) for s in t.sources] + [""], dtype=object)
        self.basis = np.array(BASES, dtype=object)
        self.status = np.array(STATUSES, dtype=object)


@dataclass
class Chunk:
    """Rows `ix` of a timeline as lists, one per column."""
    ix: list
    block: list
    dev: np.ndarray
    src: np.ndarray
    cal: np.ndarray
    label: list
    raw: list
    label_js: list          # label and raw as JSON strings
    raw_js: list
    lo: list
    hi: list
    basis: list
    status: list
    dist: list
    count: list
    near: list
    dtime: list
    raw_ns: list


def _texts(sources: list, src: np.ndarray, k: np.ndarray) -> tuple[list, list]:
    """Labels and raw stamps of a chunk of rows, fetched a source at a time."""
    if len(src) and (src == src[0]).all():
        return sources[int(src[0])].labels_raws(k.tolist())
    label, raw = [""] * len(k), [""] * len(k)
    for s in np.unique(src).tolist():
        pos = np.flatnonzero(src == s).tolist()
        lab, rw = sources[s].labels_raws(k[pos].tolist())
        for j, a, b in zip(pos, lab, rw):
            label[j], raw[j] = a, b
    return label, raw


def chunks(tl, voc: Vocabulary, n: int | None = None):
    """The first `n` rows (all by default) as Chunks of CHUNK rows."""
    c = tl.c
    n = len(tl) if n is None else min(n, len(tl))
    for a in range(0, n, CHUNK):
        s = slice(a, min(n, a + CHUNK))
        basis, st, has = c["basis"][s], c["stamp"][s], c["has_stamp"][s]
        label, raw = _texts(tl.table.sources, c["src"][s], c["idx"][s])
        status = np.where(basis <= BASES.index("event"), c["status"][s], 0)
        raw_ns = np.where(has & (basis == 0) & (st > UNIX_AFTER_NS), st, 0)
        yield Chunk(list(range(s.start, s.stop)), tl.block[s].tolist(), c["dev"][s],
                    c["src"][s], c["cal"][s], label, raw, list(map(js, label)), list(map(js, raw)),
                    list(map(str, c["lo"][s].tolist())), list(map(str, c["hi"][s].tolist())),
                    voc.basis[basis].tolist(), voc.status[status].tolist(),
                    c["dist"][s].tolist(), tl.count[s].tolist(), index_lists(tl.near[s]),
                    device_times(st, has, c["res"][s]), raw_ns.tolist())


def json_rows(ch: Chunk, voc: Vocabulary) -> str:
    return ",\n".join([
        f'{{"index": {i}, "block": {b}, {dv}, "label": {lab}, "lo_ns": {lo}, "hi_ns": {hi}, '
        f'"basis": "{ba}", "raw": {rw}, "calibration": {cal}, "status": "{st}", '
        f'"distance_ns": {d}, "unordered_count": {n}, "unordered_with": [{u.replace(" ", ", ")}], '
        f'"device_time": "{t}", "log": {lg}}}'
        for i, b, dv, lab, lo, hi, ba, rw, cal, st, d, n, u, t, lg in zip(
            ch.ix, ch.block, voc.dev_json[ch.dev].tolist(), ch.label_js, ch.lo, ch.hi, ch.basis,
            ch.raw_js, voc.cal_json[ch.cal].tolist(), ch.status, ch.dist, ch.count, ch.near,
            ch.dtime, voc.log_json[ch.src].tolist())])


def csv_rows(ch: Chunk, voc: Vocabulary) -> str:
    """Rows of timeline.csv as csv's excel dialect writes them."""
    label = ch.label if not NEEDS_QUOTE.search("".join(ch.label)) else \
        [csv_field(x) for x in ch.label]
    raw = ch.raw if not NEEDS_QUOTE.search("".join(ch.raw)) else [csv_field(x) for x in ch.raw]
    return "".join([
        f"{i},{b},{dv},{lab},{lo},{hi},{ba},{rw},{cal},{st},{d},{n},{u},{t},{lg}\r\n"
        for i, b, dv, lab, lo, hi, ba, rw, cal, st, d, n, u, t, lg in zip(
            ch.ix, ch.block, voc.dev_csv[ch.dev].tolist(), label, ch.lo, ch.hi, ch.basis, raw,
            voc.cal_csv[ch.cal].tolist(), ch.status, ch.dist, ch.count, ch.near, ch.dtime,
            voc.log_csv[ch.src].tolist())])


def otel_records(ch: Chunk, voc: Vocabulary) -> list[str]:
    """OTLP/JSON log records: timeUnixNano is the device's own time as written (0 when it is
    not a Unix time), the reference interval an attribute (the distance from the calibrated
    span only where there is one)."""
    return [
        f'{{"timeUnixNano": "{t}", "body": {{"stringValue": {lab}}}, "attributes": ['
        f'{{"key": "rackclock.interval.lo_ns", "value": {{"intValue": "{lo}"}}}}, '
        f'{{"key": "rackclock.interval.hi_ns", "value": {{"intValue": "{hi}"}}}}, '
        f'{{"key": "rackclock.raw_timestamp", "value": {{"stringValue": {rw}}}}}, '
        f'{{"key": "rackclock.calibration", "value": {{"stringValue": {cal}}}}}, '
        f'{{"key": "rackclock.status", "value": {{"stringValue": "{st}"}}}}, '
        f'{{"key": "rackclock.basis", "value": {{"stringValue": "{ba}"}}}}, '
        f'{{"key": "rackclock.order.block", "value": {{"intValue": "{b}"}}}}, '
        f'{{"key": "rackclock.order.unordered_count", "value": {{"intValue": "{n}"}}}}'
        + (f', {{"key": "rackclock.distance_ns", "value": {{"intValue": "{d}"}}}}]}}'
           if d else "]}")
        for t, lab, lo, hi, rw, cal, st, ba, b, n, d in zip(
            ch.raw_ns, ch.label_js, ch.lo, ch.hi, ch.raw_js, voc.cal_json[ch.cal].tolist(),
            ch.status, ch.basis, ch.block, ch.count, ch.dist)]


class OtelSink:
    """timeline.otel.json written as the rows come: OTLP/JSON `resourceLogs`, one resource
    per device (its plane a resource attribute), records in timeline order. The first device's
    records go straight into the file; each other device's into an unlinked temporary file
    beside it, appended at the end."""

    def __init__(self, path: Path, devices: list):
        self.f = open(path, "wb")
        self.f.write(b'{"resourceLogs": [')
        self.devices = devices
        self.first: int | None = None
        self.parts: dict[int, list] = {}

    def _resource(self, dev: int) -> bytes:
        name, plane = self.devices[dev]
        return ('{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": '
                f'{js(name)}}}}}, {{"key": "rackclock.plane", "value": {{"stringValue": '
                f'{js(plane)}}}}}]}}, "scopeLogs": [{{"scope": {{"name": "rackclock.timeline"}}, '
                '"logRecords": [\n').encode()

    def add(self, ch: Chunk, records: list[str]) -> None:
        devs, first = np.unique(ch.dev, return_index=True)
        devs = devs[np.argsort(first)].tolist()         # in the order they come
        for dev in devs:
            recs = records if len(devs) == 1 else \
                [records[j] for j in np.flatnonzero(ch.dev == dev).tolist()]
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


def write_files(tl, json_path: Path, csv_path: Path, otel_path: Path | None = None) -> None:
    """timeline.json, timeline.csv and (given a path) timeline.otel.json in one pass over the
    rows, a chunk at a time."""
    voc = Vocabulary(tl)
    otel = OtelSink(otel_path, tl.table.devices) if otel_path is not None else None
    try:
        with open(json_path, "w", encoding="utf-8") as fj, \
                open(csv_path, "w", newline="", encoding="utf-8") as fc:
            fj.write('{"schema": 2, "logs": ' + json.dumps(tl.reports) + ', "unplaced": '
                     + json.dumps(tl.unplaced) + ', "entries": [\n')
            csv.writer(fc).writerow(FIELDS)
            for ch in chunks(tl, voc):
                fj.write(("" if ch.ix[0] == 0 else ",\n") + json_rows(ch, voc))
                fc.write(csv_rows(ch, voc))
                if otel is not None:
                    otel.add(ch, otel_records(ch, voc))
            fj.write("]}\n")
    finally:
        if otel is not None:
            otel.close()
