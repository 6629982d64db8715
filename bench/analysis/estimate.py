"""Provable offset and drift bounds of one device clock from bracketed reads (DESIGN.md,
"The measurement model").

Within a segment the device clock is D(t) = t + θ + ρ·(t − t0). A read (s, e, v) with resolution q
says the device sampled at some instant in [s, e] and its true reading then lay in [v, v + q):

    θ + ρ·(s − t0) < v + q − s          θ + ρ·(e − t0) ≥ v − e

In the (ρ, θ) plane every read adds one upper and one lower half-plane. For a fixed ρ the offset is
bounded by the lower envelope g(ρ) = max_i(v_i − e_i − ρ·(e_i − t0)) (convex) and the upper one
h(ρ) = min_i(v_i + q − s_i − ρ·(s_i − t0)) (concave); the region is {g ≤ h} within the drift prior
|ρ| ≤ P, a convex polygon whose vertices are the breakpoints of both envelopes. The envelopes are
upper hulls of lines (a numpy sort by slope, then a monotone chain: O(n log n) per fit, no general
LP ever solved). The extremes of anything linear in
(θ, ρ) lie at the vertices: offset at any epoch, drift, and the linear-fractional map of a device
timestamp back to reference time. Hand-written because no library gives exact, outward-rounded
2-D half-plane intersection on int64 nanosecond data (scipy's HalfspaceIntersection needs an
interior point, i.e. an LP, and works in plain float). Epoch-scale integers (~1.8e18 ns) are
reduced in int64 by the epoch t0 and a first guess θ0 before anything becomes a float.

Wander: a real oscillator's frequency moves. We choose an *allowance*, not windows: the caller
states `wander_ns_per_s` = w, a bound on how far the frequency strays from its value at the epoch
over the segment (ns/s = ppb). Then |D(t) − (t + θ + ρ·(t − t0))| ≤ w·|t − t0|, every constraint is
loosened by that much, and (θ, ρ) are the tangent at the epoch: the true offset and the true
instantaneous drift at t0 stay inside the region; the reported drift bound is widened by w so that
it holds for the drift at every instant of the segment. It keeps all reads in one fit (the tick-edge
reads that pin a coarse clock are rare, and windows would throw them away), costs nothing when
w = 0, and a w too small shows up as a break ("unknown" kind), never as a silently wrong bound.
Its coverage and what the allowance costs in width: benchmarks/estimator_mc.py, measured in
benchmarks/README.md.

Resolution: the driver declares q; the values say what the clock delivers: the true tick divides
every gap between distinct values, so max(declared, GCD of the gaps) is never finer than it, from
the second distinct value on (check_resolution). A coarser q only loosens constraints while a
finer one than the truth breaks proofs; with one distinct value nothing bounds it ("unproven").

Segmentation (bench/analysis/segment.py): an empty region is a model break; the series is split there;
a read is set aside only when it is inconsistent with the segments on both sides of it. The
search asks "is this window feasible?" O(log n) times per run; that test is a 1-D cutting-plane
minimisation of g − h (numpy, no hull), and the hull is built once per segment.

What is published (fit_clock, Segment.proven_offset_at, Segment.proven_to_reference) holds even
with one break inside a segment that the reads could not show (a step below the detection
threshold, a change of frequency): it is the hull of the bounds from the reads on each side of
the instant. The drift prior is a checked assumption (fit_clock). DESIGN.md, "The measurement
model", has the reasoning.

Drift at the epoch is "assumed", never "proven" (RATE_CHANGE_ASSUMPTION). The drift at an
instant is the clock's instantaneous frequency there, and no set of reads bounds it more tightly
than the prior once two rate changes may go unseen (an NTP slew is two: it starts and it ends).
The argument: let the slew run at ρm over [t1, t2] around the epoch and at ρa outside. It moves
the offset by (ρm − ρa)·(t2 − t1) against the unslewed line; every read allows its bracket plus
its tick of slack, so whenever (ρm − ρa)·(t2 − t1) is small against the slack the reads leave
around the line (and no read, or too few to pin a slope, falls inside [t1, t2]) a line still
meets every read's constraint and the region is not empty: nothing is seen. For any ρm within the prior
there is such a short slew, so the set of drifts consistent with the reads at the epoch is the whole prior,
and beyond the prior
(a slew faster than it, equally unseen) nothing bounds it at all. The two-sided hull survives
one unseen change (one side of the epoch is clean), not two (neither is); a hull over more
sub-windows or chords of the offset bounds measures a mean frequency over a window, not the
frequency at an instant, and fails in the same way. So the published drift bound (the two-sided
hull, as tight as before) holds under a named assumption that no reads can check, "at most one
rate change inside the segment that the reads do not show", and says so: drift_status
"assumed" with that assumption in `drift_assumes` and in the summary's assumptions. The offsets,
the band, the maps and the break sizes stay "proven": a slew is continuous, the reads on each
side pin the offset near the instant, and the fuzz checks them under slews
(benchmarks/README.md).

The estimator's modules, each named for what it holds: bench/analysis/polygon.py (the region's
geometry), bench/analysis/proven_segment.py (the segment record and its proven sides),
bench/analysis/line_fit.py (one line through a run), bench/analysis/breaks.py (the split, the
wider-prior check, the breaks' kinds and sizes), bench/analysis/publish.py (what a segment
publishes), bench/analysis/step_risk.py (the unseen-step risk), bench/analysis/resolution.py
(tick, lag, update); this one runs them (fit_clock) and holds the result (ClockFit).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace as _dc_replace
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from bench.analysis import rate_check as _rate
from bench.analysis.arrays import I64, Idx
from bench.analysis.breaks import Break, Outlier, _breaks_of, _outliers_of, _split_checked, cut_starts
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Segment
from bench.analysis.publish import _segment
from bench.analysis.resolution import _fit_resolution, _lag_found, _no_tick_fits
from bench.analysis.statuses import BoundStatus, ResolutionBasis, Verdict, worst
from bench.analysis.step_risk import _step_history

STATUSES = tuple(BoundStatus)


@dataclass(frozen=True)
class ClockFit:
    segments: list[Segment]
    breaks: list[Break]
    outliers: list[Outlier]
    resolution_ns: int
    resolution_note: str
    verdict: Verdict = Verdict.UNDECIDED
    drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM     # the range the segments were fitted in
    resolution_basis: ResolutionBasis = ResolutionBasis.UNPROVEN
    beyond_note: str = ""
    lag_seen_ns: int = 0          # the reading lags its clock by at least this (lag_seen)
    update_ns: int = 0            # ... and updates at most this often (update_bound)
    pinned_ns: float | None = None   # how tightly the reads pin the offset (rate_check)
    rate_assumed: str = ""        # why the rate bound is assumed, not checked by the reads
    unknown_breaks: int = 0       # breaks with no step to show (a lag or rate beyond the model)
    steps_seen: int = 0           # steps the clock showed (STEP_HISTORY of them: assumed)
    hide_ns: int = 0              # its one step was at least this, and one that size can hide
    rate_basis: str = ""          # the device's claim the rate bound rests on (_claimed_free)

    def segment_at(self, t_ns: int) -> Segment | None:
        """The segment whose span holds t_ns (or None)."""
        for sg in self.segments:
            if sg.start_ns <= t_ns <= sg.end_ns:
                return sg
        return None

    def as_dict(self) -> dict[str, Any]:
        """The summary's form; an outlier is {"t_ns" (its bracket's middle), "value_ns",
        "reason"}."""
        return {"resolution_ns": self.resolution_ns, "resolution_note": self.resolution_note,
                "verdict": self.verdict,
                "segments": [s.as_dict() for s in self.segments],
                "breaks": [b.as_dict() for b in self.breaks],
                "outliers": [{"t_ns": (o["s_ns"] + o["e_ns"]) // 2, "value_ns": o["value_ns"],
                              "reason": o["evidence"]} for o in self.outliers],
                **_those_set(beyond_prior_note=self.beyond_note, lag_seen_ns=self.lag_seen_ns,
                             update_ns=self.update_ns, rate_assumed=self.rate_assumed,
                             unknown_breaks=self.unknown_breaks, steps_seen=self.steps_seen,
                             step_could_hide_ns=self.hide_ns)}

    @property
    def rate_check_s(self) -> float:
        """The shortest stretch over which a rate of twice the bound shows (rate_check)."""
        return _rate.check_horizon_s(self.pinned_ns, self.drift_prior_ppm)


def _those_set(**fields: Any) -> dict[str, Any]:
    """The fields whose value is set (true), in their order: a summary omits the others."""
    return {k: x for k, x in fields.items() if x}


def wander_allowance_ns_per_s(wander_ppm_per_sqrt_hour: float, span_s: float,
                              k: float = 5.0) -> float:
    """An allowance for a frequency random walk of the given strength (its std over one hour,
    ppm): k standard deviations of its excursion over the span, in ns/s."""
    return k * float(wander_ppm_per_sqrt_hour) * math.sqrt(max(float(span_s), 1.0) / 3600.0) * 1e3


class _FitOptions(TypedDict):
    """fit_clock's keyword arguments, passed on as they came."""
    drift_prior_ppm: float
    wander_ns_per_s: float
    uncertainty_ns: int
    lag_ns: int
    epoch_ns: int | None
    publish: bool
    cuts_ns: Sequence[tuple[int, int]]


def fit_clock(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, resolution_ns: int,
              *, drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM, wander_ns_per_s: float = 0.0,
              uncertainty_ns: int = 0, lag_ns: int = 0, epoch_ns: int | None = None,
              publish: bool = True, cuts_ns: Sequence[tuple[int, int]] = (),
              unchecked_prior_ppm: float | None = _rate.DISCIPLINED_PRIOR_PPM,
              free_running: str = "") -> ClockFit:
    """_fit_clock, then how far the reads check the rate bound (bench.analysis.rate_check):
    when they cannot show a rate of twice the bound within RATE_CHECK_S, the bound is assumed
    (`rate_assumed`) and the clock is fitted again under `unchecked_prior_ppm` (a disciplined
    clock's rate; None: keep the prior): reads that fit one line do not show the clock free-
    running when they pin it too loosely to show its corrections.

    `free_running`: the device's own word that nothing disciplines this clock (its source, e.g.
    "Redfish NTP.ProtocolEnabled=false"). Where the reads cannot check the prior and show no
    correction, the prior stands under that named assumption instead (`rate_basis`), at the
    statuses of the fit under the disciplined rate at best (_claimed_free): the claim narrows
    the bounds, it never makes one proven that the fallback did not.

    Why ±600 ppm by default: a device's crystal is specified to ±20–100 ppm over temperature and
    ageing, and a clock being slewed by ntpd runs up to 500 ppm off its crystal (the kernel PLL's
    limit, MAXFREQ); chrony slews faster (its maxslewrate is 83,333 ppm) but only while
    correcting a large offset, which the wider range (±6,000 ppm) catches and reports."""
    kw: _FitOptions = {"drift_prior_ppm": drift_prior_ppm, "wander_ns_per_s": wander_ns_per_s,
                       "uncertainty_ns": uncertainty_ns, "lag_ns": lag_ns, "epoch_ns": epoch_ns,
                       "publish": publish, "cuts_ns": cuts_ns}
    fit = _fit_clock(s_ns, e_ns, value_ns, resolution_ns, **kw)
    if not publish or fit.rate_assumed:
        return fit
    fit = _dc_replace(fit, pinned_ns=_rate.pinned_width_ns(fit.segments))
    if _rate.checked(fit.pinned_ns, fit.drift_prior_ppm):
        return fit
    return _unchecked(fit, (s_ns, e_ns, value_ns), resolution_ns, kw, unchecked_prior_ppm,
                      free_running)


def _unchecked(fit: ClockFit, reads: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
               resolution_ns: int, kw: _FitOptions, unchecked_prior_ppm: float | None,
               free_running: str) -> ClockFit:
    """fit_clock's fit whose reads cannot check its rate bound: refitted under the disciplined
    rate (or kept, with the claim of a free-running clock where it holds), the bound assumed."""
    s_ns, e_ns, value_ns = reads
    prior, before, own = fit.drift_prior_ppm, fit.rate_check_s, fit
    corrected = any(sg.offset_line is None for sg in fit.segments)   # no line fits: disciplined
    refit = unchecked_prior_ppm is not None and unchecked_prior_ppm > prior
    if refit:
        kw["drift_prior_ppm"] = float(unchecked_prior_ppm or 0)
        # split where the prior breaks (a step shows as before), bound under the wider rate
        fit = _fit_clock(s_ns, e_ns, value_ns, resolution_ns, **kw, split_prior_ppm=prior)
        fit = _dc_replace(fit, pinned_ns=_rate.pinned_width_ns(fit.segments))
    fit = _dc_replace(fit, rate_assumed=_rate.assumed_note(
        fit.pinned_ns, prior, before, fit.drift_prior_ppm if refit else None, corrected))
    if free_running and refit and not corrected:
        return _claimed_free(own, fit, free_running, before)
    return fit


_VERDICT_RANK = {Verdict.PROVEN: 0, Verdict.ASSUMED: 1, Verdict.BEYOND_PRIOR: 2,
                 Verdict.UNDECIDED: 3, Verdict.STUCK: 4}


def _claimed_free(own: ClockFit, wide: ClockFit, claim: str, horizon_s: float) -> ClockFit:
    """The fit under the prior (`own`) that the device's claim of a free-running clock keeps
    where the reads cannot check it, each status the worse of its own and that of the same
    segment under the disciplined rate (`wide`, split at the same rate: the same segments).
    `wide` itself where the segments differ, or where the claim costs a status: an offset or
    the verdict less sure under the prior than under the disciplined rate (a bound at the
    prior's edge, the reads asking for a rate near the claimed one) casts doubt on the claim.
    The claim is named in `rate_basis` and `rate_assumed`, the rate bound it supports assumed."""
    if [(a.start_ns, a.end_ns) for a in own.segments] != \
            [(b.start_ns, b.end_ns) for b in wide.segments] \
            or _VERDICT_RANK.get(own.verdict, 4) > _VERDICT_RANK.get(wide.verdict, 4) \
            or any(worst((a.offset_status, b.offset_status)) != b.offset_status
                   for a, b in zip(own.segments, wide.segments, strict=True)):
        return wide
    segs = [_dc_replace(a, offset_status=worst((a.offset_status, b.offset_status)),
                        drift_status=worst((a.drift_status, b.drift_status)),
                        mean_drift=_md_worst(a.mean_drift, b.mean_drift))
            for a, b in zip(own.segments, wide.segments, strict=True)]
    verdict = max(own.verdict, wide.verdict, key=lambda v: _VERDICT_RANK.get(v, 4))
    note = _rate.assumed_note(own.pinned_ns, own.drift_prior_ppm, horizon_s, None, False)
    return _dc_replace(own, segments=segs, verdict=verdict, rate_basis=claim,
                       rate_assumed=f"{note}; free-running per {claim} (the device's word)",
                       hide_ns=own.hide_ns or wide.hide_ns,
                       steps_seen=max(own.steps_seen, wide.steps_seen),
                       unknown_breaks=max(own.unknown_breaks, wide.unknown_breaks))


def _md_worst(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Mean drift `a` at the worse of its status and `b`'s (none where `b` has none)."""
    if a is None or b is None:
        return a if b is not None else None
    return {**a, "status": worst((a.get("status", BoundStatus.UNDECIDED),
                                  b.get("status", BoundStatus.UNDECIDED)))}


def _fit_clock(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike,
               resolution_ns: int, *, drift_prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM,
               wander_ns_per_s: float = 0.0, uncertainty_ns: int = 0, lag_ns: int = 0,
               epoch_ns: int | None = None, publish: bool = True,
               cuts_ns: Sequence[tuple[int, int]] = (),
               split_prior_ppm: float | None = None) -> ClockFit:
    """Segments with provable bounds, the breaks between them, and outliers, from one clock's
    ok reads in time order (int ns arrays: bracket start, bracket end, device value).

    The drift prior is an assumption and is checked: before a break or an outlier is believed,
    the window is tried with a drift range WIDE_PRIOR_FACTOR times wider; if that explains it,
    the clock is "beyond_prior" and every segment is refitted within the wider range (never a
    step). A bound whose polygon reaches the range's edge is "assumed", not "proven".

    `cuts_ns`: breaks (after_ns, before_ns) another clock of the device showed: no segment
    spans one. `split_prior_ppm`: split at this rate, bound under the prior (fit_clock)."""
    raw_s = np.asarray(s_ns, dtype=np.int64)
    raw_e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    kw: _FitOptions = {"drift_prior_ppm": drift_prior_ppm, "wander_ns_per_s": wander_ns_per_s,
                       "uncertainty_ns": uncertainty_ns, "lag_ns": lag_ns, "epoch_ns": epoch_ns,
                       "publish": publish, "cuts_ns": cuts_ns}
    if np.any(raw_e < raw_s):        # a bracket that ends before it starts proves nothing
        return _fit_without_invalid(raw_s, raw_e, v, resolution_ns, kw)
    q, note, basis = _fit_resolution(raw_s, raw_e, v, resolution_ns)
    prior = float(drift_prior_ppm)
    if len(v) == 0:
        return ClockFit([], [], [], q, note, Verdict.UNDECIDED, prior, basis)
    raw_s, raw_e, v, order = _time_order(raw_s, raw_e, v)
    u = int(uncertainty_ns)
    s, e = raw_s - u - int(lag_ns), raw_e + u     # a lagging tick moves each read's upper point
    seen, update, note, basis = _lag_found(s, e, v, q, prior, publish, note, basis)
    s = s - max(seen, update)
    w = float(wander_ns_per_s)
    sp, prior, beyond, shown = _split_checked(s, e, v, q, w, prior, split_prior_ppm, publish,
                                              cut_starts(raw_s, cuts_ns))
    segs = [_segment(s, e, v, raw_s, raw_e, q, note, run, sp, k, epoch_ns, w, prior, basis,
                     len(sp.runs) == 1, publish) for k, run in enumerate(sp.runs)]
    breaks = _breaks_of(sp, segs, s, e, q, prior)
    outliers = _outliers_of(sp, raw_s, raw_e, v, order)
    segs, unknown, steps, hide = _step_history(sp, breaks, segs, (s, e, v), q, prior, shown,
                                               bool(beyond and shown),
                                               seen or _no_tick_fits(beyond, basis, q,
                                                                     resolution_ns))
    return ClockFit(segs, breaks, outliers, q, note, _fit_verdict(segs, beyond, bool(outliers)),
                    prior, basis, beyond, seen, update, unknown_breaks=unknown, steps_seen=steps,
                    hide_ns=hide)


def _time_order(raw_s: I64, raw_e: I64, v: I64) -> tuple[I64, I64, I64, Idx | None]:
    """The reads sorted by bracket start (stable), and the permutation (None: already sorted)."""
    order = np.argsort(raw_s, kind="stable")
    if np.any(order != np.arange(len(order))):
        return raw_s[order], raw_e[order], v[order], order
    return raw_s, raw_e, v, None


def _fit_without_invalid(raw_s: I64, raw_e: I64, v: I64, resolution_ns: int, kw: _FitOptions
                         ) -> ClockFit:
    """fit_clock over the reads whose bracket does not end before it starts; those are outliers
    and the verdict is at best assumed."""
    bad = np.flatnonzero(raw_e < raw_s)
    invalid: list[Outlier] = [{"index": int(i), "s_ns": int(raw_s[i]), "e_ns": int(raw_e[i]),
                "value_ns": int(v[i]), "evidence": "bracket ends before it starts"}
               for i in bad]
    keep = np.flatnonzero(raw_e >= raw_s)
    fit = fit_clock(raw_s[keep], raw_e[keep], v[keep], resolution_ns, **kw)
    kept: list[Outlier] = [{**o, "index": int(keep[o["index"]])} for o in fit.outliers]
    verdict = fit.verdict if fit.verdict in (Verdict.BEYOND_PRIOR, Verdict.UNDECIDED) \
        else Verdict.ASSUMED
    return _dc_replace(fit, outliers=sorted(kept + invalid, key=lambda o: o["index"]),
                       verdict=verdict)


def _fit_verdict(segs: list[Segment], beyond: str, outliers: bool) -> Verdict:
    st = {sg.offset_status for sg in segs}
    return (Verdict.BEYOND_PRIOR if beyond else Verdict.UNDECIDED if BoundStatus.UNDECIDED in st
            else Verdict.ASSUMED if BoundStatus.ASSUMED in st or outliers else Verdict.PROVEN)
