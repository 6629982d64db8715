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
from procs import SESSION, pids_where, wait_until
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
    lines = [ln for ln in err.splitlines() if ln.strip()]
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


def fill(disk: Path, leave: int) -> Path:
    """Fill the small disk, then give back `leave` bytes (tmpfs frees a truncated file's pages)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def test_less_free_than_the_reserve_ends_disk_full_at_once(small_disk, tmp_path):
    """Issue 31, Why 5: with 100 KiB free (the reserve is 256 KiB) the run ends `disk_full` before
    anything starts: one line, exit 1, no `.part`, no `.reserve`; summarize works there."""
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-1"], seed=5))
    fill(small_disk, 100 << 10)
    p = cli("run", "--rack", str(rack), "--duration", "300", "--out", str(small_disk / "runs"),
            "--quiet", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    [folder] = list((small_disk / "runs").iterdir())
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines == [f"rackclock run: disk full: cannot write in {folder}: less than the 256 KiB "
                     "reserve free (No space left on device); nothing was measured (free space, "
                     "then run again)"], lines
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "disk_full"
    assert [f.name for f in folder.rglob("*") if f.name.endswith(".part") or f.name == ".reserve"
            ] == []
    s = cli("summarize", str(folder), cwd=tmp_path)
    assert s.returncode in (0, 1) and "Traceback" not in s.stderr + s.stdout, s.stderr


def killed_run(tmp_path: Path, out: Path) -> Path:
    """A run folder whose process was SIGKILLed once it had three reads on disk."""
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-1"], seed=5))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                             "--duration", "300", "--out", str(out), "--quiet"], cwd=tmp_path,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 90
    while not any(_rows(f) >= 3 for f in out.glob("*/samples/bmc-1.csv")):
        assert proc.poll() is None and time.monotonic() < deadline, "no reads on disk"
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    # the kernel sends its simulator SIGTERM, and it writes truth.json into the run's sim/ as
    # it exits: a copy of the folder taken before it is gone could catch that write half-done
    wait_until(lambda: not pids_where(SESSION, proc.pid, ended=False), 60,
               "the killed run's simulator to exit")
    [folder] = list(out.iterdir())
    return folder


def test_summarize_names_killed_or_disk_full_and_leaves_no_reserve(small_disk, tmp_path):
    """A killed run (its reserve still there) is summarised `killed` and its reserve removed
    (Why 9); one whose reserve was used by a full disk reads `disk_full`, on a copy too (Why 5);
    on a full disk summarize prints the summary and one line, exit 1, nothing half-written."""
    folder = killed_run(tmp_path, tmp_path / "runs")
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / ".reserve").unlink()                    # what RunStore.failed does at a full disk
    p = cli("summarize", str(folder), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads((folder / "manifest.json").read_text())["status"] == "killed"
    assert not (folder / ".reserve").exists()
    on_disk = small_disk / "full"
    shutil.copytree(copy, on_disk)
    fill(small_disk, 0)
    p = cli("summarize", str(on_disk), cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr + p.stdout, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"rackclock summarize: disk full: cannot "
                                                   f"write in {on_disk}"), lines
    assert "bmc-1" in p.stdout                      # the summary, printed all the same
    assert [f.name for f in on_disk.rglob("*.part")] == []
    (small_disk / "filler").unlink()
    p = cli("summarize", str(on_disk), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    m = json.loads((on_disk / "manifest.json").read_text())
    assert m["status"] == "disk_full" and "disk filled" in m["error"]
    assert json.loads((on_disk / "summary.json").read_text())["devices"]["bmc-1"]
