"""A drift that can be decided (issue 45 item 7): how long a run needs until a clock's drift is
decided (bench.model.decided), and `rackclock run --until-decided` measuring until it is or its
ceiling is reached, on a one-device simulated rack (pdu-2: a 10 ms uptime counter read over SNMP
in brackets of about 0.1 ms). The run length the default rack's 1 s clocks need at 60 ppm is a
benchmark (benchmarks/until_decided.py, benchmarks/README.md "until decided")."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from racks import sim_rack_text

from bench.analysis.proven_segment import Bound
from bench.commands.run import run_exit_status
from bench.model.decided import (
    clock_decided,
    fmt_run,
    mean_drift,
    only_prior,
    run_needed_s,
    target_ppm,
)
from bench.model.rundata import load_run

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
S = 1_000_000_000


def run(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, Path | None]:
    rack = tmp_path / "pdu2.toml"
    rack.write_text(sim_rack_text(["pdu-2"]))
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                        "--out", str(tmp_path / "runs"), "--param", "incident_at_s=none",
                        "--param", "incident_cascades=0", *args], capture_output=True, text=True,
                       timeout=600, env={**ENV, "COLUMNS": "80"}, cwd=ROOT)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    return p, Path(last.removeprefix("run folder: ")) if last.startswith("run folder: ") else None


def test_the_target_is_a_tenth_of_the_priors_width_unless_given():
    assert target_ppm(600) == 120 and target_ppm(2500) == 500 and target_ppm(600, 60) == 60
    assert only_prior(-600, 600, 600) and not only_prior(-600, 599, 600)


def test_a_mean_drift_off_the_prior_needs_its_span_times_width_over_target():
    # 240 ppm wide after 60 s of a segment that began 30 s into the run: 120 s more at 1/T
    assert run_needed_s(240, 2e6, 60, 30, 600, 120) == pytest.approx(30 + 120)
    assert run_needed_s(100, 2e6, 60, 0, 600, 120) is None          # decided already


def test_a_mean_drift_on_the_prior_or_none_needs_the_offset_model():
    # 4 w0 / T: a 3 ms pinned offset decides 120 ppm in 100 s, never less than the span so far
    assert run_needed_s(1200, 3e6, 10, 0, 600, 120) == pytest.approx(100)
    assert run_needed_s(None, 3e6, 10, 0, 600, 120) == pytest.approx(100)
    assert run_needed_s(None, 3e6, 500, 0, 600, 120) == pytest.approx(500)


def test_clock_decided_reads_the_last_segment_and_the_lead_before_it():
    class Seg:
        def __init__(self, a, b, lo, hi):
            self.start_ns, self.end_ns = a * S, b * S
            self.mean_drift = {"lo": lo, "hi": hi} if lo is not None else None
            self.offset_ns = Bound(0.0, 3e6, 1e6)
    got = clock_decided([Seg(0, 42, -50, 50), Seg(42, 60, None, None)], 600.0)
    assert got == {"drift_target_ppm": 120.0, "drift_decided": False,
                   "drift_decided_after_s": 142.0}
    assert clock_decided([Seg(0, 60, -50, 50)], 600.0)["drift_decided"] is True
    assert clock_decided([Seg(0, 60, -50, 50)], 600.0, 60)["drift_decided_after_s"] == 100.0
    assert fmt_run(40.2) == "41 s" and fmt_run(241) == "5 min" and fmt_run(9000) == "2.5 h"


def test_options_of_until_decided_are_checked_before_a_run(tmp_path):
    p, _ = run(tmp_path, "--decided-ppm", "60")
    assert p.returncode == 2 and "--decided-ppm is an option of --until-decided" in p.stderr
    p, _ = run(tmp_path, "--until-decided", "--decided-ppm", "wide")
    assert p.returncode == 2 and "--decided-ppm 'wide'" in p.stderr, p.stderr
    p, _ = run(tmp_path, "--until-decided", "pdu-9.sysuptime")
    assert p.returncode == 2 and "'pdu-9.sysuptime': no such device" in p.stderr, p.stderr
    p, _ = run(tmp_path, "--until-decided", "--decide", "drift")
    assert p.returncode == 2 and "--until-decided and --decide" in p.stderr, p.stderr


def test_until_decided_stops_once_the_drift_is_decided(tmp_path):
    """A loose width (1500 ppm: wider than the prior's 1200, so its first fit decides it) is
    reached long before the ceiling: the probing stops there, and the closing output says
    when."""
    p, path = run(tmp_path, "--until-decided", "pdu-2.sysuptime", "--decided-ppm", "1500",
                  "--max-duration", "120")
    assert path is not None, p.stdout[-2000:] + p.stderr[-2000:]
    r = load_run(path)
    assert p.returncode == run_exit_status(r), p.stderr
    u = r.manifest.raw["until_decided"]
    (w,) = u["clocks"]
    assert u["all_decided_after_s"] is not None and w["decided_after_s"] is not None, u
    assert (r.manifest.raw["probed_until_ns"] - r.manifest.raw["started_ns"]) / S < 120
    lo, hi = mean_drift(r.summary.devices["pdu-2"].clocks["sysuptime"].segments[-1])
    assert hi - lo <= 1500
    out = " ".join(x.strip() for x in p.stdout.split("until decided")[1].split("\n\n")[0]
                   .splitlines())
    assert "all decided, probing stopped after" in out and "decided: pdu-2 sysuptime [" in out
    assert max(len(x) for x in p.stdout.split("run folder:")[0].splitlines()) <= 80


def test_until_decided_says_the_ceiling_and_why_not(tmp_path):
    """A width no run of seconds reaches: the run ends at its ceiling and says which drift was
    not decided, how wide it is and how long a run would need."""
    p, path = run(tmp_path, "--until-decided", "pdu-2", "--decided-ppm", "0.01",
                  "--max-duration", "5")
    assert path is not None, p.stdout[-2000:] + p.stderr[-2000:]
    r = load_run(path)
    assert p.returncode == run_exit_status(r), p.stderr
    assert r.manifest.raw["until_decided"]["all_decided_after_s"] is None
    out = " ".join(x.strip() for x in p.stdout.split("until decided")[1].split("\n\n")[0]
                   .splitlines())
    assert "the ceiling (5 s) was reached" in out, out
    assert "NOT decided: pdu-2 sysuptime [" in out and "> 0.01)" in out, out
    assert "a run of about" in out, out
