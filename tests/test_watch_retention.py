"""Retention of the watch's day folders: a closed day is packed (its samples into
<day>.tar.gz beside the folder, the small files kept), still resumed from and mapped through
exactly as before, and removed once older than --keep-days."""
from __future__ import annotations

import json
import shutil

import pytest
from racks import sim_rack_text

from bench.model.rundata import load_run
from bench.run.experiment import run_experiment
from bench.watch.mapping import Mapper, Query
from bench.watch.resume import resume
from bench.watch.retention import archive_of, tidy
from bench.watch.state import WatchState


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ret")
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-2"]))
    return run_experiment("clock_offset", rack, tmp / "runs",
                          {"duration_s": "8", "stimulus_every_s": "100"}, quiet=True)


def _as_watch_day(run, out):
    """The run as a closed day of a watch; (folder, its end in Unix s)."""
    day = out / (run.name + "-watch")
    shutil.copytree(run, day)
    man = json.loads((day / "manifest.json").read_text())
    man.update(experiment="watch", rack_file="lab.toml")
    (day / "manifest.json").write_text(json.dumps(man))
    return day, int(man["ended_ns"]) / 1e9


def test_a_packed_day_is_resumed_and_mapped_as_before_then_removed(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    day, end = _as_watch_day(run, out)
    now = end + 2 * 86400
    st0 = WatchState(lambda: 0)
    before = resume(out, "lab.toml", st0, {"bmc-2"})
    s, e, v, _ = load_run(day).clock_reads("bmc-2", "datetime")
    q = Query("bmc-2", "datetime", int(v[len(v) // 2]), 10**9, "x")
    mapped = Mapper(None, lambda: [day]).map(q)
    size = sum(p.stat().st_size for p in day.rglob("*") if p.is_file())
    assert tidy(out, 86400, 90 * 86400, now) == ([day], [])
    assert archive_of(day).exists() and not (day / "samples").exists()
    assert (day / "manifest.json").exists() and (day / "summary.json").exists()
    assert archive_of(day).stat().st_size < size
    st1 = WatchState(lambda: 0)
    assert resume(out, "lab.toml", st1, {"bmc-2"}) == before and before["bmc-2"] >= 5
    w0 = st0.devices["bmc-2"].clocks["datetime"].window.reads
    assert list(st1.devices["bmc-2"].clocks["datetime"].window.reads) == list(w0)
    got = Mapper(None, lambda: [day]).map(q)
    assert (got["lo_ns"], got["hi_ns"], got["status"]) == \
        (mapped["lo_ns"], mapped["hi_ns"], mapped["status"])
    assert tidy(out, 86400, 90 * 86400, now) == ([], [])          # packed once
    assert tidy(out, 3600, 86400, now) == ([], [day])
    assert not day.exists() and not archive_of(day).exists()


def test_a_recent_day_is_left_as_it_is(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    day, end = _as_watch_day(run, out)
    assert tidy(out, 86400, 90 * 86400, end + 3600) == ([], [])
    assert (day / "samples" / "bmc-2.csv").exists()
