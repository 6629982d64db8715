"""summary.json's clock record (`ClockSummary`: a clock's segments, breaks, bounds and verdict)
and the `Assumptions` every bound of a clock rests on."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.model.field_readers import (
    _d,
    _dict_or_none,
    _float,
    _int,
    _l,
    _read_stats,
    _s,
)
from bench.model.run_statuses import (
    ResolutionBasis,
    Verdict,
    parse,
)
from bench.model.segment_records import (
    BreakRecord,
    Outlier,
    SegmentSummary,
    Wrap,
)


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
