"""The regression gallery (docs/REGRESSION.md, tests/regression_gallery.py): six copies of one
small simulated rack where one thing changed, each REGRESSED with exit 1 against a shared
baseline within the run length the plan gives it, no unchanged device REGRESSED in any pair, an
unchanged rerun never REGRESSED; and the document's walk-through, run as written."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import regression_gallery as G
from racks import sim_rack_text

from bench.commands import compare as compare_cli
from bench.compare.plan import plan_run
from bench.compare.verdicts import compare_runs, load_tolerances
from bench.config.inventory import load_rack
from bench.model.outcomes import FAILING, exit_table_markdown
from bench.model.rundata import load_run

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "REGRESSION.md"


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return G.gallery_runs(tmp_path_factory.mktemp("gallery"))


@pytest.mark.slow
@pytest.mark.parametrize("case", list(G.CASES))
def test_each_case_regresses_with_exit_1(gallery, case, tmp_path, capsys):
    dev, _, measure = G.CASES[case]
    base, cand = G.baseline_of(gallery, case), gallery[case]
    js = tmp_path / "c.json"
    rc = compare_cli.main([str(base), str(cand), "--json", str(js)])
    out = capsys.readouterr().out
    rows = json.loads(js.read_text())["measures"]
    failed = [(r["device"], r["measure"]) for r in rows if r["verdict"] in FAILING]
    assert rc == 1, out
    assert any(d == dev and m.startswith(measure) for d, m in failed), (failed, out)
    assert {d for d, _ in failed} == {dev}, failed       # nothing else regressed
    # within the run length the plan gives the measure (the model's, before any run)
    family = "latency" if measure.startswith("latency") else measure
    if family in ("latency", "drift"):
        plan = plan_run(load_rack(cand.parent.parent / f"{case}.toml"), load_tolerances(None),
                        (family,))
        planned = max(n.span_s or plan.max_duration_s for n in plan.needs if n.device == dev)
        assert load_run(cand).manifest.duration_s <= planned, (planned, plan.lines())


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RACKCLOCK_GALLERY_LONG") != "1",
                    reason="two 15 min runs: set RACKCLOCK_GALLERY_LONG=1")
def test_a_worse_oscillator_regresses_in_its_long_run(tmp_path):
    base, cand = G.long_pair(tmp_path)
    cmp = compare_runs(load_run(base), load_run(cand), load_tolerances(None))
    assert [(r.device, r.measure) for r in cmp.failures] == [("bmc-2", "drift")], \
        [(r.device, r.measure, r.verdict, r.reason) for r in cmp.rows if r.measure == "drift"]


@pytest.mark.slow
def test_an_unchanged_rerun_never_regresses(gallery):
    cmp = compare_runs(load_run(gallery["baseline"]), load_run(gallery["unchanged"]),
                       load_tolerances(None))
    assert not cmp.failures, [(r.device, r.measure, r.reason) for r in cmp.failures]
    assert cmp.exit_status() in (0, 3) and cmp.exit_status(allow_undecided=True) == 0


def test_the_doc_prints_the_one_exit_table():
    assert exit_table_markdown() in DOC.read_text()


def walkthrough() -> list[tuple[str, int]]:
    """(command, expected exit status) of the document's walk-through."""
    block = DOC.read_text().split("## Walk-through", 1)[1].split("```sh\n", 1)[1].split("```")[0]
    out = []
    for line in block.strip().splitlines():
        cmd, _, code = line.partition("# exit")
        out.append((cmd.strip(), int(code)))
    return out


@pytest.mark.slow
def test_the_walkthrough_runs_as_written(tmp_path):
    (tmp_path / "before.toml").write_text(sim_rack_text(["bmc-1"], name="walk", seed=5))
    (tmp_path / "after.toml").write_text(sim_rack_text(["bmc-1"], name="walk", seed=5, changes={
        "bmc-1": {"sim": G.CASES["a-bmc-log-latency"][1]}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    said = []
    for cmd, code in walkthrough():
        args = shlex.split(cmd)
        assert args[0] == "rackclock"
        args = [re.sub(r"runs/(\w+)/RUN", lambda m: str(next((tmp_path / "runs" / m[1]).iterdir())),
                       a) for a in args[1:]]
        p = subprocess.run([sys.executable, "-m", "bench.cli", *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == code, (cmd, p.stdout[-3000:], p.stderr[-3000:])
        said.append(p.stdout)
    assert said[0].startswith("plan: ") and "(model)" in said[0]        # said before it starts
    assert said[1].startswith("plan: ") and "(baseline)" in said[1]
    assert "REGRESSED" in said[2] and "latency.test_event.p90" in said[2]
    assert json.loads((tmp_path / "compare.json").read_text())["exit_status"] == 1
