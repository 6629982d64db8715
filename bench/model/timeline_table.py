"""A timeline as columns (numpy arrays), so a million log lines are ordered and written in
bounded memory: each entry's interval, stamp, status and calibration as numbers, its label and
raw stamp read back from its log's text store only when a row is shown or written. The rows it
gives are those of bench.analysis.timeline_order.order (same order, blocks and exact counts); each
row's `unordered_with` lists the nearest entries it is unordered with (all of them up to 12;
bench.analysis.timeline_order.nearest_unordered)."""
from __future__ import annotations

import math
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from bench.analysis.timeline_map import Mapped
from bench.analysis.timeline_order import Entry, nearest_unordered, order_sorted
from bench.logs.logstamps import Stamps
from bench.model.narrow import Columns, give_back

BASES = ("stamp", "event", "reference", "break", "observed")
STATUSES = ("proven", "assumed", "extrapolated", "ambiguous")    # bench.analysis.timeline_map
LABEL_KEEP = 200
UNIX_AFTER_NS = 946_684_800 * 10**9     # a stamp after 2000 is a Unix time; a counter's is not
INT_COLS = ("lo", "hi", "alo", "ahi", "stamp", "res", "dist")
REF_LO = ("hi", "alo", "ahi", "stamp")    # kept as their difference from lo where it is narrow
SMALL_COLS = {"status": np.int8, "basis": np.int8, "has_stamp": np.bool_, "cal": np.int32,
              "dev": np.int32, "src": np.int32, "stamper": np.int32, "clock": np.int32,
              "idx": np.int32}       # clock: index into clock_names; idx: into its source


Unit = Literal["s", "ms", "us", "ns"]
Cols = dict[str, npt.NDArray[Any]]        # a timeline's columns by name (int64, int8, bool...)
K = TypeVar("K")


def utc_text(ns: npt.ArrayLike, unit: Unit = "us") -> npt.NDArray[np.str_]:
    """Unix ns (array) as ISO 8601 UTC text to `unit`."""
    a: npt.NDArray[np.datetime64] = np.asarray(ns, dtype=np.int64).astype("datetime64[ns]")
    return np.char.add(np.datetime_as_string(a, unit=unit), "Z")


def decimals_of(res_ns: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The decimals of seconds a resolution (ns) shows: 1 s -> 0, 10 ms -> 2, 1 ns or unknown
    (0) -> 9."""
    q = np.asarray(res_ns, dtype=np.float64)
    d = 9 - np.floor(np.log10(np.where(q > 0, q, 1.0))).astype(np.int64)
    return np.clip(d, 0, 9)


def device_times(stamp: npt.ArrayLike, has: npt.ArrayLike, res: npt.ArrayLike,
                 wall: npt.ArrayLike | None = None) -> list[str]:
    """Each stamp as a time: a wall stamp in UTC to its resolution, a counter's in seconds to
    its resolution (`wall` not given: a stamp before 2000 is taken for a counter's)."""
    st, ok, q = np.asarray(stamp), np.asarray(has, bool), np.asarray(res)
    out = np.full(len(st), "", dtype=object)
    on = ok & ((st > UNIX_AFTER_NS) if wall is None else np.asarray(wall, bool))
    cnt = ok & ~on
    units: tuple[tuple[Unit, int], ...] = (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 0))
    for unit, lo_q in units:
        pick = on & (q >= lo_q)
        on &= ~pick
        if pick.any():
            out[pick] = utc_text(st[pick], unit)
    if cnt.any():
        out[cnt] = [f"{v / 1e9:.{d}f} s (counter)"
                    for v, d in zip(st[cnt].tolist(), decimals_of(q[cnt]).tolist())]
    return out.tolist()


class LogTexts:
    """Labels and raw stamps of a log's lines (bench.logs.logstamps.Stamps), by stamp index."""
    user = True

    def __init__(self, stamps: Stamps, name: str) -> None:
        self.st, self.log = stamps, name

    def label(self, k: int) -> str:
        return f"{self.log}:{int(self.st.lines_at(k))} {self.st.text[k]}"[:LABEL_KEEP]

    def raw(self, k: int) -> str:
        return self.st.raw[k]

    def labels_raws(self, ks: list[int]) -> tuple[list[str], list[str]]:
        """Labels and raw stamps of many lines at once."""
        log, texts = self.log, self.st.text.many(ks)
        line = self.st.lines_at(ks).tolist()
        labels = [f"{log}:{n} {t}" for n, t in zip(line, texts)]
        if labels and max(map(len, labels)) > LABEL_KEEP:
            labels = [x[:LABEL_KEEP] for x in labels]
        return labels, self.st.raw.many(ks)


class EntryTexts:
    """The same for a run's own entries (a few thousand Entry records)."""
    user = False
    log = ""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries

    def label(self, k: int) -> str:
        return self.entries[k].label

    def raw(self, k: int) -> str:
        return self.entries[k].raw

    def labels_raws(self, ks: list[int]) -> tuple[list[str], list[str]]:
        return [self.entries[k].label for k in ks], [self.entries[k].raw for k in ks]


class EntryTable:
    """Entries gathered from a run and its logs, as column chunks."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []     # per source its columns (lists or arrays)
        self.devices: list[tuple[str, str]] = []
        self._dev: dict[tuple[str, str], int] = {}
        self.cal_names: list[str] = [""]
        self._cal: dict[str, int] = {"": 0}
        self._clock: dict[str, int] = {}
        self.clock_names: list[str] = []      # device/clock/segment keys by their index
        self.stampers: list[str] = [""]       # the clock that stamped an entry: device/clock
        self._stamper: dict[str, int] = {"": 0}
        self.sources: list[LogTexts | EntryTexts] = []

    def _ix(self, table: dict[K, int], names: list[K] | None, key: K) -> int:
        k = table.get(key)
        if k is None:
            k = table[key] = len(table)
            if names is not None:
                names.append(key)
        return k

    def add_entries(self, entries: list[Entry]) -> None:
        src = len(self.sources)
        self.sources.append(EntryTexts(entries))
        self.chunks.append({**_entry_numbers(entries), **self._entry_keys(entries),
                            "src": [src] * len(entries), "idx": list(range(len(entries)))})

    def _entry_keys(self, entries: list[Entry]) -> dict[str, list[int]]:
        """The clock, calibration and device indices of run entries."""
        keys = [_stamp_clock_key(e) for e in entries]
        return {"clock": [self._ix(self._clock, self.clock_names, k) if k is not None else -1
                          for k in keys],
                "cal": [self._ix(self._cal, self.cal_names, e.calibration) for e in entries],
                "dev": [self._ix(self._dev, self.devices, (e.source, e.plane)) for e in entries],
                "stamper": [self._ix(self._stamper, self.stampers, "/".join(k.split("/")[:2]))
                            if k is not None else 0
                            for k in keys]}

    def add_mapped(self, device: str, plane: str, texts: LogTexts, m: Mapped,
                   vals: npt.NDArray[np.int64], qs: npt.NDArray[np.int64], clock: str,
                   rows: npt.NDArray[np.int64] | None = None, clock_device: str = "") -> int:
        """A log's mapped stamps (bench.analysis.timeline_map.Mapped) but the unplaced ones;
        their number. `rows`: each stamp's index in the log (default: all, in order);
        `clock_device`: the device whose clock stamped them (default `device`), which orders
        them against that clock's other stamps."""
        sel = np.flatnonzero(m.status < len(STATUSES)).astype(np.int32)   # 4 bytes a row
        if not len(sel):
            return 0
        prefix = f"{clock_device or device}/{clock}"
        cal, keys = self._calibrations(m, sel, prefix)
        status = m.status[sel].astype(np.int8)
        src = len(self.sources)
        self.sources.append(texts)
        pick = _taker(sel, len(m))
        n = len(sel)
        self.chunks.append({
            "lo": pick(m.lo_ns), "hi": pick(m.hi_ns), "stamp": pick(vals), "res": pick(qs),
            "alo": pick(m.lo_ns if m.assumed_lo_ns is None else m.assumed_lo_ns),
            "ahi": pick(m.hi_ns if m.assumed_hi_ns is None else m.assumed_hi_ns),
            "has_stamp": np.ones(n, bool), "dist": pick(m.distance_ns),
            "clock": np.where(status == STATUSES.index("ambiguous"), np.int32(-1), keys),
            "cal": cal, "status": status, "basis": np.zeros(n, np.int8),
            # one value a log: views of one number, not columns, until the table's are joined
            "dev": _same(self._ix(self._dev, self.devices, (device, plane)), n),
            "src": _same(src, n), "stamper": _same(self._ix(self._stamper, self.stampers,
                                                            prefix), n),
            "idx": (sel if rows is None else pick(rows)).astype(np.int32)})
        return len(sel)

    def _calibrations(self, m: Mapped, sel: npt.NDArray[np.int32], prefix: str
                      ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """The calibration and clock-segment indices of mapped stamps `sel` (a union of
        calibrations is its own name); one calibration: views of one number, no sort."""
        K = m.candidates.shape[0]
        cand = m.candidates[:63, sel]
        one = bool(len(sel)) and bool((cand == cand[:, :1]).all())   # no codes made: no sort
        if one:
            first, inv = np.zeros(1, np.intp), None
        else:
            weights = (np.uint64(1) << np.arange(min(K, 63), dtype=np.uint64))
            code = (cand.T.astype(np.uint64) @ weights) if K else np.zeros(len(sel), np.uint64)
            first, inv = np.unique(code, return_index=True, return_inverse=True)[1:]
            del code
        del cand
        names = [m.calibration_of(int(sel[i])) for i in first]
        cal = np.array([self._ix(self._cal, self.cal_names, nm) for nm in names], np.int32)
        keys = np.array([self._ix(self._clock, self.clock_names, f"{prefix}/{nm}")
                         for nm in names], np.int32)
        if inv is None:
            return _same(int(cal[0]), len(sel)), _same(int(keys[0]), len(sel))
        return cal[inv], keys[inv]

    def columns(self) -> Columns:
        """All entries' columns, kept narrow (bench.model.narrow), the chunks let go a column
        at a time: the interval ends and stamps as differences from `lo`, a log's one-value
        columns as that value."""
        n = sum(len(c["lo"]) for c in self.chunks)
        out = Columns(n)
        for k in ("lo",) + INT_COLS[1:] + tuple(SMALL_COLS):
            dt = SMALL_COLS.get(k, np.int64)
            out.encode(k, [np.asarray(c[k], dtype=dt) for c in self.chunks], dt,
                       "lo" if k in REF_LO else None)
            for c in self.chunks:
                if k != "lo":
                    del c[k]
        self.chunks = []
        return out


def _same(v: int, n: int) -> npt.NDArray[np.int32]:
    """n times the int32 `v`, as a read-only view of one number (no memory)."""
    return np.broadcast_to(np.int32(v), (n,))


def _taker(sel: npt.NDArray[np.int32], n: int) -> Any:
    """Columns cut to `sel`: where it is every row, the column itself (no copy: a million mapped
    lines would hold each column twice while the table is built)."""
    if len(sel) == n:
        return lambda a: np.asarray(a)
    return lambda a: np.asarray(a)[sel]


def _stamp_clock_key(e: Entry) -> str | None:
    """The entry's clock key where its own stamp places it (basis "stamp", with a stamp and a
    clock), else None."""
    if e.basis == "stamp" and e.clock_key is not None and e.stamp_ns is not None:
        return e.clock_key
    return None


def _entry_numbers(entries: list[Entry]) -> dict[str, list[int]]:
    """The interval, stamp, status and basis columns of run entries."""
    return {**_interval_columns(entries), **_stamp_columns(entries), **_code_columns(entries)}


def _interval_columns(entries: list[Entry]) -> dict[str, list[int]]:
    """lo, hi and their assumed-model twins alo, ahi (a run entry's are the same)."""
    return {"lo": [e.lo_ns for e in entries], "hi": [e.hi_ns for e in entries],
            "alo": [e.lo_ns for e in entries], "ahi": [e.hi_ns for e in entries]}


def _stamp_columns(entries: list[Entry]) -> dict[str, list[int]]:
    """stamp (0 where none), has_stamp, res (resolution) and dist (distance)."""
    return {"stamp": [e.stamp_ns if e.stamp_ns is not None else 0 for e in entries],
            "has_stamp": [e.stamp_ns is not None for e in entries],
            "res": [e.resolution_ns for e in entries], "dist": [e.distance_ns for e in entries]}


def _code_columns(entries: list[Entry]) -> dict[str, list[int]]:
    """status and basis as indices into STATUSES and BASES (0 and 1 for one not listed)."""
    return {"status": [STATUSES.index(e.status) if e.status in STATUSES else 0 for e in entries],
            "basis": [BASES.index(e.basis) if e.basis in BASES else 1 for e in entries]}


class Timeline:
    """The ordered timeline: columns sorted as order_arrays sorts them, each row's block, exact
    unordered count and nearest unordered entries; rows materialised on demand."""

    def __init__(self, table: EntryTable, reports: list[dict[str, Any]],
                 unplaced: list[dict[str, Any]],
                 widen_by: dict[str, tuple[float, float]] | None = None) -> None:
        self.c = c = table.columns()
        if widen_by:
            full = {k: np.array(c[k]) for k in c}
            _widen(full, table.devices, widen_by)
            for k in c:
                c.put(k, full.pop(k), "lo" if k in REF_LO else None)
        stamped = (c["basis"] == 0) & c["has_stamp"] & (c["clock"] >= 0)
        c.put("clock", np.where(stamped, c["clock"], np.int32(-1)).astype(np.int32))
        del stamped
        _sort(c)                                     # as order_arrays sorts them
        hi, st = c["hi"], c["stamp"]
        block, count = order_sorted(c["lo"], hi, c["clock"], st, c["res"])
        self.o = Columns(c.n)           # block and count, narrow (a million rows: 1-3 MB)
        self.o.put("block", block)
        del block
        self.o.put("count", count)
        self.near = NearRows(nearest_unordered(c["lo"], hi, c["clock"], st, c["res"], count,
                                               relative=True))
        del count, hi, st
        self.table, self.reports, self.unplaced = table, reports, unplaced
        give_back()

    @property
    def block(self) -> npt.NDArray[np.int64]:
        return np.asarray(self.o["block"])

    @property
    def count(self) -> npt.NDArray[np.int64]:
        return np.asarray(self.o["count"])

    def __len__(self) -> int:
        return self.c.n

    def source(self, i: int) -> LogTexts | EntryTexts:
        return self.table.sources[int(self.c.part("src", i))]

    def entry(self, i: int) -> Entry:
        t = self.table
        c = {k: self.c.part(k, i) for k in self.c}
        dev, plane = t.devices[int(c["dev"])]
        src, k = self.source(i), int(c["idx"])
        basis = BASES[int(c["basis"])]
        ck = int(c["clock"])
        return Entry(dev, plane, src.label(k), int(c["lo"]), int(c["hi"]), basis,
                     t.clock_names[ck] if ck >= 0 else None,
                     int(c["stamp"]) if c["has_stamp"] else None, int(c["res"]),
                     src.raw(k), t.cal_names[int(c["cal"])],
                     STATUSES[int(c["status"])], int(c["dist"]))

    def unordered_with(self, i: int) -> list[int]:
        row = self.near[i]
        return sorted(int(x) for x in row[row >= 0])

    def row(self, i: int) -> dict[str, Any]:
        """A row as bench.analysis.timeline_order.order gives it, with `log` (the user's log file
        the entry came from, "" for the run's own)."""
        return {"index": i, "block": int(self.o.part("block", i)), "entry": self.entry(i),
                "unordered_with": self.unordered_with(i),
                "unordered_count": int(self.o.part("count", i)), "log": self.source(i).log}

    def rows(self, a: int = 0, b: int | None = None) -> list[dict[str, Any]]:
        return [self.row(i) for i in range(a, min(len(self), len(self) if b is None else b))]

    @property
    def blocks(self) -> int:
        return int(self.o.part("block", len(self) - 1)) + 1 if len(self) else 0

    @property
    def unordered(self) -> int:
        return int(np.count_nonzero(self.count))


class NearRows:
    """The nearest-unordered lists of a timeline's rows, kept as int16 (int8 where they fit)
    offsets from each row
    (bench.analysis.timeline_order.nearest_unordered, relative=True: half the memory) and given back
    as the absolute (rows, cap) int32 indices, -1 padded, that `near[i]` / `near[a:b]` index."""

    def __init__(self, offsets: npt.NDArray[Any]) -> None:
        if len(offsets) and -128 <= int(offsets.min()) and int(offsets.max()) <= 127:
            offsets = offsets.astype(np.int8)        # the nearest within 127 rows: 1 byte each
        self.d = offsets

    def __len__(self) -> int:
        return len(self.d)

    def __getitem__(self, key: int | slice) -> npt.NDArray[np.int32]:
        d = self.d[key].astype(np.int32)
        rows: Any = np.arange(*key.indices(len(self.d)), dtype=np.int32)[:, None] \
            if isinstance(key, slice) else np.int32(key + len(self.d) if key < 0 else key)
        return np.where(d == 0, np.int32(-1), rows + d).astype(np.int32)


def _sort(c: Columns) -> None:
    """The columns' rows sorted by lo, then hi (a stable sort: np.lexsort's order); rows
    already in that order (a log in time order) are not copied."""
    lo, hi = c["lo"], c["hi"]
    if len(lo) < 2:
        return
    step = np.diff(lo)
    done = bool((step >= 0).all()) and bool(((step > 0) | (np.diff(hi) >= 0)).all())
    del step
    if not done:
        perm = np.lexsort((hi, lo))
        del lo, hi
        c.take(perm)


def _widen(c: Cols, devices: list[tuple[str, str]], lat: dict[str, tuple[float, float]]) -> None:
    """From the instant a device stamped a line to the instant of the event it logs (as
    bench.analysis.timeline_order.widen, over the columns)."""
    for d, (name, _) in enumerate(devices):
        if name not in lat:
            continue
        lo_lat, hi_lat = math.floor(lat[name][0]), math.ceil(lat[name][1])     # outward
        m = (c["dev"] == d) & (c["basis"] == 0)
        c["lo"][m] -= hi_lat
        c["hi"][m] -= lo_lat
        c["basis"][m] = BASES.index("event")
        c["clock"][m] = -1
        c["has_stamp"][m] = False
        c["res"][m] = 0
