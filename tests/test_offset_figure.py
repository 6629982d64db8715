"""The offset figures agree with their titles (issue 45 item 4), drawn from the recorded run folder
(tests/data/recorded/: no new run): the bound the title states is drawn, at a scale where it is
seen; the band between reads, which the rate bound widens, is lighter and the caption says why;
no title leaves its figure. bench/output/plots.py (the run's offset_* figures) and
bench/output/tie.py (the report's per-clock and rack-wide TIE figures)."""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from bench.model.rundata import load_run
from bench.output import figures
from bench.output.plots import offset_figure
from bench.output.tie import fit_title, tie_of

RECORDED = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"
SCALE = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1.0}


@pytest.fixture(scope="module")
def run():
    return load_run(RECORDED)


def _clocks(run):
    return [(d, x.plane, c, cs) for d, x in run.summary.devices.items()
            for c, cs in x.clocks.items() if cs.segments]


def _inside(fig, artist) -> bool:
    """The artist's drawn extent lies within the figure (a title cut at its edge does not)."""
    box = artist.get_window_extent(fig.canvas.get_renderer())
    f = fig.bbox
    return box.x0 >= f.x0 - 1 and box.x1 <= f.x1 + 1 and box.y0 >= f.y0 - 1 and box.y1 <= f.y1 + 1


def _unit(label: str) -> float:
    return SCALE[re.search(r"\((s|ms|µs|ns)\)", label).group(1)]


def _by_label(ax, text):
    return next(a for a in ax.collections if a.get_label().startswith(text))


def test_the_offset_figure_draws_the_titles_bound_at_its_scale(run):
    seen = 0
    for device, plane, clock, c in _clocks(run):
        fig = offset_figure(run, device, clock, c, plane)
        try:
            ax = fig.axes[0]
            assert _inside(fig, ax.title), ax.get_title()
            sc = _unit(ax.get_ylabel())
            ylo, yhi = ax.get_ylim()
            sg = c.segments[-1]                       # the title states the last segment's
            width = (sg.offset_ns.hi - sg.offset_ns.lo) / sc
            assert width >= 0.04 * (yhi - ylo), (device, clock, width, (ylo, yhi))
            bar = _by_label(ax, "bound at the epoch")          # the first segment's
            (lo, hi), = [(p[0][1], p[1][1]) for p in bar.get_segments()]
            first = (c.segments[0].offset_ns.hi - c.segments[0].offset_ns.lo) / sc
            assert abs((hi - lo) - first) <= 1e-3 * first and ylo <= lo and hi <= yhi   # ~1e18 floats
            band = _by_label(ax, "proven band between reads")
            assert band.get_alpha() < bar.get_alpha()
            rate = c.assumptions.rate_bound_ppm
            assert f"widened at {rate:g} ppm" in band.get_label()
            caption = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
            assert f"widened by the {rate:g} ppm rate bound times the time to the nearest read" \
                in caption and "as the title states" in caption
            assert all(_inside(fig, t) for t in fig.texts)
            seen += 1
        finally:
            plt.close(fig)
    assert seen == len(_clocks(run)) >= 5


def test_the_report_tie_figures_keep_their_titles_and_the_residuals_scale(run):
    ties = [tie_of(run, d, plane, c, cs) for d, plane, c, cs in _clocks(run)]
    for tie in ties:
        fig = figures.tie_figure(tie)
        try:
            top, res = fig.axes[:2]
            title = top._left_title                   # the screen style titles on the left
            assert _inside(fig, title), title.get_text()
            assert title.get_text().replace("\n", " ") == tie.title
            sc = _unit(res.get_ylabel())
            _, lo, hi, _ = tie.stated[-1]
            ylo, yhi = res.get_ylim()
            assert (hi - lo) / sc >= 0.04 * (yhi - ylo), (tie.label, (hi - lo) / sc, (ylo, yhi))
        finally:
            plt.close(fig)
    fig = figures.rack_tie_figure(ties)
    try:
        for ax in fig.axes:
            if ax.get_visible():
                assert ax.get_title(loc="left") and _inside(fig, ax._left_title), ax.get_title(loc="left")
    finally:
        plt.close(fig)


def test_titles_break_between_intervals_never_inside_one():
    t = "host-1 · kmsg: zero at 2026-12-07 05:29:17.5725514Z ±4.76 µs proven, drift [-600, 600] ppm assumed"
    assert fit_title(t, 6.2).split("\n") == [
        "host-1 · kmsg: zero at 2026-12-07 05:29:17.5725514Z ±4.76 µs proven,",
        "drift [-600, 600] ppm assumed"]
    assert fit_title("short", 2.0) == "short"
    assert all("[" not in x or "]" in x for x in fit_title(t, 2.2).split("\n"))


def test_a_title_at_its_fixed_height_never_covers_a_y_offset_text(tmp_path):
    """The report's titles sit at a fixed height (figures.SCREEN_RC: no layout pass of their
    own); an axes whose y axis shows an offset text ('+1e3') gets matplotlib's placement back
    in figures.save, so the title is above that text. An axes without one keeps its title at the
    axes' top."""
    with figures.screen_style():
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(figures.FULL_IN, 3))
        a1.plot([0, 1, 2], [1000.0001, 1000.0002, 1000.0003])      # an offset text shows
        a2.plot([0, 1, 2], [1, 2, 3])
        for ax in (a1, a2):
            ax.set_title("a title at the axes' left")
    figures.save(fig, tmp_path, "offset_text", tight=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)          # the save closed the figure: the same draw again
    canvas.draw()
    renderer = canvas.get_renderer()
    off = a1.yaxis.offsetText
    assert off.get_visible() and off.get_text()
    assert a1.title.get_window_extent(renderer).y0 >= off.get_window_extent(renderer).y1 - 0.5
    assert a2.title.get_position()[1] == 1.0 and not a2._autotitlepos
