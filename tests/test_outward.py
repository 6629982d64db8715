"""Every interval the bench prints contains the interval it computed (issue 39 item 1): random
integer-nanosecond offsets and latencies, and ppm drifts, go through the formatting function of
each output path (terminal table and live line, report, figure titles, compare, trend, limits,
timeline, watch metrics, bounds.csv); the printed text is parsed back and must contain the
computed interval (the lower end rounded down, the upper up)."""
from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from types import SimpleNamespace as NS

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_terminal_width import T0, _clock, _seg

from bench.compare import output as cmp_out
from bench.model import limit_checks as limits
from bench.model.bounds_csv import rows as csv_rows
from bench.model.documents import Bound, Summary
from bench.output import closing, live, report_sections, terminal, tie, timeline_page
from bench.output import timeline_write as timeline
from bench.output.trend_view import _cell as trend_cell
from bench.units import PER_PPM, PER_S, fmt_bounds, fmt_bounds_ns, fmt_interval_ns, fmt_ns_up, scaled_out

SCALE = {"s": 10**9, "ms": 10**6, "µs": 10**3, "ns": 1, "ppm": 1, "": 1}
NUM = r"[-+]?\d+(?:\.\d+)?"
U = r"(?: (s|ms|µs|ns|ppm))?"
INTERVAL = re.compile(rf"\[({NUM}){U}, ({NUM}){U}\](?: (s|ms|µs|ns|ppm)\b)?")
INSTANT = re.compile(rf"(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d+))?Z ±({NUM}) (s|ms|µs|ns)")

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def parse(text: str) -> tuple[Fraction, Fraction]:
    """The first '[a u, b u]', '[a, b] u' or '[a, b]' in text, in ns (ppm as they are)."""
    m = INTERVAL.search(text)
    assert m, f"no interval in {text!r}"
    a, ua, b, ub, u = m.groups()
    return Fraction(a) * SCALE[ua or u or ""], Fraction(b) * SCALE[ub or u or ""]


def parse_instant(text: str) -> tuple[Fraction, Fraction]:
    """'2026-12-01 12:44:23.077Z ±6.05 µs' as the interval it states, ns since the epoch."""
    m = INSTANT.search(text)
    assert m, f"no instant in {text!r}"
    day, frac, hw, u = m.groups()
    sec = int(datetime.strptime(day, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())
    c = Fraction(sec) * 10**9 + (Fraction(f"0.{frac}") * 10**9 if frac else 0)
    h = Fraction(hw) * SCALE[u]
    return c - h, c + h


def holds(text: str, lo, hi, instant: bool = False) -> None:
    plo, phi = (parse_instant if instant else parse)(text)
    assert plo <= Fraction(lo) and Fraction(hi) <= phi, (text, lo, hi)


ns_end = st.one_of(st.integers(-10**4, 10**4), st.integers(-10**10, 10**10),
                   st.integers(-4 * 10**12, 4 * 10**12), st.integers(-2 * 10**18, 2 * 10**18))
ns_width = st.one_of(st.integers(0, 10**3), st.integers(0, 10**7), st.integers(0, 10**11))
ns_iv = st.tuples(ns_end, ns_width).map(lambda x: (x[0], x[0] + x[1]))
# a counter's offset is minus its zero instant: the zero between 1971 and 2100
zero_iv = st.tuples(st.integers(10**9 * 31_536_000, 4_102_444_800 * 10**9), ns_width).map(
    lambda x: (-x[0] - x[1], -x[0]))
ppm_end = st.one_of(st.floats(-2e3, 2e3, allow_nan=False), st.floats(-1.0, 1.0),
                    st.integers(-700, 700).map(float), st.floats(-1e6, 1e6))
ppm_iv = st.tuples(ppm_end, st.one_of(st.floats(0, 1e-3), st.floats(0, 5.0),
                                      st.floats(0, 1500.0), st.floats(0, 1e5))).map(
    lambda x: (x[0], x[0] + x[1]))


def _summary(o, d, md, lat):
    seg = _seg(o[0], o[1], d[0], d[1])
    seg["mean_drift_ppm"] = {"lo": md[0], "hi": md[1], "point": (md[0] + md[1]) / 2,
                             "status": "proven", "from_ns": T0, "to_ns": T0 + 60 * 10**9}
    b = {"lo": lat[0], "hi": lat[1], "point": (lat[0] + lat[1]) // 2, "n": 3}
    return {"devices": {"bmc-1": {"plane": "bmc", "errors": {}, "clocks": {
        "datetime": _clock(seg)}, "latency": {"test_event": {
            "sent": 3, "logged_ns": b, "observed_ns": b,
            "events": [{"seq": 0, "s_ns": T0, "e_ns": T0 + 1, "event": "x",
                        "logged_ns": {"lo": lat[0], "hi": lat[1]}}]}}}}}


@SETTINGS
@given(ns_iv, ppm_iv, ppm_iv, ns_iv)
def test_the_closing_table_report_and_csv_contain_the_computed_bounds(o, d, md, lat):
    s = _summary(o, d, md, lat)
    text = terminal.table(s, width=None)
    row = next(x for x in text.splitlines() if x.startswith("bmc-1 datetime"))
    off, drift, mean = (x.group(0) for x in INTERVAL.finditer(row))
    holds(off, *o)
    holds(drift, *d)
    holds(mean, *md)
    lat_row = next(x for x in text.splitlines() if x.startswith("bmc-1") and "test_event" in x)
    for cell in INTERVAL.finditer(lat_row):
        holds(cell.group(0), *lat)
    c = next(iter(Summary.of(s).clocks()))[1]
    sg = c.segments[-1]
    off_cell, drift_cell = report_sections.bound_cells(sg, False)
    holds(off_cell, *o)
    holds(drift_cell, *d)
    holds(report_sections.mean_drift_text(sg), *md)
    holds(report_sections._b(Bound(lat[0], lat[1], lat[0])), *lat)
    holds(tie.title_of("bmc-1", "datetime", c), *o)                     # figure titles
    holds(tie.title_of("bmc-1", "datetime", c).split(", drift")[1], *d)
    holds(tie.short_of(c), *o)
    (r,) = csv_rows(s)
    assert Fraction(r["drift_lo_ppm"]) <= Fraction(d[0]) <= Fraction(d[1]) <= Fraction(
        r["drift_hi_ppm"])
    assert Fraction(r["mean_drift_lo_ppm"]) <= Fraction(md[0])
    assert Fraction(md[1]) <= Fraction(r["mean_drift_hi_ppm"])
    assert r["offset_lo_ns"] <= o[0] and o[1] <= r["offset_hi_ns"]


@SETTINGS
@given(zero_iv)
def test_a_counters_zero_instant_covers_its_bound(o):
    zero = (-o[1], -o[0])
    b = Bound(o[0], o[1], (o[0] + o[1]) // 2)
    holds(terminal.compact_offset(b, True), *zero, instant=True)
    holds(terminal.offset_cell(b, True), *zero, instant=True)
    holds(report_sections.bound_cells(NS(offset_ns=b, offset_status="proven",
                                         drift_ppm=Bound(-1.0, 1.0, 0.0), drift_status=""),
                                      True)[0], *zero, instant=True)


@SETTINGS
@given(ns_iv, ppm_iv)
def test_limits_contain_the_computed_bounds(lat, d):
    s = _summary((0, 1), d, (-1.0, 1.0), lat)
    dev, c = next(iter(Summary.of(s).clocks()))
    holds(limits.drift_check(dev.name, c.name, c, 50.0).bound, *d)
    (chk,) = limits.latency_checks(dev.name, dev, 1e9)
    holds(chk.bound, *lat)


@SETTINGS
@given(ns_iv, ppm_iv, st.sampled_from(["ns", "ppm", "count"]))
def test_compare_and_trend_contain_the_computed_bounds(x, d, unit):
    lo, hi = x if unit != "ppm" else d
    m = NS(lo=lo, hi=hi, point=lo + (hi - lo) / 2)
    holds(cmp_out._interval(lo, hi, unit), lo, hi)
    holds(cmp_out._interval(lo, hi, unit, signed=True), lo, hi)
    holds(fmt_bounds(lo, hi, unit, 4), lo, hi)                  # report measurements
    if lo != hi:             # an exact value (lo == hi) is printed as the value it is
        holds(cmp_out.bounds(m, unit).split(" ", 1)[-1], lo, hi)
        holds(trend_cell(m, unit), lo, hi)
        holds(closing._value({"unit": unit, "lo": lo, "hi": hi, "point": m.point}), lo, hi)


@SETTINGS
@given(ns_iv, st.integers(0, 2 * 10**18))
def test_the_timeline_contains_the_computed_interval(x, t0):
    lo, hi = t0 + abs(x[0]) % 10**15, t0 + abs(x[0]) % 10**15 + (x[1] - x[0])
    a, b, w = timeline.span_cells(lo, hi, t0).split(maxsplit=2)
    assert Fraction(a) * 10**9 <= lo - t0 and hi - t0 <= Fraction(b) * 10**9
    holds(f"[0 ns, {w}]", 0, hi - lo)
    en = NS(source="bmc-1", label="x", raw="", lo_ns=lo, hi_ns=hi, width_ns=hi - lo,
            basis="stamp", status="proven", calibration="")
    tip = timeline_page._entry_tip({"entry": en, "unordered_with": [], "index": 0,
                                    "unordered_count": 0}, t0)
    m = re.search(rf"interval: ({NUM}) \.\. ({NUM}) s \((.+?)\)", tip)
    assert m and Fraction(m[1]) * 10**9 <= lo - t0 and hi - t0 <= Fraction(m[2]) * 10**9
    holds(f"[0 ns, {m[3]}]", 0, hi - lo)


@SETTINGS
@given(ns_iv, ppm_iv)
def test_widths_exports_and_units_never_round_inward(x, d):
    lo, hi = x
    holds(fmt_interval_ns(lo, hi), lo, hi)                      # report figure labels, check
    holds(fmt_bounds_ns(lo, hi), lo, hi)                        # stability limits, latency
    holds(f"[0 ns, {fmt_ns_up(hi - lo)}]", 0, hi - lo)
    xs = [("datetime", NS(width_ns=hi - lo, status="proven", calibrated_s=None))]
    half = live.LiveBounds.text_of(xs, None).split("±")[1].split(" proven")[0]
    holds(f"[0 ns, {half}]", 0, Fraction(hi - lo, 2))          # the live line
    assert Fraction(scaled_out(lo, PER_S, False)) <= Fraction(lo, 10**9)      # watch metrics
    assert Fraction(scaled_out(hi, PER_S, True)) >= Fraction(hi, 10**9)
    assert Fraction(scaled_out(d[0], PER_PPM, False)) <= Fraction(d[0]) * PER_PPM
    assert Fraction(scaled_out(d[1], PER_PPM, True)) >= Fraction(d[1]) * PER_PPM


def test_the_cases_the_issue_names_round_outward():
    assert fmt_interval_ns(1_168_000, 8_165_000) == "[1.1, 8.2] ms"      # was [1.2, 8.2] ms
    assert fmt_bounds_ns(-7_553_000, 276_100_000) == "[-7.56 ms, 277 ms]"  # was [-7.55 ms, 276 ms]
    assert cmp_out._interval(58_000_000, 1_541_000_000, "ns") == "[0.0, 1.6] s"  # was [0.1, 1.5]
    assert terminal.ppm_interval(-600.0, 600.0) == "[-600, 600]"


@SETTINGS
@given(ns_iv, ppm_iv)
def test_watch_alerts_contain_the_computed_bounds(x, d):
    from bench.watch.alerts import Alerts
    said: list[str] = []
    al = Alerts(lambda dev, level, kind, msg: said.append(msg),
                {"planes": {"bmc": {"offset_within": "1ns", "drift_within_ppm": 1e-9}}})
    lo, hi = (x[0] + 2, x[1] + 2) if x[0] >= 0 else (x[0] - 2, x[1] - 2) if x[1] < 0 else (2, 3)
    dlo, dhi = (d[0] + 1, d[1] + 1) if d[0] >= 0 else (-1 - d[1] + d[0], -1.0)
    c = NS(window=NS(meta=NS(counter=False)), plane="bmc", limits_failed=set(), bounds={
        "offset_lo_ns": lo, "offset_hi_ns": hi, "drift_lo_ppm": dlo, "drift_hi_ppm": dhi})
    al.crossed("bmc-1", "datetime", c)
    (off,) = [m for m in said if ": offset " in m]
    (dr,) = [m for m in said if ": drift " in m]
    holds(off, lo, hi)
    holds(dr, dlo, dhi)


def test_odd_values_print_as_they_are_and_never_crash():
    inf, nan = float("inf"), float("nan")
    assert terminal.ppm_interval(-inf, 3.0) == "[-inf, 3]"
    assert fmt_bounds_ns(inf, inf) == "[inf s, inf s]" and fmt_bounds(nan, 1.0, "ppm") == "[—, 1 ppm]"
    assert fmt_interval_ns(-inf, 5) == "[-inf, 1] s"
    far = terminal.compact_offset(Bound(-(10**30) - 5, -(10**30), -(10**30)), True)
    assert far.endswith("s since the Unix epoch"), far          # beyond the calendar
