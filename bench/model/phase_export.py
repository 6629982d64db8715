"""RUN/phase/: each clock's phase data, for scripts and for Stable32 and allantools (issue 45
item 1), written when the run is summarised (results/README.md documents the files).

Per clock two files, `<device>.<clock>.csv` and `<device>.<clock>.phase.txt`:

- the CSV: `t_s` (reference seconds from the run's start), `te_ns` (time error: device minus
  reference, the per-read offset of bench.analysis.stability.offset_series, v + q/2 minus the
  bracket's midpoint), `lo_ns`/`hi_ns` (the bound of the clock's segment at that instant,
  Segment.offset_at; empty outside every segment: before the first read, across a break),
  `kind` (`read`: a read's midpoint; `grid`: the series resampled onto the regular grid);
- the phase file: two columns, time (s from the run's start) and phase (s), on that regular grid,
  phase relative to the grid's first point (the CSV's first `grid` row holds its te_ns): what
  Stable32 and allantools (`np.loadtxt`, `data_type="phase"`) read, the same series whose ADEV
  bench.analysis.stability.summary() gives (bench.model.phase_export.stability).

The grid is the shortest round interval (bench.analysis.residuals.NICE_BINS_S) not below the
median read spacing; it is linearly interpolated between reads, which smooths the shortest taus,
and a break shows as a step in it. Everything is vectorised and written in chunks, so a clock of
10^6 reads costs a few arrays of 10^6, never a row object each."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from bench.analysis.arrays import F64, I64
from bench.analysis.residuals import NICE_BINS_S, coarse
from bench.analysis.stability import offset_series, resample

if TYPE_CHECKING:
    from bench.analysis.proven_segment import Segment
    from bench.model.documents import DeviceSummary
    from bench.model.rundata import Samples

FOLDER = "phase"
COLUMNS = ["t_s", "te_ns", "lo_ns", "hi_ns", "kind"]
READ, GRID = "read", "grid"
CHUNK = 1 << 16                 # rows formatted and written at a time


@dataclass(frozen=True)
class Phase:
    """One clock's time error at its reads and on the regular grid (reference ns, ns)."""

    read_t_ns: I64
    read_te_ns: F64
    grid_t_ns: I64
    grid_te_ns: F64
    interval_s: float
    coarse: bool = False        # the tick is coarser than the median bracket: the series is
                                # the tick's quantisation (bench.analysis.residuals.coarse)

    @property
    def phase_s(self) -> F64:
        """The grid's phase (s) relative to its first point, as stability.summary() takes it."""
        x = self.grid_te_ns
        out: F64 = (x - x[0]) * 1e-9 if len(x) else x.copy()
        return out


def grid_interval_s(t_ns: I64) -> float:
    """The shortest round interval not below the median spacing of the reads."""
    if len(t_ns) < 2:
        return NICE_BINS_S[0]
    spacing = float(np.median(np.diff(t_ns))) / 1e9
    return next((b for b in NICE_BINS_S if b >= spacing), NICE_BINS_S[-1])


def phase_of(s: I64, e: I64, v: I64, resolution_ns: float,
             interval_s: float | None = None) -> Phase:
    """The phase data of one clock's reads (time order): offset_series, then resample."""
    t, te = offset_series(s, e, v, resolution_ns)
    order = np.argsort(t, kind="stable")
    t, te = t[order], te[order]
    iv = grid_interval_s(t) if interval_s is None else float(interval_s)
    gt, gx = resample(t, te, iv)
    return Phase(t, te, gt, gx, iv, coarse(resolution_ns, np.asarray(e) - np.asarray(s)))


def bounds_at(t_ns: I64, segments: Iterable[Segment]) -> tuple[I64, I64, np.ndarray]:
    """(lo, hi, has) ns at each instant: the bound of the segment holding it (offset_at)."""
    lo = np.zeros(len(t_ns), dtype=np.int64)
    hi = np.zeros(len(t_ns), dtype=np.int64)
    has = np.zeros(len(t_ns), dtype=bool)
    for sg in segments:
        if not sg._x:              # read back from summary.json: no polygon, no bound
            continue
        i = np.flatnonzero((t_ns >= sg.start_ns) & (t_ns <= sg.end_ns) & ~has)
        for k in range(0, len(i), CHUNK):
            j = i[k:k + CHUNK]
            lo[j], hi[j] = sg.offset_bounds_many(t_ns[j])
        has[i] = True
    return lo, hi, has


def _t_s(t_ns: I64, t0_ns: int) -> list[str]:
    """Seconds from t0, exact to the ns (Python ints formatted, not numpy scalars: 2.6 times
    as fast, the same text)."""
    d = t_ns - np.int64(t0_ns)
    a = np.abs(d)
    return [f"{'-' if n else ''}{q}.{r:09d}"
            for n, q, r in zip((d < 0).tolist(), (a // 10**9).tolist(), (a % 10**9).tolist())]


def csv_lines(ph: Phase, segments: Iterable[Segment], t0_ns: int) -> Iterator[str]:
    """The CSV's lines (header first), reads and grid instants merged in time order, a chunk
    of rows at a time."""
    yield ",".join(COLUMNS) + "\n"
    t = np.concatenate((ph.read_t_ns, ph.grid_t_ns))
    te = np.concatenate((ph.read_te_ns, ph.grid_te_ns))
    kind = np.concatenate((np.zeros(len(ph.read_t_ns), dtype=bool),
                           np.ones(len(ph.grid_t_ns), dtype=bool)))
    order = np.argsort(t, kind="stable")
    segs = list(segments)
    for k in range(0, len(order), CHUNK):
        o = order[k:k + CHUNK]
        lo, hi, has = bounds_at(t[o], segs)
        ts = _t_s(t[o], t0_ns)
        yield "".join(
            f"{a},{x!r},{lo_ if h else ''},{hi_ if h else ''},{GRID if g else READ}\n"
            for a, x, lo_, hi_, h, g in zip(ts, te[o].tolist(), lo.tolist(), hi.tolist(),
                                            has.tolist(), kind[o].tolist()))


def phase_lines(ph: Phase, t0_ns: int) -> Iterator[str]:
    """The phase file's lines: time (s from the run's start) and phase (s), no header."""
    x = ph.phase_s
    for k in range(0, len(x), CHUNK):
        ts = _t_s(ph.grid_t_ns[k:k + CHUNK], t0_ns)
        yield "".join(f"{a} {p!r}\n" for a, p in zip(ts, x[k:k + CHUNK].tolist()))


def _write(f: IO[bytes], lines: Iterable[str]) -> None:
    for chunk in lines:
        f.write(chunk.encode("ascii"))


def file_names(device: str, clock: str) -> tuple[str, str]:
    """(CSV, phase file) names of one clock in RUN/phase/."""
    return f"{device}.{clock}.csv", f"{device}.{clock}.phase.txt"


def write_clock_phase(folder: str | Path, device: str, clock: str, ph: Phase,
                      segments: Iterable[Segment], t0_ns: int) -> tuple[Path, Path]:
    """Write FOLDER/phase/<device>.<clock>.csv and .phase.txt atomically (bench.safeio)."""
    from bench import safeio
    csv_name, txt_name = file_names(device, clock)
    with safeio.folder(Path(folder) / FOLDER) as d:
        with d.atomic(csv_name) as f:
            _write(f, csv_lines(ph, segments, t0_ns))
        with d.atomic(txt_name) as f:
            _write(f, phase_lines(ph, t0_ns))
        return d.path / csv_name, d.path / txt_name


def clock_phases(ds: DeviceSummary, smp: Samples, meta: Mapping[str, Any]) -> dict[str, Phase]:
    """The phase data of every clock of one device with at least one fitted segment and two
    reads (`meta`: bench.model.summary.device_meta, whose clocks unwrap counters as the fit
    did)."""
    clocks_meta = {c["name"]: c for c in meta.get("clocks", [])}
    out: dict[str, Phase] = {}
    for name, c in ds.clocks.items():
        if not c.segments:
            continue
        s, e, v, q, _ = smp.clock_reads(name, clocks_meta.get(name, {}))
        if len(s) < 2:
            continue
        res = float(c.resolution_ns or (int(q.max()) if len(q) else 1))
        out[name] = phase_of(s, e, v, res)
    return out


def write_device_phase(folder: str | Path, ds: DeviceSummary, smp: Samples,
                       meta: Mapping[str, Any], t0_ns: int,
                       phases: Mapping[str, Phase] | None = None) -> list[Path]:
    """The phase files of every clock of clock_phases (or `phases`, made by it)."""
    phases = clock_phases(ds, smp, meta) if phases is None else phases
    out: list[Path] = []
    for name, ph in phases.items():
        out += write_clock_phase(folder, ds.name, name, ph, ds.clocks[name].segments, t0_ns)
    return out


def stability(ph: Phase) -> dict[str, Any]:
    """bench.analysis.stability.summary() of the phase file's series (ADEV, OADEV, MDEV,
    TDEV, ...): the numbers the export is checked against."""
    from bench.analysis.stability import summary
    return summary(ph.grid_te_ns, ph.interval_s)
