"""The measures `rackclock compare` sets side by side, each with the bounds that make a verdict
possible, taken from one run folder (summary.json, and the samples where a statistic needs them).

| measure     | value                                         | bounds                          |
|-------------|-----------------------------------------------|---------------------------------|
| offset      | last segment's offset at its epoch            | proven (interval fit)           |
| drift       | longest segment's mean drift over its window  | proven; else the drift at the   |
|             |                                               | epoch, assumed (drift_status)   |
| jitter      | median |residual| of the reads (fine clocks)  | 95% CI of the median            |
| bracket     | median bracket width of the reads             | 95% CI of the median            |
| resolution  | the tick the fit used                         | exact; observed: see below      |
| breaks      | steps, reboots, wraps found                   | exact count                     |
| latency.S.median / .p90 | stimulus S -> log stamp, the events' quantile | proven (order statistics) |
| latency.S.extremes | the same, every event            | proven (union), reported only   |
| errors      | failed exchanges                              | exact count                     |

The confidence intervals are distribution-free (order statistics): they assume only that the
reads of a run are exchangeable, never a shape of the noise.

A tick the values forced coarser than declared (`observed`: every gap between the values a
multiple of it) is an upper bound of the true tick. n distinct values land on that grid by
chance, with the declared tick, with probability (declared / observed)^(n-1): at most CHANCE
and it is taken as the tick; otherwise only [declared, observed] is known (a short run's few
values of a 10 ms counter, all 20 ms apart, are no coarser tick).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench.compare.quantiles import QUANTILES, quantile_bounds
from bench.model.clock_records import ClockSummary
from bench.model.rundata import Run, Samples
from bench.model.segment_records import SegmentSummary
from bench.model.summary_records import DeviceSummary, Latency


@dataclass(frozen=True)
class Measure:
    device: str
    clock: str                 # "" for device-level measures (latency, errors)
    name: str                  # "drift", "latency.test_event", ...
    unit: str                  # ns | ppm | count
    lo: float
    hi: float
    point: float
    basis: str                 # proven | 95% CI of the median | exact
    judgeable: bool = True     # False: reported only, with `note` saying why
    note: str = ""
    span_s: float | None = None    # the reads' span the bound came from (for "run longer")
    narrowing: str = ""            # how the bound narrows with span: "1/span", "1/sqrt(span)", ""
    assumed: bool = False          # the bound sits on an assumption's edge (the drift prior)
    half_width: float | None = None    # half-width to scale when the bound is clipped by an
                                       # assumption (None: (hi - lo) / 2)
    point_informative: bool = True     # False: the bound is the whole prior, the point is noise
    events: int | None = None          # latency: how many events the bound is taken from
    quantile: float | None = None      # latency quantile: q (0.5 median, 0.9 p90)
    event_lo: tuple = ()               # ... and its events' proven bounds (ns), for the number
    event_hi: tuple = ()               # of events that would decide a change

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    def as_dict(self) -> dict:
        return asdict(self)


CHANCE = 1e-3      # an observed tick is the tick when the values fall on it by chance this rarely


def resolution_measure(device: str, clock: str, c: ClockSummary, v, declared_ns: int | None
                       ) -> Measure:
    """The tick the fit used: exact where declared; an observed coarser one exact only when its
    values cannot have fallen on its grid by chance (module doc), else [declared, observed].
    `v`: the clock's read values, or how many distinct ones there are (summary read_stats)."""
    longest = c.longest
    r = int(c.resolution_ns or (longest.resolution_ns if longest else 0) or 0)
    basis = str(c.assumptions.resolution_basis) if c.assumptions else ""
    if basis != "observed" or not declared_ns or not 0 < declared_ns < r:
        return _exact(device, clock, "resolution", "ns", r)
    n = v if isinstance(v, int) else len(np.unique(np.asarray(v)))
    chance = (declared_ns / r) ** max(n - 1, 0)
    if chance <= CHANCE:
        return Measure(device, clock, "resolution", "ns", r, r, r,
                       f"observed: {n} distinct values on its grid (by chance: {chance:.0e})")
    return Measure(device, clock, "resolution", "ns", float(declared_ns), r, r,
                   "observed: an upper bound of the tick",
                   note=f"{n} distinct values all on a {r / 1e9:g} s grid: with the declared "
                        f"{declared_ns / 1e9:g} s tick by chance {chance:.2g}")


def _declared_ns(run: Run, device: str, clock: str) -> int | None:
    info = run.manifest.device(device).clock(clock)
    return info.resolution_ns if info else None


def _exact(device, clock, name, unit, x) -> Measure:
    return Measure(device, clock, name, unit, float(x), float(x), float(x), "exact")


def _ci_of(device, clock, name, ci, note="", judgeable=True, span_s=None) -> Measure:
    """A median's 95 % CI ([lo, median, hi], bench.analysis.residuals.median_ci) as a measure."""
    lo, med, hi = (float(x) for x in ci)
    return Measure(device, clock, name, "ns", lo, hi, med, "95% CI of the median", judgeable, note,
                   span_s, "1/sqrt(span)")


def drift_prior_ppm(run: Run, device: str) -> float:
    """The drift prior the fit used: the inventory's `drift_prior_ppm`, or the estimator's default."""
    return run.manifest.inventory.drift_prior_ppm(device)


def _span_s(sg: SegmentSummary) -> float | None:
    return sg.span_s


def mean_drift_measure(device: str, clock: str, sg: SegmentSummary) -> Measure | None:
    """A segment's proven mean drift over its window (its offset bounds at the window's two
    ends, no rate assumption): what an oscillator's change shows in. None where it is not
    proven (a clock downgraded for its breaks, a window cut short)."""
    md = sg.mean_drift or {}
    if md.get("status") != "proven" or md.get("lo") is None or md.get("hi") is None:
        return None
    span = (int(md["to_ns"]) - int(md["from_ns"])) / 1e9 if md.get("to_ns") else _span_s(sg)
    return Measure(device, clock, "drift", "ppm", float(md["lo"]), float(md["hi"]),
                   float(md.get("point", (md["lo"] + md["hi"]) / 2)), "proven",
                   note=f"mean drift over {span:.0f} s of the segment", span_s=span,
                   narrowing="1/span")


def drift_measure(device: str, clock: str, sg: SegmentSummary, prior_ppm: float) -> Measure:
    """A segment's drift bound; when it rests on the prior's edge its width says little about
    how it narrows, so the half-width to scale is the unclipped side's (one edge on the prior) or
    twice the offset width over the span (both edges)."""
    d, span = sg.drift_ppm, _span_s(sg)
    at_lo = abs(d.lo + prior_ppm) <= 0.01 * prior_ppm
    at_hi = abs(d.hi - prior_ppm) <= 0.01 * prior_ppm
    half = None
    if at_lo and at_hi:
        o = sg.offset_ns
        half = 2 * (o.hi - o.lo) / (span * 1e9) * 1e6 if span else None
    elif at_hi:
        half = d.point - d.lo
    elif at_lo:
        half = d.hi - d.point
    # assumed here means clipped by the prior (the drift is also assumed on an unseen-rate-change
    # assumption everywhere, bench.analysis.publish.RATE_CHANGE_ASSUMPTION, which does not clip it)
    assumed = at_lo or at_hi
    # the drift at an epoch is never proven (an unseen slew): its basis says what it rests on
    basis = str(sg.drift_status or "assumed")
    return Measure(device, clock, "drift", "ppm", d.lo, d.hi, d.point, basis,
                   note=f"rests on the ±{prior_ppm:g} ppm drift prior" if assumed else "",
                   span_s=span, narrowing="1/span", assumed=assumed, half_width=half,
                   point_informative=not (at_lo and at_hi))


def clock_measures(run: Run, device: str, clock: str, c: ClockSummary,
                   smp: Samples | None = None) -> list[Measure]:
    """`smp`: the device's samples when the caller read them already (once per device)."""
    last, longest = c.last, c.longest
    if last is None or longest is None:            # no segments
        return []
    out: list[Measure | None] = [_offset_measure(device, clock, last, c.counter),
           mean_drift_measure(device, clock, longest)
           or drift_measure(device, clock, longest, drift_prior_ppm(run, device)),
           _exact(device, clock, "breaks", "count", len(c.breaks))]
    # what the reads show, from the summary (a summary from before read_stats: the samples)
    st = c.read_stats or _read_stats(run, device, clock, c, smp)
    out.insert(2, resolution_measure(device, clock, c, int(st["distinct_values"]),
                                     c.resolution_declared_ns or _declared_ns(run, device, clock)))
    if st.get("bracket_ns"):
        out += _bracket_measures(device, clock, st, _span_s(longest))
    return [m for m in out if m is not None]


def _offset_measure(device: str, clock: str, last: SegmentSummary, counter: bool) -> Measure:
    """The last segment's offset (not judged for a counter: its zero instant moves with every
    reboot)."""
    o = last.offset_ns
    return Measure(device, clock, "offset", "ns", o.lo, o.hi, o.point,
                   str(last.offset_status or "proven"),
                   not counter, "a counter's offset is its zero instant: moves with every reboot"
                   if counter else "", _span_s(last))


def _bracket_measures(device: str, clock: str, st: dict[str, Any],
                      span: float | None) -> list[Measure | None]:
    """The bracket's and the jitter's median CIs (a coarse clock's jitter is its tick)."""
    tick = float(st.get("tick_ns") or 0)
    return [_ci_of(device, clock, "bracket", st["bracket_ns"], span_s=span),
            _ci_of(device, clock, "jitter", st["jitter_ns"], judgeable=not st.get("coarse"),
                   note=f"coarse clock (resolution {tick / 1e9:g} s): the residual "
                        f"is the tick, not noise" if st.get("coarse") else "", span_s=span)]


def _read_stats(run: Run, device: str, clock: str, c: ClockSummary,
                smp: Samples | None) -> dict[str, Any]:
    """bench.model.summary.read_stats from the samples (a summary written before it had them)."""
    from bench.model.summary import read_stats
    if smp is None:
        s, e, v, q = run.clock_reads(device, clock)
    else:
        info = run.manifest.device(device).clock(clock)
        s, e, v, q = smp.clock_reads(clock, info.raw if info else None)[:4]
    return read_stats(c, s, e, v, q)


def device_measures(run: Run, device: str, d: DeviceSummary) -> list[Measure]:
    out = []
    old = any(c.last and c.longest and c.read_stats is None for c in d.clocks.values())
    smp = run.samples(device) if old else None      # the samples only for an older summary
    for clock, c in sorted(d.clocks.items()):
        out += clock_measures(run, device, clock, c, smp)
    for stim, L in sorted(d.latency.items()):
        out += latency_measures(device, stim, L)
    out.append(_exact(device, "", "errors", "count", d.error_count))
    return out


MIN_QUANTILE_EVENTS = 10   # below this many events a quantile is bounded by the union of the
                           # events' bounds: the p90 of fewer is their largest, a median of a few
                           # one draw's luck (two runs of an unchanged optic bridge, 2-5 events a
                           # side spread 0.1-5.6 s, had p90s a second apart:
                           # benchmarks/false_alarms.py)


def _quantile(lo: tuple, hi: tuple, q: float) -> tuple[float, float, float]:
    """(lo, hi, point) of quantile q: the order statistics of the events' bounds
    (bench.compare.quantiles), or with fewer than MIN_QUANTILE_EVENTS the union of the bounds."""
    a, b, p = quantile_bounds(lo, hi, q)
    return (a, b, p) if len(lo) >= MIN_QUANTILE_EVENTS else (min(lo), max(hi), p)


EXTREMES_NOTE = ("the extremes: the union of every event's bound, wider with every event; "
                 "reported, not judged (the median and p90 are)")


def _event_bounds(L: Latency) -> tuple[list[Any], str]:
    """The events' log-stamp bounds where any has one, else their first fetch's; and the basis."""
    evs = [e.logged_ns for e in L.events if e.logged_ns is not None]
    if evs:
        return evs, "proven"
    return ([e.observed_ns for e in L.events if e.observed_ns is not None],
            "proven (first fetch that saw it)")


def latency_measures(device: str, stim: str, L: Latency) -> list[Measure]:
    """A stimulus's latency: proven bounds on its events' median and p90 (order statistics of
    the events' bounds, bench.compare.quantiles) and the union of them all (the extremes,
    reported only). The log stamp's bounds where any event has one, else the first fetch's."""
    evs, basis = _event_bounds(L)
    if not evs:                   # an older summary: the union alone
        u = L.logged_ns or L.observed_ns
        return [] if u is None else [Measure(device, "", f"latency.{stim}.extremes", "ns", u.lo,
                                             u.hi, u.point, "proven", False, EXTREMES_NOTE,
                                             events=u.n)]
    lo, hi = tuple(float(b.lo) for b in evs), tuple(float(b.hi) for b in evs)
    name, n = f"latency.{stim}", len(evs)
    out = [Measure(device, "", f"{name}.{label}", "ns", *_quantile(lo, hi, q), basis,
                   events=n, quantile=q, event_lo=lo, event_hi=hi)
           for label, q in QUANTILES.items()]
    mids = np.median([(a + b) / 2 for a, b in zip(lo, hi)])
    return out + [Measure(device, "", f"{name}.extremes", "ns", min(lo), max(hi), float(mids),
                          basis, False, EXTREMES_NOTE, events=n)]


def run_measures(run: Run) -> dict[tuple[str, str, str], Measure]:
    """{(device, clock, measure): Measure} of every device in the run's summary."""
    out = {}
    for device, d in sorted(run.summary.devices.items()):
        for m in device_measures(run, device, d):
            out[(m.device, m.clock, m.name)] = m
    for m in experiment_measures(run):
        out[(m.device, m.clock, m.name)] = m
    return out


def experiment_measures(run: Run) -> list[Measure]:
    """What the experiment recorded with `lab.measure` (measurements.json), as measures."""
    from bench.model.rundata import load_measurements
    return [Measure(m.get("device", ""), "", m["name"], m["unit"], m["lo"], m["hi"], m["point"],
                    m.get("basis", "exact"), m.get("judge", True),
                    m.get("doc", "") if m.get("judge", True) else
                    f"reported only (the experiment says so): {m.get('doc', '')}")
            for m in load_measurements(run.path)]


def identities(run: Run) -> dict[str, dict]:
    """Per device: plane and identity (vendor, model, serial, firmware) from the manifest."""
    out = {}
    summ = run.summary.devices
    for name, d in run.manifest.devices.items():
        ident = d.identity or (summ[name].identity if name in summ else d.identity)
        out[name] = {"plane": d.plane, "vendor": ident.vendor, "model": ident.model,
                     "serial": ident.serial, "firmware": ident.firmware}
        if d.error:
            out[name]["error"] = d.error
    return out
