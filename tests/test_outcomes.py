"""One outcome vocabulary and exit table (bench/model/outcomes.py) for run, compare, trend and
limits: UNDECIDED is never 0 unless asked, nothing judged is UNDECIDED, and every command's --help
and docs/REGRESSION.md quote the same table."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from bench.model import outcomes as o

ROOT = Path(__file__).resolve().parent.parent


def test_the_exit_table():
    assert [o.exit_code(w) for w in ("PASS", "FAIL", "REGRESSED", "ERROR", "UNDECIDED")] == \
        [0, 1, 1, 2, 3]
    assert o.exit_code("undecided", allow_undecided=True) == 0
    assert o.exit_code("REGRESSED", allow_undecided=True) == 1
    with pytest.raises(ValueError):
        o.exit_code("inconclusive")
    assert [code for _, code, _ in o.EXIT_TABLE] == [0, 1, 2, 3]


def test_undecided_or_nothing_judged_is_not_pass():
    assert o.outcome(failed=False, undecided=False) == "PASS"
    assert o.outcome(failed=False, undecided=True) == "UNDECIDED"
    assert o.outcome(failed=False, undecided=False, judged=False) == "UNDECIDED"
    assert o.outcome(failed=True, undecided=True, judged=False) == "REGRESSED"
    assert o.worst([]) == "UNDECIDED" and o.worst(["PASS", "PASS"]) == "PASS"
    assert o.worst(["PASS", "UNDECIDED", "FAIL"]) == "REGRESSED"


@pytest.mark.parametrize("module", ["bench.commands.compare", "bench.commands.trend",
                                    "bench.commands.limits"])
def test_every_judge_prints_the_one_table_in_its_help(module):
    import importlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        importlib.import_module(module).main(["--help"])
    text = out.getvalue()
    assert o.exit_table_text() in text and "--allow-undecided" in text
    assert "inconclusive" not in text.lower()


def test_run_help_prints_the_table():
    from bench import cli
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "exit status:" in out.getvalue() and "--allow-undecided" in out.getvalue()


def test_no_old_spelling_in_the_judges():
    for f in ["bench/compare/verdicts.py", "bench/compare/output.py", "bench/output/trend_view.py",
              "bench/commands/compare.py", "bench/commands/trend.py", "bench/commands/limits.py",
              "bench/compare/tolerances.toml", "bench/fleet/fleet_report.py"]:
        assert "inconclusive" not in (ROOT / f).read_text().lower(), f


def test_a_frozen_rack_never_exits_0(tmp_path):
    """Every clock stuck (a DMTF mockup's static DateTime): run, limits and compare of it with
    itself say UNDECIDED, exit 3, and 0 only when asked."""
    from racks import sim_rack_text

    from bench.commands.limits import limits_exit
    from bench.commands.run import run_exit_status
    from bench.compare.output import verdict_line
    from bench.compare.verdicts import compare_runs, load_tolerances
    from bench.model.limit_checks import check_run
    from bench.model.rundata import load_run, unusable_devices
    from bench.run.experiment import run_experiment

    rack = tmp_path / "frozen.toml"
    rack.write_text(sim_rack_text(["bmc-1"], changes={"bmc-1": {"sim": {"frozen_at_s": 0.0}}}))
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "6", "stimulus_every_s": "none"}, quiet=True))
    assert o.measured_clocks(run.summary) == 0 and not unusable_devices(run.summary)
    assert run_exit_status(run) == 3 and run_exit_status(run, allow_undecided=True) == 0
    assert limits_exit(run, check_run(run.summary, run.manifest, run=run)) == 3
    cmp = compare_runs(run, run, load_tolerances(None))
    assert cmp.outcome == "UNDECIDED" and cmp.exit_status() == 3
    assert verdict_line(cmp).startswith("UNDECIDED: nothing was judged")
