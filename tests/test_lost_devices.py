"""A run that lost its devices says so (issue 31, Why 10): the simulator is SIGKILLed once every
device has answered, the run goes on to its end, and ends `devices_lost`, exit 1, with the
devices and their silent share in the manifest. The rule itself: bench.model.outage."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from racks import sim_rack_text

ROOT = Path(__file__).resolve().parent.parent
NS = 1_000_000_000
DEVICES = ["bmc-1", "pdu-2", "cdu-1"]


def ok_reads(path: Path) -> int:
    try:
        with open(path, newline="") as f:
            return sum(1 for r in csv.DictReader(f) if r["kind"] == "read" and r["status"] == "ok")
    except (OSError, KeyError, csv.Error):
        return 0


def answered_all(out: Path) -> bool:
    files = list(out.glob("*/samples/*.csv"))
    return len(files) == len(DEVICES) and all(ok_reads(f) >= 3 for f in files)


def simulator_of(pid: int) -> int | None:
    """The pid of the `bench.commands.sim` child of process `pid`, if there is one."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"bench.commands.sim" in cmd:
            return int(entry.name)
    return None


def test_a_run_whose_simulator_is_killed_ends_devices_lost(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(DEVICES, seed=3))
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                             "--duration", "40", "--out", str(out), "--quiet"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not answered_all(out):
            assert proc.poll() is None and time.monotonic() < deadline, "no reads from all"
            time.sleep(0.1)
        sim = simulator_of(proc.pid)
        assert sim is not None
        os.kill(sim, signal.SIGKILL)              # the fault: every device goes at once
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stdout + stderr
    assert "Traceback" not in stderr
    [folder] = list(out.iterdir())
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "devices_lost", m.get("error")
    assert set(m["devices_lost"]) == set(DEVICES)
    window = m["probed_until_ns"] - m["started_ns"]
    for _name, lost in m["devices_lost"].items():
        assert lost["share"] > 0.25 and lost["last_read_ns"] is not None
        assert abs(lost["silent_s"] * NS - (m["probed_until_ns"] - lost["last_read_ns"])) < NS
        assert lost["silent_s"] * NS <= window
    lines = [ln for ln in stderr.splitlines() if ln.startswith("rackclock run:")]
    assert lines and lines[0].startswith("rackclock run: devices lost: 3 of 3 devices stopped "
                                         "answering (no usable read for the last 25 % of the "
                                         "run, or for 50 % of it): ")
    assert "the simulator ended mid-run (exit status -9)" in lines[0]


def test_the_silent_share_rule():
    """Stretches longer than the gap count whole; shorter ones, the device's pace, not at all."""
    from bench.model.outage import MIN_GAP_NS, silent_ns
    reads = [s * NS for s in range(1, 71)]               # 1 Hz until 70 s of a 100 s window
    assert silent_ns(reads, 0, 100 * NS, MIN_GAP_NS) == 30 * NS
    assert silent_ns(reads, 0, 80 * NS, MIN_GAP_NS) == 10 * NS
    assert silent_ns(reads, 0, 74 * NS, MIN_GAP_NS) == 0          # 4 s: under the gap
    assert silent_ns(reads[40:], 0, 100 * NS, MIN_GAP_NS) == 30 * NS   # a late start: not lost
    gap = [*reads[:20], *reads[50:]]                     # silent from 20 s to 51 s, back after
    assert silent_ns(gap, 0, 70 * NS, MIN_GAP_NS) == 31 * NS
    assert silent_ns([], 0, 100 * NS, MIN_GAP_NS) == 0             # never answered: not "lost"


def test_lost_is_gone_at_the_end_or_away_most_of_the_run(tmp_path):
    """A reboot it returns from is no loss; silent for the last 30 % is; back at the end but
    away 62 % of the run in long stretches is; one that never answered is left to the
    no-usable-read check."""
    from bench.model.outage import lost_devices
    from bench.model.store import SampleWriter

    (tmp_path / "samples").mkdir()
    plans = {"back": [*range(0, 40), *range(55, 100)],           # 15 s reboot mid-run
             "gone": list(range(0, 70)),                           # last 30 % silent
             "away": [*range(0, 20), *range(50, 60), *range(90, 100)],   # 62 % in 2 stretches
             "never": []}
    for name, secs in plans.items():
        w = SampleWriter(tmp_path / "samples" / f"{name}.csv")
        for s in secs:
            w.write("read", "rtc", s * NS + 1, s * NS + 2, s * NS, NS, "", "ok", "")
        w.write("read", "rtc", 99 * NS, 99 * NS, None, NS, "", "timeout", "no answer")
        w.close()
    manifest = {"started_ns": 0, "probed_until_ns": 100 * NS,
                "inventory": {"devices": {n: {"rate_hz": 1.0} for n in plans}},
                "devices": {n: {"state": "done"} for n in plans}}
    lost = lost_devices(tmp_path, manifest)
    assert set(lost) == {"gone", "away"}
    assert lost["gone"]["silent_s"] == 31.0 and lost["gone"]["last_read_ns"] == 69 * NS + 1
    assert lost["away"]["share"] == 0.62            # 19 -> 50 s and 59 -> 90 s
