"""`rackclock compare BASELINE CANDIDATE`: what changed between two runs, e.g. before and after a
firmware update, judged by the size of the change the bounds prove, and saying so when they cannot.

Identity and firmware differences come first. Then per device and measure (bench.compare.measures)
both values with their bounds, the change, the tolerance (bench/compare/tolerances.toml explains
the rules and which measures are comparable run to run) and the verdict. Both runs' bounds prove
the change lies in D = [candidate lo - baseline hi, candidate hi - baseline lo]:

  regressed / improved   all of D beyond the tolerance, worse / better
  changed                the same, for a measure with no better direction (or a sign flip)
  unchanged              all of D within +-tolerance
  undecided              D straddles the tolerance: the bounds are too wide to decide; where the
                         bound narrows with span, the run length that would decide it is named
  lost                   bounded in the baseline, not in the candidate (e.g. no log entry)
  new, not compared

Exit status by the one table (bench.model.outcomes): 1 when any judged measure regressed, changed
or was lost; else 3 when one is undecided or nothing was judged (0 with --allow-undecided); else 0;
2 on bad input.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.compare.measures import MIN_QUANTILE_EVENTS, Measure, identities, run_measures
from bench.compare.quantiles import events_to_decide, smallest_decidable
from bench.compare.tolerances import ToleranceError, Tolerances, tolerances_from_dict
from bench.model.outcomes import FAILING, UNDECIDED_ROW, exit_code, outcome
from bench.model.run_statuses import RunStatus
from bench.model.rundata import Run
from bench.units import fmt_ns, fmt_ppm

DEFAULT_TOLERANCES = Path(__file__).with_name("tolerances.toml")
MIN_LATENCY_EVENTS = 2     # events a side before a latency change is judged
PASSING = ("unchanged", "improved", "new", "not compared", "changed (not judged)")
JUDGED = ("unchanged", "improved", *FAILING, UNDECIDED_ROW)


@dataclass(frozen=True)
class Row:
    device: str
    clock: str
    measure: str
    unit: str
    baseline: Measure | None
    candidate: Measure | None
    tolerance: float | None
    verdict: str
    reason: str = ""
    decide_s: float | None = None    # undecided: both runs this long would decide it
    detectable: float | None = None  # the smallest change (worse way) these bounds would prove

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate.point - self.baseline.point

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING


@dataclass(frozen=True)
class Comparison:
    baseline: Run
    candidate: Run
    identity_changes: list = field(default_factory=list)   # [(device, what, before, after)]
    notes: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    tolerances: str = ""

    @property
    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.failed]

    @property
    def undecided(self) -> list[Row]:
        return [r for r in self.rows if r.verdict == UNDECIDED_ROW]

    @property
    def judged(self) -> list[Row]:
        return [r for r in self.rows if r.verdict in JUDGED]

    @property
    def outcome(self) -> str:
        """PASS, REGRESSED or UNDECIDED (bench.model.outcomes): nothing judged is UNDECIDED."""
        return outcome(bool(self.failures), bool(self.undecided), bool(self.judged))

    def exit_status(self, allow_undecided: bool = False) -> int:
        return exit_code(self.outcome, allow_undecided)


def load_tolerances(path: str | Path | None) -> Tolerances:
    p = Path(path) if path else DEFAULT_TOLERANCES
    try:
        return tolerances_from_dict(tomllib.loads(p.read_text()), str(p))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ToleranceError(f"{p}: {exc}") from None


def fmt_value(x: float | None, unit: str, signed: bool = False) -> str:
    """A value in the unit a reader takes in (ms, s, ppm, counts), never raw ns or 1e+06."""
    if x is None:
        return "—"
    sign = "+" if signed and x > 0 else ""
    if unit == "ns":
        return sign + fmt_ns(x)
    if unit == "ppm":
        return sign + fmt_ppm(x)
    return sign + f"{x:g}"


def fmt_span(s: float) -> str:
    """A run length: '45 s', '12 min', '3.5 h', '2.1 days'."""
    for scale, unit in ((86400, "days"), (3600, "h"), (60, "min")):
        if s >= 2 * scale:
            x = s / scale
            return f"{x:.1f} {unit}" if x < 10 else f"{x:.0f} {unit}"
    return f"{max(1, math.ceil(s))} s"


def _magnitude(lo: float, hi: float) -> tuple[float, float]:
    """The interval of |x| for x in [lo, hi]."""
    if lo >= 0:
        return lo, hi
    if hi <= 0:
        return -hi, -lo
    return 0.0, max(-lo, hi)


def _half_width(m: Measure) -> float:
    return m.half_width if m.half_width is not None else (m.hi - m.lo) / 2


def decide_span_s(b: Measure, c: Measure, tol: float) -> float | None:
    """The run length (both runs) at which the proven change would clear the tolerance, if the
    change is what the two points say and each bound shrinks about it with span as its measure's
    law (drift ~ 1/span, a median's CI ~ 1/sqrt(span)). None: no such law, or the change sits on
    the tolerance so that no length decides it."""
    if not (b.narrowing and b.span_s and c.span_s):
        return None
    delta = c.point - b.point
    if not (b.point_informative and c.point_informative):
        delta = 2 * tol               # points of no information: resolve a change of 2x the tolerance
    down, up = _reach(b, c, delta)
    if abs(abs(delta) - tol) <= 0.05 * tol or min(down, up) <= 0:
        return None
    k = _shrink_to_decide(delta, tol, down, up)
    if k >= 1:
        return None
    span = (b.span_s + c.span_s) / 2
    return span / k if b.narrowing == "1/span" else span / k ** 2


def _reach(b: Measure, c: Measure, delta: float) -> tuple[float, float]:
    """How far the proven change reaches below and above `delta` (down, up)."""
    if b.assumed or c.assumed:        # a bound clipped by the prior: its unclipped half-widths
        both = _half_width(b) + _half_width(c)
        return both, both
    return delta - (c.lo - b.hi), (c.hi - b.lo) - delta


def _shrink_to_decide(delta: float, tol: float, down: float, up: float) -> float:
    """The factor the proven change must shrink by about `delta` to decide it against `tol`."""
    if abs(delta) > tol:              # shrink until all of it is beyond the tolerance
        return (abs(delta) - tol) / (down if delta > 0 else up)
    return min((tol - delta) / up, (tol + delta) / down)    # ... or until all of it is within


SHOWN_UNJUDGED = "changed (not judged)"


def unjudged(b: Measure | None, c: Measure | None, rule):
    """A measure the tolerance file does not judge (a free-running clock's offset): shown all the
    same when both runs bound it and the bounds prove a change beyond its tolerance."""
    why = "not judged (tolerance file)"
    if b is None or c is None or not (b.judgeable and c.judgeable):
        return "not compared", None, why, None
    tol = rule.allowed(b.point)
    d_lo, d_hi = c.lo - b.hi, c.hi - b.lo
    if d_lo > tol or d_hi < -tol:
        return (SHOWN_UNJUDGED, tol, f"the bounds prove a change between "
                f"{fmt_value(d_lo, b.unit, True)} and {fmt_value(d_hi, b.unit, True)}, beyond "
                f"±{fmt_value(tol, b.unit)}; {why}", None)
    return "not compared", None, why, None


def _unjudgeable(b: Measure | None, c: Measure | None, rule) -> tuple | None:
    """The verdict of a measure that cannot be judged from two bounds (absent on a side, not
    judged by the tolerance file, not judgeable), else None."""
    if b is None and c is None:
        return "not compared", None, "in neither run", None
    if not rule.judge:
        return unjudged(b, c, rule)
    if b is None:
        return "new", None, "not bounded in the baseline", None
    if c is None:
        return _lost(b, rule)
    if not (b.judgeable and c.judgeable):
        return "not compared", None, b.note or c.note, None
    return None


def _min_events(b: Measure) -> int:
    return MIN_LATENCY_EVENTS


def _lost(b: Measure, rule) -> tuple:
    """Bounded in the baseline, not in the candidate: lost (a failure), unless the baseline's
    was reported only, or a latency seen in fewer than MIN_QUANTILE_EVENTS events (an entry seen
    once in four stimuli and then in none of four is no proof the device stopped logging)."""
    if not b.judgeable:
        return "not compared", None, b.note, None
    if b.family == "latency" and b.events is not None and b.events < MIN_QUANTILE_EVENTS:
        return (UNDECIDED_ROW, rule.allowed(b.point), f"bounded in {b.events} event(s) of the "
                f"baseline, none of the candidate: too few to call it lost", None)
    return "lost", None, "bounded in the baseline, not in the candidate", None


def _too_few_events(b: Measure, c: Measure) -> bool:
    """A latency from fewer than _min_events events a side: one event a side proves how those
    two events differed, a quantile of a few how those few did, not that the device changed."""
    return (b.family == "latency" and b.events is not None and c.events is not None
            and min(b.events, c.events) < _min_events(b))


def _proven_change(b: Measure, c: Measure, rule, tol: float, up: bool, proven: str) -> tuple:
    """The verdict of a change the bounds prove beyond the tolerance (`up`: an increase)."""
    if _too_few_events(b, c):
        return (UNDECIDED_ROW, tol, f"{proven}, but from {b.events} and {c.events} "
                f"event(s): at least {_min_events(b)} a side tell the device from one draw of "
                f"its latency; send more stimuli", None)
    if rule.direction == "higher_is_worse":
        return ("regressed" if up else "improved"), tol, proven, None
    if rule.direction == "magnitude":
        (blo, bhi), (clo, chi) = _magnitude(b.lo, b.hi), _magnitude(c.lo, c.hi)
        if clo - bhi > tol:
            return "regressed", tol, proven + " away from zero", None
        if chi - blo < -tol:
            return "improved", tol, proven + " towards zero", None
    return "changed", tol, proven, None


def _undecided(b: Measure, c: Measure, tol: float, proven: str) -> tuple:
    """Bounds too wide to decide: why, and the run length (or events) that would decide it."""
    why = (f"{proven}: bounds too wide to decide at ±{fmt_value(tol, b.unit)}"
           + (" (" + (b.note or c.note) + ")" if b.assumed or c.assumed else ""))
    if b.quantile is not None and b.event_lo and c.event_lo:
        return UNDECIDED_ROW, tol, why + "; " + _events_text(b, c, tol), None
    span = decide_span_s(b, c, tol)
    return UNDECIDED_ROW, tol, why + _what_decides(b, c, span), span


def _what_decides(b: Measure, c: Measure, span: float | None) -> str:
    """The run length that would decide it, or why none does."""
    if span is not None:
        return (f"; runs of {fmt_span(span)} each would decide it (bound ~ {b.narrowing}"
                + (", for a change the size of the tolerance: the bounds span the whole prior"
                   if not (b.point_informative and c.point_informative) else "") + ")")
    if b.narrowing:
        return "; the change sits on the tolerance: no run length decides it"
    return "; a longer run does not narrow this bound"


def _events_text(b: Measure, c: Measure, tol: float) -> str:
    """How many events a side would decide a latency quantile's change, or that none would."""
    assert b.quantile is not None
    n = events_to_decide(b.event_lo, b.event_hi, c.event_lo, c.event_hi, b.quantile, tol)
    if n is not None:
        return (f"about {n} events a side would decide it (order statistics of the events' "
                f"bounds; {b.events} and {c.events} now)")
    best = smallest_decidable(b.event_lo, b.event_hi, c.event_lo, c.event_hi, b.quantile)
    return (f"no number of events decides it at ±{fmt_value(tol, b.unit)}: these events' "
            f"bounds decide ±{fmt_value(best, b.unit)} at best (finer stamps or faster log "
            f"polls narrow each event's bound)")


def verdict(b: Measure | None, c: Measure | None, rule) -> tuple[str, float | None, str,
                                                                  float | None]:
    """(verdict, tolerance used, reason, run length that would decide it) for one measure."""
    early = _unjudgeable(b, c, rule)
    if early is not None:
        return early
    assert b is not None and c is not None
    tol = rule.allowed(b.point)
    u = b.unit
    if b.basis == c.basis == "exact" and b.point == c.point:
        return "unchanged", tol, "exact and equal", None
    d_lo, d_hi = c.lo - b.hi, c.hi - b.lo
    proven = (f"the bounds prove a change between {fmt_value(d_lo, u, True)} and "
              f"{fmt_value(d_hi, u, True)}")
    if -tol <= d_lo and d_hi <= tol:
        return "unchanged", tol, proven + f", within ±{fmt_value(tol, u)}", None
    if d_lo > tol or d_hi < -tol:
        return _proven_change(b, c, rule, tol, d_lo > tol, proven)
    return _undecided(b, c, tol, proven)


def detectable(b: Measure | None, c: Measure | None, tol: float | None,
               direction: str) -> float | None:
    """The smallest change these two runs' bounds would prove beyond the tolerance: a shift D of
    the candidate is proven when its bound clears the baseline's by more than tol, i.e. D >= tol
    + (baseline hi - point) + (candidate point - lo) for an increase (mirrored for a decrease).
    An increase for higher-is-worse measures; the larger of the two ways otherwise."""
    if b is None or c is None or tol is None:
        return None
    up = tol + (b.hi - b.point) + (c.point - c.lo)
    down = tol + (b.point - b.lo) + (c.hi - c.point)
    return up if direction == "higher_is_worse" else max(up, down)


def _identity_changes(a: Run, b: Run) -> list[tuple[str, str, str, str]]:
    ia, ib = identities(a), identities(b)
    out = []
    for dev in sorted(set(ia) | set(ib)):
        if dev not in ib:
            out.append((dev, "device", "present", "absent"))
            continue
        if dev not in ia:
            out.append((dev, "device", "absent", "present"))
            continue
        for k in ("firmware", "vendor", "model", "serial", "plane", "error"):
            if ia[dev].get(k, "") != ib[dev].get(k, ""):
                x, y = (without_addresses(ia[dev].get(k, "")),
                        without_addresses(ib[dev].get(k, "")))
                if x != y:         # a change of address or port alone says nothing of the device
                    out.append((dev, k, ia[dev].get(k, ""), ib[dev].get(k, "")))
    return out


_ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\]|"
                      r"localhost|::1)(?::\d{1,5})?(?:/\S*)?|/dev/(?:pts/|tty)\S*|"
                      r"\bports? \d{1,5}\b|(?<=:)\d{2,5}\b", re.I)


def without_addresses(value) -> str:
    """An identity value with its addresses, ports and serial device paths blanked: a simulated
    device's ephemeral port, a lab's changed IP, a pty number."""
    return _ADDRESS.sub("<address>", str(value or ""))


def _short(x, limit: int = 60) -> str:
    t = "—" if x in (None, "", {}) else str(x)
    return t if len(t) <= limit else t[:limit - 1] + "…"


def _parameter_notes(pa: dict, pb: dict) -> list[str]:
    """The experiment parameters that differ (the first six named)."""
    diff = [k for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k)]
    if not diff:
        return []
    return ["parameters differ: " + ", ".join(
        f"{k} {_short(pa.get(k), 20)} -> {_short(pb.get(k), 20)}" for k in diff[:6])
        + (f" and {len(diff) - 6} more" if len(diff) > 6 else "")]


def _setup_notes(ma, mb) -> list[str]:
    """How the two runs were set up differently: experiment, rack, parameters, length,
    reference."""
    notes = []
    for key, xa, xb in (("experiment", ma.experiment, mb.experiment),
                        ("simulated", ma.simulated, mb.simulated)):
        if xa != xb:
            notes.append(f"{key} differs: {_short(xa)} -> {_short(xb)}")
    notes += _parameter_notes(ma.parameters, mb.parameters)
    da, db = ma.duration_s, mb.duration_s
    if da and db and abs(da - db) > 0.2 * max(da, db):
        notes.append(f"durations differ ({fmt_span(da)} -> {fmt_span(db)}): counts of breaks and "
                     f"the width of bounds depend on it")
    ga = ma.reference.grade if ma.reference else None
    gb = mb.reference.grade if mb.reference else None
    if ga != gb:
        notes.append(f"reference grade differs: {_short(ga)} -> {_short(gb)}")
    return notes


def _ending_notes(run: Run, label: str) -> list[str]:
    """A run that did not complete, or has no summary to compare."""
    m, notes = run.manifest, []
    if m.status != RunStatus.COMPLETED:
        notes.append(f"{label} run did not complete (status {_short(m.status)}"
                     + (f": {_short(m.error, 120)}" if m.error else "") + ")")
    if not run.summary.raw:
        notes.append(f"{label} run has no summary.json: it has no measures to compare")
    return notes


def _run_notes(a: Run, b: Run) -> list[str]:
    return (_setup_notes(a.manifest, b.manifest) + _ending_notes(a, "baseline")
            + _ending_notes(b, "candidate"))


def compare_runs(baseline: Run, candidate: Run, tolerances: Tolerances) -> Comparison:
    mb, mc = run_measures(baseline), run_measures(candidate)
    planes = {**{d: x["plane"] for d, x in identities(baseline).items()},
              **{d: x["plane"] for d, x in identities(candidate).items()}}
    rows = []
    for key in sorted(set(mb) | set(mc)):
        device, clock, name = key
        b, c = mb.get(key), mc.get(key)
        rule = tolerances.rule(name, device, planes.get(device, ""))
        v, tol, why, span = verdict(b, c, rule)
        unit = next(m.unit for m in (b, c) if m is not None)   # the key is one side's at least
        det = detectable(b, c, tol, rule.direction) if v in JUDGED else None
        rows.append(Row(device, clock, name, unit, b, c, tol, v, why, span, det))
    return Comparison(baseline, candidate, _identity_changes(baseline, candidate),
                      _run_notes(baseline, candidate), rows, tolerances.source)
