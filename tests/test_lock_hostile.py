"""Lock and port files under a hostile local user (bench.lockdir): the hostile part runs as
`nobody` (setpriv), the bench as root, as CI runs it. A symlink, FIFO or stale file planted at a
lock's name is never followed or written; a lock folder another user owns, or one anyone may
write without the sticky bit, is refused; another user's holder is named and can be broken."""
from __future__ import annotations

import itertools
import logging
import os
import random
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from test_ports import bindable_below_the_ephemeral_range

from bench import ports
from bench.config.racklock import RackBusy, lock_path, rack_lock

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
DEADLINE_S = 60.0


def as_nobody(*cmd: str) -> None:
    p = subprocess.run([*NOBODY, *cmd], capture_output=True, text=True, timeout=DEADLINE_S)
    assert p.returncode == 0, p.stderr


@pytest.fixture
def shared_base(monkeypatch):
    """A lock base of the test's own, root's and mode 1777 like /run/lock."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (the hostile part runs as nobody)")
    parent = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    base = Path(tempfile.mkdtemp(prefix="rackclock-test-", dir=parent))
    os.chmod(base, 0o1777)
    monkeypatch.setenv("RACKCLOCK_LOCK_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def secret(tmp_path) -> Path:
    """A root-only 0600 file: what a planted symlink aims root's bench at."""
    path = tmp_path / "root-only"
    path.write_text("root only\n")
    path.chmod(0o600)
    return path


def lab_rack(tmp_path: Path) -> Path:
    rack = tmp_path / f"lab-{random.getrandbits(32):x}.toml"
    rack.write_text("")
    return rack


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_root_never_follows_what_another_user_planted(shared_base, secret, tmp_path, caplog,
                                                      plant):
    rack = lab_rack(tmp_path)
    lock = lock_path(rack)
    if plant == "symlink":
        as_nobody("ln", "-s", str(secret), str(lock))
    else:
        as_nobody("mkfifo", str(lock))
    with caplog.at_level(logging.WARNING, logger="bench.lockdir"):
        with rack_lock(rack, wait_s=0, what="root's session"):
            st = os.lstat(lock)
            assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
            assert "root's session" in lock.read_text()
    assert secret.read_text() == "root only\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert f"a {plant.replace('fifo', 'FIFO')} of nobody" in caplog.text
    assert not lock.exists()                         # let go: removed


def test_a_stale_file_of_another_user_is_replaced_not_written(shared_base, tmp_path):
    rack = lab_rack(tmp_path)
    lock = lock_path(rack)
    as_nobody("sh", "-c", f"echo 'pid 1 on x, fake, since never' > {lock}")
    assert os.lstat(lock).st_uid == 65534
    with rack_lock(rack, wait_s=0, what="root's session"):
        assert os.lstat(lock).st_uid == 0          # a file of root's own, not nobody's rewritten
        assert lock.read_text().startswith(f"pid {os.getpid()} ")


def test_a_port_file_planted_as_a_symlink_creates_nothing(shared_base, tmp_path, monkeypatch):
    target = tmp_path / "made-by-root"                     # in a root-only folder
    free = list(itertools.islice(bindable_below_the_ephemeral_range(), 3))
    folder = ports.reservations()
    for p in free:
        as_nobody("ln", "-s", str(target), str(folder / f"{p}.lock"))
    monkeypatch.setattr(ports.random, "sample", lambda seq, k: [p for p in free if p in seq])
    port = ports.free_port()
    assert port == free[0] and not target.exists()
    assert stat.S_ISREG(os.lstat(folder / f"{port}.lock").st_mode)


@pytest.mark.parametrize("mode", ["nobody", "world-writable"])
def test_an_unsafe_lock_folder_is_refused(shared_base, tmp_path, capsys, mode):
    for name in ("rackclock-racks", "rackclock-ports"):
        if mode == "nobody":
            as_nobody("mkdir", "-m", "1777", str(shared_base / name))
        else:
            (shared_base / name).mkdir()
            os.chmod(shared_base / name, 0o777)               # no sticky bit
    why = "belongs to nobody" if mode == "nobody" else "without the sticky bit"
    with pytest.raises(RackBusy, match=why):
        with rack_lock(lab_rack(tmp_path), wait_s=0):
            pass
    with pytest.raises(PermissionError, match=why):
        ports.free_port()
    assert list((shared_base / "rackclock-racks").iterdir()) == []
    from bench.cli import main
    rc = main(["check", "--rack", str(lab_rack(tmp_path)), "--timeout", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and why in err and "Traceback" not in err, err


def held_by(lock: Path, pid: int) -> bool:
    ino = f":{os.stat(lock).st_ino} " if lock.exists() else None
    return ino is not None and any(
        f.split()[1:3] == ["FLOCK", "ADVISORY"] and f.split()[4] == str(pid) and ino in f
        for f in Path("/proc/locks").read_text().splitlines())


def test_another_users_holder_is_named_and_can_be_broken(shared_base, tmp_path):
    """nobody holds the rack's lock file with flock(1) (any user may: the file is shared so that
    two users' sessions exclude each other). Root's session is refused naming that process, not
    a stale line; removing the lock file, as the message says, breaks it."""
    rack = lab_rack(tmp_path)
    lock = lock_path(rack)
    hog = subprocess.Popen([*NOBODY, "flock", "-x", str(lock), "sleep", "600"])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not held_by(lock, hog.pid):
            assert hog.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(RackBusy) as busy:
            with rack_lock(rack, wait_s=0.2):
                pass
        msg = str(busy.value)
        assert f"pid {hog.pid} (nobody" in msg and "not a rackclock session" in msg, msg
        assert f"remove {lock}" in msg
        lock.unlink()
        with rack_lock(rack, wait_s=0):
            probe = subprocess.run([*NOBODY, "flock", "-n", str(lock), "true"])
            assert probe.returncode == 1       # root's lock excludes the other user too
    finally:
        hog.kill()
        hog.wait()
