"""Limits like test equipment has: the rack file says what a plane or a device must meet, and each
limit is judged from the proven bounds as pass, fail or undecided (the bound straddles the limit).

In the rack file (per plane, then per device; a device's keys override its plane's):

    [limits.planes.bmc]
    offset_within = "100ms"      # |device clock - reference| over every segment's calibrated span
    drift_within_ppm = 50        # |drift| (the drift at an epoch: assumed, said so)
    latency_max = "500ms"        # every stimulus -> device log stamp
    mtie = {"1s" = "5ms", "100s" = "20ms"}    # MTIE(tau) <= max, a mask as ITU-T G.8262 and
    tdev = {"1s" = "1ms"}                     # G.8273.2 state theirs (bench.model.stability_limits)

    [limits.devices."bmc-2"]
    offset_within = "2s"

A limit passes when every value the bounds allow meets it, fails when none does (for latency:
when one event's whole bound is beyond it), and is undecided otherwise. An offset is judged over
each segment's calibrated span (first to last read), from the bound at the epoch and the proven
band widened by the drift prior to each instant (the model, named in the check: the offset moves
at most the prior, checked, and makes no unseen step); beyond the reads it is extrapolated, and
judged only over a span asked for (`--span FROM:TO`, seconds from the run's start). A counter's
offset is the instant of its zero, not a time of day: offset limits skip counters. A stuck clock
is undecided, with its reads and span.

`rackclock limits RUN [--junit FILE] [--span FROM:TO] [--wide]` prints the checks of a run (exit 1
on a fail; --strict: 3 on undecided); the terminal table, the report and RUN/limits.xml show the
same checks.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.config.keys import short
from bench.errors import RackclockError
from bench.model.stability_limits import MASK_KEYS, judge, parse_mask, read_intervals
from bench.model.texttable import WIDTH, render, wrap
from bench.model.vocabulary import ASSUMED, EXTRAPOLATED, STUCK, stuck_text, verdict_word
from bench.units import (
    fmt_bounds,
    fmt_bounds_ns,
    fmt_interval_ns,
    fmt_ns,
    fmt_ns_up,
    fmt_ppm,
    parse_duration_ns,
)

if TYPE_CHECKING:
    from bench.model.documents import ClockSummary, DeviceSummary, SegmentSummary
    from bench.model.rundata import Run

KEYS = {"offset_within": "ns", "drift_within_ppm": "ppm", "latency_max": "ns",
        "mtie": "mask", "tdev": "mask"}     # masks: bench.model.stability_limits


class LimitError(RackclockError, ValueError):
    """The [limits] table of the rack file is malformed."""


MAX_NS = 366 * 86400 * 10**9          # a limit of more than a year says nothing
MAX_PPM = 1e6


def _value(key: str, v: Any, where: str) -> float | list[tuple[float, float]]:
    """A limit's value: a mask (bench.model.stability_limits), a duration of 0 to a year (ns),
    or 0 to 1e6 ppm."""
    if KEYS[key] == "mask":
        try:
            return parse_mask(v, where)
        except (ValueError, TypeError, OverflowError) as exc:
            raise LimitError(str(exc)[:300]) from None
    if KEYS[key] == "ns":
        try:
            ns = parse_duration_ns(v)
        except (ValueError, OverflowError, TypeError):
            raise LimitError(f"{where}: {short(v)} is not a duration (examples: 1ms, 250us, "
                             f"2.5s)") from None
        if not 0 <= ns <= MAX_NS:
            raise LimitError(f"{where}: {short(v)} is not accepted (a duration from 0 to 366 days)")
        return float(ns)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_PPM:
        raise LimitError(f"{where}: {short(v)} is not accepted (a number of ppm from 0 to 1e6)")
    return float(v)


def _tables(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise LimitError(f"{where}: expected a table, got {type(data).__name__}")
    return data


def limits_from_dict(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The rack file's [limits] table, checked and kept as written (so that it survives the
    manifest and a rewritten rack file): {"planes": {plane: {key: value}}, "devices": {...}}.
    Raises LimitError for unknown keys or values."""
    out: dict[str, dict[str, Any]] = {"planes": {}, "devices": {}}
    data = _tables({} if data is None else data, "[limits]")
    unknown = set(data) - {"planes", "devices"}
    if unknown:
        raise LimitError(f"[limits]: unknown table(s) {sorted(unknown)} (known: planes, devices)")
    for scope in ("planes", "devices"):
        for name, t in _tables(data.get(scope) or {}, f"[limits.{scope}]").items():
            _tables(t, f"[limits.{scope}.{name}]")
            for k, v in t.items():
                if k not in KEYS:
                    raise LimitError(f"[limits.{scope}.{name}]: unknown limit {short(k)} "
                                     f"(known: {', '.join(KEYS)})")
                _value(k, v, f"limits.{scope}.{name}.{k}")
                out[scope].setdefault(name, {})[k] = v
    return out if out["planes"] or out["devices"] else {}


def for_device(limits: Mapping[str, Any], device: str, plane: str) -> dict[str, Any]:
    """The limits of one device (its plane's, overridden by its own), in ns and ppm (a float;
    a mask for mtie and tdev)."""
    t = {**(limits.get("planes", {}).get(plane) or {}),
         **(limits.get("devices", {}).get(device) or {})}
    return {k: _value(k, v, f"limits of {device}.{k}") for k, v in t.items()}


@dataclass(frozen=True)
class Check:
    device: str
    item: str            # clock name, or the stimulus for latency
    measure: str         # offset | drift | latency
    limit: str           # "within ±100 ms", "≤ 500 ms"
    bound: str           # what the bounds allow
    verdict: str         # pass | fail | undecided
    why: str = ""


def _within(lo: float, hi: float, lim: float) -> str:
    if -lim <= lo and hi <= lim:
        return "pass"
    if hi < -lim or lo > lim:
        return "fail"
    return "undecided"


def span_model(c: ClockSummary) -> tuple[float, str]:
    """(rate bound ppm, model text) an offset over a span is judged under: the rate bound
    (checked by the fit) and no unseen step over the span, with the step the clock says could
    hide (summary `assumptions.unseen_step`)."""
    a = c.assumptions
    prior = a.drift_prior_ppm if a is not None else 600.0
    step = (a.unseen_step or {}).get("size_ns") if a is not None else None
    text = f"offset moves at most {prior:g} ppm (checked); assumed: no unseen step over the span"
    text += f" (a step of {fmt_ns_up(step)} or more shows with probability >= 0.99)" if step else ""
    return float(prior), text


def segment_range(sg: SegmentSummary, prior_ppm: float, t0: int | None = None,
                  t1: int | None = None) -> tuple[float, float]:
    """(lo, hi) ns the offset can take over [t0, t1] (default: the segment's calibrated span,
    first to last read): the estimator's `span_offset_ns` (every instant's bound with no unseen
    step over the span), carried beyond the reads at the rate bound where the span asked for
    goes further. Older folders without it: the bound at the epoch and the band's points,
    each widened by the rate bound to every instant."""
    t0 = sg.start_ns if t0 is None else t0
    t1 = sg.end_ns if t1 is None else t1
    rate = prior_ppm * 1e-6
    out = max(0, sg.start_ns - t0) + max(0, t1 - sg.end_ns)
    if sg.span_offset is not None:
        return (float(np.floor(sg.span_offset.lo - rate * out)),
                float(np.ceil(sg.span_offset.hi + rate * out)))
    o, band = sg.offset_ns, sg.band
    anchors = [(sg.epoch_ns, o.lo, o.hi)]
    if band is not None:
        anchors += list(zip(band.t_ns, band.lo, band.hi))
    ts = np.array(sorted({int(t0), int(t1), *(int(a[0]) for a in anchors if t0 <= a[0] <= t1)}),
                  dtype=float)
    at, alo, ahi = (np.array(x, dtype=float) for x in zip(*anchors))
    reach = rate * np.abs(ts[:, None] - at[None, :])
    lo = np.max(alo[None, :] - reach, axis=1)
    hi = np.min(ahi[None, :] + reach, axis=1)
    return float(np.floor(lo.min())), float(np.ceil(hi.max()))


def offset_check(device: str, clock: str, c: ClockSummary, L: float,
                 span: tuple[int, int] | None = None) -> Check:
    """An offset limit judged over each segment's calibrated span; with `span` ((t0, t1) ns,
    asked for by the user) the first and last segments are carried to its ends, labelled
    extrapolated."""
    text, segs = f"within ±{fmt_ns(L)}", c.segments
    if not segs:
        return Check(device, clock, "offset", text, "—", "undecided", "no fit")
    prior, model = span_model(c)
    rng: list[tuple[float, float]] = []
    extra = 0.0
    for sg, t0, t1 in _judged_spans(segs, span):
        extra += max(0, sg.start_ns - t0) + max(0, t1 - sg.end_ns)
        rng.append(segment_range(sg, prior, t0, t1))
    if not rng:
        return Check(device, clock, "offset", text, "—", "undecided", "no segment in the span")
    lo, hi = min(r[0] for r in rng), max(r[1] for r in rng)
    v = _overall([_within(r[0], r[1], L) for r in rng])
    where = (f"{EXTRAPOLATED} {extra / 1e9:.3g} s beyond the reads (the span asked for)"
             if extra else "over the calibrated span (first to last read)")
    return Check(device, clock, "offset", text, fmt_interval_ns(lo, hi), v,
                 f"{where}, {len(rng)} segment(s); model: {model}")


def _judged_spans(segs: tuple[SegmentSummary, ...], span: tuple[int, int] | None
                  ) -> Iterator[tuple[SegmentSummary, int, int]]:
    """Each segment with the span (t0, t1) it is judged over: its reads', or within `span` (the
    first and last segments carried to its ends); a segment outside `span` is left out."""
    for i, sg in enumerate(segs):
        t0, t1 = sg.start_ns, sg.end_ns
        if span is not None:
            t0 = min(t0, span[0]) if i == 0 else t0
            t1 = max(t1, span[1]) if i == len(segs) - 1 else t1
            t0, t1 = max(t0, span[0]), min(t1, span[1])
            if t0 > t1:
                continue
        yield sg, t0, t1


def _overall(vs: list[str]) -> str:
    """fail if any verdict fails, pass if all pass, else undecided."""
    return "fail" if "fail" in vs else "pass" if all(x == "pass" for x in vs) else "undecided"


def drift_check(device: str, clock: str, c: ClockSummary, L: float) -> Check:
    text, segs = f"within ±{fmt_ppm(L)}", c.segments
    if not segs:
        return Check(device, clock, "drift", text, "—", "undecided", "no fit")
    vs = [_within(sg.drift_ppm.lo, sg.drift_ppm.hi, L) for sg in segs]
    bounds = [fmt_bounds(sg.drift_ppm.lo, sg.drift_ppm.hi, "ppm") for sg in segs]
    v = _overall(vs)
    assumes = segs[-1].drift_assumes or "at most one unseen rate change per segment"
    return Check(device, clock, "drift", text, "; ".join(bounds), v,
                 f"every segment's drift at its epoch, {ASSUMED}: {assumes}")


def latency_checks(device: str, d: DeviceSummary, L: float) -> list[Check]:
    out: list[Check] = []
    for stim, x in sorted(d.latency.items()):
        evs = [e.bound for e in x.events if e.bound is not None]
        if not evs:
            out.append(Check(device, stim, "latency", f"≤ {fmt_ns(L)}", "—",
                             "undecided", "no event bounded"))
            continue
        v = _latency_verdict(evs, L)
        lo, hi = min(e.lo for e in evs), max(e.hi for e in evs)
        out.append(Check(device, stim, "latency", f"≤ {fmt_ns(L)}",
                         fmt_bounds_ns(lo, hi), v, f"{len(evs)} event(s), each judged"))
    return out


def _latency_verdict(evs: list[Any], L: float) -> str:
    """fail when one event's whole bound is beyond the limit, pass when every one is within."""
    if any(e.lo > L for e in evs):
        return "fail"
    return "pass" if all(e.hi <= L for e in evs) else "undecided"


def mask_checks(device: str, clock: str, c: ClockSummary, lim: dict[str, Any], run: Run | None,
                uncertainty_ns: int) -> list[Check]:
    """MTIE / TDEV masks of one clock, judged from its reads (`run`: a bench.model.rundata.Run;
    None: undecided, the reads are needed)."""
    out: list[Check] = []
    for kind in (k for k in MASK_KEYS if k in lim):
        text = f"{kind.upper()} mask ({len(lim[kind])} tau)"
        if run is None:
            out.append(Check(device, clock, kind, text, "—", "undecided",
                             "needs the run's reads: rackclock limits RUN"))
            continue
        s, e, v, q = run.clock_reads(device, clock)
        if len(s) < 3:
            out.append(Check(device, clock, kind, text, "—", "undecided", "fewer than 3 reads"))
            continue
        prior = c.assumptions.drift_prior_ppm if c.assumptions else 600.0
        verdict, bound, why = judge(kind, lim[kind], *read_intervals(s, e, v, q, uncertainty_ns,
                                                                    prior))
        out.append(Check(device, clock, kind, text, bound, verdict, why))
    return out


def check_run(summary: Mapping[str, Any], manifest: Mapping[str, Any],
              span: tuple[int, int] | None = None, run: Run | None = None) -> list[Check]:
    """Every limit the run's inventory declares, judged from summary.json (dicts or the typed
    bench.model.documents records). `span`: (t0, t1) reference ns to judge offsets over instead
    of each segment's calibrated span (beyond the reads: extrapolated, said so). `run`: the
    bench.model.rundata.Run whose reads judge MTIE and TDEV masks."""
    from bench.model.documents import Manifest, Summary

    summary, manifest = Summary.of(summary), Manifest.of(manifest)
    limits = manifest.inventory.limits
    if not limits:
        return []
    out: list[Check] = []
    for device, d in sorted(summary.devices.items()):
        lim = for_device(limits, device, d.plane)
        for clock, c in sorted(d.clocks.items()) if lim else ():
            out += clock_checks(device, clock, c, lim, span, run,
                                summary.reference_uncertainty_ns)
        if "latency_max" in lim:
            out += latency_checks(device, d, lim["latency_max"])
    return out


def clock_checks(device: str, clock: str, c: ClockSummary, lim: dict[str, Any],
                 span: tuple[int, int] | None, run: Run | None,
                 reference_ns: int) -> list[Check]:
    """One clock's limits: offset, drift and masks (a stuck clock: undecided, with why)."""
    if c.verdict == STUCK and ("offset_within" in lim or "drift_within_ppm" in lim):
        return [Check(device, clock, "offset", "—", "—", "undecided",
                      stuck_text(c.raw.get("stuck")))]
    out: list[Check] = []
    if "offset_within" in lim and not c.counter:
        out.append(offset_check(device, clock, c, lim["offset_within"], span))
    if "drift_within_ppm" in lim:
        out.append(drift_check(device, clock, c, lim["drift_within_ppm"]))
    return out + mask_checks(device, clock, c, lim, run, reference_ns)


HEAD = ["device", "clock / stimulus", "measure", "limit", "bounds allow", "verdict"]


def rows(checks: list[Check]) -> list[list[str]]:
    return [[c.device, c.item, c.measure, c.limit, c.bound, verdict_word(c.verdict)]
            for c in checks]


def counts_line(checks: list[Check]) -> str:
    n = {v: sum(c.verdict == v for c in checks) for v in ("pass", "fail", "undecided")}
    return (f"limits: {n['pass']} pass, {n['fail']} fail, {n['undecided']} undecided "
            f"(undecided: the bound straddles the limit)")


def text_table(checks: list[Check], width: int | None = WIDTH) -> str:
    """The checks as a table (fits `width`; None: as wide as it is), why each did not pass
    below it, and the counts."""
    if not checks:
        return ""
    lines = render(HEAD, rows(checks), width=width, clip=1)
    for c in checks:
        if c.verdict != "pass" or width is None:
            lines += wrap(f"{c.device} {c.item} {c.measure}: {verdict_word(c.verdict)}: "
                          f"{c.why}", width)
    return "\n".join([*lines, counts_line(checks)])


def junit(checks: list[Check], name: str = "rackclock limits") -> str:
    """One testcase per check: fail -> failure, undecided -> skipped (with why), pass -> passed."""
    suite = ET.Element("testsuite", name=name, tests=str(len(checks)),
                       failures=str(sum(c.verdict == "fail" for c in checks)),
                       skipped=str(sum(c.verdict == "undecided" for c in checks)), errors="0")
    for c in checks:
        tc = ET.SubElement(suite, "testcase", classname=c.device, name=f"{c.item}.{c.measure}",
                           time="0")
        text = f"{c.measure} {c.limit}: bounds allow {c.bound} ({c.why})"
        if c.verdict == "fail":
            ET.SubElement(tc, "failure", message=f"{c.device} {c.item} {c.measure} not "
                                                 f"{c.limit}", type="limit").text = text
        elif c.verdict == "undecided":
            ET.SubElement(tc, "skipped", message=f"undecided: {text}")
        else:
            ET.SubElement(tc, "system-out").text = f"pass: {text}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def parse_span(text: str | None, manifest: Mapping[str, Any]) -> tuple[int, int] | None:
    """'FROM:TO' seconds from the run's start -> (t0, t1) reference ns (LimitError if bad)."""
    if text is None:
        return None
    from bench.model.documents import Manifest
    start = _int_or_none(Manifest.of(manifest).raw.get("started_ns"))
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise LimitError(f"--span {text!r}: expected FROM:TO in seconds, e.g. 0:60") from None
    if start is None or not a < b:
        raise LimitError(f"--span {text!r}: " + ("FROM must be before TO" if start is not None
                                                 else "the run records no start"))
    return start + round(a * 1e9), start + round(b * 1e9)


def _int_or_none(x: Any) -> int | None:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
