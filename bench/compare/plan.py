"""The plan of a regression run (`rackclock run regression --decide latency,drift`): how long,
and how many stimuli, so that the named measures are decidable at their tolerances, said before
the run starts; a tolerance no affordable run decides is said so, with the smallest one that is.

The model of each measure's bound (docs/REGRESSION.md derives it):

latency (median and p90 of the events, bench/compare/quantiles.py): an event's proven interval
  runs from its log stamp's floor (a tick of `tick` s, cut at a phase of its own, uniform) to
  the log poll that listed it (every `poll` s while an entry is awaited). With events enough,
  the change of quantile q between two runs of an unchanged device is proven within
  +-((1 - q) tick + q poll): the smallest tolerance that quantile can decide. With n events a
  side the quantile levels are uncertain by eps = sqrt(ln(2 / 0.05) / 2n) (DKW, 95 %), which
  widens it by eps (tick + poll): n is the least count that keeps it within the tolerance.
  A baseline run replaces the model by its own events (quantiles.events_to_decide against
  itself).
drift: a segment's drift bound is about w / T wide for an offset bound w at each end of a
  span T (w: the baseline's measured half-width times its span, else `edge_ns`, the bracket of a
  read aimed at a tick edge, or the clock's tick for a clock read at random phase). Two runs of
  T each prove an unchanged drift within +-tol when 2 w / T <= tol: T = 2 w / tol.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.compare.measures import MIN_QUANTILE_EVENTS
from bench.compare.quantiles import DKW_LN, QUANTILES, change_limit, events_to_decide, smallest_decidable

NS = 1_000_000_000
DECIDABLE = ("latency", "drift")
MAX_EVENTS = 2000
PLAN_OVER = 1.25       # a tolerance below the smallest decidable one: plan for 1.25 x that one
EDGE_NS = 5e6          # the offset bound of a tick-edge read without a baseline (5 ms: a few
                       # brackets; benchmarks/README.md "paired edge reads")


@dataclass(frozen=True)
class Need:
    device: str
    measure: str               # "latency.median", "latency.p90", "drift"
    tolerance: float           # ns or ppm
    unit: str
    events: int | None = None  # latency: events a side
    span_s: float | None = None    # both measures: the run length it needs
    smallest: float | None = None  # the smallest tolerance decidable within the affordable run
    basis: str = "model"       # "model" or "baseline"

    @property
    def affordable(self) -> bool:
        return self.smallest is None and self.span_s is not None


@dataclass(frozen=True)
class Plan:
    duration_s: float
    stimulus_every_s: float | None
    needs: tuple[Need, ...]
    max_duration_s: float

    def lines(self) -> list[str]:
        """The plan as said before the run starts."""
        from bench.compare.verdicts import fmt_span, fmt_value
        out = [f"plan: {fmt_span(self.duration_s)} run"
               + (f", a stimulus every {self.stimulus_every_s:g} s" if self.stimulus_every_s
                  else "")]
        for n in self.needs:
            what = f"  {n.device} {n.measure} at ±{fmt_value(n.tolerance, n.unit)}: "
            ev = f"{n.events} events a side, " if n.events else ""
            if n.affordable:
                out.append(what + f"decidable in {ev}{fmt_span(n.span_s or 0)} ({n.basis})")
                continue
            what += (f"no run within {fmt_span(self.max_duration_s)} decides it; the smallest "
                     f"decidable is ±{fmt_value(n.smallest, n.unit)} ({n.basis})")
            if n.span_s:
                what += (f"; planned for ±{fmt_value(PLAN_OVER * (n.smallest or 0), n.unit)}: "
                         f"{ev}{fmt_span(n.span_s)}")
            out.append(what)
        return out


def latency_model(q: float, tick_s: float, poll_s: float, tol_s: float) -> tuple[float, int | None]:
    """(smallest decidable tolerance in s, events a side for `tol_s`, None if none) of quantile q
    for a device whose log stamps tick every `tick_s` and whose entries are polled every
    `poll_s` (the module's model)."""
    floor = (1 - q) * tick_s + q * poll_s
    if tol_s <= floor:
        return floor, None
    eps = (tol_s - floor) / (tick_s + poll_s)
    return floor, max(2, math.ceil(DKW_LN / (2 * eps ** 2)))


def latency_from_baseline(q: float, lo: tuple, hi: tuple, tol_ns: float
                          ) -> tuple[float, int | None]:
    """The same from a baseline's own events (an unchanged candidate taken to look like it)."""
    return smallest_decidable(lo, hi, lo, hi, q), events_to_decide(lo, hi, lo, hi, q, tol_ns)


def drift_span_s(w_ns: float, tol_ppm: float) -> float:
    """The run length at which two runs prove an unchanged drift within ±tol_ppm, for an offset
    bound of w_ns at each end of the span."""
    return 2 * w_ns / (tol_ppm * 1e3)


def latency_needs(device: str, tol_ns: float, tick_s: float, poll_s: float, every_s: float,
                  max_s: float, events: tuple[tuple, tuple] | None = None) -> list[Need]:
    """What the latency quantiles of one device need (events and run length). A tolerance
    below the smallest decidable one is planned at PLAN_OVER times that one instead (a
    regression that large is then proven; the line says so)."""
    out = []
    for label, q in QUANTILES.items():
        floor_ns, n, basis = _latency_events(q, tol_ns, tick_s, poll_s, events)
        smallest = None
        if n is None or n > MAX_EVENTS or 5.0 + (n + 1) * every_s > max_s:
            smallest = _smallest_latency(q, tick_s, poll_s, floor_ns, max_s, every_s, events)
            _, n, _ = _latency_events(q, PLAN_OVER * smallest, tick_s, poll_s, events)
        span = None if n is None else min(max_s, 5.0 + (n + 1) * every_s)
        out.append(Need(device, f"latency.{label}", tol_ns, "ns", n, span, smallest, basis))
    return out


def _latency_events(q: float, tol_ns: float, tick_s: float, poll_s: float,
                    events: tuple[tuple, tuple] | None) -> tuple[float, int | None, str]:
    """(smallest decidable tolerance ns, events a side for tol_ns, basis)."""
    if events is not None:
        floor, n = latency_from_baseline(q, events[0], events[1], tol_ns)
        return floor, _at_least(n), "baseline"
    floor_s, n = latency_model(q, tick_s, poll_s, tol_ns / NS)
    return floor_s * NS, _at_least(n), "model"


def _at_least(n: int | None) -> int | None:
    """Never fewer events than a quantile needs to be more than their union's
    (bench.compare.measures.MIN_QUANTILE_EVENTS)."""
    return None if n is None else max(n, MIN_QUANTILE_EVENTS)


def _smallest_latency(q: float, tick_s: float, poll_s: float, floor_ns: float, max_s: float,
                      every_s: float, events: tuple[tuple, tuple] | None) -> float:
    """The smallest tolerance the affordable run's events decide (the model's widening of the
    limit; from a baseline, its spread of lo's and hi's over the same quantile shift)."""
    n = max(2, min(MAX_EVENTS, int((max_s - 5.0) / every_s) - 1))
    eps = math.sqrt(DKW_LN / (2 * n))
    if events is None:
        return floor_ns + eps * (tick_s + poll_s) * NS
    b = (np.sort(np.asarray(events[0])), np.sort(np.asarray(events[1])))
    d = change_limit(b, b, q, eps)
    return max(abs(d[0]), abs(d[1]))


def drift_need(device: str, tol_ppm: float, w_ns: float, max_s: float, basis: str) -> Need:
    span = drift_span_s(w_ns, tol_ppm)
    if span <= max_s:
        return Need(device, "drift", tol_ppm, "ppm", None, span, None, basis)
    return Need(device, "drift", tol_ppm, "ppm", None, None, 2 * w_ns / max_s / 1e3, basis)


def device_tick_s(d) -> float:
    """The log stamp's tick of a rack entry (DeviceConfig): its simulated clock's resolution, or
    the coarsest of its clocks', else 1 s (a Redfish DateTime; a baseline measures it)."""
    sim = d.sim or {}
    if "resolution_s" in sim:
        return float(sim["resolution_s"])
    ticks = [float(c["resolution_s"]) for c in (sim.get("clocks") or {}).values()
             if isinstance(c, dict) and "resolution_s" in c]
    return max(ticks) if ticks else 1.0


def _baseline_drift_w(baseline, device: str) -> float | None:
    """w (ns) of the module's drift model from a baseline run: the half-width of its widest
    clock's drift bound times the segment's span (the unclipped side when it rests on the
    prior)."""
    from bench.compare.measures import run_measures
    ms = [m for (d, _, name), m in run_measures(baseline).items()
          if d == device and name == "drift" and m.span_s]
    ws = [(m.half_width if m.half_width is not None else (m.hi - m.lo) / 2) * (m.span_s or 0)
          * 1e3 for m in ms]
    return max(ws) if ws else None


def _baseline_events(baseline, device: str) -> tuple[tuple, tuple] | None:
    from bench.compare.measures import run_measures
    ms = [m for (d, _, name), m in run_measures(baseline).items()
          if d == device and name.endswith(".median") and m.event_lo]
    return (ms[0].event_lo, ms[0].event_hi) if ms else None


def plan_run(rack, tolerances, decide: tuple[str, ...], baseline=None,
             max_duration_s: float = 7200.0, poll_s: float = 0.1, every_s: float = 3.0) -> Plan:
    """The plan for `rack` (RackConfig) to decide `decide` (of DECIDABLE) at `tolerances`,
    from the model or, where given, from a baseline run's own bounds."""
    needs: list[Need] = []
    for d in rack.devices:
        tick = device_tick_s(d)
        if "latency" in decide and d.stimuli:
            tol = tolerances.rule("latency.median", d.name, d.plane).allowed(0.0)
            evs = _baseline_events(baseline, d.name) if baseline is not None else None
            needs += latency_needs(d.name, tol, tick, poll_s, every_s, max_duration_s, evs)
        if "drift" in decide:
            needs.append(_device_drift_need(d, tolerances, tick, baseline, max_duration_s))
    duration = max([30.0, *_spans_needed(needs)])
    stim = every_s if any(n.measure.startswith("latency") for n in needs) else None
    return Plan(math.ceil(duration), stim, tuple(needs), max_duration_s)


def _device_drift_need(d, tolerances, tick: float, baseline, max_duration_s: float) -> Need:
    """What deciding device d's drift needs: from the baseline run's own bound where it has
    one, else from the model (the edge of one read, or one tick for a coarse clock)."""
    tol = tolerances.rule("drift", d.name, d.plane).allowed(0.0)
    w = _baseline_drift_w(baseline, d.name) if baseline is not None else None
    basis = "baseline" if w else "model"
    w = w or (EDGE_NS if tick >= 0.1 else tick * NS)
    return drift_need(d.name, tol, w, max_duration_s, basis)


def _spans_needed(needs: list[Need]) -> list[float]:
    """The spans the needs ask for (a drift need's only where it is affordable)."""
    return [n.span_s for n in needs
            if n.span_s is not None and (n.measure != "drift" or n.affordable)]
