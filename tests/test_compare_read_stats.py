"""Issue 46 item 3: compare and trend read the summaries, never the samples. What they judge of
a clock's reads (its distinct values, the bracket's and |residual|'s median CIs over the
longest segment) is in summary.json (`read_stats`); a summary written before it had them is
judged from the samples as before. On the recorded run, rebuilt by `rackclock summarize`: the
measures from read_stats, with every samples file made unreadable, equal the measures taken
from the samples of the same summary without read_stats, one for one."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests/data/recorded/20261201T161000Z-clock_offset"


def test_measures_from_read_stats_equal_those_from_the_samples(tmp_path, monkeypatch):
    from bench.compare.measures import run_measures
    from bench.model.rundata import Run, load_run
    from bench.resummarize import rebuild_summary
    run_dir = tmp_path / "new"
    shutil.copytree(RECORDED, run_dir)
    rebuild_summary(run_dir)
    doc = json.loads((run_dir / "summary.json").read_text())
    stats = [c.get("read_stats") for d in doc["devices"].values() for c in d["clocks"].values()]
    assert sum(s is not None and "bracket_ns" in s for s in stats) >= 5
    old_dir = tmp_path / "old"                  # the same summary without read_stats
    shutil.copytree(run_dir, old_dir)
    for d in doc["devices"].values():
        for c in d["clocks"].values():
            c.pop("read_stats", None)
    (old_dir / "summary.json").write_text(json.dumps(doc))
    from_samples = run_measures(load_run(old_dir))

    def no_samples(self, device):
        raise AssertionError(f"samples of {device} read")
    monkeypatch.setattr(Run, "samples", no_samples)
    from_summary = run_measures(load_run(run_dir))
    assert from_summary.keys() == from_samples.keys()
    names = {k[2] for k in from_summary}
    assert {"bracket", "jitter", "resolution"} <= names
    for k, m in from_summary.items():
        assert m == from_samples[k], k
