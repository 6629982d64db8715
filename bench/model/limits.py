"""Limits like test equipment has: the rack file says what a plane or a device must meet, and each
limit is judged from the proven bounds as pass, fail or undecided (the bound straddles the limit).

In the rack file (per plane, then per device; a device's keys override its plane's):

    [limits.planes.bmc]
    offset_within = "100ms"      # |device clock - reference| everywhere in the run
    drift_within_ppm = 50        # |drift|
    latency_max = "500ms"        # every stimulus -> device log stamp

    [limits.devices."bmc-2"]
    offset_within = "2s"

A limit passes when every value the bounds allow meets it, fails when none does (for latency:
when one event's whole bound is beyond it), and is undecided otherwise. A counter's offset is
the instant of its zero, not a time of day: offset limits skip counters.

`rackclock limits RUN [--junit FILE]` prints the checks of a run (exit 1 on a fail; --strict: 3
on undecided); the terminal table, the report and RUN/limits.xml show the same checks.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Mapping

from bench.errors import RackclockError
from bench.model.inventory import short
from bench.units import fmt_interval_ns, fmt_ns, fmt_ppm, parse_duration_ns

KEYS = {"offset_within": "ns", "drift_within_ppm": "ppm", "latency_max": "ns"}


class LimitError(RackclockError, ValueError):
    """The [limits] table of the rack file is malformed."""


MAX_NS = 366 * 86400 * 10**9          # a limit of more than a year says nothing
MAX_PPM = 1e6


def _value(key: str, v: Any, where: str) -> float:
    """A limit's value: a duration of 0 to a year (ns), or 0 to 1e6 ppm."""
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


def limits_from_dict(data: Mapping[str, Any] | None) -> dict:
    """The rack file's [limits] table, checked and kept as written (so that it survives the
    manifest and a rewritten rack file): {"planes": {plane: {key: value}}, "devices": {...}}.
    Raises LimitError for unknown keys or values."""
    out: dict = {"planes": {}, "devices": {}}
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


def for_device(limits: Mapping, device: str, plane: str) -> dict:
    """The limits of one device (its plane's, overridden by its own), in ns and ppm."""
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


def check_run(summary, manifest) -> list[Check]:
    """Every limit the run's inventory declares, judged from summary.json (dicts or the typed
    bench.model.documents records)."""
    from bench.model.documents import Manifest, Summary

    summary, manifest = Summary.of(summary), Manifest.of(manifest)
    limits = manifest.inventory.limits
    if not limits:
        return []
    out = []
    for device, d in sorted(summary.devices.items()):
        lim = for_device(limits, device, d.plane)
        if not lim:
            continue
        for clock, c in sorted(d.clocks.items()):
            segs = c.segments
            if "offset_within" in lim and not c.counter:
                L = lim["offset_within"]
                text = f"within ±{fmt_ns(L)}"
                if not segs:
                    out.append(Check(device, clock, "offset", text, "—", "undecided", "no fit"))
                else:
                    rng = [sg.offset_range() for sg in segs]
                    lo, hi = min(r[0] for r in rng), max(r[1] for r in rng)
                    vs = [_within(r[0], r[1], L) for r in rng]
                    v = "fail" if "fail" in vs else "pass" if all(x == "pass" for x in vs) \
                        else "undecided"
                    where = "at the epoch" if segs[0].band is None else "over the run"
                    out.append(Check(device, clock, "offset", text, fmt_interval_ns(lo, hi), v,
                                     f"proven band {where}, {len(segs)} segment(s)"))
            if "drift_within_ppm" in lim:
                L = lim["drift_within_ppm"]
                text = f"within ±{fmt_ppm(L)}"
                if not segs:
                    out.append(Check(device, clock, "drift", text, "—", "undecided", "no fit"))
                else:
                    vs, bounds = [], []
                    for sg in segs:
                        dr = sg.drift_ppm
                        vs.append(_within(dr.lo, dr.hi, L))
                        bounds.append(f"[{fmt_ppm(dr.lo)}, {fmt_ppm(dr.hi)}]")
                    v = "fail" if "fail" in vs else "pass" if all(x == "pass" for x in vs) \
                        else "undecided"
                    out.append(Check(device, clock, "drift", text, "; ".join(bounds), v,
                                     "every segment's drift bound"))
        if "latency_max" in lim:
            L = lim["latency_max"]
            for stim, x in sorted(d.latency.items()):
                evs = [e.bound for e in x.events if e.bound is not None]
                if not evs:
                    out.append(Check(device, stim, "latency", f"≤ {fmt_ns(L)}", "—",
                                     "undecided", "no event bounded"))
                    continue
                v = ("fail" if any(e.lo > L for e in evs) else
                     "pass" if all(e.hi <= L for e in evs) else "undecided")
                lo, hi = min(e.lo for e in evs), max(e.hi for e in evs)
                out.append(Check(device, stim, "latency", f"≤ {fmt_ns(L)}",
                                 f"[{fmt_ns(lo)}, {fmt_ns(hi)}]", v,
                                 f"{len(evs)} event(s), each judged"))
    return out


HEAD = ["device", "clock / stimulus", "measure", "limit", "bounds allow", "verdict"]


def rows(checks: list[Check]) -> list[list[str]]:
    return [[c.device, c.item, c.measure, c.limit, c.bound,
             c.verdict.upper() if c.verdict != "pass" else c.verdict] for c in checks]


def counts_line(checks: list[Check]) -> str:
    n = {v: sum(c.verdict == v for c in checks) for v in ("pass", "fail", "undecided")}
    return (f"limits: {n['pass']} pass, {n['fail']} fail, {n['undecided']} undecided "
            f"(undecided: the bound straddles the limit)")


def text_table(checks: list[Check]) -> str:
    if not checks:
        return ""
    r = rows(checks)
    widths = [max(len(h), *(len(x[i]) for x in r)) for i, h in enumerate(HEAD)]
    f = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([f.format(*HEAD), f.format(*("-" * w for w in widths)),
                      *(f.format(*x).rstrip() for x in r), counts_line(checks)])


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


def main(argv: list[str] | None = None) -> int:
    from pathlib import Path

    from bench.model.rundata import load_run

    ap = argparse.ArgumentParser(prog="rackclock limits",
                                 description="judge the rack file's limits against a run's bounds")
    ap.add_argument("run", type=Path, help="run folder")
    ap.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a limit is undecided")
    a = ap.parse_args(argv)
    try:
        run = load_run(a.run)
    except FileNotFoundError as exc:
        print(f"rackclock limits: {exc}", file=sys.stderr)
        return 2
    checks = check_run(run.summary, run.manifest)
    print(text_table(checks) or "no limits in this run's rack file ([limits] table)")
    if a.junit:
        a.junit.write_text(junit(checks))
    if any(c.verdict == "fail" for c in checks):
        return 1
    return 3 if a.strict and any(c.verdict == "undecided" for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
