"""The report's timeline page: lanes per plane, interval bars, proven order visible, 1,000 entries
paged with none cut; opened in a real headless chromium."""
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench.analysis.timeline import Entry, order
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
