"""`rackclock report RUN` on a real short run of the simulated rack: a self-contained HTML report
that headless Chromium opens, and print-size figures in RUN/plots/ in three formats."""
from __future__ import annotations

import base64
import dataclasses
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from math import comb

import numpy as np
import pytest
from firmware_runs import BASELINE, shared_runs

from bench.analysis.residuals import median_ci, regular_series, segment_residuals
from bench.commands import report as report_cli
from bench.model.documents import SegmentSummary
from bench.model.rundata import load_run
from bench.output import report_html as report
from bench.output.report_html import SECTIONS

CHROMIUM = "/usr/bin/chromium"


_built = {}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The baseline run, reported once with every figure (--details) in three formats, drawn by
    two worker processes."""
    path = shared_runs(tmp_path_factory)[BASELINE]
    _built["rr"] = report.build_report(path, formats=("png", "svg", "pdf"), details=True,
                                       processes=2)
    return load_run(path)


@pytest.fixture(scope="module")
def built(reported):
    """The ReportRun of that report: the files written and every figure's visible texts."""
    return _built["rr"]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _clocks(run):
    return [(d, c) for d, x in run.summary["devices"].items() for c, y in x["clocks"].items()
            if y.get("segments")]


def expected_stems(run, details: bool = True) -> list[str]:
    """The page's figures (headline, rack-wide TIE, a TIE with residuals per clock, latency,
    timeline, reference) and, with details, residual and stability figures per clock (a
    stability figure for each clock whose series allows one: the report says why for others)."""
    from bench.output.report_tie import needs_figure
    html = (run.path / "report.html").read_text()
    drawn = [(d, c) for d, c in _clocks(run)       # by default only the clocks that need a look
             if details or needs_figure(run.summary.devices[d].clocks[c])]
    stems = ["rack_offsets", "tie_rack"] + [f"tie_{d}_{c}" for d, c in drawn]
    stems += ["latency", "timeline", "reference"]
    if details:
        stems.append("latency_cdf")
        stems += [f"jitter_{d}_{c}" for d, c in _clocks(run)]
        for d, c in _clocks(run):
            skipped = f"{d} · {c}: no ADEV/MDEV/TDEV/MTIE: " in html
            assert skipped != (run.path / "plots" / f"stability_{d}_{c}.png").exists()
            if not skipped:
                stems.append(f"stability_{d}_{c}")
    return stems


def test_figures_exist_in_three_formats_at_screen_width(reported):
    plots = reported.path / "plots"
    assert len(_clocks(reported)) == 2
    for stem in expected_stems(reported):
        png, svg, pdf = (plots / f"{stem}.{ext}" for ext in ("png", "svg", "pdf"))
        w, h = _png_size(png.read_bytes())
        assert 430 <= w <= 1000 and 120 <= h <= 2000, (stem, w, h)     # fits a 1024 px window
        assert ET.parse(svg).getroot().tag.endswith("svg")
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 3000
        # a figure that draws nothing compresses to almost nothing
        assert png.stat().st_size > 4000, stem


RAW_NUMBER = re.compile(r"\d{10,}")


def test_figures_are_legible_at_100_percent_zoom(reported, built):
    """Every figure is embedded at its own size (one PNG pixel per CSS pixel at 96 dpi), so a
    text of p points shows at p * 96 / 72 CSS px: the smallest text of every figure is at least
    11 px. No title, label, tick, legend or annotation holds a raw 10+-digit number."""
    html = (reported.path / "report.html").read_text()
    assert set(built.figure_texts) == set(expected_stems(reported))
    assert set(built.figure_pt) == set(built.figure_texts)
    for stem, texts in built.figure_texts.items():
        assert texts, stem
        assert built.figure_pt[stem] * 96 / 72 >= 11, (stem, built.figure_pt[stem])
        bad = [t for t in texts if RAW_NUMBER.search(t.replace(",", ""))]
        assert not bad, (stem, bad)
        w, h = _png_size((reported.path / "plots" / f"{stem}.png").read_bytes())
        assert f'<figure style="width:{w}px"><img' in html and f'alt="{stem}" width="{w}"' \
            in html, stem
    # every axis carries its unit or says it has none
    for stem in ("rack_offsets", "timeline", "reference") + tuple(
            x for x in built.figure_texts if x.startswith(("tie_", "stability_"))):
        labels = " ".join(built.figure_texts[stem])
        assert re.search(r"\((ms|s|µs|ns|dimensionless)\)", labels) or "±1 ms" in labels, stem
    stab = next(v for k, v in built.figure_texts.items() if k.startswith("stability_"))
    assert {"ADEV", "MDEV", "TDEV", "MTIE"} <= set(stab)


def test_tie_titles_give_intervals_and_the_envelope_is_the_estimators(reported, built):
    """A clock's TIE figure is titled with its offset and drift intervals and their words, never
    a point drift; its envelope is summary.json's band (the estimator's two-sided bound), point
    for point; breaks are marked."""
    from bench.output.tie import envelope, tie_of
    for d, c in _clocks(reported):
        texts = built.figure_texts[f"tie_{d}_{c}"]
        title = next(t for t in texts if t.startswith(f"{d} · {c}: "))
        assert re.search(r"\[[-\d.]+, [-\d.]+\] (ms|s|µs|ns) (proven|assumed)", title), title
        assert re.search(r"drift \[[-\d.]+, [-\d.]+\] ppm (proven|assumed)", title), title
        assert not re.search(r"drift [+-]?\d[\d.]* ppm", title), title
        cs = reported.summary.devices[d].clocks[c]
        tie = tie_of(reported, d, reported.summary.devices[d].plane, c, cs)
        for (_t_s, lo, hi, _), sg in zip(tie.segments, cs.segments):
            t, blo, bhi = envelope(sg)
            assert np.array_equal(t, np.asarray(sg.band.t_ns)) and len(t) > 10
            assert np.allclose(lo + tie.ref_ns, blo, atol=1) and np.allclose(hi + tie.ref_ns,
                                                                              bhi, atol=1)


def test_headline_figure_shows_the_calibrated_span_not_the_band_edges(reported, built):
    """The rack figure writes each clock's range over its calibrated span (as the limits judge
    it): it holds the truth and is narrower than the band's extrapolated edges
    (bmc-1 of a short run of 1 s reads: the band's ends are hundreds of ms wide)."""
    from bench.model.verdict import span_range
    from bench.units import fmt_interval_ns
    texts = built.figure_texts["rack_offsets"]
    narrower = 0
    for d, c in _clocks(reported):
        cs = reported.summary.devices[d].clocks[c]
        lo, hi = span_range(cs)
        assert fmt_interval_ns(lo, hi) in texts
        band_lo, band_hi = (f(sg.offset_range()[i] for sg in cs.segments)
                            for f, i in ((min, 0), (max, 1)))
        assert fmt_interval_ns(band_lo, band_hi) not in texts
        for sg in cs.segments:              # sound: the truth at the epoch lies inside
            assert sg.truth is not None and lo <= sg.truth.offset_ns <= hi
        narrower += (hi - lo) < 0.5 * (band_hi - band_lo)
    assert narrower >= 1


def _h2(html: str) -> list[str]:
    return re.findall(r"<h2>([^<]*)</h2>", html)


def test_verdict_page_comes_first(reported):
    """Verdict page: the overall line, limits, the compact clock table with its legend, the
    headline figure; then the TIE view; details after."""
    html = (reported.path / "report.html").read_text()
    heads = _h2(html)
    assert heads[0] == "Verdict" and heads[1] == "Offset against time (TIE)"
    assert heads.index("Run") > 1 and heads.index("Chrony-style statistics beside the bench's "
                                                  "bounds") > heads.index("Run")
    order = [html.index(x) for x in ('<p class="overall', "<h3>Limits</h3>", "<h3>Clocks</h3>",
                                     'class="verdict"', "rack_offsets", "<h2>Offset against")]
    assert order == sorted(order)
    overall = re.search(r'<p class="overall (\w+)"><b>(\w+)</b> ([^<]*)</p>', html)
    assert overall and overall.group(2) in ("PASS", "FAIL", "UNDECIDED")
    assert overall.group(2) == "PASS" and "no limits declared" in overall.group(3)
    assert "assumed: holds only under the assumption" in html        # the legend of the words
    assert "ASSUMED" not in html and "BEYOND PRIOR" not in html     # one vocabulary


def test_the_run_names_both_durations(reported):
    """Issue 45 item 6: "duration 108.745 s" for a 60 s run; now the probing and the wall time,
    each named, to the tenth of a second."""
    html = (reported.path / "report.html").read_text()
    m = re.search(r"<td>duration</td><td>probing (\d+\.\d) s; wall (\d+\.\d) s</td>", html)
    assert m, re.search(r"<td>duration</td><td>[^<]*</td>", html)
    assert 0 < float(m.group(1)) <= float(m.group(2))


def test_html_is_self_contained(reported):
    html = (reported.path / "report.html").read_text()
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) == len(expected_stems(reported))
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        w, _ = _png_size(base64.b64decode(src.split(",", 1)[1]))
        assert w > 400
    assert not re.search(r'(src|href)="(https?:)?//', html)       # nothing fetched from a network
    for heading in ("Verdict", "Devices and reference", "Clocks", "Offset against time (TIE)",
                    "Per clock: offset and residuals", "Residual jitter and brackets",
                    "Stability", "Stimuli and log latency", "Reference over the run"):
        assert f"<h2>{heading}" in html
    assert BASELINE in html and "1.9.3" in html                    # firmware in the identity table
    assert "this section failed" not in html


def test_the_report_never_calls_an_assumed_drift_proven(reported):
    """Every drift-at-an-instant cell carries the summary's own word for it (assumed in this
    run), in the verdict table, the clocks table and the chrony-style table; no column is headed
    'drift (proven)'. Only the mean drift, the one proven drift, may say proven."""
    html = (reported.path / "report.html").read_text()
    assert "drift (proven)" not in html
    words = {sg.drift_status for _, c in reported.summary.clocks() for sg in c.segments}
    assert words == {"assumed"}
    tables = re.findall(r"<table[^>]*>(.*?)</table>", html, re.S)
    checked = 0
    for t in tables:
        head = re.findall(r"<th>([^<]*)</th>", t)
        cols = [i for i, h in enumerate(head) if "drift" in h and "mean" not in h
                and "prior" not in h]
        for row in re.findall(r"<tr>(.*?)</tr>", t)[1:]:
            cells = re.findall(r"<td>([^<]*)</td>", row)
            for i in cols:
                if "ppm" in cells[i]:
                    assert cells[i].endswith("ppm assumed"), (head[i], cells[i])
                    checked += 1
    assert checked >= 6                         # three tables, two clocks


def test_the_default_report_draws_the_page_and_leaves_details_on_demand(reported, tmp_path):
    run = tmp_path / "copy"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    rr = report.build_report(run)
    files = sorted(p.name for p in (run / "plots").iterdir())
    assert all(f.endswith(".png") for f in files)
    assert [p.name for p in rr.written] == [f"{s}.png" for s in expected_stems(load_run(run),
                                                                              details=False)]
    html = (run / "report.html").read_text()
    assert html.count("rackclock report RUN --details") >= 3   # jitter, stability, latency CDF
    assert len(html) < 1_500_000


def _incident(wrong: int, contains: bool = True) -> dict:
    """incident.json as experiments/incident.py writes it (its end-to-end part)."""
    return {"schema": 1, "offline": None, "end_to_end": {
        "played": True, "events": [], "missing": ["node NotReady: not played"],
        "rackclock": {"pairs": 3, "right": 3 - wrong, "wrong": wrong, "unordered": 0},
        "naive": {"pairs": 3, "right": 1, "wrong": 2, "unordered": 0},
        "true_first": "CDU pump trip", "first_set": ["CDU pump trip", "BMC thermal event"],
        "first_contains_truth": contains, "naive_first": "BMC thermal event"}}


def test_the_incident_result_is_on_the_verdict_page(reported, tmp_path):
    """Which plane broke first, from the run folder's incident.json, before the clock table;
    a wrong ordering makes the overall verdict FAIL."""
    import json
    run = tmp_path / "inc"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    (run / "incident.json").write_text(json.dumps(_incident(0)))
    report.build_report(run, sections=SECTIONS[:1], processes=1)
    html = (run / "report.html").read_text()
    assert html.index("<h3>Which plane broke first</h3>") < html.index("<h3>Clocks</h3>")
    assert '<p class="incident">one of {CDU pump trip, BMC thermal event} (true first: CDU pump ' \
        'trip, contained)' in html and "the naive merge says BMC thermal event" in html
    assert '<p class="overall pass"><b>PASS</b>' in html and "incident ordered" in html
    (run / "incident.json").write_text(json.dumps(_incident(1, contains=False)))
    report.build_report(run, sections=SECTIONS[:1], processes=1)
    html = (run / "report.html").read_text()
    assert '<p class="overall fail"><b>FAIL</b> incident: 1 pair(s) ordered wrong; incident: ' \
           'the first-event set misses the true first' in html


def test_limits_decide_the_overall_verdict(reported, tmp_path):
    """The rack file's [limits] (kept in the manifest) judged on the verdict page over the
    calibrated span: loose offset limits pass, one inside the span's range is undecided, one
    the whole range exceeds (bmc-2 runs 41 s behind) fails."""
    import json

    from bench.model.verdict import span_range
    run = tmp_path / "lim"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    m = json.loads((run / "manifest.json").read_text())
    lo, hi = span_range(reported.summary.devices["bmc-1"].clocks["datetime"])
    assert lo < hi / 2 and hi > 0
    cases = ({"bmc-1": "100ms", "bmc-2": "100s"}, "PASS"), \
        ({"bmc-1": f"{hi / 2:.0f}ns"}, "UNDECIDED"), ({"bmc-2": "1s"}, "FAIL")
    for limits, word in cases:
        m["inventory"]["limits"] = {"planes": {}, "devices": {
            d: {"offset_within": v} for d, v in limits.items()}}
        (run / "manifest.json").write_text(json.dumps(m))
        report.build_report(run, sections=SECTIONS[:1], processes=1)
        html = (run / "report.html").read_text()
        head = re.search(r'<p class="overall \w+"><b>(\w+)</b> ([^<]*)</p>', html)
        assert head.group(1) == word, (limits, head.group(0))
        assert 'class="limits"' in html and (word == "PASS" or list(limits)[0] in head.group(2))
        assert (run / "limits.xml").exists()


def _measurement(name: str, outcome: str) -> dict:
    """One record of measurements.json as bench.lab's `measure` writes it."""
    return {"name": name, "unit": "ns", "point": 2e6, "lo": 1e6, "hi": 3e6, "basis": "proven",
            "device": "bmc-1", "limit_lo": None, "limit_hi": 2.5e6 if outcome != "no limit"
            else None, "outcome": outcome, "doc": f"{name}: what it is"}


def test_measurements_follow_the_verdict_and_decide_it(reported, tmp_path):
    """The experiment's own measurements come right after the verdict page, before the TIE
    view; a measurement without a limit is recorded, not judged (never 'pass'); an undecided
    one makes the overall verdict UNDECIDED, a failed one FAIL."""
    import json
    run = tmp_path / "meas"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    for outcomes, word in ((["no limit"], "PASS"), (["no limit", "undecided"], "UNDECIDED"),
                           (["undecided", "fail"], "FAIL")):
        ms = [_measurement(f"m{k}", o) for k, o in enumerate(outcomes)]
        (run / "measurements.json").write_text(json.dumps({"measurements": ms}))
        report.build_report(run, sections=SECTIONS[:3], processes=1)
        html = (run / "report.html").read_text()
        assert _h2(html)[:3] == ["Verdict", "Measurements (clock_offset)",
                                 "Offset against time (TIE)"]
        assert re.search(r'<p class="overall \w+"><b>(\w+)</b>', html).group(1) == word
        assert ("<td>no limit</td>" in html) == ("no limit" in outcomes)
        assert "<td>pass</td>" not in html


def test_a_stuck_clock_shows_no_offset_or_drift(reported, tmp_path):
    """A clock the estimator calls stuck (issue 29) is one row saying so, with no offset, drift
    or figure anywhere in the report."""
    import json
    run = tmp_path / "stuck"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    s = json.loads((run / "summary.json").read_text())
    s["devices"]["bmc-2"]["clocks"]["datetime"].update(verdict="stuck",
                                                       stuck={"reads": 40, "span_s": 16.0})
    (run / "summary.json").write_text(json.dumps(s))
    rr = report.build_report(run, processes=1)
    html = (run / "report.html").read_text()
    assert "<td>bmc-2 datetime</td><td>stuck (no advance over 40 reads spanning 16 s)</td>" \
        "<td>—</td><td>—</td>" in html
    assert not any("bmc-2" in p.name for p in rr.written)
    assert not any("bmc-2" in t for t in rr.figure_texts["rack_offsets"])
    assert "<td>bmc-2</td><td>datetime</td><td>1</td>" not in html       # no clocks-table row


def test_each_clocks_model_line_is_under_the_verdict_table(reported, tmp_path):
    """summary.json's per-clock `assumptions.model` (issue 28), read defensively: said under the
    compact table, equal lines once; absent in older folders: nothing said."""
    import json
    run = tmp_path / "model"
    shutil.copytree(reported.path, run, ignore=shutil.ignore_patterns("plots", "report.html"))
    s = json.loads((run / "summary.json").read_text())
    for d in s["devices"].values():            # an older folder: no model stated
        for c in d["clocks"].values():
            c.get("assumptions", {}).pop("model", None)
    (run / "summary.json").write_text(json.dumps(s))
    report.build_report(run, sections=SECTIONS[:1], processes=1)
    assert "offset moves" not in (run / "report.html").read_text()
    for d, text in (("bmc-1", "offset moves at most 600 ppm between reads (checked)"),
                    ("bmc-2", "offset moves at most 50 ppm between reads (checked)")):
        s["devices"][d]["clocks"]["datetime"]["assumptions"]["model"] = text
    (run / "summary.json").write_text(json.dumps(s))
    report.build_report(run, sections=SECTIONS[:1], processes=1)
    html = (run / "report.html").read_text()
    assert html.index("offset moves at most 600 ppm between reads (checked) (bmc-1 datetime)") \
        > html.index('class="verdict"')
    assert "offset moves at most 50 ppm between reads (checked) (bmc-2 datetime)" in html


def _chromium(args, tmp_path, timeout=120):
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


MEASURE = """<script>
window.addEventListener('load', () => {
  const v = document.querySelector('table.verdict').getBoundingClientRect();
  const o = document.querySelector('p.overall').getBoundingClientRect();
  document.body.setAttribute('data-measured', JSON.stringify({
    scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
    table_right: v.right, table_bottom: v.bottom, overall_top: o.top}));
});
</script></body>"""


@pytest.mark.parametrize("width", [1024, 1400])
def test_report_in_headless_chromium(reported, tmp_path, width):
    """Opened in a browser at 1024 and 1400 px: nothing wider than the window, the overall
    verdict on the first screen and the clock table fully there; the screenshots are kept in
    the run folder (report_<width>.png) for a person to look at."""
    import json
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed: the report cannot be opened in a browser here")
    page = tmp_path / "measured.html"
    page.write_text((reported.path / "report.html").read_text().replace("</body>", MEASURE))
    dom = _chromium([f"--window-size={width},1200", "--dump-dom", page.as_uri()], tmp_path)
    assert "<h1>rackclock run" in dom
    first = dom[dom.index("<h2>"):]
    assert first.startswith("<h2>Verdict</h2>")
    assert dom.count("<figure") == len(expected_stems(reported))
    m = json.loads(html_unescape(re.search(r'data-measured="([^"]+)"', dom).group(1)))
    assert m["scroll"] <= m["inner"] and m["table_right"] <= m["inner"], m   # no sideways scroll
    assert m["overall_top"] < 200, m
    assert m["table_bottom"] < 1200, m           # the clock table on the first screen
    shot = reported.path / f"report_{width}.png"
    _chromium([f"--window-size={width},2000", f"--screenshot={shot}",
               (reported.path / "report.html").as_uri()], tmp_path)
    assert _png_size(shot.read_bytes()) == (width, 2000)
    # the first screen holds ink (a blank page compresses to a few kB)
    assert shot.stat().st_size > 60_000


def html_unescape(x: str) -> str:
    import html
    return html.unescape(x)


def test_a_new_section_joins_and_a_broken_one_is_shown(reported, tmp_path):
    run = tmp_path / "copy"
    shutil.copytree(reported.path, run)

    def timeline(r):
        return f"<h2>Timeline</h2><p>{len(r.devices)} devices</p>"

    def broken(r):
        raise ValueError("no such plane")

    report.build_report(run, sections=[*SECTIONS[1:3], timeline, broken], formats=("png",))
    html = (run / "report.html").read_text()
    assert "<h2>Timeline</h2><p>2 devices</p>" in html
    assert "this section failed" in html and "no such plane" in html


def test_residuals_of_exact_reads_straddle_the_true_line():
    """Reads of a clock with offset 5 ms and drift 10 ppm: each read's residual interval against
    the true line contains zero, and its midpoint is within half the interval."""
    rng = np.random.default_rng(1)
    t0 = 1_700_000_000_000_000_000
    s = t0 + np.sort(rng.integers(0, 20_000_000_000, 200))
    e = s + rng.integers(100_000, 2_000_000, 200)
    sampled = s + (e - s) // 3
    q = 50_000                                  # finer than every bracket: not coarse
    true = sampled + 5_000_000 + (10e-6 * (sampled - t0)).astype(np.int64)
    v = (true // q) * q
    seg = SegmentSummary.of({"start_ns": int(s[0]), "end_ns": int(e[-1]), "epoch_ns": t0,
                             "resolution_ns": q,
                             "offset_ns": {"lo": 5_000_000, "hi": 5_000_000, "point": 5_000_000},
                             "drift_ppm": {"lo": 10.0, "hi": 10.0, "point": 10.0}})
    r = segment_residuals(s, e, v, np.full(200, q), seg)
    assert len(r) == 200 and not r.coarse
    assert np.all(r.lo <= 1) and np.all(r.hi >= -1)
    assert np.all(np.abs(r.mid) <= (r.hi - r.lo) / 2 + 1)
    assert np.array_equal(r.bracket, (e - s).astype(float))
    seg = dataclasses.replace(seg, resolution_ns=10_000_000)   # a 10 ms tick over ~1 ms
    # brackets is coarse
    assert segment_residuals(s, e, (true // 10_000_000) * 10_000_000, 10_000_000, seg).coarse


def test_regular_series_needs_enough_gapless_bins():
    t = np.arange(40) * 500_000_000 + 7
    ok = regular_series(t, np.arange(40.0))
    assert ok.ok and ok.interval_s == 0.5 and len(ok.x) == 38
    assert regular_series(t[:6], np.arange(6.0)).note.endswith("too short for 8 regular bins")
    gappy = np.concatenate((t[:20], t[20:] + 4_000_000_000))
    note = regular_series(gappy, np.arange(40.0)).note
    assert "too irregular" in note


def test_median_ci_from_order_statistics():
    x = np.arange(1.0, 11.0)                  # n = 10: the 95% interval is [x(2), x(9)]
    lo, med, hi = median_ci(x)
    assert (lo, med, hi) == (2.0, 5.5, 9.0)
    cover = 1 - 2 * sum(comb(10, k) for k in range(2)) / 2 ** 10
    assert cover >= 0.95
    assert median_ci([3.0, 1.0]) == (1.0, 2.0, 3.0)   # too few for 95%: the full range


def test_an_unknown_figure_format_is_one_line_and_nothing_written(tmp_path, capsys):
    assert report_cli.main([str(tmp_path), "--formats", "png,gif"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown gif (accepted: png, svg, pdf)" in err
    assert not list(tmp_path.iterdir())
