"""From a run folder's samples to summary.json: per device and clock the interval fit, breaks,
errors, stimulus-to-log latencies, and (simulated racks) the check of every bound against truth.
"""
from __future__ import annotations

import bisect
import errno
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import starmap
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.analysis import device_breaks as _breaks
from bench.analysis.estimate import ClockFit, fit_clock, wander_allowance_ns_per_s
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Bound, Segment
from bench.analysis.publish import RATE_CHANGE_ASSUMPTION
from bench.analysis.rate_check import DISCIPLINED_PRIOR_PPM, RATE_CHECK_S
from bench.analysis.step_risk import STEP_HISTORY
from bench.analysis.unseen import NO_STEP_SHOWS, UNSEEN_P, UNSEEN_WITHIN_S, stated_step_ns
from bench.errors import RackclockError
from bench.model.clock_records import Assumptions, ClockSummary
from bench.model.decided import clock_decided
from bench.model.manifest_records import Identity
from bench.model.run_statuses import ErrorKind, RowStatus, Verdict
from bench.model.rundata import I64, Samples, load_samples
from bench.model.segment_records import (
    Band,
    BreakRecord,
    Outlier,
    SegmentSummary,
    TruthCheck,
    Wrap,
    mean_drift_proven,
)
from bench.model.stamps import StampBound, bound_stamps, log_of
from bench.model.summary_records import DeviceSummary, Latency, LatencyBound, LatencyEvent

OK = RowStatus.OK
NOT_ERRORS = (OK, RowStatus.UNARMED)

QUARTER_HOUR_NS = 15 * 60 * 1_000_000_000


def zone_note(offset_lo: float, offset_hi: float) -> str:
    """A wall clock off by a whole number of quarter hours (within a minute) most likely shows
    local time under a wrong UTC offset: say so, never correct it silently."""
    mid = (offset_lo + offset_hi) / 2
    k = round(mid / QUARTER_HOUR_NS)
    if k != 0 and abs(mid - k * QUARTER_HOUR_NS) < 60e9:
        sign = "+" if k > 0 else "-"
        h, m = divmod(abs(k) * 15, 60)
        return (f"offset is {sign}{h:02d}:{m:02d} plus {(mid - k * QUARTER_HOUR_NS) / 1e6:.1f} ms: "
                f"consistent with local time under a wrong UTC offset")
    return ""


EXACT_SLACK_NS = 1     # the simulator's model rounds its offset to the ns: judged to within it


def _exact_at(tc: dict[str, Any], t: int) -> tuple[int, float] | None:
    """(offset ns, drift ppm) at t from the simulator's exact model (truth.json `exact`: its
    offset at every instant where it changes rate or steps, linear between them); None where
    the truth has no exact record there (older folders, an instant outside the run)."""
    ex = tc.get("exact") or {}
    ts, off = ex.get("t_ns") or [], ex.get("offset_ns") or []
    if len(ts) < 2 or not ts[0] <= t <= ts[-1]:
        return None
    k = min(bisect.bisect_right(ts, t) - 1, len(ts) - 2)
    t0, t1, o0, o1 = int(ts[k]), int(ts[k + 1]), int(off[k]), int(off[k + 1])
    if t1 <= t0:
        return o0, 0.0
    # in integers: a counter's offset (about -1.8e18 ns) has no ns left in a float
    return o0 + (o1 - o0) * (t - t0) // (t1 - t0), (o1 - o0) / (t1 - t0) * 1e6


def _truth_offset_at(tc: dict[str, Any], t: int) -> float | int:
    """Truth offset at t: the simulator's exact model where truth.json holds it (`exact`);
    older folders: the nearest grid point with no true step or reboot between them, carried to
    t with the true drift there (wrong by the rate change times the distance across a slew)."""
    x = _exact_at(tc, int(t))
    if x is not None:
        return x[0]
    ts = np.asarray(tc["t_ns"], dtype=np.int64)
    cuts = [b["t_ns"] for b in tc.get("breaks", []) if b["kind"] in ("step", "reboot")]
    order = np.argsort(np.abs(ts - t))
    for k in order:
        lo, hi = sorted((int(ts[k]), int(t)))
        if not any(lo < c <= hi for c in cuts):
            return float(tc["offset_ns"][k] + tc["drift_ppm"][k] * 1e-6 * (t - int(ts[k])))
    k = int(order[0])
    return float(tc["offset_ns"][k] + tc["drift_ppm"][k] * 1e-6 * (t - int(ts[k])))


def truth_check(seg: SegmentSummary, truth_clock: dict[str, Any],
                modulus_ns: int = 0) -> TruthCheck:
    """Does the truth lie inside this segment's bounds? Every proven quantity is checked: the
    offset at the epoch, every point of the band, the mean drift over its window (against the
    truth's mean there); the drift at the epoch is assumed (bench.analysis.estimate) and is
    checked apart (`drift_in`), never ANDed into the others, and so is a mean drift that is not
    proven (`mean_drift_in`: one cut to ±R rests on no step in its window, and a step the model
    allows there takes the true mean beyond it)."""
    o, d = seg.offset_ns, seg.drift_ppm

    def offset_at(t: int) -> float:
        x = _truth_offset_at(truth_clock, int(t))
        if modulus_ns:
            x -= round((x - o.point) / modulus_ns) * modulus_ns
        return x

    slack = EXACT_SLACK_NS if truth_clock.get("exact") else 0
    true_off = offset_at(seg.epoch_ns)
    ex = _exact_at(truth_clock, int(seg.epoch_ns))
    ts = np.asarray(truth_clock["t_ns"], dtype=np.int64)
    drifts = np.asarray(truth_clock["drift_ppm"], dtype=float)
    true_drift = ex[1] if ex is not None else float(drifts[np.argmin(np.abs(ts - seg.epoch_ns))])
    b = seg.band or Band()
    band_out = [t for t, lo, hi in zip(b.t_ns, b.lo, b.hi)
                if not lo - slack <= offset_at(t) <= hi + slack]
    true_md, md_in = None, True
    md = seg.mean_drift
    if md and md.get("to_ns", 0) > md.get("from_ns", 0):
        t1, t2 = md["from_ns"], md["to_ns"]
        true_md = (offset_at(t2) - offset_at(t1)) / (t2 - t1) * 1e6
        tol = 1e-4 + 2 * slack / (t2 - t1) * 1e6
        md_in = bool(md["lo"] - tol <= true_md <= md["hi"] + tol)
    # the grid mean of a wandering frequency: allow 1e-4 ppm of numerical slack
    return TruthCheck(offset_ns=true_off, offset_in=bool(o.lo - slack <= true_off <= o.hi + slack),
                      drift_ppm=true_drift, drift_in=bool(d.lo - 1e-4 <= true_drift <= d.hi + 1e-4),
                      band_in=not band_out, mean_drift_in=md_in, band_points=len(b.t_ns),
                      band_out_t_ns=tuple(band_out[:5]), mean_drift_ppm=true_md,
                      mean_drift_proven=mean_drift_proven(md))


def breaks_truth(breaks: list[dict[str, Any]], truth_clock: dict[str, Any]) -> dict[str, Any]:
    """The true breaks (truth.json: scheduled and fault steps, the NTP client's steps, reboots,
    wraps) against the breaks found: each found break holds how many true ones fall in its
    window and whether their summed size lies in its size bound (`size_in`, steps only); true
    breaks in no window are `unseen_t_ns` (the model allows one per segment, it does not prove
    them absent)."""
    true = [b for b in truth_clock.get("breaks", []) if b.get("kind") in ("step", "reboot", "wrap")]
    found: list[dict[str, Any]] = []
    seen: set[int] = set()
    for b in breaks:
        inside = [k for k, t in enumerate(true) if b["after_ns"] < t["t_ns"] <= b["before_ns"]]
        seen.update(inside)
        found.append({"true_breaks": len(inside), **_true_size(b, [true[k] for k in inside])})
    return {"true": len(true), "found": found,
            "unseen_t_ns": [t["t_ns"] for k, t in enumerate(true) if k not in seen],
            "sizes_in": all(f.get("size_in", True) for f in found)}


def _true_size(b: dict[str, Any], within: list[dict[str, Any]]) -> dict[str, Any]:
    """`true_size_ns` (the summed size of the true breaks in found break b's window) and
    `size_in` (whether b's size bound holds it), where they are all steps of known size."""
    sizes: list[Any] = [t.get("size_ns") for t in within]
    if not (within and b.get("size_ns") and None not in sizes
            and all(t["kind"] == "step" for t in within)):
        return {}
    total = int(sum(sizes))
    return {"true_size_ns": total, "size_in": bool(b["size_ns"]["lo"] <= total <= b["size_ns"]["hi"])}


def band(seg: Segment, points: int = 60) -> Band:
    """The proven offset band sampled across a segment (for plots: exact at each point). Each
    point is the published model's bound there (Segment.proven_offset_at: the rate bound, one
    unseen step); points with no read on one side (the segment's ends) are left out."""
    ts = np.linspace(seg.start_ns, seg.end_ns, points).astype(np.int64) if seg.end_ns > seg.start_ns \
        else np.array([seg.start_ns], dtype=np.int64)
    pts = [(int(t), b) for t in ts if (b := seg.proven_offset_at(int(t))) is not None]
    return Band(tuple(t for t, _ in pts), tuple(b.lo for _, b in pts), tuple(b.hi for _, b in pts))


def latencies(smp: Samples, results: dict[str, ClockResult],
              meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary `latency` as written: latency_records serialised."""
    return {s: x.to_dict() for s, x in latency_records(smp, results, meta).items()}


def latency_records(smp: Samples, results: dict[str, ClockResult],
                    meta: dict[str, Any] | None = None) -> dict[str, Latency]:
    """Pair each sent stimulus with the next device log entry and bound the latency between them:
    `logged_ns` from the entry's own stamp mapped through the calibrated clock, `observed_ns` from
    the bracket of the fetch that first saw it, or of the pushed event's arrival when the device
    pushed one first (`pushed` rows; a pushed event never stands in for the log's own stamp).
    The stamp is mapped through every segment that can have been in force between the request
    and the answer that listed the entry (bench/model/stamps.py; `logged_via` says which, and
    `logged_unbounded` why there is no bound). Bounds only; midpoints as points."""
    pairs = _pair_stimuli(smp)
    # the device cannot stamp the event before the request left (s of its bracket) nor after
    # the answer that listed it arrived
    logged = [(i, j, min(int(smp.s_ns[c]) for c in cands))
              for i, j, _, cands in pairs if j is not None]
    bounds = dict(zip((i for i, _, _ in logged),
                      bound_stamps(smp, results, meta, [j for _, j, _ in logged],
                                   [s for _, _, s in logged])))
    events: dict[str, list[LatencyEvent]] = {}
    for i, j, p, cands in pairs:
        events.setdefault(smp.clock[i], []).append(
            _latency_event(smp, i, j, p, bounds.get(i), cands))
    return {name: Latency(name, len(evs), tuple(evs), _over(evs, "logged_ns"),
                          _over(evs, "observed_ns")) for name, evs in events.items()}


def _ok_rows(smp: Samples, kind: str) -> list[int]:
    return [i for i in range(len(smp)) if smp.kind[i] == kind and smp.status[i] == OK]


_ASKED = re.compile(r"^(HTTP \d{3}|kmsg) ")


def _asked(raw: str) -> str:
    """The message a stimulus asked the device to log ('rackclock test event 3' of a Redfish
    SubmitTestEvent, 'rackclock test event 5f0c1a2b-3' of a kernel log line: `kmsg ` and the
    line), '' where the stimulus names none (a coil, an SNMP SET)."""
    m = _ASKED.match(raw)
    return raw[m.end():].strip() if m else ""


def _names(raw: str, asked: str) -> bool:
    return re.search(re.escape(asked) + r"(?!\d)", raw) is not None


Pair = tuple[int, int | None, int | None, tuple[int, ...]]


def _pair_stimuli(smp: Samples) -> list[Pair]:
    """(stimulus row, log entry row, pushed row, candidate stimulus rows) of each sent stimulus.
    A stimulus that names its message (a Redfish test event) takes the first entry and pushed
    event that name it, whenever they came. One that names none takes the first entry (and
    pushed event) after it and before the next stimulus; an entry says nothing of which
    stimulus caused it, so while an earlier stimulus of the clock has no entry of its own (its
    entry may come late), the entry may be that one's: every such stimulus is a candidate and
    the latency is bounded over all of them (never a late entry read as a prompt one)."""
    stim = _ok_rows(smp, "stimulus")
    # a metric report (GPU telemetry, drivers/redfish_metrics.py) is periodic: never the
    # stimulus's log entry
    events = [j for j in _ok_rows(smp, "event") if not log_of(smp.raw[j]).startswith("metric/")]
    pushed = _ok_rows(smp, "pushed")
    used: set[int] = set()
    waiting: dict[str, list[int]] = {}          # per clock: stimuli without an entry yet
    out = []

    def first_after(rows: list[int], i: int, nxt: int | None, asked: str) -> int | None:
        if asked:
            return next((j for j in rows if j > i and j not in used
                         and _names(smp.raw[j], asked)), None)
        return next((j for j in rows if j > i and j not in used and (nxt is None or j < nxt)),
                    None)

    for k, i in enumerate(stim):
        nxt = stim[k + 1] if k + 1 < len(stim) else None
        asked = _asked(smp.raw[i])
        j, p = first_after(events, i, nxt, asked), first_after(pushed, i, nxt, asked)
        used.update(x for x in (j, p) if x is not None)
        pending = waiting.setdefault(smp.clock[i], [])
        candidates = (i,) if asked else (*pending, i)
        if not asked and j is None:
            pending.append(i)
        out.append((i, j, p, candidates))
    return out


def _latency_event(smp: Samples, i: int, j: int | None, p: int | None,
                   b: StampBound | None, candidates: tuple[int, ...] = ()) -> LatencyEvent:
    """Stimulus row i with log entry row j and pushed row p: the fetch or push that first saw
    it bounds `observed_ns`; the entry's own stamp (`b`) bounds `logged_ns`. Only a log entry's
    stamp bounds when the device logged it: a pushed event's EventTimestamp is when it was
    emitted, which a slow logger does not share. Where the entry may be an earlier stimulus's
    (`candidates`), the bounds hold for whichever it was: from the earliest one sent."""
    s_st, e_st = int(smp.s_ns[i]), int(smp.e_ns[i])
    s_first = min((int(smp.s_ns[c]) for c in candidates), default=s_st)
    seen = _first_seen(smp, j, p)
    observed = None
    if seen is not None:
        observed = _mid_bound(int(smp.s_ns[seen]) - e_st, int(smp.e_ns[seen]) - s_first)
    logged = _logged_bound(b, e_st, s_first)
    via, unbounded = _stamp_notes(b, logged is not None)
    return LatencyEvent(
        int(smp.seq[i]), s_st, e_st, logged, observed,
        event=smp.raw[j][:200] if j is not None else "",
        pushed=smp.raw[seen][:200] if seen is not None and seen != j else "",
        logged_via=via, logged_unbounded=unbounded)


def _first_seen(smp: Samples, j: int | None, p: int | None) -> int | None:
    """The row that first saw the entry: the log fetch j, or the push p where it came first."""
    if p is None or (j is not None and smp.e_ns[j] <= smp.e_ns[p]):
        return j
    return p


def _logged_bound(b: StampBound | None, e_st: int, s_first: int) -> Bound | None:
    """The latency bound from the entry's own stamp, where the stamp has one."""
    if b is None or b.lo_ns is None or b.hi_ns is None:
        return None
    return _mid_bound(b.lo_ns - e_st, b.hi_ns - s_first)


def _stamp_notes(b: StampBound | None, bounded: bool) -> tuple[str, str]:
    """(`logged_via`, `logged_unbounded`): which segments mapped the stamp, or why none could."""
    if b is None:
        return "", ""
    return (b.via, "") if bounded else ("", b.why)


def _mid_bound(lo: int, hi: int) -> Bound:
    return Bound(lo, hi, (lo + hi) / 2)


def _over(evs: list[LatencyEvent], key: str) -> LatencyBound | None:
    """The union of the events' `key` bounds, their midpoints' median, how many."""
    b = [x for e in evs if (x := getattr(e, key)) is not None]
    if not b:
        return None
    return LatencyBound(min(x.lo for x in b), max(x.hi for x in b),
                        float(np.median([(x.lo + x.hi) / 2 for x in b])), len(b))


@dataclass
class ClockResult:
    """One clock's fit with what it was fitted from (unwrapped counter values, wraps found)."""
    name: str
    meta: dict[str, Any]
    declared_ns: int
    reads: int
    fit: ClockFit | None = None
    wraps: list[Any] = field(default_factory=list)
    note: str = ""
    lag_ns: int = 0                  # the reading may lag the clock by this much (tick_lag_ms)
    stuck: dict[str, Any] | None = None   # {"reads", "span_s"}: it never advanced; nothing fitted
    free_running: str = ""           # the device's claim that nothing disciplines it (free_running)


STUCK_MIN_READS = 3


def stuck_since(s: I64, e: I64, v: npt.ArrayLike, declared_ns: int) -> int | None:
    """Where a clock stopped: the first of its last reads that all showed one value, when there
    are at least STUCK_MIN_READS of them spanning more than twice its resolution, declared or
    seen (the smallest step between its distinct values), and a second: a wall clock stopped, a
    counter frozen. None while it advances. A 1 s hrSystemDate declared at 100 ms, whose edges
    lag, shows one value over a little more than a second while it runs. A single value bounds
    neither offset nor tick, so nothing is fitted from those reads."""
    v = np.asarray(v)
    if len(v) < STUCK_MIN_READS:
        return None
    moved = np.flatnonzero(v != v[-1])
    k = int(moved[-1]) + 1 if len(moved) else 0
    steps = np.diff(np.unique(v))
    seen = int(steps.min()) if len(steps) else 0
    if len(v) - k >= STUCK_MIN_READS and \
            int(e[-1]) - int(s[k]) > max(2 * int(declared_ns), 2 * seen, 1_000_000_000):
        return k
    return None


def _assumed_note(fit: ClockFit) -> str:
    """Why a clock's bounds are assumed when its reads, not an assumption's edge, say so."""
    n = fit.steps_seen + fit.unknown_breaks
    if n < STEP_HISTORY:
        return _hide_note(fit)
    aside = (f"; {len(fit.outliers)} reads set aside counted: a burst that fits one line is a "
             f"step and its return, reads set aside in two places or more may be blips"
             if fit.outliers else "")
    return (f"broke {n} times ({fit.unknown_breaks} with no step to show: a lag or a rate "
            f"beyond the model's{aside}): more may hide, bounds assumed")


def _hide_note(fit: ClockFit) -> str:
    """Why one break, or one read set aside, made a clock's bounds assumed
    (step_risk._could_hide, _rate_unshown, _aside_hides)."""
    from bench.units import fmt_end_ns
    if not fit.hide_ns:
        return ""
    if fit.beyond_note and fit.hide_ns == 1:
        return ("a break under the prior was refitted beyond it, yet the reads show no rate "
                "beyond it: a step may hide in the wider envelope, bounds assumed")
    if fit.outliers and fit.steps_seen + fit.unknown_breaks == 0:     # step_risk._aside_hides
        return (f"a read set aside {fmt_end_ns(fit.hide_ns, False)} or more off the others: a "
                f"step that size can hide in these reads, so that read may be the clock and the "
                f"others off, bounds assumed")
    size = "with no step to show" if fit.hide_ns == 1 else f"of {fmt_end_ns(fit.hide_ns, False)} or more"
    return (f"broke once ({size}): a step that size can hide in these reads, so more may hide, "
            f"bounds assumed")


def _stuck_note(st: dict[str, Any]) -> str:
    return f"did not advance over {st['reads']} reads spanning {st['span_s']:.1f} s"


NTP_STIMULUS = "ntp"     # drivers.base.SET_NTP: the run commanded the device's NTP client


def free_running(clock_meta: dict[str, Any], smp: Samples) -> str:
    """The device's claim that nothing disciplines this clock, as its driver read it at open
    (the manifest clock's `free_running`, e.g. "Redfish NTP.ProtocolEnabled=false"), or "":
    also where the run commanded the device's NTP client (an `ntp` stimulus, sent or not), after
    which the state read at open no longer holds."""
    claim = str(clock_meta.get("free_running") or "")
    if claim and len(smp.select("stimulus", NTP_STIMULUS, ok=False)):
        return ""
    return claim


def lag_ns(meta: dict[str, Any], clock_meta: dict[str, Any]) -> int:
    """How far a reading may lag its clock: what the driver declares for the clock (`lag_ns`),
    else 0; the rack file's `tick_lag_ms` for the device replaces it for its wall clocks only
    (a device's coarse wall clock lags; an uptime counter computed on each request does not,
    and widening it too costs it a lag it never has)."""
    if "tick_lag_ms" in meta and not clock_meta.get("counter"):
        return round(float(meta["tick_lag_ms"]) * 1e6)
    return int(clock_meta.get("lag_ns") or 0)


def rate_clause(fit: ClockFit | None) -> str:
    """How far the reads check the rate bound (bench.analysis.rate_check), in words."""
    if fit is None or fit.pinned_ns is None:
        return "assumed: no reads on both sides of any instant"
    if fit.rate_assumed:             # the figures behind it: the clock's `rate_assumed`
        if fit.rate_basis:           # the device says nothing disciplines it (fit_clock)
            return (f"assumed: free-running per {fit.rate_basis} (the device's word), which "
                    f"these reads would not show broken within {RATE_CHECK_S:g} s")
        if fit.drift_prior_ppm == DISCIPLINED_PRIOR_PPM:
            return (f"assumed: a disciplined clock's rate (an NTP slew, a PLL hunting): these "
                    f"reads would not show a lower bound broken within {RATE_CHECK_S:g} s")
        return f"assumed: these reads would not show it broken within {RATE_CHECK_S:g} s"
    return (f"checked: a rate of {2 * fit.drift_prior_ppm:g} ppm lasting {fit.rate_check_s:.1f} s "
            f"or more shows, shorter excursions assumed")


# a clock whose driver declares no lag: a reading that lags its clock by a constant λ reads as
# an offset λ lower, which no read can tell (benchmarks/README.md, issue 39): named, not checked
NO_LAG_CLAUSE = "reading shows its clock when read (no lag declared, a lag reads as an offset)"
# a step no read showed is not checked by any read: the hull of a segment's two sides holds one
# (envelope.TwoSided), two or more may hide the truth (steps the clock showed count: step_risk)
ONE_UNSEEN = "assumed: no read shows it"
MEASURED = "measured on the simulated probe schedule"     # unseen.calibrated_step_ns
EXPLORED = "exploration reads alone"                     # unseen.unseen_step_ns
FEW = "too few reads in that time"                       # unseen.NO_STEP_SHOWS


def model_statement(prior_ppm: float, lag: int, fit: ClockFit | None,
                    rate_hz: float) -> dict[str, Any]:
    """What the clock's proven bounds rest on, in words and figures: the rate bound (checked:
    reads that need more split or are beyond the prior), at most one unseen step per segment,
    the step that could hide (bench.analysis.unseen.stated_step_ns), the reading's lag."""
    from bench.units import fmt_end_ns
    seg = fit.segments[-1] if fit and fit.segments else None
    text = (f"offset moves at most {prior_ppm:g} ppm between reads ({rate_clause(fit)}); at "
            f"most one step inside a segment unseen ({ONE_UNSEEN})")
    out: dict[str, Any] = {"rate_bound_ppm": float(prior_ppm), "tick_lag_ns": int(lag)}
    if fit is not None and seg is not None and seg.bracket_ns:
        out["unseen_step"], said = _unseen_step(fit, seg, prior_ppm, rate_hz)
        text += said
    if lag:
        text += f"; reading lags its clock by at most {fmt_end_ns(lag, False)}"
    else:       # the reads cannot tell a constant lag from an offset: say it is assumed
        text += f"; {NO_LAG_CLAUSE}"
    out["model"] = text
    return out


def _unseen_step(fit: ClockFit, seg: Any, prior_ppm: float, rate_hz: float,
                 ) -> tuple[dict[str, Any], str]:
    """The step that could hide in the last segment (bench.analysis.unseen.stated_step_ns): its
    figures, and the clause of the model statement saying it."""
    from bench.units import fmt_ns_up
    x, measured = stated_step_ns(fit.resolution_ns, seg.bracket_ns["median"],
                                 seg.offset_ns.width, rate_hz, rate_ppm=prior_ppm)
    some = x < NO_STEP_SHOWS
    figures = {"size_ns": x if some else None, "probability": UNSEEN_P,
               "within_s": UNSEEN_WITHIN_S,
               "basis": MEASURED if measured else EXPLORED if some else FEW}
    said = (f"; a step of {fmt_ns_up(x)} or more lasting {UNSEEN_WITHIN_S:g} s shows with "
            f"probability >= {UNSEEN_P:g}" + (f" ({MEASURED})" if measured else "")
            if some else f"; no step is sure to show within {UNSEEN_WITHIN_S:g} s ({FEW})")
    return figures, said


def fit_clocks(smp: Samples, meta: dict[str, Any],
               uncertainty_ns: int = 0) -> dict[str, ClockResult]:
    """Fit every clock of one device from its samples; never raises for bad data. A reboot
    seen on one clock, or an outage of the device, splits every other clock there
    (bench.analysis.device_breaks)."""
    clocks_meta = {c["name"]: c for c in meta.get("clocks", [])}
    out: dict[str, ClockResult] = {}
    reads: dict[str, tuple[I64, I64, I64]] = {}
    for clock in list(clocks_meta) or sorted({smp.clock[i] for i in smp.select("read")}):
        cm = clocks_meta.get(clock, {})
        s, e, v, q, count = smp.clock_reads(clock, cm)
        declared = int(cm.get("resolution_ns") or (q[0] if len(q) else 1))
        res = out[clock] = ClockResult(clock, cm, declared, int(len(s)),
                                       free_running=free_running(cm, smp))
        if len(s) == 0:
            res.note = "no successful read"
            continue
        reads[clock] = _fit_one(res, s, e, v, count, meta, uncertainty_ns, ())
    _refit_at_device_breaks(smp, out, reads, meta, uncertainty_ns)
    return out


def _refit_at_device_breaks(smp: Samples, out: dict[str, ClockResult],
                            reads: dict[str, tuple[I64, I64, I64]], meta: dict[str, Any],
                            uncertainty_ns: int) -> None:
    """Each clock fitted again, split where another clock rebooted or the device was out."""
    rows = smp.select("read", ok=False)
    down = _breaks.outages(smp.s_ns[rows], smp.e_ns[rows],
                           [smp.status[i] == RowStatus.OK for i in rows])
    fits = {c: r.fit for c, r in out.items()}
    for clock, (s, e, v) in reads.items():
        cuts = _breaks.cuts_for(clock, fits, down)
        if _breaks.splits_inside(out[clock].fit, cuts):
            _fit_one(out[clock], s, e, v, None, meta, uncertainty_ns, cuts)


def _fit_one(res: ClockResult, s: I64, e: I64, v: I64, count: I64 | None, meta: dict[str, Any],
             uncertainty_ns: int, cuts: Any) -> tuple[I64, I64, I64]:
    """Fit one clock into `res` (its stuck tail cut off first); the reads it was fitted from."""
    try:
        if count is not None:
            res.wraps = [{"after_ns": int(e[i - 1]), "before_ns": int(s[i])}
                         for i in range(1, len(count)) if count[i] > count[i - 1]]
        wander = wander_allowance_ns_per_s(float(meta.get("wander_ppm", 0.0)),
                                           (int(s[-1]) - int(s[0])) / 1e9)
        res.lag_ns = lag_ns(meta, res.meta)
        k = stuck_since(s, e, v, res.declared_ns)
        if k is not None:         # it stopped: what it showed before still fits
            res.stuck = {"reads": int(len(s) - k), "span_s": (int(e[-1]) - int(s[k])) / 1e9,
                         "since_ns": int(s[k])}
            s, e, v = s[:k], e[:k], v[:k]
            if len(v) < 2:
                return s, e, v
        # a rate bound the inventory declares stands (assumed where the reads cannot check it)
        declared = "drift_prior_ppm" in meta
        res.fit = fit_clock(s, e, v, res.declared_ns, uncertainty_ns=uncertainty_ns,
                            drift_prior_ppm=float(meta.get("drift_prior_ppm",
                                                           DEFAULT_DRIFT_PRIOR_PPM)),
                            wander_ns_per_s=wander, lag_ns=res.lag_ns, cuts_ns=cuts,
                            unchecked_prior_ppm=None if declared else DISCIPLINED_PRIOR_PPM,
                            free_running=res.free_running)
    except Exception as exc:  # the estimator must never take the summary down
        res.note = f"estimator failed: {exc!r}"
    return s, e, v


LOST_TRAP = "lost:"       # drivers/snmp_pdu: the cursor of the entry for a trap shown lost


def traps_lost(smp: Samples) -> int:
    """Log entries of traps a later state read showed lost (drivers/snmp_pdu)."""
    return sum(1 for i in smp.select("event") if str(smp.raw[i]).startswith(LOST_TRAP))


def summarize_device(name: str, smp: Samples, meta: dict[str, Any], uncertainty_ns: int = 0,
                     truth: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary `devices.<name>` as written: device_summary serialised."""
    return device_summary(name, smp, meta, uncertainty_ns, truth).to_dict()


def device_summary(name: str, smp: Samples, meta: dict[str, Any], uncertainty_ns: int = 0,
                   truth: dict[str, Any] | None = None) -> DeviceSummary:
    """One device's summary record: its errors, each clock's fit and stability
    (bench.model.stability_export), its stimulus latencies."""
    return phased_summary(name, smp, meta, uncertainty_ns, truth)[0]


def phased_summary(name: str, smp: Samples, meta: dict[str, Any], uncertainty_ns: int = 0,
                   truth: dict[str, Any] | None = None) -> tuple[DeviceSummary, dict[str, Any]]:
    """device_summary and the clocks' phase data its stability came from (bench.model.
    phase_export.clock_phases), which the phase files are written from."""
    ds = _device_record(name, smp, meta, uncertainty_ns, truth)
    phases = _phases(ds, smp, meta)
    return with_stability(ds, phases), phases


def _device_record(name: str, smp: Samples, meta: dict[str, Any], uncertainty_ns: int,
                   truth: dict[str, Any] | None) -> DeviceSummary:
    """The record without stability: errors, fits, latencies."""
    errors, first_errors = _errors(smp)
    results = fit_clocks(smp, meta, uncertainty_ns)
    identity = Identity.of(meta.get("identity", {}))
    # parts the driver found without any clock: only observation bounds exist
    no_clock = identity.extra.get("no_clock") or ()
    return DeviceSummary(
        name, meta.get("plane", ""), identity, meta.get("state", ""), errors, first_errors,
        {clock: with_read_stats(clock_summary(res, meta, uncertainty_ns, truth), smp, res.meta)
         for clock, res in results.items()},
        latency_records(smp, results, meta), tuple(no_clock),
        traps_lost(smp) if identity.extra.get("lost_traps_counted") else None)


def _errors(smp: Samples) -> tuple[dict[str, int], dict[str, str]]:
    """Rows that failed: the count per kind, and the first row's text of each kind."""
    errors = Counter(smp.status[i] for i in range(len(smp)) if smp.status[i] not in NOT_ERRORS)
    first_errors: dict[str, str] = {}
    for i in range(len(smp)):
        st = smp.status[i]
        if st not in NOT_ERRORS and st not in first_errors:
            first_errors[st] = smp.raw[i][:200]
    return dict(errors), first_errors


def _assumptions(res: ClockResult, meta: dict[str, Any], uncertainty_ns: int) -> Assumptions:
    """What every bound of this clock rests on (results/README.md, "verdict")."""
    fit = res.fit
    prior = float(fit.drift_prior_ppm if fit else
                  meta.get("drift_prior_ppm", DEFAULT_DRIFT_PRIOR_PPM))
    return Assumptions(drift_prior_ppm=prior, wander_ppm=float(meta.get("wander_ppm", 0.0)),
                       resolution_ns=int(fit.resolution_ns if fit else res.declared_ns),
                       resolution_basis=fit.resolution_basis if fit else "unproven",
                       reference_uncertainty_ns=int(uncertainty_ns),
                       rate_changes=RATE_CHANGE_ASSUMPTION,
                       **model_statement(prior, res.lag_ns, fit, float(meta.get("rate_hz") or 1.0)))


def clock_summary(res: ClockResult, meta: dict[str, Any], uncertainty_ns: int,
                  truth: dict[str, Any] | None) -> ClockSummary:
    """summary `clocks.<c>`: the fit with its bands, wraps, notes and truth checks."""
    head = ClockSummary(res.name, res.reads, bool(res.meta.get("counter")), res.declared_ns,
                        assumptions=_assumptions(res, meta, uncertainty_ns))
    fit = res.fit
    if fit is None:
        return _unfitted_summary(head, res)
    tc = truth.get("clocks", {}).get(res.name) if truth else None
    segs = tuple(_segment_summary(sg, tc, int(res.meta.get("modulus_ns") or 0))
                 for sg in fit.segments)
    notes = _fitted_notes(res, fit, segs, head.counter)
    decided = clock_decided(segs, fit.drift_prior_ppm)
    return replace(
        head, resolution_ns=fit.resolution_ns, resolution_note=fit.resolution_note,
        segments=segs, breaks=tuple(BreakRecord.of_fit(b) for b in fit.breaks),
        outliers=_outlier_records(fit), wraps=tuple(Wrap(**w) for w in res.wraps),
        beyond_prior_note=fit.beyond_note, lag_seen_ns=fit.lag_seen_ns, update_ns=fit.update_ns,
        stuck=res.stuck, **notes,
        breaks_truth=breaks_truth([b.as_dict() for b in fit.breaks], tc) if tc is not None else None,
        decided=decided)


def _unfitted_summary(head: ClockSummary, res: ClockResult) -> ClockSummary:
    """A clock with no fit: stuck (it never advanced) or undecided, with a note why."""
    if res.stuck is not None:
        return replace(head, verdict=Verdict.STUCK, stuck=res.stuck, note=_stuck_note(res.stuck))
    return replace(head, verdict=Verdict.UNDECIDED, note=res.note)


def _fitted_notes(res: ClockResult, fit: ClockFit, segs: tuple[SegmentSummary, ...],
                  counter: bool) -> dict[str, Any]:
    """A fitted clock's `verdict`, `note` and `zone_note`. A stuck clock's verdict and note say
    it stopped (its segments are from before it stopped; nothing after)."""
    if res.stuck is not None:
        verdict, note = Verdict.STUCK, _stuck_note(res.stuck)
    else:
        verdict, note = fit.verdict, _assumed_note(fit)
    last = segs[-1].offset_ns if segs and not counter else None
    return {"verdict": verdict, "note": note,
            "zone_note": zone_note(last.lo, last.hi) if last is not None else ""}


def _outlier_records(fit: ClockFit) -> tuple[Outlier, ...]:
    """The fit's outliers as records, at their bracket's midpoint (as ClockFit.as_dict says them)."""
    return tuple(Outlier((o["s_ns"] + o["e_ns"]) // 2, o["value_ns"], o["evidence"])
                 for o in fit.outliers)


def with_read_stats(c: ClockSummary, smp: Samples, clock_meta: dict[str, Any]) -> ClockSummary:
    """The clock's record with `read_stats` where it has segments (read_stats)."""
    if c.last is None or c.longest is None:
        return c
    s, e, v, q, _ = smp.clock_reads(c.name, clock_meta)
    return replace(c, read_stats=read_stats(c, s, e, v, q))


def read_stats(c: ClockSummary, s: I64, e: I64, v: I64, q: I64) -> dict[str, Any]:
    """What bench.compare.measures judges of a clock's reads (in time order, unwrapped), kept in
    the summary so that compare and trend read no samples: the distinct values (the observed
    tick's chance) and, over the longest segment, the 95 % CIs of the median bracket and of the
    median |residual| (`jitter_ns`), each [lo, median, hi], with whether the tick is coarse."""
    from bench.analysis.residuals import median_ci, segment_residuals
    out: dict[str, Any] = {"distinct_values": int(len(np.unique(np.asarray(v))))}
    longest = c.longest
    r = segment_residuals(s, e, v, q, longest) if longest is not None else None
    if r is not None and len(r):
        out.update(bracket_ns=list(median_ci(r.bracket)), jitter_ns=list(median_ci(np.abs(r.mid))),
                   coarse=bool(r.coarse), tick_ns=int(r.resolution_ns))
    return out


def _segment_summary(sg: Segment, truth_clock: dict[str, Any] | None,
                     modulus_ns: int) -> SegmentSummary:
    """A fitted segment's record with its band and, given the truth, its truth check."""
    s = SegmentSummary.of_fit(sg, band(sg))
    return replace(s, truth=truth_check(s, truth_clock, modulus_ns)) \
        if truth_clock is not None else s


def device_meta(manifest: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What the fit needs to know of a device: its clocks (from the run) and the inventory's
    `drift_prior_ppm` (default 600, bench.analysis.proven_segment.DEFAULT_DRIFT_PRIOR_PPM) and `wander_ppm`
    (frequency walk per sqrt(hour), default 0)."""
    inv = manifest.get("inventory", {}).get("devices", {}).get(name, {})
    return {**manifest.get("devices", {}).get(name, {}),
            **{k: inv[k] for k in ("drift_prior_ppm", "wander_ppm", "tick_lag_ms", "rate_hz")
               if k in inv}}


def with_stability(ds: DeviceSummary, phases: Mapping[str, Any]) -> DeviceSummary:
    """The device's record with each phased clock's `stability` (bench.model.stability_export);
    a failure costs that clock its stability, never the summary (logged)."""
    from bench.model.stability_export import clock_stability
    clocks = dict(ds.clocks)
    for name, ph in phases.items():
        c = clocks[name]
        try:
            clocks[name] = replace(c, stability=clock_stability(ph, c.segments, c.counter))
        except Exception as exc:   # noqa: BLE001  # a statistic must not take the summary down
            _phase_failed(f"{ds.name} {name}: stability", exc)
    return replace(ds, clocks=clocks)


def _phases(ds: DeviceSummary, smp: Samples, dm: dict[str, Any]) -> dict[str, Any]:
    """bench.model.phase_export.clock_phases, never raising (logged)."""
    from bench.model.phase_export import clock_phases
    try:
        return clock_phases(ds, smp, dm)
    except Exception as exc:   # noqa: BLE001  # an export must not take the summary down
        _phase_failed(f"{ds.name}: phase export", exc)
        return {}


def _write_phase(path: Path, ds: DeviceSummary, smp: Samples, dm: dict[str, Any],
                 manifest: Mapping[str, Any], phases: Mapping[str, Any] | None = None) -> bool:
    """The device's phase files (bench.model.phase_export); a failure costs them, never the
    summary (logged). False at a full disk: the export stops there, and the summary's own
    write says the disk is full, once."""
    from bench.model.phase_export import write_device_phase
    try:
        write_device_phase(path, ds, smp, dm, int(manifest.get("started_ns") or 0), phases)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return False
        _phase_failed(f"{ds.name}: phase export", exc)
    except Exception as exc:   # noqa: BLE001  # an export must not take the summary down
        _phase_failed(f"{ds.name}: phase export", exc)
    return True


def _phase_failed(what: str, exc: BaseException) -> None:
    import logging
    logging.getLogger(__name__).warning("%s failed: %r", what, exc)


def summarize_run(path: Path, manifest: dict[str, Any], truth: Mapping[str, Any] | None = None,
                  uncertainty_ns: int | None = None, phase: bool = False,
                  map_devices: Callable[..., Iterable[DeviceEntry]] | None = None) -> dict[str, Any]:
    """`uncertainty_ns`: the reference's error bound added to every bracket (default: the
    largest the manifest records). `phase`: also write each clock's phase data into
    PATH/phase/ (bench.model.phase_export), from the fits as they are made. `map_devices`:
    how `device_entry` is mapped over the devices' arguments (default: itertools.starmap, one
    after the other; a run passes its workers' map, bench.run.after): the same records in the
    same order either way."""
    from bench.model.rundata import bound_from_manifest
    uncertainty = bound_from_manifest(manifest) if uncertainty_ns is None else int(uncertainty_ns)
    devices, requests = {}, {}
    names, unused = _used_and_unused(manifest)
    dev_truth, export = (truth or {}).get("devices", {}), [phase]
    # a generator: starmap takes each device's arguments after the one before it is
    # done, so a full disk stops the phase export there (worker processes take them all at once)
    args = ((Path(path), n, _device_part(manifest, n), dev_truth.get(n), uncertainty, export[0])
            for n in names)
    for name, record, rates, exported in (map_devices or starmap)(device_entry, args):
        devices[name] = record
        export[0] = export[0] and exported
        if rates is not None:            # requests per minute by kind (bench/model/traffic.py)
            requests[name] = rates
    return {"reference": manifest.get("reference_run") or manifest.get("reference", {}),
            "reference_uncertainty_ns": uncertainty, "devices": devices,
            **_nonempty(unused_devices=unused, requests_per_min=requests)}


def _used_and_unused(manifest: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The devices the experiment used, and those it never used (not a row, not an error)."""
    names: list[str] = []
    unused: list[str] = []
    for name, meta in manifest.get("devices", {}).items():
        (unused if meta.get("unused") else names).append(name)
    return names, unused


def _nonempty(**parts: Any) -> dict[str, Any]:
    """The parts that are not empty, in order."""
    return {k: v for k, v in parts.items() if v}


DeviceEntry = tuple[str, dict[str, Any], Any, bool]


def _device_part(manifest: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What of the manifest device_entry reads for one device (a worker is sent that, not the
    whole rack's)."""
    inv = manifest.get("inventory", {}).get("devices", {})
    return {"devices": {name: manifest.get("devices", {}).get(name, {})},
            "inventory": {"devices": {name: inv[name]} if name in inv else {}},
            **{k: manifest[k] for k in ("started_ns", "probed_until_ns") if k in manifest}}


def device_entry(path: Path, name: str, manifest: dict[str, Any], t: dict[str, Any] | None,
                 uncertainty: int, phase: bool) -> DeviceEntry:
    """One device's summary record (its samples read, fitted, checked against its truth `t`)
    and its request rates, and False after `phase` found the disk full (its phase files
    written: bench.model.phase_export). Never raises: one device's
    odd data must not cost the others their summary."""
    from bench.model.traffic import request_rates
    meta = manifest.get("devices", {}).get(name, {})
    p = Path(path) / "samples" / f"{name}.csv"
    if not p.exists():
        return name, {"plane": meta.get("plane", ""), "errors": {ErrorKind.NOT_STARTED: 1},
                      "clocks": {}, "first_errors": {ErrorKind.NOT_STARTED:
                                                     meta.get("error", "")}}, None, True
    try:
        smp = load_samples(p)
        dm = device_meta(manifest, name)
        ds, phases = phased_summary(name, smp, dm, uncertainty, t)
        record = ds.to_dict()
        if phase:
            phase = _write_phase(path, ds, smp, dm, manifest, phases)
        if smp.bad_rows:        # lines that are no row (a crash's tail): skipped, counted
            record["bad_rows"] = smp.bad_rows
        return name, record, request_rates(meta.get("traffic"), manifest.get("started_ns"),
                                           manifest.get("probed_until_ns")), phase
    except Exception as exc:   # one device's odd data must not cost the others their summary
        why = str(exc) if isinstance(exc, RackclockError) else repr(exc)
        return name, {"plane": meta.get("plane", ""), "errors": {ErrorKind.SUMMARY: 1},
                      "clocks": {}, "first_errors": {ErrorKind.SUMMARY: why[:200]}}, None, True
