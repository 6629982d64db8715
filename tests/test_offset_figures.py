"""A run draws its offset figures only up to bench.output.closing.FIGURES_UP_TO clocks unless
asked (`rackclock run --offset-figures`); beyond, the closing output says how to get them and
`rackclock report RUN --offset-figures` draws them (issue 46 item 1: 300 clocks' figures were
most of the wait after the probing). On the recorded six-device run with the threshold set low."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.commands import report
from bench.model.rundata import load_run
from bench.model.store import RunStore
from bench.output import closing
from bench.run.experiment import Bench

RECORDED = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"


def _store(tmp_path: Path) -> RunStore:
    """A run store whose folder holds the recorded run (summary and samples)."""
    store = RunStore(tmp_path / "out", "20261201T161000Z-clock_offset")
    shutil.copytree(RECORDED, store.path, dirs_exist_ok=True)
    return store


def _offset_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "plots").glob("offset_*")) \
        if (path / "plots").is_dir() else []


def test_beyond_the_threshold_the_run_leaves_them_and_says_how(tmp_path, monkeypatch):
    store = _store(tmp_path)
    try:
        clocks = closing.figure_clocks(load_run(store.path).summary)
        assert clocks >= 2
        monkeypatch.setattr(closing, "FIGURES_UP_TO", clocks - 1)
        bench = Bench(None, None, store, False)      # type: ignore[arg-type]
        assert bench.plot() == [] and _offset_files(store.path) == []
        text, _ = closing.closing_text(store.path, wide=True)
        assert f"offset figures: not drawn by the run ({clocks} clocks, more than " \
               f"{clocks - 1}); `rackclock report {store.path} --offset-figures`" in text
        assert report.main([str(store.path), "--offset-figures", "--processes", "2"]) == 0
        assert len(_offset_files(store.path)) == clocks
        assert "offset figures" not in closing.closing_text(store.path, wide=True)[0]
    finally:
        store.close()


@pytest.mark.parametrize("asked", [False, True])
def test_up_to_the_threshold_or_asked_the_run_draws_them(tmp_path, monkeypatch, asked):
    store = _store(tmp_path)
    try:
        clocks = closing.figure_clocks(load_run(store.path).summary)
        monkeypatch.setattr(closing, "FIGURES_UP_TO", clocks - 1 if asked else clocks)
        bench = Bench(None, None, store, False, offset_figures=asked)  # type: ignore[arg-type]
        drawn = bench.plot()
        assert sorted(p.name for p in drawn) == _offset_files(store.path)
        assert len(drawn) == clocks
        assert "offset figures" not in closing.closing_text(store.path, wide=True)[0]
    finally:
        store.close()


def test_run_takes_the_flag():
    from bench.commands.run import parser
    assert parser().parse_args(["--offset-figures"]).offset_figures is True
    assert parser().parse_args([]).offset_figures is False
