"""What the report's first screen says per device clock: its offset and drift with their status,
breaks, errors, what the bounds assume, and how finely events on two planes can be ordered.

Statuses (summary.json's own where the summary has them, issue 11's contract):
  clock    "verdict": proven | assumed | beyond_prior | undecided
  segment  "offset_status" / "drift_status": proven | assumed | undecided
Older run folders lack these keys (None or "" in bench.model.documents); they are derived
here: a drift bound within 1 % of the ±prior edge rests on the prior ("assumed"); a clock
without a fit is "undecided"; everything else the estimator proved. The prior is the
inventory's `drift_prior_ppm` (default: bench.analysis.proven_segment.DEFAULT_DRIFT_PRIOR_PPM); a
clock whose reads could not check the default was fitted under a disciplined clock's rate
(bench.analysis.rate_check.DISCIPLINED_PRIOR_PPM), which its drift bounds reach and stay within;
else WIDE_PRIOR_FACTOR times the prior where a drift bound reaches beyond it: only the
estimator's refit of a clock beyond its prior gives such a bound ("beyond_prior").
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.analysis.breaks import WIDE_PRIOR_FACTOR
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM as DEFAULT_PRIOR_PPM  # noqa: F401
from bench.analysis.rate_check import DISCIPLINED_PRIOR_PPM
from bench.model.documents import (
    Assumptions,
    BreakRecord,
    ClockSummary,
    DeviceSummary,
    Manifest,
    SegmentSummary,
    Summary,
)
from bench.model.run_statuses import BoundStatus, ResolutionBasis, RunStatus, Verdict, worst
from bench.model.rundata import Run, unusable_devices
from bench.model.vocabulary import FAIL, PASS, UNDECIDED_VERDICT, verdict_word

if TYPE_CHECKING:
    from bench.model.limit_checks import Check


def device_inventory(manifest: Mapping[str, Any], device: str) -> dict[str, Any]:
    """The device's table of the run's rack file (manifest `inventory.devices`)."""
    return Manifest.of(manifest).inventory.device(device)


def _reaches_beyond(clock: ClockSummary, prior: float) -> bool:
    return any(sg.drift_ppm.lo < -1.01 * prior or sg.drift_ppm.hi > 1.01 * prior
               for sg in clock.segments)


def fitted_prior(clock: ClockSummary, prior: float, declared: bool = False) -> float:
    """The drift prior the clock was fitted with: the summary's, else `prior`, or (a summary
    without assumptions) where a segment's drift bound reaches beyond `prior`: the disciplined
    rate where the bounds stay within it and one reaches its edge (the reads did not check an
    undeclared prior, bench.analysis.rate_check), else the widened prior."""
    if clock.assumptions is not None:
        return clock.assumptions.drift_prior_ppm
    if not _reaches_beyond(clock, prior):
        return prior
    if not declared and prior < DISCIPLINED_PRIOR_PPM \
            and not _reaches_beyond(clock, DISCIPLINED_PRIOR_PPM) \
            and any(on_prior_edge(sg.drift_ppm.lo, sg.drift_ppm.hi, DISCIPLINED_PRIOR_PPM)
                    for sg in clock.segments):
        return DISCIPLINED_PRIOR_PPM
    return prior * WIDE_PRIOR_FACTOR


def assumptions(manifest: Manifest, summary: Summary, device: str,
                clock: ClockSummary) -> Assumptions:
    """The assumptions a clock's bounds rest on: the summary's where it names them, else the
    inventory's and the reference's."""
    if clock.assumptions is not None:
        return clock.assumptions
    inv = manifest.inventory
    return Assumptions(fitted_prior(clock, inv.drift_prior_ppm(device), declared(manifest, device)),
                       inv.wander_ppm(device),
                       clock.resolution_ns or clock.resolution_declared_ns,
                       ResolutionBasis.DECLARED if clock.resolution_ns in
                       (None, clock.resolution_declared_ns) else ResolutionBasis.OBSERVED,
                       summary.reference_uncertainty_ns)


def declared(manifest: Manifest, device: str) -> bool:
    """Does the rack file declare the device's rate bound (it then stands, never refitted)?"""
    return "drift_prior_ppm" in manifest.inventory.device(device)


def on_prior_edge(lo: float, hi: float, prior: float) -> bool:
    return abs(lo + prior) <= 0.01 * prior or abs(hi - prior) <= 0.01 * prior


def segment_status(seg: SegmentSummary, prior: float) -> tuple[str, str]:
    """(offset status, drift status) of one segment."""
    d = seg.drift_ppm
    drift = seg.drift_status or (BoundStatus.ASSUMED if on_prior_edge(d.lo, d.hi, prior)
                                 else BoundStatus.PROVEN)
    return seg.offset_status or BoundStatus.PROVEN, drift


def clock_verdict(clock: ClockSummary, prior: float, declared: bool = False) -> str:
    if clock.verdict:
        return clock.verdict
    if not clock.segments:
        return Verdict.UNDECIDED
    fitted = fitted_prior(clock, prior, declared)
    if fitted >= prior * WIDE_PRIOR_FACTOR:
        return Verdict.BEYOND_PRIOR
    return Verdict(worst(s for sg in clock.segments for s in segment_status(sg, fitted)))


@dataclass(frozen=True)
class ClockVerdict:
    device: str
    plane: str
    clock: str
    counter: bool
    verdict: str
    offset_status: str
    drift_status: str
    segment: SegmentSummary | None    # the last segment (None: no fit)
    offset_range: tuple[float, float] | None   # lowest, highest offset over the calibrated span
    width_ns: float | None          # widest the proven band gets over the run
    breaks: tuple[BreakRecord, ...]
    wraps: int
    errors: dict[str, Any]
    assumptions: Assumptions | None
    outliers: int
    note: str = ""


def band_range(seg: SegmentSummary) -> tuple[float, float, float]:
    """(lowest, highest, widest) offset the segment's proven band allows over its span (ns)."""
    return seg.offset_range()


def span_range(clock: ClockSummary) -> tuple[float, float]:
    """(lowest, highest) offset over every segment's calibrated span (first to last read), as the
    limits judge it (bench.model.limit_checks.segment_range: every instant's bound from the first read
    to the last, with no unseen step there): never the band's extrapolated edges."""
    from bench.model.limit_checks import segment_range, span_model
    prior, _ = span_model(clock)
    rng = [segment_range(sg, prior) for sg in clock.segments]
    return min(r[0] for r in rng), max(r[1] for r in rng)


def clock_verdicts(run: Run) -> list[ClockVerdict]:
    """One entry per device clock in the run (and one per device that has none or failed)."""
    out = []
    summary, manifest = Summary.of(run.summary), Manifest.of(run.manifest)
    for device, d in sorted(summary.devices.items()):
        prior = manifest.inventory.drift_prior_ppm(device)
        dec = declared(manifest, device)
        if not d.clocks:
            out.append(_no_clock_verdict(device, d))
            continue
        for name, c in sorted(d.clocks.items()):
            a = assumptions(manifest, summary, device, c)
            out.append(_clock_entry(device, d, name, c, a, prior, dec))
    return out


def _no_clock_verdict(device: str, d: DeviceSummary) -> ClockVerdict:
    """The entry of a device with no clock (or that failed): undecided, and why."""
    why = "; ".join(f"{k}: {v}" for k, v in d.first_errors.items())
    return ClockVerdict(device, d.plane, "—", False, Verdict.UNDECIDED,
                        BoundStatus.UNDECIDED, BoundStatus.UNDECIDED, None, None,
                        None, (), 0, d.errors, None, 0,
                        why or ", ".join(d.no_clock) or "no clock")


def _clock_entry(device: str, d: DeviceSummary, name: str, c: ClockSummary,
                 a: Assumptions, prior: float, dec: bool) -> ClockVerdict:
    """One clock's entry: its verdict, and its bounds' statuses and ranges where it has a fit."""
    if not c.segments:
        return ClockVerdict(device, d.plane, name, c.counter, clock_verdict(c, prior, dec),
                            BoundStatus.UNDECIDED, BoundStatus.UNDECIDED, None, None,
                            None, c.breaks, len(c.wraps), d.errors, a,
                            len(c.outliers), c.note or "no fit")
    rng = [sg.offset_range() for sg in c.segments]
    sts = [segment_status(sg, fitted_prior(c, prior, dec)) for sg in c.segments]
    return ClockVerdict(
        device, d.plane, name, c.counter, clock_verdict(c, prior, dec),
        worst(s[0] for s in sts), worst(s[1] for s in sts), c.last,
        span_range(c), max(r[2] for r in rng),
        c.breaks, len(c.wraps), d.errors, a, len(c.outliers), c.zone_note)


def ordering_horizons(verdicts: list[ClockVerdict]) -> dict[tuple[str, str], float]:
    """Per pair of planes, the smallest gap at which any two events stamped on those planes are
    provably ordered: a stamp maps to an interval as wide as its clock's proven band plus one
    tick, so two true instants farther apart than the sum of both planes' widest such intervals
    give disjoint intervals wherever in them the truths fall."""
    widest: dict[str, float] = {}
    for v in verdicts:
        if v.width_ns is None:
            continue
        w = v.width_ns + float((v.assumptions.resolution_ns if v.assumptions else 0) or 0)
        widest[v.plane] = max(widest.get(v.plane, 0.0), w)
    planes = sorted(widest)
    return {(p, q): widest[p] + widest[q] for i, p in enumerate(planes) for q in planes[i:]}


# -- the one overall verdict ---------------------------------------------------------------------

@dataclass(frozen=True)
class Overall:
    """The report's first line: PASS / FAIL / UNDECIDED and why (bench.model.vocabulary words)."""
    word: str
    reasons: tuple[str, ...]     # what failed, else what is undecided, else what passed

    def text(self, most: int = 4) -> str:
        more = f" and {len(self.reasons) - most} more" if len(self.reasons) > most else ""
        return f"{self.word}: {'; '.join(self.reasons[:most])}{more}"


def incident_result(path: str | Path) -> dict[str, Any] | None:
    """incident.json's end-to-end result (experiments/incident.py, the default run), or None
    when the run played no cascade; an unreadable file is a result that says so."""
    p = Path(path) / "incident.json"
    if not p.exists():
        return None
    try:
        from bench import saferead
        return dict(saferead.load_object(p).get("end_to_end") or {})
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return {"played": False, "why": f"incident.json unreadable ({exc})"}


def _incident_failures(inc: dict[str, Any] | None) -> list[str]:
    if not inc or not inc.get("played"):
        return []
    out = []
    wrong = (inc.get("rackclock") or {}).get("wrong") or 0
    if wrong:
        out.append(f"incident: {wrong} pair(s) ordered wrong")
    if not inc.get("first_contains_truth"):
        out.append("incident: the first-event set misses the true first")
    return out


def overall(run: Run, checks: list[Check], measurements: list[dict[str, Any]],
            inc: dict[str, Any] | None) -> Overall:
    """FAIL when the run did not complete, a used device gave nothing, a bound misses the
    simulated truth, a limit or a measurement fails, or the incident was ordered wrongly;
    else UNDECIDED when a limit or measurement is undecided (or, without any, a clock);
    else PASS, saying what passed."""
    judged = _judged(checks, measurements)
    fail = _run_failures(run) + [w for w, v in judged if v == FAIL] + _incident_failures(inc)
    undecided = [w for w, v in judged if v == UNDECIDED_VERDICT] or \
        ([] if judged else _undecided_clocks(run))
    if fail:
        return Overall(FAIL, tuple(fail))
    if undecided:
        return Overall(UNDECIDED_VERDICT, tuple(f"{w} undecided" for w in undecided))
    return Overall(PASS, tuple(_pass_reasons(run, judged, inc)))


def _undecided_clocks(run: Run) -> list[str]:
    return [f"{d.name} {c.name} {c.verdict}" for d, c in run.summary.clocks()
            if str(c.verdict) in ("undecided", "stuck")]


@dataclass(frozen=True)
class RunOutcome:
    """A completed run judged as `rackclock run` exits by it (bench.model.outcomes): `word`
    PASS, REGRESSED (a failure) or UNDECIDED; the devices without a usable read; the overall
    verdict; whether any clock was measured."""
    word: str
    unusable: Mapping[str, str]
    overall: Overall
    measured: bool


def run_outcome(run: Run) -> RunOutcome:
    """FAIL (REGRESSED) when a device gave no usable read or the overall verdict fails;
    UNDECIDED when it is undecided or no clock was measured; else PASS. Whether the run
    completed is the caller's to check first."""
    from bench.model.limit_checks import check_run
    from bench.model.outcomes import measured_clocks, outcome
    from bench.model.rundata import load_measurements
    bad = unusable_devices(run.summary)
    o = overall(run, check_run(run.summary, run.manifest, run=run), load_measurements(run.path),
                incident_result(run.path))
    measured = measured_clocks(run.summary) > 0
    return RunOutcome(outcome(bool(bad) or o.word == FAIL, o.word != PASS, measured), bad, o,
                      measured)


JUDGED_OUTCOMES = ("pass", "fail", "undecided", "unproven", "inconclusive")


def _judged(checks: list[Check], measurements: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(what, verdict word) of every limit check and every judged measurement."""
    judged = [(f"{c.device} {c.item} {c.measure} limit", verdict_word(c.verdict)) for c in checks]
    judged += [(f"{m.get('device') or ''} {m.get('name')}".strip(),
                verdict_word(m.get("outcome") or "")) for m in measurements
               if str(m.get("outcome") or "").lower() in JUDGED_OUTCOMES]
    return judged


def _run_failures(run: Run) -> list[str]:
    """An unfinished run, a used device without a usable read, a bound missing the truth."""
    fail = [] if run.manifest.status == RunStatus.COMPLETED else \
        [f"run {run.manifest.status or 'unfinished'}"]
    fail += [f"{n}: no usable read" for n in unusable_devices(run.summary)]
    fail += [f"{d.name} {c.name} misses the truth" for d, c in run.summary.clocks()
             if any(s.truth is not None and not s.truth.inside for s in c.segments)]
    return fail


def has_truth(summary: Any) -> bool:
    """Whether any clock of the summary was checked against a simulated truth."""
    return any(s.truth is not None for _, c in summary.clocks() for s in c.segments)


def truth_word(c: Any, known: bool) -> str:
    """A clock's truth cell: 'inside', 'OUTSIDE'; on a rack with truth (`known`), a clock with
    bounds and no truth says 'none' (the verdict line says why); '' otherwise."""
    segs = [s for s in c.segments if s.truth is not None]
    if segs:
        return "inside" if all(s.truth.inside for s in segs) else "OUTSIDE"
    return "none" if known and c.segments else ""


def without_truth(run: Run) -> list[str]:
    """'device clock (why)' of every clock with bounds whose truth the simulator could not know
    (truth.json's `no_truth` events say why: host-1 kmsg without debugfs)."""
    out = []
    for d, c in run.summary.clocks():
        if not c.segments or any(s.truth is not None for s in c.segments):
            continue
        why = _no_truth_reason(run, d.name, c.name)
        out.append(f"{d.name} {c.name}" + (f" ({why})" if why else ""))
    return out


def _no_truth_reason(run: Run, device: str, clock: str) -> str:
    """Why the simulator could not know this clock's truth (its `no_truth` event), or ""."""
    td = run.truth.devices.get(device) if run.truth else None
    return next((str(e.get("reason") or "") for e in (td.events if td else ())
                 if e.get("kind") == "no_truth" and e.get("clock") == clock), "")


def _truth_reason(run: Run, n: int) -> str:
    """'n clock(s) measured, every bound holds the truth' only when every clock had a truth;
    else those without it are counted apart, with why."""
    if not run.truth:
        return f"{n} clock(s) measured"
    missing = without_truth(run)
    if not missing:
        return f"{n} clock(s) measured, every bound holds the truth"
    return (f"{n} clock(s) measured: every bound of the {n - len(missing)} with a known truth "
            f"holds it; {len(missing)} without a truth to check: {', '.join(missing)}")


def _pass_reasons(run: Run, judged: list[tuple[str, str]], inc: dict[str, Any] | None) -> list[str]:
    n = sum(1 for _ in run.summary.clocks())
    why = [_truth_reason(run, n)]
    passed = sum(v == PASS for _, v in judged)
    why.append(f"{passed} limit(s) and measurement(s) pass" if judged
               else "no limits declared (the rack file's [limits] judges pass/fail)")
    if inc and inc.get("played"):
        why.append("incident ordered with no wrong pair")
    return why
