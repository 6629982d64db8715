"""summary.json's segment and break records: a clock's fitted segments (`SegmentSummary`, the
estimator's `Segment` with what the summary adds: band, truth check), its breaks (`BreakRecord`),
outliers and counter wraps. Their bounds are `Bound`s (bench.analysis.estimate). Loaded segments
carry no polygon: methods that need it (proven_offset_at, maps) are for fits made in this process
(the writer's `SegmentSummary.of_fit` keeps it), not for a summary read back."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis.breaks import Break
from bench.analysis.proven_segment import Bound, Segment
from bench.model.field_readers import (
    _d,
    _float,
    _int,
    _l,
    _ns,
    _s,
    bound,
)
from bench.model.run_statuses import (
    BoundStatus,
    BreakKind,
    parse,
)


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
