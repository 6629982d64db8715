"""The run folder's JSON and CSV documents as frozen records: manifest.json, summary.json,
truth.json and events.csv, read exactly as results/README.md documents them. Readers use these
fields instead of string keys. Writers build the same records and write their `to_dict()`
(bench/model/summary.py: the summary; drivers: `Identity`; bench/output/live.py: `Calibration`);
the manifest's other parts are still dicts (bench/run/experiment.py, bench/model/store.py).
A record read from a file serialises as it was read (`.raw`); one a writer built, from its fields.

Every record keeps the dict it was read from as `.raw` (compare=False): a key a newer bench
added is kept there and never breaks an older reader, and a key an older run folder lacks takes
its default (an empty string, zero, None, an empty tuple). A status string this bench does not
know stays a plain string beside the enum members it does know (bench.model.run_statuses.parse).
The summary's segments and breaks are the estimator's own `Segment` and `Break`
(bench.analysis.estimate) with what the summary adds (band, truth check); their bounds are
`Bound`s. Loaded segments carry no polygon: methods that need it (proven_offset_at, maps) are
for fits made in this process (the writer's `SegmentSummary.of_fit` keeps it), not for a summary
read back.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from bench.analysis.breaks import Break
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Bound, Segment
from bench.model.run_statuses import (
    BoundStatus,
    BreakKind,
    ErrorKind,
    ResolutionBasis,
    RunStatus,
    Verdict,
    parse,
)


def _d(x: object) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _l(x: object) -> list[Any]:
    return x if isinstance(x, list) else []


def _s(x: object) -> str:
    """A text field as written; a missing or null one is empty."""
    return str(x or "")


def _dict_or_none(x: object) -> dict[str, Any] | None:
    """A copy of an object field; None where it is missing or not an object."""
    return dict(x) if isinstance(x, Mapping) else None


def _read_stats(x: object) -> dict[str, Any] | None:
    """A clock's `read_stats` as written, or None where it is absent or not of its form (then
    compare judges from the samples)."""
    if not isinstance(x, Mapping) or _int(x.get("distinct_values"), None) is None:
        return None
    cis = [x.get(k) for k in ("bracket_ns", "jitter_ns") if k in x]
    if any(not _is_ci(c) for c in cis) or len(cis) == 1:
        return None
    return dict(x)


def _is_ci(c: object) -> bool:
    """Whether `c` is a confidence interval as written: a list of three numbers."""
    return isinstance(c, list) and len(c) == 3 and all(_float(v, None) is not None for v in c)


@overload
def _int(x: Any, default: int = 0) -> int: ...
@overload
def _int(x: Any, default: None) -> int | None: ...


def _int(x: Any, default: int | None = 0) -> int | None:
    try:
        return int(x) if x not in (None, "") else default
    except (TypeError, ValueError):
        return default


@overload
def _float(x: Any, default: float = 0.0) -> float: ...
@overload
def _float(x: Any, default: None) -> float | None: ...


def _float(x: Any, default: float | None = 0.0) -> float | None:
    try:
        return float(x) if x not in (None, "") else default
    except (TypeError, ValueError):
        return default


def _ns(x: Any, default: float = 0.0) -> float:
    """A count of ns as written: an int stays an int (a counter's offset near 1.8e18 ns has no
    ns left in a float), anything else a float."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    return _float(x, default)


def bound(x: object) -> Bound | None:
    """{"lo", "hi", "point"} as a Bound; a missing point is the middle (per-event latencies)."""
    x = _d(x)
    if x.get("lo") is None or x.get("hi") is None:
        return None
    lo, hi = x["lo"], x["hi"]      # as written: an int stays an int (a counter's offset near
    # 1.8e18 ns would lose hundreds of ns as a float)
    return Bound(lo, hi, x["point"] if x.get("point") is not None else (lo + hi) / 2)


def _rest(cls: type[Any], x: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `x` that are not fields of `cls`."""
    known = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in x.items() if k not in known}


class _RawMapping(Mapping[str, Any]):
    """The document's keys, read-only, for code outside the bench (notebooks, tests,
    experiments) that read `run.summary["devices"]` before this model existed. Bench modules
    read the fields."""
    raw: Mapping[str, Any]          # the document as read (a dataclass field of each subclass)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    # unhashable, as every Mapping (collections.abc.Mapping sets __hash__ = None)


# -- shared -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Identity:
    """Who the device says it is: what a driver returns (drivers.base.Driver.identity) and what
    the manifest and summary hold (`devices.<d>.identity`). `extra` is the driver's own; by
    convention its key `no_clock` lists parts of the device that keep no clock at all (reported
    as such in the summary)."""
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Identity:
        x = _d(x)
        return cls(_s(x.get("vendor")), _s(x.get("model")),
                   _s(x.get("serial")), _s(x.get("firmware")),
                   dict(_d(x.get("extra"))), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The manifest's form: `extra` only when the driver gave any (read: as read)."""
        if self.raw:
            return dict(self.raw)
        return {"vendor": self.vendor, "model": self.model, "serial": self.serial,
                "firmware": self.firmware, **({"extra": dict(self.extra)} if self.extra else {})}

    def __bool__(self) -> bool:
        """Read: the document had an identity; made by a driver: it says anything."""
        return bool(self.raw) or any((self.vendor, self.model, self.serial, self.firmware,
                                      self.extra))


@dataclass(frozen=True)
class ReferenceHealth:
    """A reference health snapshot (manifest `reference`, `reference_end`), or the whole run's
    (`reference_run`, and the summary's `reference`)."""
    source: str = ""
    basis: str = ""
    verified: bool = False
    grade: str = ""
    uncertainty_ns: int = 0
    detail: dict[str, Any] = field(default_factory=dict)      # the source's own figures
    note: str = ""
    problems: tuple[Any, ...] = ()
    checked_ns: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> ReferenceHealth | None:
        if not isinstance(x, Mapping) or not x:
            return None
        return cls(_s(x.get("source")), _s(x.get("basis")), bool(x.get("verified")),
                   _s(x.get("grade")), _int(x.get("uncertainty_ns")),
                   dict(_d(x.get("detail"))), _s(x.get("note")),
                   tuple(_l(x.get("problems"))), _int(x.get("checked_ns"), None), dict(x))


# -- manifest.json ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ClockInfo:
    """A clock as its device declared it (manifest `devices.<d>.clocks[]`)."""
    name: str
    resolution_ns: int | None = None
    counter: bool = False
    modulus_ns: int | None = None
    lag_ns: int = 0                   # the reading may lag the clock by this much (declared)
    free_running: str = ""            # the device's word that nothing disciplines it (its source)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> ClockInfo:
        x = _d(x)
        return cls(_s(x.get("name")), _int(x.get("resolution_ns"), None),
                   bool(x.get("counter")), _int(x.get("modulus_ns"), None),
                   _int(x.get("lag_ns")), _s(x.get("free_running")), dict(x))


@dataclass(frozen=True)
class DeviceEntry:
    """manifest `devices.<name>`: what the run knew of a device."""
    name: str
    plane: str = ""
    driver: str = ""
    identity: Identity = field(default_factory=Identity)
    clocks: tuple[ClockInfo, ...] = ()
    state: str = ""
    error: str = ""
    reads: int = 0                  # clock reads taken (the runner's count)
    probes: int = 0                 # probes planned and started
    late_probes: int = 0            # probes started >= 10 ms after their planned instant
    late_max_ns: int = 0            # the latest start after plan (ns)
    aims_yielded: int = 0           # aimed probes read at an exploration instant (no room)
    traffic: dict[str, Any] | None = None     # requests, logins, throttled, reconnects, per minute
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> DeviceEntry:
        x = _d(x)
        return cls(name, _s(x.get("plane")), _s(x.get("driver")),
                   Identity.of(x.get("identity")),
                   tuple(ClockInfo.of(c) for c in _l(x.get("clocks"))),
                   _s(x.get("state")), _s(x.get("error")),
                   _int(x.get("reads")), _int(x.get("probes")), _int(x.get("late_probes")),
                   _int(x.get("late_max_ns")), _int(x.get("aims_yielded")),
                   _dict_or_none(x.get("traffic")), dict(x))

    def clock(self, name: str) -> ClockInfo | None:
        return next((c for c in self.clocks if c.name == name), None)


@dataclass(frozen=True)
class Calibration:
    """manifest `calibration.<device>.<clock>`: how narrow a clock's offset got during the run
    and when (written by bench.output.live.LiveBounds.record)."""
    calibrated_after_s: float | None = None
    width_then_ns: float | None = None
    last_width_ns: float | None = None
    min_bracket_ns: float | None = None
    last_status: str = ""
    criterion: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Calibration:
        x = _d(x)
        return cls(_float(x.get("calibrated_after_s"), None), _float(x.get("width_then_ns"), None),
                   _float(x.get("last_width_ns"), None), _float(x.get("min_bracket_ns"), None),
                   _s(x.get("last_status")), _s(x.get("criterion")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        return {"calibrated_after_s": self.calibrated_after_s,
                "width_then_ns": self.width_then_ns, "last_width_ns": self.last_width_ns,
                "min_bracket_ns": self.min_bracket_ns, "last_status": self.last_status,
                "criterion": self.criterion}


@dataclass(frozen=True)
class Inventory:
    """manifest `inventory`: the rack without secrets (bench.config.inventory.RackConfig.public).
    `devices` and `limits` are the rack file's own tables (config, not results)."""
    name: str = ""
    reference: str = ""
    simulated: bool = False
    devices: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)     # the [rack] table's other keys (seed, ...)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Inventory:
        x = _d(x)
        return cls(_s(x.get("name")), _s(x.get("reference")),
                   bool(x.get("simulated")),
                   {k: dict(_d(v)) for k, v in _d(x.get("devices")).items()},
                   dict(_d(x.get("limits"))), _rest(cls, x), dict(x))

    def device(self, name: str) -> dict[str, Any]:
        return self.devices.get(name) or {}

    def drift_prior_ppm(self, device: str) -> float:
        """The device's drift prior (ppm), or the estimator's default."""
        return float(self.device(device).get("drift_prior_ppm", DEFAULT_DRIFT_PRIOR_PPM))

    def wander_ppm(self, device: str) -> float:
        return float(self.device(device).get("wander_ppm", 0.0))


@dataclass(frozen=True, eq=False)
class Manifest(_RawMapping):
    """manifest.json."""
    schema: int = 0
    run_id: str = ""
    experiment: str = ""
    experiment_file: str = ""
    status: RunStatus | str = ""
    error: str | None = None
    stopped_by: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    git: dict[str, Any] = field(default_factory=dict)
    host: Any = None
    argv: tuple[str, ...] = ()
    armed: bool = False
    simulated: bool = False
    rack_file: str = ""
    inventory: Inventory = field(default_factory=Inventory)
    reference: ReferenceHealth | None = None
    reference_run: ReferenceHealth | None = None
    reference_end: ReferenceHealth | None = None
    devices: dict[str, DeviceEntry] = field(default_factory=dict)
    probe_plan: dict[str, Any] = field(default_factory=dict)
    admission: dict[str, Any] = field(default_factory=dict)  # capacity against need (run/admission.py)
    runner: dict[str, Any] = field(default_factory=dict)     # processes and devices per process
    calibration: dict[str, dict[str, Calibration]] = field(default_factory=dict)
    started_ns: int | None = None
    probed_until_ns: int | None = None
    ended_ns: int | None = None
    duration_s: float | None = None
    pid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys this model does not type: an
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)  # experiment's own (`incident`),
    # a newer bench's
    schema_version: str = ""      # MAJOR.MINOR (bench/model/file_schemas.py); "" before it was written
    csv_schema_versions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, x: object) -> Manifest:
        if isinstance(x, Manifest):
            return x
        x = _d(x)
        return cls(
            _int(x.get("schema")), _s(x.get("run_id")), _s(x.get("experiment")),
            _s(x.get("experiment_file")), parse(RunStatus, _s(x.get("status"))),
            None if x.get("error") is None else str(x["error"]), _s(x.get("stopped_by")),
            dict(_d(x.get("parameters"))), dict(_d(x.get("versions"))), dict(_d(x.get("git"))),
            x.get("host"), tuple(_l(x.get("argv"))), bool(x.get("armed")),
            bool(x.get("simulated")), _s(x.get("rack_file")),
            Inventory.of(x.get("inventory")), ReferenceHealth.of(x.get("reference")),
            ReferenceHealth.of(x.get("reference_run")), ReferenceHealth.of(x.get("reference_end")),
            {n: DeviceEntry.of(n, d) for n, d in _d(x.get("devices")).items()},
            dict(_d(x.get("probe_plan"))),
            dict(_d(x.get("admission"))), dict(_d(x.get("runner"))),
            {dev: {c: Calibration.of(v) for c, v in _d(cl).items()}
             for dev, cl in _d(x.get("calibration")).items()},
            _int(x.get("started_ns"), None), _int(x.get("probed_until_ns"), None),
            _int(x.get("ended_ns"), None), _float(x.get("duration_s"), None),
            _int(x.get("pid"), None), _rest(cls, x), x, _s(x.get("schema_version")),
            {str(k): str(v) for k, v in _d(x.get("csv_schema_versions")).items()})

    def device(self, name: str) -> DeviceEntry:
        return self.devices.get(name) or DeviceEntry(name)

    def calibration_of(self, device: str, clock: str) -> Calibration | None:
        return self.calibration.get(device, {}).get(clock)

    def uncertainty_ns(self) -> int:
        """The reference uncertainty to add to every bracket (ns): the largest of the start
        snapshot, the run's series and the stop snapshot, as far as the manifest holds them."""
        return max(h.uncertainty_ns if h else 0 for h in
                   (self.reference, self.reference_run, self.reference_end))


# -- summary.json -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Band:
    """A segment's proven offset band sampled across it (ns); false when it has no point (a
    segment with no instant that has reads on both sides writes empty lists)."""
    t_ns: tuple[int, ...] = ()
    lo: tuple[float, ...] = ()
    hi: tuple[float, ...] = ()

    @classmethod
    def of(cls, x: object) -> Band | None:
        """None where the segment has no band (older folders), else the band as written, empty
        lists included."""
        x = _d(x)
        if "lo" not in x:
            return None
        return cls(tuple(_l(x.get("t_ns"))), tuple(_l(x.get("lo"))), tuple(_l(x.get("hi"))))

    def __bool__(self) -> bool:
        return bool(self.lo)

    def to_dict(self) -> dict[str, list[Any]]:
        return {"t_ns": list(self.t_ns), "lo": list(self.lo), "hi": list(self.hi)}

    def range(self) -> tuple[float, float, float]:
        """(lowest, highest, widest) offset the band allows."""
        return (float(min(self.lo)), float(max(self.hi)),
                float(max(h - lo for lo, h in zip(self.lo, self.hi))))


@dataclass(frozen=True)
class TruthCheck:
    """A segment's check against the simulated truth (summary `segments[].truth`): every proven
    quantity (the offset at the epoch, every band point, a proven mean drift) in `inside`; the
    assumed drift at the epoch apart (`drift_in`), never ANDed in, and so an assumed mean drift
    (`mean_drift_in`, not ANDed in where `mean_drift_proven` is False: one wider than ±R is cut
    to it and rests on no step in its window, which the model does not promise). `offset_ns` is
    the truth's exact offset in integer ns where truth.json holds the exact model (a float in
    older folders)."""
    offset_ns: float = 0.0            # an int as written (see _ns)
    offset_in: bool = False
    drift_ppm: float | None = None
    drift_in: bool = True             # absent in old folders: only the offset was checked
    band_in: bool = True              # absent in folders before the full check
    mean_drift_in: bool = True
    band_points: int = 0
    band_out_t_ns: tuple[int, ...] = ()
    mean_drift_ppm: float | None = None
    # the segment's mean drift is proven (its `mean_drift_ppm.status`; not a key of `truth`)
    mean_drift_proven: bool = True
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object, mean_drift: object = None) -> TruthCheck | None:
        """`mean_drift`: the segment's `mean_drift_ppm`, whose status says whether the mean
        drift checked is proven (absent in older folders: judged as proven)."""
        if not isinstance(x, Mapping) or not x:
            return None
        return cls(_ns(x.get("offset_ns")), bool(x.get("offset_in")),
                   _float(x.get("drift_ppm"), None), bool(x.get("drift_in", True)),
                   bool(x.get("band_in", True)), bool(x.get("mean_drift_in", True)),
                   _int(x.get("band_points")), tuple(x.get("band_out_t_ns") or ()),
                   _float(x.get("mean_drift_ppm"), None), mean_drift_proven(mean_drift), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form (a record read from one: as read)."""
        if self.raw:
            return dict(self.raw)
        return {"offset_ns": self.offset_ns, "offset_in": self.offset_in,
                "band_points": self.band_points, "band_in": self.band_in,
                "drift_ppm": self.drift_ppm, "drift_in": self.drift_in,
                **({"band_out_t_ns": list(self.band_out_t_ns)} if self.band_out_t_ns else {}),
                **({"mean_drift_ppm": self.mean_drift_ppm, "mean_drift_in": self.mean_drift_in}
                   if self.mean_drift_ppm is not None else {})}

    @property
    def inside(self) -> bool:
        """Every proven quantity holds the truth (the assumed drift is `drift_in`; an assumed
        mean drift's check is `mean_drift_in`, apart)."""
        return self.offset_in and self.band_in and (self.mean_drift_in or not self.mean_drift_proven)


def mean_drift_proven(mean_drift: object) -> bool:
    """Is a segment's mean drift (summary `mean_drift_ppm`) proven? A status other than
    "proven" (one cut to ±R, or a segment's assumed offsets) is not; none written is judged as
    proven (folders before the status)."""
    st = _d(mean_drift).get("status")
    return not st or st == BoundStatus.PROVEN


@dataclass(frozen=True)
class SegmentSummary(Segment):
    """A summary segment: the estimator's Segment plus its band and, on a simulated rack, the
    truth check (read back from summary.json it has no polygon; the writer's keeps the fit's).
    `offset_status`/`drift_status` are None in folders older than issue 11 (bench.model.verdict
    derives them)."""
    band: Band | None = None
    truth: TruthCheck | None = None
    gaps_ns: tuple[tuple[int, ...], ...] = ()    # spans of reads set aside: nothing proven inside
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> SegmentSummary:
        x = _d(x)
        off = bound(x.get("offset_ns")) or Bound(0.0, 0.0, 0.0)
        dr = bound(x.get("drift_ppm")) or Bound(0.0, 0.0, 0.0)
        st = {k: parse(BoundStatus, x[k]) if x.get(k) else None
              for k in ("offset_status", "drift_status")}
        # read back, a resolution may be None and a status None (older folders) or a newer
        # bench's string, where the estimator's Segment declares int and BoundStatus
        return cls(_int(x.get("start_ns")), _int(x.get("end_ns")), _int(x.get("reads")),
                   _int(x.get("epoch_ns")), off, dr, dict(_d(x.get("jitter_ns"))),
                   dict(_d(x.get("bracket_ns"))),
                   _int(x.get("resolution_ns"), None),  # type: ignore[arg-type]  # see above
                   _s(x.get("resolution_note")),
                   st["offset_status"], st["drift_status"],  # type: ignore[arg-type]  # see above
                   _s(x.get("drift_assumes")),
                   mean_drift=dict(x["mean_drift_ppm"]) if x.get("mean_drift_ppm") else None,
                   offset_line=bound(x.get("offset_line_ns")),
                   rate_needed_ppm=_float(x.get("rate_needed_ppm"), None),
                   span_offset=bound(x.get("span_offset_ns")),
                   band=Band.of(x.get("band")), truth=TruthCheck.of(x.get("truth"), x.get("mean_drift_ppm")),
                   gaps_ns=tuple(tuple(g) for g in _l(x.get("gaps_ns"))), raw=dict(x))

    @classmethod
    def of_fit(cls, sg: Segment, band: Band | None = None,
               truth: TruthCheck | None = None) -> SegmentSummary:
        """The summary's record of a fitted segment (the writer's: it keeps the polygon)."""
        own = {f.name: getattr(sg, f.name) for f in dataclasses.fields(Segment)}
        gaps = sg.as_dict().get("gaps_ns") or ()
        return cls(**own, band=band, truth=truth, gaps_ns=tuple(tuple(g) for g in gaps))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form: the estimator's, then the band and the truth check (a record
        read from a summary: as read)."""
        if self.raw:
            return dict(self.raw)
        return {**Segment.as_dict(self),
                **({"band": self.band.to_dict()} if self.band is not None else {}),
                **({"truth": self.truth.to_dict()} if self.truth is not None else {})}

    @property
    def mean_drift_ppm(self) -> dict[str, Any] | None:
        """summary.json's `mean_drift_ppm`: the proven mean drift over a stated window."""
        return self.mean_drift

    @property
    def span_offset_ns(self) -> Bound | None:
        """summary.json's `span_offset_ns`: every offset the reads allow from the segment's first
        read to its last with no unseen step there (assumed: limits say so)."""
        return self.span_offset

    @property
    def offset_line_ns(self) -> Bound | None:
        """summary.json's `offset_line_ns`: the single line's offset at the epoch (it holds only
        with no unseen break: assumed)."""
        return self.offset_line

    @property
    def bracket_median_ns(self) -> float | None:
        return _float(self.bracket_ns.get("median"), None)

    @property
    def span_s(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns) / 1e9)

    def offset_range(self) -> tuple[float, float, float]:
        """(lowest, highest, widest) offset the proven band allows over the segment's span (ns);
        the bound at the epoch when no band was written or it has no point."""
        if self.band:
            return self.band.range()
        o = self.offset_ns
        return float(o.lo), float(o.hi), float(o.hi - o.lo)

    def line(self) -> Callable[[npt.ArrayLike], npt.NDArray[np.float64]]:
        """The point fit: reference time (ns, scalar or array) -> offset ns (float)."""
        epoch, theta, rho = self.epoch_ns, self.offset_ns.point, self.drift_ppm.point * 1e-6
        return lambda t: theta + rho * (np.asarray(t, dtype=float) - epoch)


@dataclass(frozen=True)
class BreakRecord(Break):
    """A summary break: the estimator's Break (kind a BreakKind, or a newer bench's string)."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> BreakRecord:
        x = _d(x)
        kind = parse(BreakKind, str(x.get("kind") or "unknown"))
        return cls(kind, _int(x.get("after_ns")),  # type: ignore[arg-type]  # a newer bench's kind
                   _int(x.get("before_ns")), bound(x.get("size_ns")),
                   _int(x.get("ambiguous_reads")), raw=dict(x))

    @classmethod
    def of_fit(cls, b: Break) -> BreakRecord:
        return cls(b.kind, b.after_ns, b.before_ns, b.size_ns, b.ambiguous_reads)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw) if self.raw else Break.as_dict(self)


@dataclass(frozen=True)
class Outlier:
    t_ns: int
    value_ns: int
    reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Outlier:
        x = _d(x)
        return cls(_int(x.get("t_ns")), _int(x.get("value_ns")), _s(x.get("reason")),
                   dict(x))

    def to_dict(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        return {"t_ns": self.t_ns, "value_ns": self.value_ns, "reason": self.reason}


@dataclass(frozen=True)
class Wrap:
    """A counter wrap found between two reads."""
    after_ns: int
    before_ns: int

    @classmethod
    def of(cls, x: object) -> Wrap:
        x = _d(x)
        return cls(_int(x.get("after_ns")), _int(x.get("before_ns")))

    def to_dict(self) -> dict[str, int]:
        return {"after_ns": self.after_ns, "before_ns": self.before_ns}


@dataclass(frozen=True)
class Assumptions:
    """What every bound of a clock rests on (summary `clocks.<c>.assumptions`)."""
    drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM
    wander_ppm: float = 0.0
    resolution_ns: int | None = None
    resolution_basis: ResolutionBasis | str = ""
    reference_uncertainty_ns: int = 0
    rate_changes: str = ""
    rate_bound_ppm: float | None = None
    tick_lag_ns: int = 0
    unseen_step: dict[str, Any] | None = None   # {"size_ns", "probability", "within_s"}
    model: str = ""                   # the model the clock's proven bounds rest on, in words
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Assumptions | None:
        if not isinstance(x, Mapping) or not x:
            return None
        return cls(_float(x.get("drift_prior_ppm"), DEFAULT_DRIFT_PRIOR_PPM),
                   _float(x.get("wander_ppm")), _int(x.get("resolution_ns"), None),
                   parse(ResolutionBasis, _s(x.get("resolution_basis"))),
                   _int(x.get("reference_uncertainty_ns")), _s(x.get("rate_changes")),
                   _float(x.get("rate_bound_ppm"), None), _int(x.get("tick_lag_ns")),
                   _dict_or_none(x.get("unseen_step")),
                   _s(x.get("model")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        return {"drift_prior_ppm": self.drift_prior_ppm, "wander_ppm": self.wander_ppm,
                "resolution_ns": self.resolution_ns, "resolution_basis": self.resolution_basis,
                "reference_uncertainty_ns": self.reference_uncertainty_ns,
                "rate_changes": self.rate_changes, "rate_bound_ppm": self.rate_bound_ppm,
                "tick_lag_ns": self.tick_lag_ns,
                **({"unseen_step": dict(self.unseen_step)} if self.unseen_step else {}),
                "model": self.model}


DECIDED_KEYS = ("drift_target_ppm", "drift_decided", "drift_decided_after_s")


@dataclass(frozen=True)
class ClockSummary:
    """summary `devices.<d>.clocks.<name>`. `verdict` is "" in folders older than issue 11."""
    name: str
    reads: int = 0
    counter: bool = False
    resolution_declared_ns: int | None = None
    resolution_ns: int | None = None
    resolution_note: str = ""
    verdict: Verdict | str = ""
    assumptions: Assumptions | None = None
    segments: tuple[SegmentSummary, ...] = ()
    breaks: tuple[BreakRecord, ...] = ()
    outliers: tuple[Outlier, ...] = ()
    wraps: tuple[Wrap, ...] = ()
    note: str = ""
    zone_note: str = ""
    beyond_prior_note: str = ""
    stuck: dict[str, Any] | None = None         # {"reads", "span_s"} when the clock never advanced
    lag_seen_ns: int = 0              # the reading lags its clock by at least this (the fit's)
    update_ns: int = 0                # its value updates at most this often (an incommensurate tick)
    breaks_truth: dict[str, Any] | None = None  # simulated racks: the found breaks against the true ones
    # ADEV/MDEV/TDEV/MTIE/max |TE| per segment with CIs and bounds (bench.model.stability_export)
    stability: dict[str, Any] | None = None
    # what compare and trend judge of the reads (bench.model.summary.read_stats), so that they
    # read no samples: the longest segment's bracket and |residual| medians with their 95 % CIs
    read_stats: dict[str, Any] | None = None
    # when its drift is decided (bench.model.decided): drift_target_ppm, drift_decided,
    # drift_decided_after_s (None when decided); None in older folders
    decided: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def drift_target_ppm(self) -> float | None:
        """The width at which its drift counts as decided (bench.model.decided)."""
        return (self.decided or {}).get("drift_target_ppm")

    @property
    def drift_decided(self) -> bool | None:
        return (self.decided or {}).get("drift_decided")

    @property
    def drift_decided_after_s(self) -> float | None:
        return (self.decided or {}).get("drift_decided_after_s")

    @classmethod
    def of(cls, name: str, x: object) -> ClockSummary:
        x = _d(x)
        return cls(name, _int(x.get("reads")), bool(x.get("counter")),
                   _int(x.get("resolution_declared_ns"), None), _int(x.get("resolution_ns"), None),
                   _s(x.get("resolution_note")),
                   parse(Verdict, x["verdict"]) if x.get("verdict") else "",
                   Assumptions.of(x.get("assumptions")),
                   tuple(SegmentSummary.of(s) for s in _l(x.get("segments"))),
                   tuple(BreakRecord.of(b) for b in _l(x.get("breaks"))),
                   tuple(Outlier.of(o) for o in _l(x.get("outliers"))),
                   tuple(Wrap.of(w) for w in _l(x.get("wraps"))),
                   _s(x.get("note")), _s(x.get("zone_note")),
                   _s(x.get("beyond_prior_note")),
                   _dict_or_none(x.get("stuck")),
                   _int(x.get("lag_seen_ns")), _int(x.get("update_ns")),
                   _dict_or_none(x.get("breaks_truth")),
                   _dict_or_none(x.get("stability")),
                   _read_stats(x.get("read_stats")),
                   {k: x[k] for k in DECIDED_KEYS if k in x} or None, dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form (a record read from one: as read). Without a fit
        (`resolution_ns` None) the segments, breaks and outliers are empty and a note says why."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {
            "resolution_declared_ns": self.resolution_declared_ns, "reads": self.reads,
            "counter": self.counter,
            "assumptions": self.assumptions.to_dict() if self.assumptions else {}}
        if self.resolution_ns is None:
            out.update(segments=[], breaks=[], outliers=[], verdict=self.verdict)
        else:
            out.update(self._fit_dict())
        out.update(self._notes_dict())
        out.update(self._checks_dict())
        return out

    def _notes_dict(self) -> dict[str, Any]:
        """`stuck`, `note` and `zone_note`, where they are written."""
        out: dict[str, Any] = {}
        if self.stuck is not None:
            out["stuck"] = dict(self.stuck)
        if self.note or self.stuck is not None or self.resolution_ns is None:
            out["note"] = self.note         # why no fit, why stuck, or why its bounds are assumed
        if self.zone_note:
            out["zone_note"] = self.zone_note
        return out

    def _checks_dict(self) -> dict[str, Any]:
        """The truth check, stability, read statistics and decided keys, where they are written."""
        out: dict[str, Any] = {}
        if self.breaks_truth is not None:
            out["breaks_truth"] = dict(self.breaks_truth)
        if self.stability is not None:
            out["stability"] = dict(self.stability)
        if self.read_stats is not None:
            out["read_stats"] = dict(self.read_stats)
        if self.decided is not None:
            out.update(self.decided)
        return out

    def _fit_dict(self) -> dict[str, Any]:
        """The fit's part (bench.analysis.estimate.ClockFit.as_dict's keys) and the wraps."""
        return {"resolution_ns": self.resolution_ns, "resolution_note": self.resolution_note,
                "verdict": self.verdict, "segments": [sg.to_dict() for sg in self.segments],
                "breaks": [b.to_dict() for b in self.breaks],
                "outliers": [o.to_dict() for o in self.outliers],
                **({"beyond_prior_note": self.beyond_prior_note}
                   if self.beyond_prior_note else {}),
                **({"lag_seen_ns": self.lag_seen_ns} if self.lag_seen_ns else {}),
                **({"update_ns": self.update_ns} if self.update_ns else {}),
                "wraps": [w.to_dict() for w in self.wraps]}

    @property
    def last(self) -> SegmentSummary | None:
        return self.segments[-1] if self.segments else None

    @property
    def longest(self) -> SegmentSummary | None:
        """The segment with the most reads (the first of equals)."""
        return max(self.segments, key=lambda sg: sg.reads) if self.segments else None

    @property
    def tick_ns(self) -> int | None:
        """The resolution the fit used (the clock's, else its longest segment's)."""
        longest = self.longest
        return self.resolution_ns or (longest.resolution_ns if longest is not None else None)


@dataclass(frozen=True)
class LatencyBound(Bound):
    """A latency bound over events: the union of their bounds, the median midpoint, how many."""
    n: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "point": self.point, "n": self.n}


def _lo_hi(b: Bound) -> dict[str, Any]:
    return {"lo": b.lo, "hi": b.hi}


@dataclass(frozen=True)
class LatencyEvent:
    """One stimulus and what the device logged after it (summary `latency.<s>.events[]`)."""
    seq: int = 0
    s_ns: int | None = None
    e_ns: int | None = None
    logged_ns: Bound | None = None
    observed_ns: Bound | None = None
    event: str = ""
    pushed: str = ""
    logged_via: str = ""          # the segment(s) the stamp was mapped through, with the status
    logged_unbounded: str = ""    # why the entry's stamp gives no bound (logged_ns None)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> LatencyEvent:
        x = _d(x)
        return cls(_int(x.get("seq")), _int(x.get("s_ns"), None), _int(x.get("e_ns"), None),
                   bound(x.get("logged_ns")), bound(x.get("observed_ns")),
                   _s(x.get("event")), _s(x.get("pushed")),
                   _s(x.get("logged_via")), _s(x.get("logged_unbounded")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form: an event's bounds as lo and hi only; `event` with the log entry
        (whose stamp gives `logged_ns` or says why not), `pushed` with a pushed event."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"seq": self.seq, "s_ns": self.s_ns, "e_ns": self.e_ns}
        if self.observed_ns is not None:
            out["observed_ns"] = _lo_hi(self.observed_ns)
        if self.logged_ns is not None or self.logged_unbounded:
            out["event"] = self.event
        if self.pushed:
            out["pushed"] = self.pushed
        if self.logged_ns is not None:
            out.update(logged_ns=_lo_hi(self.logged_ns), logged_via=self.logged_via)
        elif self.logged_unbounded:
            out["logged_unbounded"] = self.logged_unbounded
        return out

    @property
    def bound(self) -> Bound | None:
        """The device-stamped bound, else the first fetch's."""
        return self.logged_ns or self.observed_ns

    @property
    def logged_status(self) -> BoundStatus:
        """The status of `logged_ns`: `logged_via`'s first word (older summaries: proven); a
        stamp mapped beyond its calibration's proven span (`extrapolated`) rests on no break
        between the span's edge and it: assumed."""
        word = self.logged_via.split(" ", 1)[0]
        if word == "extrapolated":
            return BoundStatus.ASSUMED
        return BoundStatus(word) if word in set(BoundStatus) else BoundStatus.PROVEN


@dataclass(frozen=True)
class Latency:
    """summary `devices.<d>.latency.<stimulus>`."""
    stimulus: str
    sent: int = 0
    events: tuple[LatencyEvent, ...] = ()
    logged_ns: LatencyBound | None = None
    observed_ns: LatencyBound | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> Latency:
        x = _d(x)
        evs = tuple(LatencyEvent.of(e) for e in _l(x.get("events")))

        def lb(y: object) -> LatencyBound | None:
            b = bound(y)
            return None if b is None else LatencyBound(b.lo, b.hi, b.point, _int(_d(y).get("n")))
        return cls(name, _int(x.get("sent"), len(evs)), evs, lb(x.get("logged_ns")),
                   lb(x.get("observed_ns")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        return {"events": [e.to_dict() for e in self.events],
                **({"logged_ns": self.logged_ns.to_dict()} if self.logged_ns else {}),
                **({"observed_ns": self.observed_ns.to_dict()} if self.observed_ns else {}),
                "sent": self.sent}


@dataclass(frozen=True)
class DeviceSummary:
    """summary `devices.<name>`."""
    name: str
    plane: str = ""
    identity: Identity = field(default_factory=Identity)
    state: str = ""
    errors: dict[str, int] = field(default_factory=dict)      # ErrorKind (or newer) -> count
    first_errors: dict[str, str] = field(default_factory=dict)
    clocks: dict[str, ClockSummary] = field(default_factory=dict)
    latency: dict[str, Latency] = field(default_factory=dict)
    no_clock: tuple[str, ...] = ()
    traps_lost: int | None = None     # traps a later state read showed were lost (PDUs)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> DeviceSummary:
        x = _d(x)
        return cls(name, _s(x.get("plane")), Identity.of(x.get("identity")),
                   _s(x.get("state")),
                   {parse(ErrorKind, k): _int(v) for k, v in _d(x.get("errors")).items()},
                   {parse(ErrorKind, k): str(v) for k, v in _d(x.get("first_errors")).items()},
                   {c: ClockSummary.of(c, v) for c, v in _d(x.get("clocks")).items()},
                   {s: Latency.of(s, v) for s, v in _d(x.get("latency")).items()},
                   tuple(str(p) for p in _l(x.get("no_clock"))),
                   _int(x.get("traps_lost"), None), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form (a record read from one: as read)."""
        if self.raw:
            return dict(self.raw)
        return {"plane": self.plane, "identity": self.identity.to_dict() if self.identity else {},
                "state": self.state, "errors": dict(self.errors),
                "first_errors": dict(self.first_errors),
                "clocks": {c: x.to_dict() for c, x in self.clocks.items()},
                "latency": {s: x.to_dict() for s, x in self.latency.items()},
                **({"no_clock": list(self.no_clock)} if self.no_clock else {}),
                **({"traps_lost": self.traps_lost} if self.traps_lost is not None else {})}

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def errors_text(self) -> str:
        """'timeout 3, protocol 1' or '0'."""
        return ", ".join(f"{k} {v}" for k, v in self.errors.items()) or "0"

    def fitted_clocks(self) -> list[str]:
        return [c for c, x in self.clocks.items() if x.segments]


@dataclass(frozen=True, eq=False)
class Summary(_RawMapping):
    """summary.json (an empty one when the run wrote none)."""
    schema: int = 0
    rebuilt: bool = False
    reference: ReferenceHealth | None = None
    reference_uncertainty_ns: int = 0
    devices: dict[str, DeviceSummary] = field(default_factory=dict)
    unused_devices: tuple[str, ...] = ()      # devices the experiment never used
    # per device, requests per minute: {"minutes", "total", "by_kind", "reconnects"}
    # (bench.model.traffic.request_rates); absent for folders without counts by kind
    requests_per_min: dict[str, dict[str, Any]] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    schema_version: str = ""      # MAJOR.MINOR (bench/model/file_schemas.py); "" before it was written

    @classmethod
    def of(cls, x: object) -> Summary:
        if isinstance(x, Summary):
            return x
        x = _d(x)
        return cls(_int(x.get("schema")), bool(x.get("rebuilt")),
                   ReferenceHealth.of(x.get("reference")), _int(x.get("reference_uncertainty_ns")),
                   {n: DeviceSummary.of(n, d) for n, d in _d(x.get("devices")).items()},
                   tuple(str(n) for n in _l(x.get("unused_devices"))),
                   {str(n): dict(_d(r)) for n, r in _d(x.get("requests_per_min")).items()}, x,
                   _s(x.get("schema_version")))

    def device(self, name: str) -> DeviceSummary | None:
        return self.devices.get(name)

    def clocks(self) -> Iterator[tuple[DeviceSummary, ClockSummary]]:
        """(device summary, clock summary) of every clock, devices in name order."""
        for name in sorted(self.devices):
            d = self.devices[name]
            for c in d.clocks.values():
                yield d, c


# -- truth.json -------------------------------------------------------------------------------

@dataclass(frozen=True)
class TruthBreak:
    kind: BreakKind | str
    t_ns: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class TruthClock:
    """A simulated clock's true offset and drift on a grid of reference instants (no grid for a
    clock whose truth cannot be known; bench.sim.clock_model.ClockModel.truth)."""
    name: str
    t_ns: tuple[int, ...] = ()
    offset_ns: tuple[float, ...] = ()
    drift_ppm: tuple[float, ...] = ()
    resolution_ns: int | None = None
    counter: bool = False
    breaks: tuple[TruthBreak, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> TruthClock:
        x = _d(x)
        return cls(name, tuple(_l(x.get("t_ns"))), tuple(_l(x.get("offset_ns"))),
                   tuple(_l(x.get("drift_ppm"))), _int(x.get("resolution_ns"), None),
                   bool(x.get("counter")),
                   tuple(TruthBreak(parse(BreakKind, str(_d(b).get("kind") or "")),
                                    _int(_d(b).get("t_ns")), dict(_d(b)))
                         for b in _l(x.get("breaks"))), dict(x))


@dataclass(frozen=True)
class TruthDevice:
    name: str
    clocks: dict[str, TruthClock] = field(default_factory=dict)
    events: tuple[dict[str, Any], ...] = ()          # as the emulators recorded them
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, eq=False)
class Truth(_RawMapping):
    """truth.json (simulated racks)."""
    schema: int = 0
    t0_ns: int | None = None
    devices: dict[str, TruthDevice] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, x: object) -> Truth | None:
        if x is None or isinstance(x, Truth):
            return x
        x = _d(x)
        return cls(_int(x.get("schema")), _int(x.get("t0_ns"), None), {
            n: TruthDevice(n, {c: TruthClock.of(c, v) for c, v in _d(_d(d).get("clocks")).items()},
                           tuple(_l(_d(d).get("events"))), dict(_d(d)))
            for n, d in _d(x.get("devices")).items()}, x)

    def clock(self, device: str, clock: str) -> TruthClock | None:
        d = self.devices.get(device)
        return d.clocks.get(clock) if d else None


# -- events.csv -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """One line of the run journal (events.csv)."""
    t_ns: int
    device: str
    level: str
    kind: str
    message: str


def load_events(path: str | Path) -> list[Event]:
    """events.csv of a run folder; a line cut short by a run that died is skipped."""
    p = Path(path)
    if not p.exists():
        return []
    from bench import saferead
    out = []
    for row in saferead.csv_rows(p):
        t = _int(row.get("t_ns"), None)
        if t is None or row.get("message") is None:
            continue
        out.append(Event(t, row.get("device") or "", row.get("level") or "",
                         row.get("kind") or "", row.get("message") or ""))
    return out
