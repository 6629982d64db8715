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

from bench.compare.quantiles import DKW_LN, QUANTILES, events_to_decide, smallest_decidable

NS = 1_000_000_000
DECIDABLE = ("latency", "drift")
MAX_EVENTS = 2000
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
        return self.span_s is not None


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
            what = f"  {n.device} {n.measure} at ±{fmt_value(n.tolerance, n.unit)}"
            if n.affordable:
                out.append(what + ": decidable in " + (f"{n.events} events a side, " if n.events
                                                      else "") + f"{fmt_span(n.span_s or 0)} "
                           f"({n.basis})")
            else:
                out.append(what + f": no run within {fmt_span(self.max_duration_s)} decides it; "
                           f"the smallest decidable is ±{fmt_value(n.smallest, n.unit)} "
                           f"({n.basis})")
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
    """What the latency quantiles of one device need (events and run length)."""
    out = []
    for label, q in QUANTILES.items():
        if events is not None:
            floor, n = latency_from_baseline(q, events[0], events[1], tol_ns)
            floor_ns, basis = floor, "baseline"
        else:
            floor_s, n = latency_model(q, tick_s, poll_s, tol_ns / NS)
            floor_ns, basis = floor_s * NS, "model"
        if n is not None and n > MAX_EVENTS:
            n = None
        span = None if n is None else 5.0 + n * every_s + every_s
        if span is not None and span > max_s:
            span = None
        out.append(Need(device, f"latency.{label}", tol_ns, "ns", n, span,
                        None if span else _smallest_latency(q, tick_s, poll_s, floor_ns,
                                                            max_s, every_s), basis))
    return out


def _smallest_latency(q: float, tick_s: float, poll_s: float, floor_ns: float, max_s: float,
                      every_s: float) -> float:
    """The smallest tolerance the affordable run's events decide (the model's widening)."""
    n = max(2, int((max_s - 5.0) / every_s) - 1)
    return floor_ns + math.sqrt(DKW_LN / (2 * n)) * (tick_s + poll_s) * NS


def drift_need(device: str, tol_ppm: float, w_ns: float, max_s: float, basis: str) -> Need:
    span = drift_span_s(w_ns, tol_ppm)
    if span <= max_s:
        return Need(device, "drift", tol_ppm, "ppm", None, span, None, basis)
    return Need(device, "drift", tol_ppm, "ppm", None, None, 2 * w_ns / max_s / 1e3, basis)
