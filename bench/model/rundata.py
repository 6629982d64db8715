"""Load a run folder back: the public API for reports, notebooks and comparisons."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from bench import saferead
from bench.errors import RackclockError
from bench.model.documents import Event, Manifest, Summary, Truth, load_events
from bench.model.run_statuses import ErrorKind, RowStatus

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Samples:
    """One device's rows, as columns. Integer columns are int64 numpy arrays (missing: 0 with
    the `has_value` mask); strings are lists."""

    seq: I64
    kind: list[str]
    clock: list[str]
    s_ns: I64
    e_ns: I64
    value_ns: I64
    has_value: npt.NDArray[np.bool_]
    resolution_ns: I64
    stamp: list[str]
    status: list[str]
    raw: list[str]
    bad_rows: int = 0             # lines skipped: cut short, garbage, NUL bytes, over-long

    def __len__(self) -> int:
        return len(self.seq)

    def select(self, kind: str, clock: str | None = None, ok: bool = True) -> I64:
        """Indices of rows of this kind (and clock), only status ok unless ok=False."""
        return np.array([i for i in range(len(self.seq))
                         if self.kind[i] == kind and (clock is None or self.clock[i] == clock)
                         and (not ok or self.status[i] == RowStatus.OK)], dtype=int)

    def clock_reads(self, clock: str, meta: Mapping[str, Any] | None = None
                    ) -> tuple[I64, I64, I64, I64, I64]:
        """(s_ns, e_ns, value_ns, resolution_ns, wraps) of one clock's ok reads in time order.
        `meta` is the clock's manifest entry: a wrapping counter (`counter`, `modulus_ns`) is
        unwrapped with its tick (`resolution_ns`) as tolerance, and `wraps[i]` counts the wraps
        before read i (zeros otherwise). The one place the summary and the figures unwrap."""
        s, e, v, q = self.reads(clock)
        cm = meta or {}
        wraps = np.zeros(len(v), dtype=np.int64)
        if len(v) and cm.get("counter") and cm.get("modulus_ns"):
            from bench.analysis.counters import unwrap
            v, wraps = unwrap(s, e, v, int(cm["modulus_ns"]),
                              int(cm.get("resolution_ns") or q[0]))
        return s, e, v, q, wraps

    def reads(self, clock: str) -> tuple[I64, I64, I64, I64]:
        """(s_ns, e_ns, value_ns, resolution_ns) of the ok reads of one clock, in time order."""
        i = self.select("read", clock)
        i = i[self.has_value[i]] if len(i) else i
        order = np.argsort(self.s_ns[i], kind="stable") if len(i) else i
        i = i[order]
        return self.s_ns[i], self.e_ns[i], self.value_ns[i], self.resolution_ns[i]


INT64 = (-(2**63), 2**63 - 1)


def in_int64(x: int | None) -> bool:
    """Whether a value fits the int64 ns columns (years 1677-2262 as ns since the epoch)."""
    return x is None or INT64[0] <= x <= INT64[1]


def _int(x: str | None) -> int:
    return int(x) if x not in ("", None) else 0


def load_samples(path: str | Path, stream: IO[bytes] | None = None) -> Samples:
    """Read samples/<device>.csv, streamed (bench.saferead), or `stream` when given (an
    archive's member, bench.saferead.Archive; `path` then only names it); a line that is no row
    (cut short by a run that died, garbage, NUL bytes) is skipped and counted (`bad_rows`). A
    row whose value lies outside int64 ns (a stamp in year 1 or 9999) is kept as a malformed
    row with its raw text: it costs only itself, never the device's other rows."""
    cols: dict[str, list[Any]] = {k: [] for k in ("seq", "kind", "clock", "s_ns", "e_ns", "value_ns",
                                             "has_value", "resolution_ns", "stamp", "status", "raw")}
    count = saferead.LineCount()
    rows = saferead.csv_rows(path, count) if stream is None else \
        saferead.csv_rows_of(stream, count)
    for row in rows:
        try:
            seq, s, e, v, q = _row_numbers(row)
        except (TypeError, ValueError, KeyError):
            count.skipped += 1
            continue
        if not in_int64(v):
            v = _value_out_of_range(row)
        cols["seq"].append(seq)
        cols["s_ns"].append(s)
        cols["e_ns"].append(e)
        cols["value_ns"].append(v)
        cols["has_value"].append(row["value_ns"] not in ("", None))
        cols["resolution_ns"].append(q)
        for k in ("kind", "clock", "stamp", "status", "raw"):
            cols[k].append(row.get(k) or "")
    arr = {k: np.asarray(cols[k], dtype=np.int64) for k in ("seq", "s_ns", "e_ns", "value_ns",
                                                            "resolution_ns")}
    return Samples(arr["seq"], cols["kind"], cols["clock"], arr["s_ns"], arr["e_ns"],
                   arr["value_ns"], np.asarray(cols["has_value"], dtype=bool),
                   arr["resolution_ns"], cols["stamp"], cols["status"], cols["raw"],
                   count.skipped)


def _row_numbers(row: dict[str, str]) -> tuple[int, int, int, int, int]:
    """A row's seq, s_ns, e_ns, value_ns and resolution_ns; ValueError (or KeyError,
    TypeError) for a line that is no row the bench wrote. The value may lie outside int64."""
    if not row.get("status"):
        raise ValueError("no status")     # a line cut short by a run that died
    seq, s, e = int(row["seq"]), _int(row["s_ns"]), _int(row["e_ns"])
    v, q = _int(row["value_ns"]), _int(row["resolution_ns"])
    if not all(in_int64(x) for x in (seq, s, e, q)):
        raise ValueError("out of range")  # not a row the bench wrote
    return seq, s, e, v, q


def _value_out_of_range(row: dict[str, str]) -> int:
    """Mark a row whose value lies outside int64 ns malformed, its raw text kept; its value
    is then 0."""
    row["raw"] = f"value out of range: {row['value_ns']} ns; {row.get('raw') or ''}"
    row["status"], row["value_ns"] = ErrorKind.MALFORMED, ""
    return 0


@dataclass(frozen=True)
class Run:
    """A run folder read back: its documents as typed records (bench.model.documents; each
    keeps the file's dict as `.raw`, and reads like that dict for code written before the
    model), and its samples and journal on demand."""
    path: Path
    manifest: Manifest
    summary: Summary
    truth: Truth | None

    def __post_init__(self) -> None:       # a Run made from dicts (older callers) is typed all the same
        object.__setattr__(self, "manifest", Manifest.of(self.manifest))
        object.__setattr__(self, "summary", Summary.of(self.summary))
        object.__setattr__(self, "truth", Truth.of(self.truth))

    @property
    def devices(self) -> list[str]:
        return sorted(p.stem for p in (self.path / "samples").glob("*.csv"))

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.path.name

    def samples(self, device: str) -> Samples:
        return load_samples(self.path / "samples" / f"{device}.csv")

    def events(self) -> list[Event]:
        """The run journal (events.csv)."""
        return load_events(self.path / "events.csv")

    def clock_reads(self, device: str, clock: str) -> tuple[I64, I64, I64, I64]:
        """(s_ns, e_ns, value_ns, resolution_ns) of one clock's ok reads in time order, a
        wrapping counter unwrapped the way the summary fitted it (its modulus from the manifest)."""
        info = self.manifest.device(device).clock(clock)
        return self.samples(device).clock_reads(clock, info.raw if info else None)[:4]


class RunFolderError(RackclockError, ValueError):
    """A run folder's document that cannot be read (which, and why: one line)."""


def read_json(p: Path) -> Any:
    """A run folder's JSON object (bench.saferead: regular file, capped, no NaN/Infinity), or
    RunFolderError naming it and why."""
    try:
        return saferead.load_object(p)
    except saferead.FileFault as exc:
        raise RunFolderError(str(exc)) from None


def load_run(path: str | Path) -> Run:
    """A run folder read back: FileNotFoundError when it is none, RunFolderError when one of
    its documents cannot be read."""
    path = Path(path)
    if not (path / "manifest.json").exists():
        raise FileNotFoundError(f"{path} is not a run folder (no manifest.json)")

    def j(name: str) -> Any:
        p = path / name
        return read_json(p) if p.exists() else None

    return Run(path, Manifest.of(j("manifest.json") or {}), Summary.of(j("summary.json") or {}),
               Truth.of(j("truth.json")))


OLD_UNUSED = "not used by this experiment"


def unusable_devices(summary: Mapping[str, Any] | None) -> dict[str, str]:
    """Devices of a summary (dict or Summary) that gave no usable clock read, with the first
    error of each; a summary without devices measured nothing ("-")."""
    devices = Summary.of(summary or {}).devices
    if not devices:
        return {"-": "the run measured nothing"}
    out: dict[str, str] = {}
    for name, d in devices.items():
        if d.first_errors.get(ErrorKind.NOT_STARTED) == OLD_UNUSED:
            continue          # a folder older than `unused_devices`: the experiment never used it
        if sum(c.reads for c in d.clocks.values()) == 0:
            out[name] = "; ".join(f"{k}: {v}" for k, v in list(d.first_errors.items())[:1]) \
                or "no clock read"
    return out


MEASUREMENTS_FILE = "measurements.json"


def load_measurements(path: str | Path) -> list[dict[str, Any]]:
    """measurements.json of a run folder (empty list when the run recorded none)."""
    p = Path(path) / MEASUREMENTS_FILE
    return read_json(p).get("measurements", []) if p.exists() else []


def bound_from_manifest(manifest: Mapping[str, Any]) -> int:
    """The reference uncertainty to add to every bracket of a run (ns): the largest of the start
    snapshot, the run's series and the stop snapshot, as far as the manifest (dict or Manifest)
    holds them."""
    return Manifest.of(manifest).uncertainty_ns()
