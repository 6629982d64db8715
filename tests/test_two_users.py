"""Issue 42's two-user test: a second local user (made here, removed after) owns folders and
plants symlinks and swapped folders where root's bench writes: report, run, timeline,
summarize and watch refuse in one line, and no file outside the bench's own folders changes.

Planting is done as root and handed to the other user (chown), which leaves the same files an
attacker would. Skipped where the test is not root or there is no useradd.
"""
from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "recorded" / "20261201T161000Z-clock_offset"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("userdel") is None,
    reason="needs root and useradd/userdel to make a second local user")


@pytest.fixture(scope="module")
def other_user():
    name = f"rcx{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"useradd failed: {made.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def _give(path: Path, user) -> None:
    for p in [path, *path.rglob("*")]:
        os.lchown(p, user.pw_uid, user.pw_gid)


def _state(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not
                       p.is_symlink() else f"{st.st_mode:o} {os.readlink(p) if p.is_symlink() else ''}")
    return out


@pytest.fixture
def scene(tmp_path, other_user):
    """A root-only secret folder, and the other user's folder holding a copy of a run whose
    report.html, plot and timeline.json are symlinks into the secret folder."""
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    for name in ("report.html", "rack_offsets.png", "timeline.json", "summary.json"):
        (secret / name).write_text(f"root's own {name}\n")
    theirs = tmp_path / "theirs"
    run = theirs / "run"
    shutil.copytree(RECORDED, run)
    (run / "plots").mkdir()
    (run / "report.html").symlink_to(secret / "report.html")
    (run / "plots" / "rack_offsets.png").symlink_to(secret / "rack_offsets.png")
    (run / "timeline.json").symlink_to(secret / "timeline.json")
    (run / "bounds.csv").unlink()
    (run / "bounds.csv").symlink_to(secret / "summary.json")
    _give(theirs, other_user)
    return secret, theirs, run


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv", [["report", "--processes", "1"], ["summarize", "--quiet"],
                                  ["timeline", "--formats", "json,html"]])
def test_commands_refuse_to_write_in_another_users_run_folder(scene, tmp_path, argv):
    secret, theirs, run = scene
    before, theirs_before = _state(secret), _state(theirs)
    p = _cli(*argv, str(run), cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "belongs to" in lines[0] and str(theirs) in lines[0], lines[0]
    assert _state(secret) == before
    assert _state(theirs) == theirs_before


def test_a_run_folder_swapped_for_a_symlink_in_a_folder_of_theirs_is_refused(scene, tmp_path,
                                                                             other_user):
    """The other user swaps a run folder of root's (in a sticky shared folder) for a symlink
    to the secret folder: report refuses rather than follow it."""
    secret, _, _ = scene
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "run").symlink_to(secret)
    os.lchown(shared / "run", other_user.pw_uid, other_user.pw_gid)
    for name in ("manifest.json", "summary.json", "truth.json"):
        shutil.copy(RECORDED / name, secret / name)
    before = _state(secret)
    p = _cli("report", "--processes", "1", str(shared / "run"), cwd=tmp_path)
    assert p.returncode == 2 and "symlink of" in p.stderr and "Traceback" not in p.stderr, \
        p.stderr
    assert _state(secret) == before


def test_run_and_watch_refuse_an_out_folder_of_another_user(scene, tmp_path):
    secret, theirs, _ = scene
    before, theirs_before = _state(secret), _state(theirs)
    for argv in (["run", "--quiet", "--duration", "5", "--out", str(theirs / "runs")],
                 ["watch", "--out", str(theirs / "days")]):
        p = _cli(*argv, cwd=tmp_path)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "belongs to" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert _state(secret) == before
    assert _state(theirs) == theirs_before


def test_a_sticky_shared_folder_holds_the_benchs_own_private_run_folder(tmp_path, other_user):
    """--out in a sticky world-writable folder is allowed: the bench makes its own child
    there; a child name the other user made first is refused, not written in."""
    from bench.config.rackfile import check_out
    from bench.model.store import RunStore

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    store = RunStore(shared / "runs", "r1")
    try:
        assert store.path.parent.stat().st_uid == 0 and store.path.exists()
    finally:
        store.close()
    planted = shared / "planted"
    planted.mkdir()
    os.chown(planted, other_user.pw_uid, other_user.pw_gid)
    from bench.config.inventory import InventoryError
    with pytest.raises(InventoryError, match="belongs to"):
        check_out(planted)
    assert list(planted.iterdir()) == []
