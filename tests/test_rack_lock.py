"""One session at a time on a rack (bench.config.racklock): two pytest sessions against one served
PDU through the plugin's `rack_drivers`, and the lock itself across processes."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import tomli_w
from racks import sim_rack_text

from bench.config.racklock import RackBusy, lock_path, rack_lock
from bench.ports import free_port
from bench.run.simproc import SimProcess

DEADLINE_S = 120.0

LAB_SUITE = """
import os, time
from pathlib import Path

def test_pdu_answers_while_open(rack_drivers):
    pdu = rack_drivers["pdu-1"]          # fails the test with pdu-1's own error if it did not open
    assert pdu.read_clock("sysuptime").value_ns >= 0
    Path(os.environ["LAB_OPENED"]).write_text(str(os.getpid()))
    go, deadline = Path(os.environ["LAB_GO"]), time.monotonic() + 120
    while not go.exists():               # the outer test says when this session may end
        assert time.monotonic() < deadline, "never told to finish"
        time.sleep(0.05)
"""


def blocked_on(lock: Path, pid: int) -> bool:
    """Whether process `pid` waits for a flock on the file `lock` (/proc/locks: "-> FLOCK")."""
    if not lock.exists():
        return False
    ino = f":{os.stat(lock).st_ino} "
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.split()
        if len(f) > 5 and f[1] == "->" and f[2] == "FLOCK" and f[5] == str(pid) and ino in line:
            return True
    return False


def wait_until(cond, what: str, procs=()) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        for p in procs:
            assert p.poll() is None, f"{what}: a session ended first:\n{p.communicate()[0]}"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def lab_session(tmp_path: Path, rack_file: Path, tag: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RACKCLOCK_RACK"))}
    env.update(LAB_OPENED=str(tmp_path / f"{tag}.opened"), LAB_GO=str(tmp_path / f"{tag}.go"))
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "test_lab.py", "--rack", str(rack_file)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_second_session_on_the_rack_waits_for_the_first(tmp_path):
    """Session 1 opens the served pdu-1 (its driver binds the rack's trap port) and keeps it
    open; session 2 on the same rack file must wait on the lock rather than open pdu-1 at once
    (which fails: the trap port is taken); it opens pdu-1 once session 1 has ended."""
    trap = f"udp://127.0.0.1:{free_port(socket.SOCK_DGRAM)}"      # fixed, as on a lab rack
    (tmp_path / "sim.toml").write_text(sim_rack_text(["pdu-1"], name="lock-test",
                                                     changes={"pdu-1": {"trap_listen": trap}}))
    (tmp_path / "test_lab.py").write_text(LAB_SUITE)
    with SimProcess(tmp_path / "sim.toml", tmp_path / "served") as sim:
        assert sim.rack.devices[0].options["trap_listen"] == trap
        served = tmp_path / "served" / "rack.toml"            # the rack file, as .ci/run's
        first = lab_session(tmp_path, served, "first")
        second = None
        try:
            wait_until((tmp_path / "first.opened").exists, "session 1 opened pdu-1", [first])
            (tmp_path / "second.go").write_text("")
            second = lab_session(tmp_path, served, "second")
            wait_until(lambda: blocked_on(lock_path(served), second.pid),
                       "session 2 waits for the rack", [first, second])
            assert not (tmp_path / "second.opened").exists()
            (tmp_path / "first.go").write_text("")
            out1, _ = first.communicate(timeout=DEADLINE_S)
            out2, _ = second.communicate(timeout=DEADLINE_S)
        finally:
            for p in (first, second):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
    assert first.returncode == 0, out1
    assert second.returncode == 0, out2
    assert "1 passed" in out1 and "1 passed" in out2


HOLDER = """
import sys
from bench.config.racklock import rack_lock
with rack_lock(sys.argv[1], what="the holder test process"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def holder(rack_file: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(rack_file)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1])
    assert p.stdout.readline() == "held\n"
    return p


def test_a_held_rack_is_refused_naming_the_holder_then_granted_when_let_go(tmp_path):
    rack = tmp_path / "lab.toml"
    rack.write_text("")
    p = holder(rack)
    try:
        with pytest.raises(RackBusy) as busy:
            with rack_lock(rack, wait_s=0.2):
                pass
        msg = str(busy.value)
        assert f"pid {p.pid} " in msg and "the holder test process" in msg and str(rack) in msg
        got = threading.Event()
        signed = []

        def waiter():
            with rack_lock(rack, wait_s=DEADLINE_S, what="the waiter"):
                signed.append(lock_path(rack).read_text())
                got.set()
        t = threading.Thread(target=waiter)
        t.start()
        wait_until(lambda: blocked_on(lock_path(rack), os.getpid()), "the waiter waits", [p])
        assert not got.is_set()
        p.stdin.write("\n")
        p.stdin.flush()
        t.join(DEADLINE_S)
        assert got.is_set()
        assert f"pid {os.getpid()} " in signed[0]
        assert not lock_path(rack).exists()        # let go: its file removed
    finally:
        p.kill()
        p.wait()


TRY = """
import sys
from bench.config.racklock import RackBusy, rack_lock
try:
    with rack_lock(sys.argv[1], wait_s=float(sys.argv[2])):
        print("got")
except RackBusy:
    print("busy")
"""


def try_lock(rack_file: Path, wait_s: float) -> str:
    return subprocess.run([sys.executable, "-c", TRY, str(rack_file), str(wait_s)], text=True,
                          capture_output=True, cwd=Path(__file__).parents[1],
                          timeout=DEADLINE_S).stdout.strip()


def test_a_killed_holder_leaves_the_rack_free_and_the_lock_is_reentrant(tmp_path):
    rack = tmp_path / "lab.toml"
    rack.write_text("")
    p = holder(rack)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with rack_lock(rack, wait_s=DEADLINE_S):
        with rack_lock(tmp_path / "." / "lab.toml", wait_s=0):     # the same file, re-entered
            assert try_lock(rack, 0.2) == "busy"
        assert try_lock(rack, 0.2) == "busy"          # still held by the outer block
    assert try_lock(rack, DEADLINE_S) == "got"


@contextlib.contextmanager
def lab_rack_held_by_another_session(tmp_path: Path):
    """A one-BMC lab rack file and the pid of another process holding its lock (let go after)."""
    rack = tmp_path / "lab.toml"
    rack.write_text(tomli_w.dumps({"rack": {"name": "lab-a", "reference": "realtime"},
                                   "devices": {"bmc-1": {"plane": "bmc",
                                                         "driver": "redfish_bmc",
                                                         "address": "https://127.0.0.1:9",
                                                         "username": "root",
                                                         "password_env": "LAB_BMC_PW"}}}))
    p = holder(rack)
    try:
        yield rack, p.pid
    finally:
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait(timeout=DEADLINE_S)


def test_rackclock_run_refuses_a_lab_rack_another_session_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LAB_BMC_PW", "lab-pw")      # a lab rack's variables are checked at load
    from bench.cli import main
    out = tmp_path / "results"
    with lab_rack_held_by_another_session(tmp_path) as (rack, pid):
        rc = main(["run", "--rack", str(rack), "--duration", "2", "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert "in use by another session" in err and f"pid {pid} " in err
        assert not out.exists() or not any(out.iterdir())      # refused before any run folder


def test_rackclock_check_refuses_a_lab_rack_another_session_holds(tmp_path, capsys, monkeypatch):
    """`rackclock check` opens every device of the rack, so it takes the rack's lock as `run`
    does: held by another session, it is refused at once, naming the holder, before any device
    is touched (exit 2)."""
    monkeypatch.setenv("LAB_BMC_PW", "lab-pw")      # a lab rack's variables are checked at load
    from bench.cli import main
    with lab_rack_held_by_another_session(tmp_path) as (rack, pid):
        rc = main(["check", "--rack", str(rack), "--timeout", "1"])
        out, err = capsys.readouterr()
        assert rc == 2, (out, err)
        assert "in use by another session" in err and f"pid {pid} " in err
        assert "bmc-1" not in out                  # no device was checked
