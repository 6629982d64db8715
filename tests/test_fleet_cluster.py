"""`rackclock fleet run --address` against a two-node Ray cluster on loopback (`ray start --head`
and a second `ray start --address`, two raylets), with token authentication (Ray 2.60's
default), started from OTHER folders than the fleet command's: a rack's worker resolves a
relative path against the folder `ray start` ran in, not the driver's. One cluster serves every
test of this module (its start costs seconds on two cores); its teardown kills each `ray start`
session and proves nothing of them is left.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from procs import reap_session, wait_until
from racks import sim_rack_text
from test_fleet import DEADLINE_S, EXIT_DEADLINE_S, STOP_S, rackclock, signalled

from bench.ports import free_port

pytest.importorskip("ray", reason="Ray is the fleet extra: pip install 'rackclock[fleet]'")

pytestmark = pytest.mark.slow
HEAD_RACKS = ("a", "r1", "r2")    # what the head declares; r3 the second node; b no node


def _stop(head: subprocess.Popen) -> list[int]:
    """Kill the `ray start` session (SIGTERM drains a node for up to 30 s); the pids left after
    a deadline, killed and returned."""
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait(EXIT_DEADLINE_S)
    return reap_session(head.pid, EXIT_DEADLINE_S)


def _ray_start(args: list[str], where: Path, env: dict) -> subprocess.Popen:
    """`ray start --block ARGS` in `where`, in a session of its own; returns once it says the
    runtime started (a condition with a deadline), its log in `where`/ray-start.log."""
    log = where / "ray-start.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("ray")), "start", "--block",
             "--node-ip-address=127.0.0.1", "--disable-usage-stats", *args],
            cwd=where, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **env})
    wait_until(lambda: "Ray runtime started" in log.read_text() or proc.poll() is not None,
               DEADLINE_S, f"ray start in {where}")
    assert "Ray runtime started" in log.read_text(), log.read_text()
    return proc


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(address, env of the driver, the folder `ray start` ran in): two raylets on loopback,
    the head declaring racks a, r1 and r2, the second node (another folder) rack r3; the
    temp dir a short folder of this test's own."""
    where = tmp_path_factory.mktemp("raystart")
    # Ray's socket paths (TEMP/session_<date>_<pid>/sockets/plasma_store.1) must fit 107 bytes:
    # pytest's basetemp (/tmp/pytest-of-root/pytest-181/popen-gw1/...) is too long for that
    temp = Path(tempfile.mkdtemp(prefix="rc-ray-", dir="/tmp"))
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(32).hex()}
    port = free_port()
    nodes: list[subprocess.Popen] = []
    left: list[int] = []
    try:
        nodes.append(_ray_start(["--head", "--include-dashboard=false", f"--port={port}",
                                 f"--temp-dir={temp}",
                                 "--num-cpus=2", "--resources=" + json.dumps(
                                     {f"rack:{r}": 1 for r in HEAD_RACKS})], where, env))
        nodes.append(_ray_start([f"--address=127.0.0.1:{port}", "--num-cpus=1",
                                 '--resources={"rack:r3": 1}'],
                                tmp_path_factory.mktemp("node2"), env))
        yield f"127.0.0.1:{port}", env, where
    finally:
        for node in reversed(nodes):
            left += _stop(node)
        shutil.rmtree(temp, ignore_errors=True)
    assert not left, f"ray start left processes behind: {left}"


def _racks(tmp_path: Path, fleet: str) -> None:
    (tmp_path / "rack.toml").write_text(sim_rack_text(["bmc-1"], name="a", seed=3))
    (tmp_path / "fleet.toml").write_text(fleet)


def test_a_relative_out_keeps_every_rack_when_ray_started_elsewhere(cluster, tmp_path):
    """Ray started from another folder, `--out out` relative: every rack's run folder is in the
    driver's out/, whether written in place (r1 and r2, on the driver's node) or delivered as a
    tarball (r3, on the second node), and nothing is written under the folder `ray start` ran
    in."""
    address, env, where = cluster
    _racks(tmp_path, '[fleet]\nname = "rel"\nduration_s = 4\n'
                     '[racks.r1]\nrack = "rack.toml"\n[racks.r2]\nrack = "rack.toml"\n'
                     '[racks.r3]\nrack = "rack.toml"\n')
    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out", "--address", address],
                   tmp_path, env=env)
    (folder,) = (tmp_path / "out").glob("*-fleet-rel")
    m = json.loads((folder / "fleet.json").read_text())
    assert m["ray"]["mode"] == "joined", cp.stdout + cp.stderr
    for r in ("r1", "r2", "r3"):
        rec = m["racks"][r]
        assert rec["status"] == "completed", (r, rec, cp.stdout, cp.stderr)
        assert (folder / rec["run_folder"] / "summary.json").exists()
        assert rec["probed_s"] > 3, rec           # the run's own probing time (4 s asked)
    assert m["racks"]["r1"]["transfer"] == "folder" and m["racks"]["r3"]["transfer"] == "tarball"
    assert m["racks"]["r1"]["node_id"] == m["ray"]["driver_node_id"] != m["racks"]["r3"]["node_id"]
    assert not list(where.rglob("manifest.json")), "a run folder was written where Ray started"
    assert m["status"] == "completed"


def test_fleet_joins_a_cluster_whose_node_declares_the_rack(cluster, tmp_path):
    """The lab's setup (README): a Ray node started by `ray start` with token authentication,
    declaring the rack it reaches; `rackclock fleet run --address` joins it, runs rack a there,
    and says that rack b, which no node declares, is unplaceable."""
    address, env, _ = cluster
    _racks(tmp_path, '[fleet]\nname = "joined"\nduration_s = 4\n'
                     '[racks.a]\nrack = "rack.toml"\n[racks.b]\nrack = "rack.toml"\n')
    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out", "--address", address],
                   tmp_path, env=env)
    (folder,) = (tmp_path / "out").glob("*-fleet-joined")
    m = json.loads((folder / "fleet.json").read_text())
    assert m["ray"]["mode"] == "joined", cp.stdout + cp.stderr
    assert m["racks"]["a"]["status"] == "completed", m["racks"]["a"]
    assert m["racks"]["b"]["status"] == "unplaceable" and "rack:b" in m["racks"]["b"]["error"]
    assert cp.returncode == 1                     # a rack that could not run: the fleet says so


JOIN_DEADLINE_S = 60      # Ray alone retries a closed port for over 120 s, a refusal for 20 s


def _fleet_run(tmp_path: Path, address: str, env: dict) -> subprocess.CompletedProcess:
    """`fleet run --address` of a one-rack fleet in `env` (the whole environment)."""
    _racks(tmp_path, '[racks.a]\nrack = "rack.toml"\n')
    return subprocess.run([sys.executable, "-m", "bench.cli", "fleet", "run", "fleet.toml",
                           "--out", "out", "--address", address], cwd=tmp_path,
                          capture_output=True, text=True, timeout=JOIN_DEADLINE_S, env=env)


@pytest.mark.parametrize("address, said", [
    ("127.0.0.1:{closed}", "no Ray cluster answers there (Connection refused"),
    ("no-such-host.invalid:6379", "no Ray cluster answers there"),
    ("head.lab", "expected the Ray head's HOST:PORT")])
def test_a_bad_address_is_one_line_and_exit_2(tmp_path, address, said):
    cp = _fleet_run(tmp_path, address.format(closed=free_port()), dict(os.environ))
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.count("\n") == 1 and said in cp.stderr, cp.stderr
    assert "generator didn't stop" not in cp.stderr and not (tmp_path / "out").exists()


def test_a_driver_without_the_token_is_told_in_one_line(cluster, tmp_path):
    """Ray 2.60's `ray start --head` requires a token: a driver without it is refused in one
    line that names what to set, Ray's connection attempts bounded (3, not 20) and their own
    log lines held back."""
    address, _, _ = cluster
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    cp = _fleet_run(tmp_path, address, env)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.count("\n") == 1, cp.stderr
    assert "RAY_AUTH_MODE=token" in cp.stderr and "RAY_AUTH_TOKEN" in cp.stderr, cp.stderr
    assert not (tmp_path / "out").exists()


def test_sigterm_stops_the_racks_on_every_node(cluster, tmp_path):
    """SIGTERM to `fleet run` while r1 (the driver's node) and r3 (the second node) probe: both
    runs stop probing within STOP_S of the signal, close as a signalled `run` does (interrupted,
    summarised) and are gathered, r3's as its tarball; the fleet says interrupted, FAIL."""
    address, env, _ = cluster
    _racks(tmp_path, '[fleet]\nname = "stop"\nduration_s = 600\n'
                     '[racks.r1]\nrack = "rack.toml"\n[racks.r3]\nrack = "rack.toml"\n')
    since = time.time()
    scratch = Path(tempfile.gettempdir())     # r3's run folder until its task returns

    def probing():
        here = list((tmp_path / "out").glob("*-fleet-stop/racks/r1/*/samples/bmc-1.csv"))
        there = [f for f in scratch.glob("rackclock-fleet-r3-*/*/samples/bmc-1.csv")
                 if f.stat().st_mtime >= since]
        return all(any(f.stat().st_size > 200 for f in fs) for fs in (here, there))

    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out", "--address", address],
                   tmp_path, until=probing, env=env, sig=signal.SIGTERM)
    (folder,) = (tmp_path / "out").glob("*-fleet-stop")
    m = json.loads((folder / "fleet.json").read_text())
    assert m["status"] == "interrupted" and m["verdict"] == "FAIL", cp.stdout + cp.stderr
    assert cp.returncode == 1
    for r in ("r1", "r3"):
        rec = m["racks"][r]
        assert rec["status"] == "interrupted", rec
        rm = json.loads((folder / rec["run_folder"] / "manifest.json").read_text())
        assert rm["status"] == "interrupted" and (folder / rec["run_folder"] /
                                                   "summary.json").exists()
        assert (rm["probed_until_ns"] - signalled[-1]) / 1e9 < STOP_S, (r, rm["probed_until_ns"])
    assert m["racks"]["r3"]["transfer"] == "tarball"
