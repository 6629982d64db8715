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
from pathlib import Path

import numpy as np
import pytest

from bench.output import report
from bench.analysis.estimate import DEFAULT_DRIFT_PRIOR_PPM
from bench.output.report_sections import SECTIONS
from bench.analysis.residuals import median_ci, regular_series, segment_residuals
from bench.model.documents import SegmentSummary
from bench.model.rundata import load_run
from firmware_runs import BASELINE, shared_runs

CHROMIUM = "/usr/bin/chromium"


_built = {}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The baseline run, reported once (png, svg and pdf figures)."""
    path = shared_runs(tmp_path_factory)[BASELINE]
    _built["rr"] = report.build_report(path)
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


def expected_stems(run) -> list[str]:
    """Offset and residual figures per clock, the latency figure, and a stability figure for
    each clock whose series allows one (the report says why for the others)."""
    html = (run.path / "report.html").read_text()
    stems = [f"{kind}_{d}_{c}" for d, c in _clocks(run) for kind in ("offset", "jitter")]
    for d, c in _clocks(run):
        skipped = f"{d} · {c}: no ADEV/MDEV/TDEV/MTIE: " in html
        assert skipped != (run.path / "plots" / f"stability_{d}_{c}.png").exists()
        if not skipped:
            stems.append(f"stability_{d}_{c}")
    return ["rack_offsets"] + stems + ["latency", "timeline", "reference"]


def test_figures_exist_in_three_formats_at_column_width(reported):
    plots = reported.path / "plots"
    assert len(_clocks(reported)) == 2
    stems = expected_stems(reported)
    for stem in stems:
        png, svg, pdf = (plots / f"{stem}.{ext}" for ext in ("png", "svg", "pdf"))
        w, h = _png_size(png.read_bytes())
        if stem in ("timeline", "rack_offsets", "latency"):          # page wide: two columns
            assert 900 <= w <= 1500 and 150 <= h <= 2000, (stem, w, h)
        else:                               # one column (3.5 in at 200 dpi) to one and a half
            assert 450 <= w <= 1050 and 150 <= h <= 900, (stem, w, h)
        assert ET.parse(svg).getroot().tag.endswith("svg")
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 3000
        # a figure that draws nothing compresses to almost nothing
        assert png.stat().st_size > 8000, stem


RAW_NUMBER = re.compile(r"\d{10,}")


def test_figures_are_legible_at_printed_size(reported, built):
    """Every figure is shown at its printed size (never squeezed below its content), and no
    title, label, tick, legend or annotation holds a raw 10+-digit number (a counter's epoch,
    a reference timestamp in ns)."""
    html = (reported.path / "report.html").read_text()
    assert set(built.figure_texts) == set(expected_stems(reported))
    for stem, texts in built.figure_texts.items():
        assert texts, stem
        bad = [t for t in texts if RAW_NUMBER.search(t.replace(",", ""))]
        assert not bad, (stem, bad)
        w, h = _png_size((reported.path / "plots" / f"{stem}.png").read_bytes())
        css = round(w / 200 * 96)
        assert f'<figure style="width:{css}px"><img' in html and f'alt="{stem}" width="{css}"' \
            in html, stem
    # every axis carries its unit or says it has none
    for stem in ("rack_offsets", "timeline", "reference") + tuple(
            x for x in built.figure_texts if x.startswith(("offset_", "stability_"))):
        labels = " ".join(built.figure_texts[stem])
        assert re.search(r"\((ms|s|µs|ns|dimensionless)\)", labels) or "±1 ms" in labels, stem
    stab = next(v for k, v in built.figure_texts.items() if k.startswith("stability_"))
    assert {"ADEV", "MDEV", "TDEV", "MTIE"} <= set(stab)
    assert not any("(1)" in t for t in stab)
    assert "width:3.5in" not in html and "max-width:3.6in" not in html


def test_verdict_page_comes_first(reported):
    html = (reported.path / "report.html").read_text()
    first = html.index("<h2>")
    assert html[first:].startswith("<h2>Verdict</h2>")
    assert html.index("rack_offsets") < html.index("<h2>Run</h2>")
    assert "Ordering horizon" in html and "What the bounds assume" in html
    # bmc-1's 13 s of 1 s reads cannot narrow drift below the prior: said, not proven
    assert "ASSUMED" in html and f"±{DEFAULT_DRIFT_PRIOR_PPM:g} ppm prior" in html


def test_html_is_self_contained(reported):
    html = (reported.path / "report.html").read_text()
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) == len(expected_stems(reported))
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        w, _ = _png_size(base64.b64decode(src.split(",", 1)[1]))
        assert w > 400
    assert not re.search(r'(src|href)="(https?:)?//', html)       # nothing fetched from a network
    for heading in ("Verdict", "Devices and reference", "Clocks", "Offset over time",
                    "Residual jitter and brackets", "Stability", "Stimuli and log latency",
                    "Reference over the run"):
        assert f"<h2>{heading}" in html
    assert BASELINE in html and "1.9.3" in html                    # firmware in the identity table
    assert "this section failed" not in html


def test_report_opens_in_headless_chromium(reported, tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed: the report cannot be opened in a browser here")
    page = (reported.path / "report.html").as_uri()
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page], capture_output=True, text=True, timeout=90)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<h1>rackclock run" in dom.stdout
    first = dom.stdout[dom.stdout.index("<h2>"):]
    assert first.startswith("<h2>Verdict</h2>") and first.index("rack_offsets") < \
        first.index("<h2>Run</h2>")               # the first screen: verdicts and rack figure
    assert dom.stdout.count("<figure") == len(expected_stems(reported))
    shot = tmp_path / "report.png"
    r = subprocess.run(base + ["--window-size=1000,2400", f"--screenshot={shot}", page],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _png_size(shot.read_bytes()) == (1000, 2400)


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
