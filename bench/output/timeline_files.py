"""timeline.json, timeline.csv and timeline.otel.json, written a chunk of rows at a time from the
timeline's columns (bench.model.timeline_table.Timeline): each chunk's columns are made text
once, in C (bench.output.timeline_columns: pyarrow.compute), and shared by the files; repeated
values (device, plane, calibration, log) are escaped once per timeline; each file's rows are
then one element-wise join per chunk, written as bytes. Memory does not grow with the number of
entries."""
from __future__ import annotations

import csv
import io
import json
import shutil
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass
from json.encoder import encode_basestring as js
from pathlib import Path
from tempfile import TemporaryFile
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench import safeio
from bench.model.file_schemas import version
from bench.model.timeline_table import BASES, STATUSES, UNIX_AFTER_NS, LogTexts, Timeline
from bench.output.timeline_columns import (
    chunk_texts,
    csv_field,
    decimal,
    index_arrays,
    join,
    json_csv,
    lit,
    pick,
    time_texts,
    write_rows,
)

FIELDS = ("index", "block", "source", "plane", "label", "lo_ns", "hi_ns", "basis", "raw",
          "calibration", "status", "distance_ns", "unordered_count", "unordered_with",
          "device_time", "log", "line", "resolution_ns", "clock", "assumed_lo_ns",
          "assumed_hi_ns", "unordered_more")
CHUNK = 4096                # rows formatted at a time (their text: a few MB)


class Vocabulary:
    """The repeated values of a timeline, each escaped once and joined with the constant text
    around them in each file: per device its source and plane, per calibration its name (with
    each status, and in OTLP each basis), per source its log file."""

    def __init__(self, tl: Timeline) -> None:
        t = tl.table
        (self.dev_json, self.basis_json, self.cal_json, self.log_json,
         self.clock_json) = _json_texts(t)
        self.dev_csv, self.cal_csv, self.log_csv, self.clock_csv = _csv_texts(t)
        self.cal_otel = _otel_texts(t)
        self.shape = (len(STATUSES), len(BASES))


def _json_texts(t: Any) -> tuple[list[str], ...]:
    """timeline.json's constant text around each device, basis, calibration and status, log
    file and clock of table `t`."""
    return ([f', "source": {js(d)}, "plane": {js(p)}, "label": "' for d, p in t.devices],
            [f', "basis": "{b}", "raw": "' for b in BASES],
            [f'", "calibration": {js(c)}, "status": "{st}", "distance_ns": '
             for c in t.cal_names for st in STATUSES],
            [f'", "log": {js(s.log)}, "line": ' for s in t.sources],
            [f', "clock": {js(c)}, "assumed_lo_ns": ' for c in t.stampers])


def _csv_texts(t: Any) -> tuple[list[str], ...]:
    """timeline.csv's fields of each device, calibration and status, log file and clock."""
    return ([f"{csv_field(d)},{csv_field(p)}" for d, p in t.devices],
            [f"{csv_field(c)},{st}" for c in t.cal_names for st in STATUSES],
            [csv_field(s.log) for s in t.sources],
            [csv_field(c) for c in t.stampers])


def _otel_texts(t: Any) -> list[str]:
    """timeline.otel.json's attributes of each calibration, status and basis."""
    return [f'"}}}}, {{"key": "rackclock.calibration", "value": {{"stringValue": '
            f'{js(c)}}}}}, {{"key": "rackclock.status", "value": {{"stringValue": '
            f'"{st}"}}}}, {{"key": "rackclock.basis", "value": {{"stringValue": '
            f'"{b}"}}}}, {{"key": "rackclock.order.block", "value": {{"intValue": "'
            for c in t.cal_names for st in STATUSES for b in BASES]


@dataclass
class Cols:
    """Rows of a timeline as Arrow text columns (bench.output.timeline_columns), shared by the
    three files and the terminal table."""
    dev: np.ndarray
    src: np.ndarray
    cal: np.ndarray
    basis: np.ndarray       # indices into BASES and STATUSES
    status: np.ndarray
    ix: pa.Array
    block: pa.Array
    lo: pa.Array
    hi: pa.Array
    label_text: pa.Array    # as shown; then as in the files (JSON string insides, CSV fields)
    label: pa.Array
    label_csv: pa.Array
    raw: pa.Array
    raw_csv: pa.Array
    near: pa.Array          # the unordered_with lists, in JSON and in CSV
    near_csv: pa.Array
    dist: pa.Array
    has_dist: pa.Array
    count: pa.Array
    dtime: pa.Array
    raw_ns: pa.Array
    line: pa.Array          # the line in its log file (0: the run's own entry)
    res: pa.Array
    stamper: np.ndarray     # index into the table's stampers
    alo: pa.Array
    ahi: pa.Array
    more: pa.Array          # unordered entries not in the list (counted)


def columns(tl: Timeline, n: int | None = None) -> Iterator[Cols]:
    """The first `n` rows (all by default) as Cols of CHUNK rows."""
    n = len(tl) if n is None else min(n, len(tl))
    for a in range(0, n, CHUNK):
        s = slice(a, min(n, a + CHUNK))
        c = {k: tl.c.part(k, s) for k in tl.c}
        # codes as int64: a row's calibration and status code is cal * 4 + status
        for k in ("dev", "src", "cal", "basis", "stamper"):
            c[k] = c[k].astype(np.int64)
        basis, st, has = c["basis"], c["stamp"], c["has_stamp"]
        label, raw = chunk_texts(tl.table.sources, c["src"], c["idx"])
        status = np.where(basis <= BASES.index("event"), c["status"], 0)
        raw_ns = np.where(has & (basis == 0) & (st > UNIX_AFTER_NS), st, 0)
        near, count = tl.near[s], tl.o.part("count", s)
        yield Cols(c["dev"], c["src"], c["cal"], basis, status,
                   decimal(np.arange(s.start, s.stop)), decimal(tl.o.part("block", s)),
                   decimal(c["lo"]), decimal(c["hi"]), label, *json_csv(label),
                   *json_csv(raw), *index_arrays(near), decimal(c["dist"]),
                   pa.array(c["dist"] != 0), decimal(count),
                   time_texts(st, has, c["res"]), decimal(raw_ns),
                   decimal(_lines(tl, c["src"], c["idx"])), decimal(c["res"]),
                   c["stamper"], decimal(c["alo"]), decimal(c["ahi"]),
                   decimal(count - (near >= 0).sum(axis=1)))


def _lines(tl: Timeline, src: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each row's line number in its log file (0 for the run's own entries)."""
    out = np.zeros(len(src), np.int64)
    for k in np.unique(src).tolist():
        so = tl.table.sources[k]
        if isinstance(so, LogTexts):
            m = src == k
            out[m] = so.st.lines_at(idx[m])
    return out


def json_rows(ch: Cols, voc: Vocabulary) -> pa.Array:
    """Rows of timeline.json's entries, each after ",\n"."""
    ns = voc.shape[0]
    return join(
        ',\n{"index": ', ch.ix, ', "block": ', ch.block, pick(voc.dev_json, ch.dev), ch.label,
        '", "lo_ns": ', ch.lo, ', "hi_ns": ', ch.hi, pick(voc.basis_json, ch.basis), ch.raw,
        pick(voc.cal_json, ch.cal * ns + ch.status), ch.dist, ', "unordered_count": ', ch.count,
        ', "unordered_with": [', ch.near, '], "device_time": "', ch.dtime,
        pick(voc.log_json, ch.src), ch.line, ', "resolution_ns": ', ch.res,
        pick(voc.clock_json, ch.stamper), ch.alo, ', "assumed_hi_ns": ', ch.ahi,
        ', "unordered_more": ', ch.more, "}")


def csv_rows(ch: Cols, voc: Vocabulary) -> pa.Array:
    """Rows of timeline.csv as csv's excel dialect writes them."""
    row = join(ch.ix, ch.block, pick(voc.dev_csv, ch.dev), ch.label_csv, ch.lo, ch.hi,
               pick(list(BASES), ch.basis), ch.raw_csv,
               pick(voc.cal_csv, ch.cal * voc.shape[0] + ch.status), ch.dist, ch.count,
               ch.near_csv, ch.dtime, pick(voc.log_csv, ch.src), ch.line, ch.res,
               pick(voc.clock_csv, ch.stamper), ch.alo, ch.ahi, ch.more, sep=",")
    return join(row, "\r\n")


def otel_records(ch: Cols, voc: Vocabulary) -> pa.Array:
    """OTLP/JSON log records, each after ",\n": timeUnixNano is the device's own time as
    written (0 when it is not a Unix time), the reference interval an attribute (the distance
    from the calibrated span only where there is one)."""
    ns, nb = voc.shape
    tail = pc.if_else(ch.has_dist, join(
        ', {"key": "rackclock.distance_ns", "value": {"intValue": "', ch.dist, '"}}]}'),
        lit("]}"))
    return join(
        ',\n{"timeUnixNano": "', ch.raw_ns, '", "body": {"stringValue": "', ch.label,
        '"}, "attributes": [{"key": "rackclock.interval.lo_ns", "value": {"intValue": "',
        ch.lo, '"}}, {"key": "rackclock.interval.hi_ns", "value": {"intValue": "', ch.hi,
        '"}}, {"key": "rackclock.raw_timestamp", "value": {"stringValue": "', ch.raw,
        pick(voc.cal_otel, (ch.cal * ns + ch.status) * nb + ch.basis), ch.block,
        '"}}, {"key": "rackclock.order.unordered_count", "value": {"intValue": "', ch.count,
        '"}}', tail)


class OtelSink:
    """timeline.otel.json written as the rows come: OTLP/JSON `resourceLogs`, one resource
    per device (its plane a resource attribute), records in timeline order. The first device's
    records go straight into the file; each other device's into an unlinked temporary file
    beside it, appended at the end."""

    def __init__(self, path: Path, devices: list[tuple[str, str]]) -> None:
        self.f = safeio.open_part(path)
        self.f.write(b'{"resourceLogs": [')
        self.devices = devices
        self.first: int | None = None
        self.parts: dict[int, IO[bytes]] = {}     # per device the file of its records
        self.written: dict[int, int] = {}         # and how many are in it

    def _resource(self, dev: int) -> bytes:
        name, plane = self.devices[dev]
        return ('{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": '
                f'{js(name)}}}}}, {{"key": "rackclock.plane", "value": {{"stringValue": '
                f'{js(plane)}}}}}]}}, "scopeLogs": [{{"scope": {{"name": "rackclock.timeline"}}, '
                '"logRecords": [\n').encode()

    def add(self, dev: np.ndarray, records: pa.Array) -> None:
        """Records (each after ",\\n") of rows of devices `dev`, in their order."""
        devs, first = np.unique(dev, return_index=True)
        for d in devs[np.argsort(first)].tolist():         # in the order they come
            recs = records if len(devs) == 1 else records.filter(pa.array(dev == d))
            if self.first is None:
                self.first = d
                self.f.write(self._resource(d))
            part = self.parts.get(d)
            if part is None:
                part = self.parts[d] = self.f if d == self.first else \
                    TemporaryFile("w+b", dir=Path(self.f.name).parent)
            write_rows(part, recs, 0 if self.written.get(d) else 2)
            self.written[d] = self.written.get(d, 0) + len(recs)

    def close(self) -> None:
        try:
            if self.first is not None:
                self.f.write(b"]}]}")
            for dev, part in self.parts.items():
                if part is self.f:
                    continue
                self.f.write(b",\n" + self._resource(dev))
                part.seek(0)
                shutil.copyfileobj(part, self.f, 1 << 20)
                self.f.write(b"]}]}")
            self.f.write(b"]}\n")
        finally:
            for part in self.parts.values():
                part.close()
            self.f.close()


def _csv_header() -> bytes:
    out = io.StringIO()
    csv.writer(out).writerow(FIELDS)
    return out.getvalue().encode()


def write_files(tl: Timeline, json_path: Path | None, csv_path: Path | None,
                otel_path: Path | None = None, first: dict[str, Any] | None = None) -> None:
    """timeline.json, timeline.csv and timeline.otel.json, those given a path, in one pass over
    the rows, a chunk at a time: each chunk's columns made once here, each file's rows made and
    written in a thread of its own (Arrow's joins and the writes release the GIL: on two cores
    the files are written side by side), in order, at most LAG chunks behind."""
    voc = Vocabulary(tl)
    with ExitStack() as stack:
        fj, fc, otel = _open_sinks(stack, tl, json_path, csv_path, otel_path, first)
        lanes = [stack.enter_context(closing(_Lane(f, kind)))
                 for f, kind in ((fj, "json"), (fc, "csv"), (otel, "otel")) if f is not None]
        for k, ch in enumerate(columns(tl)):
            for lane in lanes:
                lane.put(k, ch, voc)
        for lane in lanes:
            lane.close()
        if fj is not None:
            fj.write(b"]}\n")


def _open_sinks(stack: ExitStack, tl: Timeline, json_path: Path | None, csv_path: Path | None,
                otel_path: Path | None, first: dict[str, Any] | None
                ) -> tuple[IO[bytes] | None, IO[bytes] | None, OtelSink | None]:
    """The files asked for, open (closed with `stack`), timeline.json and .csv with their
    heads written."""
    fj = stack.enter_context(safeio.open_part(json_path)) if json_path is not None else None
    fc = stack.enter_context(safeio.open_part(csv_path)) if csv_path is not None else None
    otel = stack.enter_context(closing(OtelSink(otel_path, tl.table.devices))) \
        if otel_path is not None else None
    if fj is not None:
        fj.write(_json_head(tl, first))
    if fc is not None:
        fc.write(_csv_header())
    return fj, fc, otel


LAG = 1         # chunks a file's thread may be behind the columns (memory: a few MB each); 0:
                # no threads, each file's rows made and written in turn


class _Lane:
    """One file's rows, made and written in a thread of its own, chunk after chunk in order;
    an error in it is raised here at the next chunk or at close."""

    def __init__(self, sink: IO[bytes] | OtelSink, kind: str) -> None:
        self.sink, self.kind = sink, kind
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="timeline-file")
        self.pending: deque[Future[None]] = deque()

    def put(self, k: int, ch: Cols, voc: Vocabulary) -> None:
        if not LAG:                         # no thread: here and now
            _write_chunk(k, ch, voc, self.sink, self.kind)
            return
        while len(self.pending) >= LAG:
            self.pending.popleft().result()
        self.pending.append(self.pool.submit(_write_chunk, k, ch, voc, self.sink, self.kind))

    def close(self) -> None:
        try:
            while self.pending:
                self.pending.popleft().result()
        finally:
            self.pool.shutdown(cancel_futures=True)


def _json_head(tl: Timeline, first: dict[str, Any] | None) -> bytes:
    """timeline.json up to its first entry: schema, the logs' reports, the lines not placed,
    the --first answer if any."""
    return ('{"schema": 2, "schema_version": "' + version("timeline.json") + '", "logs": '
            + json.dumps(tl.reports) + ', "unplaced": '
            + json.dumps(tl.unplaced)
            + ('' if first is None else ', "first": ' + json.dumps(first))
            + ', "entries": [\n').encode()


def _write_chunk(k: int, ch: Cols, voc: Vocabulary, sink: IO[bytes] | OtelSink,
                 kind: str) -> None:
    """Chunk number k of the rows into one file: `kind` json, csv or otel."""
    if isinstance(sink, OtelSink):
        sink.add(ch.dev, otel_records(ch, voc))
    elif kind == "json":
        write_rows(sink, json_rows(ch, voc), 0 if k else 2)
    else:
        write_rows(sink, csv_rows(ch, voc))
