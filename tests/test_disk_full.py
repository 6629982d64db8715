"""A disk that fills mid-run: one line naming the run folder, no traceback, every sample row
written before is kept, the manifest says `disk_full`, and `rackclock summarize` recovers the
run once there is room. The test fills a small tmpfs itself once it sees reads on disk."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from racks import sim_rack_text

from bench.model.rundata import load_samples

ROOT = Path(__file__).resolve().parent.parent


def _can_mount() -> str | None:
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs"
    if not shutil.which("mount"):
        return "no mount command"
    return None


@pytest.fixture
def small_disk(tmp_path):
    why = _can_mount()
    if why:
        pytest.skip(why)
    mnt = tmp_path / "small"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _rows(csv_path: Path) -> int:
    try:
        return max(0, len(csv_path.read_text().splitlines()) - 1)
    except OSError:
        return 0


def test_disk_full_is_one_line_and_keeps_the_samples(small_disk, tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-1"], seed=5))
    out = small_disk / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                             "--duration", "300", "--out", str(out), "--quiet"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    samples = None
    while time.monotonic() < deadline:
        found = list(out.glob("*/samples/bmc-1.csv"))
        if found and _rows(found[0]) >= 12:
            samples = found[0]
            break
        time.sleep(0.2)
    assert samples is not None, "no reads on disk"
    with open(small_disk / "filler", "wb") as f:      # the fault: the disk fills now
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    rows_then = _rows(samples)
    out_text, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out_text + err
    assert "Traceback" not in err and "Traceback" not in out_text
    folder = samples.parent.parent
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("rackclock run: disk full: cannot write in "
                                                   f"{folder}"), lines
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "disk_full" and "are kept" in m["error"]
    smp = load_samples(samples)
    assert len(smp) >= rows_then - 1 and smp.status.count("ok") >= 10
    (small_disk / "filler").unlink()
    p = subprocess.run([sys.executable, "-m", "bench.cli", "summarize", str(folder), "--quiet"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["devices"]["bmc-1"]["clocks"]["datetime"]["reads"] >= 10
