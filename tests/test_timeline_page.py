"""The report's timeline page: lanes per plane, interval bars, proven order visible, 1,000 entries
paged with none cut; opened in a real headless chromium."""
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench.analysis.timeline_order import Entry, order
from bench.output.timeline_page import timeline_html

CHROMIUM = "/usr/bin/chromium"
T0 = 1_795_000_000_000_000_000
MS = 1_000_000
PLANES = [("bmc-1", "bmc"), ("pdu-1", "pdu"), ("cdu-1", "cooling"), ("optic-1", "optic")]


def thousand_rows():
    rng = np.random.default_rng(5)
    ents = []
    for i in range(1000):
        dev, plane = PLANES[i % 4]
        lo = T0 + int(rng.uniform(0, 600_000) * MS)
        ents.append(Entry(dev, plane, f"event {i}", lo, lo + int(rng.uniform(1, 900)) * MS,
                          "stamp", raw=f"raw{i}", calibration="run:datetime#0"))
    return order(ents)


def test_every_entry_is_drawn_on_some_page_with_its_tooltip():
    rows = thousand_rows()
    frag = timeline_html(rows, T0)
    assert frag.count('class="bar"') == 1000
    assert len(re.findall(r"<section class='tl-page'", frag)) == 10
    idx = sorted(int(x) for x in re.findall(r'data-index="(\d+)"', frag))
    assert idx == list(range(1000))
    assert "raw stamp: raw0" in frag and "calibration: run:datetime#0" in frag
    hollow = frag.count('fill="none"')
    assert hollow == sum(1 for r in rows if r["unordered_count"])
    for lane in ("bmc", "pdu", "cooling", "optic"):
        assert 'class="lane" x="4"' in frag and f">{lane}</text>" in frag


def test_the_page_opens_in_headless_chromium_one_page_at_a_time(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed: the page cannot be opened in a browser here")
    page = tmp_path / "timeline.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    + timeline_html(thousand_rows(), T0) + "</body></html>", encoding="utf-8")
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    sections = re.findall(r'<section class="tl-page"[^>]*>', html)
    assert len(sections) == 10
    assert sum("hidden" in s for s in sections) == 9          # the script shows one page
    assert "page 1 of 10" in html
    assert html.count('class="bar"') == 1000                   # all still in the page
    shot = tmp_path / "shot.png"
    r = subprocess.run(base + ["--window-size=1200,1800", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.stat().st_size > 10_000, r.stderr[-2000:]


S = 1_000_000_000
RUN_S = 60


def run_and_stray_rows():
    """300 entries inside a 60 s run (ms wide), 12 from two hours to one hour before it (a
    device log's old records) and 3 from after it."""
    rng = np.random.default_rng(8)
    ents = []
    for i in range(300):
        dev, plane = PLANES[i % 4]
        lo = T0 + int(rng.uniform(0, RUN_S * 1000) * MS)
        ents.append(Entry(dev, plane, f"event {i}", lo, lo + int(rng.uniform(1, 30)) * MS, "stamp"))
    for i in range(12):
        lo = T0 - 7200 * S + i * 300 * S
        ents.append(Entry("cdu-1", "cooling", f"old record {i}", lo, lo + 2 * S, "stamp"))
    for i in range(3):
        lo = T0 + (RUN_S + 30 + i) * S
        ents.append(Entry("bmc-1", "bmc", f"late {i}", lo, lo + S, "stamp"))
    return order(ents)


def _ticks(fragment: str) -> list[str]:
    return re.findall(r'<text class="tick"[^>]*>([^<]*) s</text>', fragment)


def test_the_axis_spans_the_run_and_earlier_records_are_gathered_apart():
    rows = run_and_stray_rows()
    frag = timeline_html(rows, T0, span=(T0, T0 + RUN_S * S))
    assert frag.count('class="bar"') == len(rows)                   # every entry somewhere
    before = re.search(r"<details class='tl-out' data-side='before'><summary>([^<]*)</summary>",
                       frag)
    assert before and before.group(1).startswith("12 records from 2.0 h to 1.1 h before the run")
    assert "3 records from 30.0 s to 33.0 s after the run" in frag
    run_pages = re.findall(r'<svg[^>]* class="tl-run".*?</svg>', frag, flags=re.S)
    assert len(run_pages) == 3 and all("old record" not in p for p in run_pages)
    ticks = [float(x) for x in _ticks(run_pages[0])]
    assert ticks[0] == 0 and ticks[-1] == RUN_S and len(ticks) >= 4, ticks
    # ms-wide bounds, a 10 s step: whole seconds, never µs digits
    assert all("." not in x for x in _ticks(run_pages[0])), _ticks(run_pages[0])
    assert re.search(r'<text class="utc"[^>]*>\d\d:\d\d:\d\d</text>', run_pages[0])
    from bench.output.figures import timeline_figure
    fig = timeline_figure(rows, T0, (T0, T0 + RUN_S * S))
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert -1 <= lo <= 0 and RUN_S <= hi <= RUN_S + 1, (lo, hi)
    notes = [t.get_text() for t in ax.texts]
    assert any(n.startswith("◀ 12 records from 2.0 h to 1.1 h before the run") for n in notes)
    without = timeline_html(rows, T0)                                 # no span: as it was
    assert "<details" not in without and 'class="tl-run"' not in without


ZOOM_PROBE = """<script>
window.addEventListener('load', () => {
  const ticks = () => Array.from(document.querySelectorAll('svg.tl-run')[0]
      .querySelectorAll('text.tick')).map(t => t.textContent);
  const first = ticks();
  document.querySelector('.tl-in').click();
  document.body.setAttribute('data-ticks', JSON.stringify({first: first, zoomed: ticks(),
    view: document.querySelector('.tl-view').textContent}));
});
</script>"""


def test_the_timeline_opens_on_the_runs_span_in_headless_chromium(tmp_path):
    """The page in a real browser: the time axis spans the run (0 to 60 s), the 12 records
    from two hours before sit collapsed above it, and zooming in narrows the axis to the run's
    middle half (15 to 45 s); a screenshot is taken of it."""
    import json
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed: the page cannot be opened in a browser here")
    body = timeline_html(run_and_stray_rows(), T0, span=(T0, T0 + RUN_S * S))
    page = tmp_path / "timeline.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>" + body
                    + ZOOM_PROBE + "</body></html>", encoding="utf-8")
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    import html as _html
    probe = json.loads(_html.unescape(re.search(r'data-ticks="([^"]+)"', dom.stdout).group(1)))
    first = [float(x.removesuffix(" s")) for x in probe["first"]]
    zoomed = [float(x.removesuffix(" s")) for x in probe["zoomed"]]
    assert first[0] == 0 and first[-1] == RUN_S, probe
    assert zoomed[0] == 15 and zoomed[-1] == 45 and len(zoomed) >= 4, probe
    assert probe["view"] == "15 s to 45 s", probe
    assert re.search(r"<details class=\"tl-out\" data-side=\"before\"><summary>12 records",
                     dom.stdout)
    shot = tmp_path / "shot.png"
    r = subprocess.run(base + ["--window-size=1300,1400", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.stat().st_size > 10_000, r.stderr[-2000:]
