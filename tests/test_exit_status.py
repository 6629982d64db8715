"""`run` exits by what the experiment asked for, on the default simulated rack: devices an
experiment does not use are not rows, not errors and not verdicts (issue 30 item 1); limits judge
over each segment's calibrated span, so a ±100 ms limit passes for bmc-1 whose band is hundreds
of ms wide at the segment's ends (issue 30 item 2)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.model.rundata import load_run

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV, cwd=ROOT)


def folder(p: subprocess.CompletedProcess) -> Path:
    return Path(p.stdout.strip().splitlines()[-1].removeprefix("run folder: "))


def _unused_are_not_rows(p: subprocess.CompletedProcess, used: set[str]) -> None:
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "no usable read" not in p.stderr and "not used by this experiment" not in p.stderr
    run = load_run(folder(p))
    assert set(run.summary.devices) == used, sorted(run.summary.devices)
    unused = set(run.summary.raw["unused_devices"])
    assert unused and not unused & used
    lines = p.stdout.strip().splitlines()
    at = max(i for i, x in enumerate(lines) if x.startswith("verdict: "))
    verdict = " ".join(x.strip() for x in lines[at:-1])       # last, wrapped at 120 columns
    assert all(x.startswith("  ") for x in lines[at + 1:-1]) and "FAIL" not in verdict, verdict
    body = lines[:-1]              # the last: "run folder: PATH", a path said whole
    assert max(len(x) for x in body) <= 120, max(body, key=len)
    table = p.stdout.split("run folder:")[0]
    assert not any(x.startswith(tuple(f"{d} " for d in unused)) for x in table.splitlines())


@pytest.mark.slow
def test_stimulus_latency_on_the_default_rack_exits_0(tmp_path):
    p = cli("run", "stimulus_latency", "--param", "n=10", "--out", str(tmp_path))
    # the BMCs and CDUs (Modbus and Redfish) whose entry allows a stimulus (bmc-3 allows none)
    _unused_are_not_rows(p, {"bmc-1", "bmc-2", "cdu-1", "cdu-2", "cdu-rf-1"})
    assert "measurements (the experiment's own)" in p.stdout


@pytest.mark.slow
def test_the_tutorials_experiment_on_the_default_rack_exits_0(tmp_path):
    from test_experiments import tutorial_code
    exp = tmp_path / "event_echo.py"
    exp.write_text(tutorial_code())
    p = cli("run", str(exp), "--param", "events=1", "--out", str(tmp_path / "runs"))
    used = {d for d in load_run(folder(p)).summary.devices}
    assert used and all(d.startswith("bmc-") for d in used), used
    _unused_are_not_rows(p, used)


@pytest.mark.slow
def test_limits_on_a_copied_default_rack_pass_bmc1_at_100ms(tmp_path):
    rack = tmp_path / "lab-copy.toml"
    rack.write_text((ROOT / "bench" / "sim" / "default_rack.toml").read_text()
                    + '\n[limits.devices."bmc-1"]\noffset_within = "100ms"\n'
                    + 'mtie = {"5s" = "5s"}\n')     # a 1 s clock: MTIE within about 1 s
    p = cli("run", "--rack", str(rack), "--duration", "20", "--out", str(tmp_path / "runs"),
            "--quiet")
    run = load_run(folder(p))
    seg = run.summary.devices["bmc-1"].clocks["datetime"].segments[-1]
    lo, hi, _ = seg.offset_range()
    # the band reaches beyond ±100 ms at an end (judged there, ±100 ms would be undecided); it
    # was asserted as hi − lo > 200 ms until paired edge reads made it 189-220 ms run to run
    assert max(-lo, hi) > 100e6, (lo, hi)
    js = tmp_path / "limits.xml"
    q = cli("limits", str(run.path), "--junit", str(js))
    row = next(x for x in q.stdout.splitlines() if x.startswith("bmc-1 ") and "offset" in x)
    assert row.rstrip().endswith("PASS"), q.stdout
    truth = run.truth["devices"]["bmc-1"]["clocks"]["datetime"]
    from bench.model.summary import _truth_offset_at
    for t in (seg.start_ns, seg.end_ns):     # the truth at the span's ends lies within ±100 ms
        assert abs(_truth_offset_at(truth, t)) < 100e6
    assert q.returncode == 0 and "pass: offset within ±100 ms" in js.read_text()
    mtie = next(x for x in q.stdout.splitlines() if x.startswith("bmc-1 ") and " mtie " in x)
    assert mtie.rstrip().endswith("PASS"), q.stdout
    assert (run.path / "bounds.csv").read_text().count("\nbmc-1,datetime,") >= 1
