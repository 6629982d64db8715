"""A run ended by SIGTERM or SIGHUP ends like Ctrl-C (interrupted, summary written, simulator
stopped); a run killed by SIGKILL leaves no simulator behind and `rackclock summarize` gives it
bounds that contain the truth. The signal is sent when the test sees enough reads on disk."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from procs import PPID, pids_where, wait_until
from racks import sim_rack_text

from bench.model.rundata import load_run

ROOT = Path(__file__).resolve().parent.parent
DEVICES = ["bmc-1", "cdu-1"]




def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ok_reads(folder: Path, device: str) -> int:
    p = folder / "samples" / f"{device}.csv"
    if not p.exists():
        return 0
    with open(p, newline="") as f:
        return sum(1 for r in csv.DictReader(f) if r.get("kind") == "read" and r.get("status") == "ok")


def _ctrl_c_reaches() -> None:
    """The run as a terminal's foreground job: Ctrl-C's SIGINT at its default. A suite started
    as a shell's background job inherits SIGINT ignored (POSIX), and a run started so ignores
    Ctrl-C as every program does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_run(tmp_path: Path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(DEVICES, seed=7))
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                             "--duration", "300", "--out", str(out), "--quiet",
                             # no offline incident curve (600 cascades, seconds of CPU after
                             # the signal): the cascade itself is still played and scored
                             "--param", "incident_cascades=0"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_reaches)
    folder = wait_until(lambda: next(iter(out.glob("*/manifest.json")), None), 90,
                   "the run folder's manifest").parent
    wait_until(lambda: all(_ok_reads(folder, d) >= 16 for d in DEVICES), 90,
          "16 clock reads of every device")
    sims = wait_until(lambda: pids_where(PPID, proc.pid), 10, "the simulator child")
    return proc, folder, sims


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_sigterm_sighup_and_ctrl_c_end_the_run_naming_the_signal(tmp_path, sig):
    proc, folder, sims = _start_run(tmp_path)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "interrupted" and m["stopped_by"] == sig.name
    run = load_run(folder)
    for d in DEVICES:
        assert sum(c["reads"] for c in run.summary["devices"][d]["clocks"].values()) >= 16
    assert run.truth is not None
    wait_until(lambda: not any(_alive(p) for p in sims), 30, "the simulator to be gone")


def test_sigkill_leaves_no_simulator_and_summarize_recovers_the_run(tmp_path):
    proc, folder, sims = _start_run(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    wait_until(lambda: not any(_alive(p) for p in sims), 30, "the simulator to die with its parent")
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    assert not (folder / "summary.json").exists()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "bench.cli", "summarize", str(folder)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    run = load_run(folder)
    assert run.manifest["status"] == "killed" and run.summary["rebuilt"]
    checked = 0
    for d in DEVICES:
        for clock, c in run.summary["devices"][d]["clocks"].items():
            assert c["reads"] >= 16
            for seg in c["segments"]:
                assert seg["truth"]["offset_in"], (d, clock, seg["truth"], seg["offset_ns"])
                assert seg["truth"].get("drift_in", True), (d, clock, seg["truth"])
                checked += 1
    assert checked >= len(DEVICES)
