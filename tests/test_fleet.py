"""`rackclock fleet run` over three small simulated racks and one refused rack file on an
embedded Ray instance, then `rackclock fleet report`, with a rollout judged against a baseline.

One fleet run serves every test (Ray's start is the slow part on two cores). The command runs
in its own session so that teardown can prove it left no Ray process behind, and kill any.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import SESSION, pids_where, reap_session
from racks import sim_rack_text

from bench.model.store import RESERVE

pytest.importorskip("ray", reason="Ray is the fleet extra: pip install 'rackclock[fleet]'")

pytestmark = pytest.mark.slow
RACKCLOCK = [sys.executable, "-m", "bench.cli"]
DEADLINE_S = 600           # a condition's deadline, not a timing margin: the run ends by itself
EXIT_DEADLINE_S = 60      # ... and Ray's processes after it
OLD, NEW = "2.14.0", "2.15.0"


def rack_text(name: str, firmware: str) -> str:
    """bmc-1 and pdu-2 of the default rack; bmc-1 on firmware 2.15.0 steps its clock by 2 s
    after its 6th clock sample (a fault on the device's progress, not at a time)."""
    step = [{"kind": "step", "after_samples": 6, "size_s": 2.0}] if firmware == NEW else None
    return sim_rack_text(["bmc-1", "pdu-2"], name=name, seed=3, changes={"bmc-1": {"sim": {
        "firmware": firmware, "faults": step}}})


FLEET = """
[fleet]
name = "lab-t"
duration_s = 8

[racks.a]
rack = "rack-a.toml"

[racks.b]
rack = "rack-b.toml"

[racks.c]
rack = "rack-c.toml"
transfer = "tarball"          # the remote bench host's path, on this one machine

[racks.bad]
rack = "bad.toml"
"""


signalled: list[int] = []


def _as_a_foreground_command() -> None:
    """The child takes SIGINT as a command typed at a terminal does: not ignored, not blocked,
    whatever this test process inherited or set (a disposition of SIG_IGN and a blocked mask
    pass through exec, and Python keeps an ignored SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def rackclock(args: list[str], cwd: Path, until=None, env: dict | None = None,
              sig: int = signal.SIGINT, then=None) -> subprocess.CompletedProcess:
    """Run the command to its end; with `until`, a condition: once it holds, SIGINT to the
    command alone (as `ray.cancel` is then its only way to stop the racks), or `sig`. `env`:
    added to this process's environment. The signal's time (ns since the epoch): appended to
    `signalled`. `then`: called once `until` holds, instead of the signal."""
    proc = subprocess.Popen(RACKCLOCK + args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_as_a_foreground_command, env={**os.environ, **(env or {})})
    try:
        if until is not None:
            deadline = time.monotonic() + DEADLINE_S
            while not until() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            if then is not None:
                then()
            else:
                proc.send_signal(sig)
                signalled.append(time.time_ns())
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # Ray's processes (and a rack's simulator, which dies with its worker) end after the
        # command; wait for that, with a deadline, then kill what is left and fail
        left = reap_session(proc.pid, EXIT_DEADLINE_S)
    assert not left, f"processes left behind by rackclock {args[0]}: {left}"
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    for name, fw in (("a", OLD), ("b", OLD), ("c", NEW)):
        (root / f"rack-{name}.toml").write_text(rack_text(name, fw))
    (root / "bad.toml").write_text(sim_rack_text(["bmc-1"], name="bad", changes={
        "bmc-1": {"driver": "no_such_driver"}}))
    (root / "fleet.toml").write_text(FLEET)
    # 2 CPUs whatever the machine: four racks of 0.5 CPU (the default `cpus`) all at once
    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out", "--num-cpus", "2"], root)
    folders = list((root / "out").glob("*-fleet-lab-t"))
    assert len(folders) == 1, cp.stdout + cp.stderr
    return folders[0], cp


def test_fleet_runs_every_rack_and_records_the_refused_one(fleet):
    folder, cp = fleet
    assert cp.returncode == 1, cp.stderr         # one rack refused: the fleet says so
    m = json.loads((folder / "fleet.json").read_text())
    assert m["status"] == "incomplete" and m["incomplete"] == ["bad"]   # it ran to its end
    assert m["racks_completed"] == 3
    assert m["verdict"] == "FAIL" and "1 FAIL (bad)" in m["reason"], m["reason"]
    assert m["ray"]["mode"] == "embedded" and m["ray"]["version"] == m["versions"]["ray"]
    assert m["ray"]["auth"] == "token"       # it listens on every interface: a token of its own
    assert m["ray"]["address"] and m["git"]["revision"] and m["stopped_ns"] > m["started_ns"]
    racks = m["racks"]
    assert {r: racks[r]["status"] for r in racks} == {"a": "completed", "b": "completed",
                                                      "c": "completed", "bad": "refused"}
    assert "no_such_driver" in racks["bad"]["error"]
    assert "run_folder" not in racks["bad"]
    assert racks["bad"]["verdict"] == "FAIL" and "not completed (refused)" in racks["bad"]["reason"]
    assert "took" not in racks["bad"] and "probed_s" not in racks["bad"]
    for r in ("a", "b", "c"):
        rec = racks[r]
        assert rec["node_id"] == m["ray"]["driver_node_id"] and rec["host"]
        # a completed run: PASS (0) or UNDECIDED (3: c's firmware 2.15.0 BMC steps in 8 s)
        assert rec["stopped_ns"] > rec["started_ns"] and rec["exit_status"] in (0, 3)
        assert rec["error"] is None, rec
        # the rack's own verdict, judged where it ran, is its `rackclock run`'s exit status
        assert rec["verdict"] == {0: "PASS", 3: "UNDECIDED"}[rec["exit_status"]], rec
        assert rec["reason"]
        assert 7 < rec["probed_s"] < rec["wall_s"], rec     # its own probing time, of 8 s
        log = (folder / "racks" / r / "run.log").read_text()
        assert log.rstrip().endswith(f"verdict: {rec['verdict']}: {rec['reason']}"), log
        run = folder / rec["run_folder"]
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["status"] == "completed" and manifest["parameters"]["duration_s"] == 8
        assert (run / "summary.json").exists()
    assert racks["a"]["transfer"] == "folder" and (folder / racks["a"]["run_folder"] / "samples"
                                                   ).is_dir()
    assert racks["c"]["transfer"] == "tarball" and (folder / racks["c"]["tarball"]).exists()
    # three racks ran side by side: each one's run overlaps the others'
    spans = [(racks[r]["started_ns"], racks[r]["stopped_ns"]) for r in ("a", "b", "c")]
    assert max(s for s, _ in spans) < min(e for _, e in spans)
    (bound,) = m["ray"]["concurrency"]
    assert (bound["cpus"], bound["racks"], bound["at_once"], bound["rack_cpus"]) == (2, 4, 4, [0.5])
    assert "at most 4 of 4 rack(s) at once on" in cp.stdout, cp.stdout
    assert "fleet folder:" in cp.stdout and "fleet verdict: FAIL" in cp.stdout
    assert any(ln.split()[:2] == ["bad", "FAIL"] for ln in cp.stdout.splitlines()), cp.stdout


def test_fleet_report_exits_by_the_fleet_verdict_in_the_terminal_width(fleet, tmp_path):
    """Without a baseline, `fleet report` exits by the fleet's verdict (a refused rack: FAIL, 1),
    shows each rack's verdict and reason, and fits COLUMNS."""
    folder, _ = fleet
    cp = rackclock(["fleet", "report", str(folder), "--no-html"], tmp_path,
                   env={"COLUMNS": "80"})
    assert cp.returncode == 1, cp.stdout + cp.stderr
    lines = cp.stdout.splitlines()
    assert lines and max(len(ln) for ln in lines) <= 80, cp.stdout
    assert any(ln.startswith("fleet verdict: FAIL") for ln in lines), cp.stdout
    assert any(ln.split()[:2] == ["bad", "FAIL"] for ln in lines), cp.stdout
    assert any(ln.strip().startswith("bad: FAIL: not completed (refused)") for ln in lines)


def test_fleet_report_shows_every_rack_and_the_rollout(fleet, tmp_path):
    folder, _ = fleet
    # the rollout's baseline: the same fleet, but rack c still on 2.14.0 (rack a's run)
    base = tmp_path / "baseline"
    base.mkdir()
    shutil.copytree(folder / "racks", base / "racks")
    m = json.loads((folder / "fleet.json").read_text())
    m["racks"]["c"] = dict(m["racks"]["a"])
    (base / "fleet.json").write_text(json.dumps(m))
    cp = rackclock(["fleet", "report", str(folder), "--baseline", str(base),
                    "--json", str(tmp_path / "r.json")], tmp_path)
    assert cp.returncode == 1, cp.stdout + cp.stderr      # a rack regressed
    lines = cp.stdout.splitlines()
    for r in ("a", "b", "c"):
        assert any(ln.split()[:1] == [r] and "completed" in ln for ln in lines), cp.stdout
    assert any(ln.split()[:1] == ["bad"] and "refused" in ln for ln in lines)
    assert (folder / "fleet.html").exists() and (folder / "plots" / "fleet.png").exists()
    rep = json.loads((tmp_path / "r.json").read_text())
    groups = {(d["plane"], d["firmware"], d["measure"]): d for d in rep["distributions"]}
    assert groups[("bmc", OLD, "offset")]["racks"] == ["a", "b"]
    assert groups[("bmc", NEW, "breaks")]["points"] == [1.0]     # 2.15.0 steps its clock
    assert groups[("bmc", OLD, "breaks")]["points"] == [0.0, 0.0]
    roll = rep["rollout"]
    assert roll["c"]["verdict"] == "REGRESSED"
    failed = [x for x in roll["c"]["comparison"]["measures"] if x["failed"]]
    assert any(x["device"] == "bmc-1" and x["measure"] == "breaks" for x in failed)
    assert roll["a"]["verdict"] != "REGRESSED"       # the same run on both sides
    assert roll["bad"]["verdict"] == "not compared"
    assert any(ln.strip().startswith("c: REGRESSED") for ln in lines), cp.stdout


def test_bench_imports_without_ray(tmp_path):
    """Ray is optional: without it bench imports and `rackclock fleet run` names the extra."""
    blocker = tmp_path / "ray"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('no ray here')\n")
    (tmp_path / "f.toml").write_text('[racks.a]\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    cp = subprocess.run(RACKCLOCK + ["fleet", "run", "f.toml", "--out", "out"], cwd=tmp_path,
                        env=env, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 2
    assert "pip install 'rackclock[fleet]'" in cp.stderr
    cp = subprocess.run([sys.executable, "-c", "import bench.cli, bench.commands.fleet, "
                         "bench.fleet.fleet_report, bench.fleet.config"], env=env, cwd=tmp_path,
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr


def test_fleet_file_errors_are_one_line(tmp_path):
    (tmp_path / "f.toml").write_text('[racks.a]\nresources = { CPU = 1 }\n')
    cp = subprocess.run(RACKCLOCK + ["fleet", "run", "f.toml"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 2 and "Ray's own resource" in cp.stderr
    assert not (tmp_path / "results").exists()


STOP_S = 15            # issue 49: a stopped fleet's racks stop probing within 15 s


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_fleet_stops_its_running_racks(tmp_path, sig):
    """Ctrl-C or SIGTERM to `rackclock fleet run` while two racks run: each rack's run is stopped
    through ray.cancel (its own Ctrl-C path: interrupted, summarised), long before its 600 s,
    each rack's probing ends within STOP_S of the signal (by its manifest; the closing summary
    after it takes what the machine's load makes it), and the fleet gathers them and says
    interrupted."""
    (tmp_path / "rack.toml").write_text(sim_rack_text(["bmc-1"], name="long", seed=3))
    (tmp_path / "fleet.toml").write_text('[fleet]\nname = "long"\nduration_s = 600\n'
                                         '[racks.a]\nrack = "rack.toml"\n'
                                         '[racks.b]\nrack = "rack.toml"\n')

    def reading():               # both racks' runs are probing: their bmc-1 samples have reads
        return all(any(f.stat().st_size > 200 for f in (tmp_path / "out").glob(
            f"*-fleet-long/racks/{r}/*/samples/bmc-1.csv")) for r in "ab")

    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out"], tmp_path, until=reading,
                   sig=sig)
    (folder,) = (tmp_path / "out").glob("*-fleet-long")
    m = json.loads((folder / "fleet.json").read_text())
    assert m["status"] == "interrupted", cp.stdout + cp.stderr
    assert m["verdict"] == "FAIL" and cp.returncode == 1
    for r in "ab":
        assert m["racks"][r]["status"] == "interrupted", m["racks"][r]
        (run,) = (folder / "racks" / r).glob("*/manifest.json")
        rm = json.loads(run.read_text())
        assert rm["status"] == "interrupted" and (run.parent / "summary.json").exists()
        assert (rm["probed_until_ns"] - signalled[-1]) / 1e9 < STOP_S, rm["probed_until_ns"]


def test_fleet_verdict_is_the_worst_of_the_racks():
    """Each rack's verdict by `rackclock run`'s exit table, a rack that did not complete FAIL;
    the fleet's the worst of them (six racks, two faulty: FAIL, exit 1)."""
    from bench.fleet.fleet_verdict import fleet_exit, fleet_verdict, rack_verdict

    ok = {"status": "completed", "verdict": "PASS", "reason": "bounded"}
    racks = {f"r{i}": dict(ok) for i in range(4)}
    assert fleet_verdict(racks)[0] == "PASS" and fleet_exit("PASS") == 0
    racks["r1"] = {"status": "completed", "exit_status": 3}          # judged nowhere
    assert rack_verdict(racks["r1"]) == ("UNDECIDED", "exit status 3 of its rackclock run")
    assert fleet_verdict(racks)[0] == "UNDECIDED" and fleet_exit("UNDECIDED") == 3
    assert fleet_exit("UNDECIDED", allow_undecided=True) == 0
    racks["r4"] = {"status": "completed", "verdict": "FAIL", "reason": "bmc-1 misses the truth"}
    racks["r5"] = {"status": "crashed", "error": "NodeDiedError: ..."}
    word, why = fleet_verdict(racks)
    assert (word, fleet_exit(word)) == ("FAIL", 1)
    assert why.startswith("6 rack(s): 2 FAIL (r4, r5); 1 UNDECIDED (r1); 3 PASS"), why
    assert rack_verdict(racks["r5"]) == ("FAIL", "not completed (crashed): NodeDiedError: ...")
    assert rack_verdict({"status": "submitted"})[0] == "FAIL"     # a lost driver's rack


def test_a_rack_whose_worker_is_killed_is_retried_once_and_completes(tmp_path):
    """SIGKILL to the Ray worker running rack a (the pid in its run's manifest) while it probes:
    the fleet submits the rack again (an infrastructure failure, not a measured one), the second
    attempt completes, and fleet.json records both attempts, the first with its partial folder."""
    (tmp_path / "rack.toml").write_text(sim_rack_text(["bmc-1"], name="a", seed=3))
    (tmp_path / "fleet.toml").write_text('[fleet]\nname = "retry"\nduration_s = 6\n'
                                         '[racks.a]\nrack = "rack.toml"\n')
    runs = tmp_path / "out"

    def probing():
        return any(f.stat().st_size > 200 for f in
                   runs.glob("*-fleet-retry/racks/a/*/samples/bmc-1.csv"))

    def kill_the_worker():
        (manifest,) = runs.glob("*-fleet-retry/racks/a/*/manifest.json")
        os.kill(json.loads(manifest.read_text())["pid"], signal.SIGKILL)

    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out"], tmp_path, until=probing,
                   then=kill_the_worker)
    (folder,) = runs.glob("*-fleet-retry")
    m = json.loads((folder / "fleet.json").read_text())
    rec = m["racks"]["a"]
    assert rec["status"] == "completed" and rec["attempts"] == 2, (rec, cp.stderr)
    assert m["status"] == "completed" and cp.returncode in (0, 3), cp.stdout + cp.stderr
    (first,) = rec["earlier_attempts"]
    assert first["status"] == "crashed" and "WorkerCrashedError" in first["error"], first
    assert first["run_folder"] != rec["run_folder"]
    partial = json.loads((folder / first["run_folder"] / "manifest.json").read_text())
    assert partial["status"] == "running"        # killed: nothing closed it


def test_a_fleet_whose_command_died_is_reported_abandoned(fleet, tmp_path):
    """fleet.json left `running` by a command that died (Ray kills the driver when the head is
    lost): `fleet report` says abandoned, each rack it had not gathered FAIL with the run
    folder it left, and exits 1."""
    folder, _ = fleet
    lost = tmp_path / folder.name
    shutil.copytree(folder, lost)
    m = json.loads((lost / "fleet.json").read_text())
    dead = subprocess.Popen(["true"])
    dead.wait()
    m.update(status="running", pid=dead.pid)
    for key in ("verdict", "reason", "run_folder", "status", "exit_status", "probed_s"):
        m["racks"]["a"].pop(key, None)
    m["racks"]["a"]["status"] = "submitted"
    (lost / "fleet.json").write_text(json.dumps(m))
    cp = rackclock(["fleet", "report", str(lost), "--no-html", "--wide"], tmp_path)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "abandoned" in cp.stdout.splitlines()[0], cp.stdout
    (row,) = [ln for ln in cp.stdout.splitlines() if ln.split()[:1] == ["a"]]
    assert row.split()[1:3] == ["FAIL", "abandoned"] and "racks/a/" in row, row
    assert f"not gathered: the fleet command (pid {dead.pid})" in row


def test_fleet_resume_summarises_a_partial_run_without_ray(fleet, tmp_path):
    """A fleet whose driver died (a copy of the shared fleet without its refused rack, fleet.json
    left `running` by a dead pid): racks a and c completed and are kept as they are; rack b's
    task was still running and its run folder has every read but no summary (its process
    killed while closing): `fleet resume` summarises it as `rackclock summarize` would, reruns
    nothing (so starts no Ray) and writes one verdict over the three."""
    folder, _ = fleet
    lost = tmp_path / folder.name
    shutil.copytree(folder, lost, ignore=shutil.ignore_patterns("bad"))
    (lost / "fleet.toml").write_text(FLEET.split("[racks.bad]")[0])
    m = json.loads((lost / "fleet.json").read_text())
    dead = subprocess.Popen(["true"])
    dead.wait()
    m.update(status="running", pid=dead.pid)
    del m["racks"]["bad"]
    kept = {r: dict(m["racks"][r]) for r in ("a", "c")}
    run_b = lost / m["racks"]["b"]["run_folder"]
    (run_b / "summary.json").unlink()
    rm = json.loads((run_b / "manifest.json").read_text())
    rm.update(status="running", pid=dead.pid)
    (run_b / "manifest.json").write_text(json.dumps(rm))
    (run_b / RESERVE).write_bytes(b"\0" * 16)     # a killed run still holds its reserve
    m["racks"]["b"] = {"status": "submitted", "attempts": 1}
    (lost / "fleet.json").write_text(json.dumps(m))
    cp = rackclock(["fleet", "resume", str(lost), "--wide"], tmp_path)
    m2 = json.loads((lost / "fleet.json").read_text())
    assert cp.returncode == {"PASS": 0, "FAIL": 1, "UNDECIDED": 3}[m2["verdict"]], cp.stderr
    assert m2["status"] == "completed" and m2["racks_completed"] == 3, (m2, cp.stdout)
    assert "ray" not in cp.stdout.split("resumed:")[0]          # nothing to run: no Ray
    assert {r: m2["racks"][r] for r in ("a", "c")} == kept
    b = m2["racks"]["b"]
    assert (b["status"], b["summarised_from"]) == ("summarised", "abandoned"), b
    assert b["reason"].startswith("summarised by fleet resume (reads over") and b["verdict"]
    assert b["probed_s"] >= 0.9 * 8, b          # its reads reach 90 % of its 8 s
    assert (run_b / "summary.json").exists()
    assert json.loads((run_b / "manifest.json").read_text())["status"] == "killed"
    assert "resumed: 0 rack(s) run again (none), 1 summarised from their partial runs (b)" \
        in cp.stdout, cp.stdout
    (resume,) = m2["resumes"]
    assert resume["status_before"] == "abandoned" and resume["summarised"] == ["b"]


def test_a_lost_head_ends_the_fleet_in_a_final_state_and_resume_completes_it(tmp_path):
    """Every Ray process of the embedded instance (the head: GCS, raylet, the racks' workers)
    killed while racks a and b probe; the driver lives on, as a driver on another host would.
    Ray would wait 60 s (here RAY_gcs_rpc_server_reconnect_timeout_s=20) and then end the driver
    outright; the fleet declares the head lost at a quarter of that and writes its final state:
    `head_lost`, each rack `abandoned` with its attempts (the first died with its node, its
    partial run folder named), FAIL. `fleet resume` then reruns both (their partial runs too
    short to summarise), one at a time at `cpus = 1` on one CPU, and the fleet completes."""
    (tmp_path / "rack.toml").write_text(sim_rack_text(["bmc-1"], name="a", seed=3))
    (tmp_path / "fleet.toml").write_text('[fleet]\nname = "head"\nduration_s = 5\ncpus = 1\n'
                                         '[racks.a]\nrack = "rack.toml"\n'
                                         '[racks.b]\nrack = "rack.toml"\n')
    runs = tmp_path / "out"
    env = {"RAY_gcs_rpc_server_reconnect_timeout_s": "20"}

    def probing():
        return all(any(f.stat().st_size > 200 for f in runs.glob(
            f"*-fleet-head/racks/{r}/*/samples/bmc-1.csv")) for r in "ab")

    def kill_the_head():
        (fleet_json,) = runs.glob("*-fleet-head/fleet.json")
        driver = json.loads(fleet_json.read_text())["pid"]
        for pid in pids_where(SESSION, driver):
            if pid != driver:
                os.kill(pid, signal.SIGKILL)

    cp = rackclock(["fleet", "run", "fleet.toml", "--out", "out", "--num-cpus", "2"], tmp_path,
                   until=probing, then=kill_the_head, env=env)
    (folder,) = runs.glob("*-fleet-head")
    m = json.loads((folder / "fleet.json").read_text())
    assert m["status"] == "head_lost" and m["verdict"] == "FAIL", (m, cp.stdout, cp.stderr)
    assert cp.returncode == 1 and "has not answered for" in m["error"]
    assert "fleet resume" in cp.stdout
    for r in "ab":
        rec = m["racks"][r]
        assert rec["status"] == "abandoned" and "the Ray head" in rec["error"], rec
        first = rec["earlier_attempts"][0]
        assert first["status"] == "crashed" and (folder / first["run_folder"]).is_dir(), first
    cp = rackclock(["fleet", "resume", str(folder), "--num-cpus", "1"], tmp_path)
    m2 = json.loads((folder / "fleet.json").read_text())
    assert m2["status"] == "completed", (m2, cp.stdout, cp.stderr)
    assert cp.returncode == {"PASS": 0, "FAIL": 1, "UNDECIDED": 3}[m2["verdict"]]
    for r in "ab":
        rec = m2["racks"][r]
        assert rec["status"] == "completed" and rec["probed_s"] > 4, rec
        assert rec["earlier_attempts"][-1]["status"] == "abandoned", rec
        assert rec["run_folder"] not in {e.get("run_folder") for e in rec["earlier_attempts"]}
    # one rack at a time: cpus = 1 on an instance of one CPU, as the output says
    first, second = sorted((m2["racks"][r]["started_ns"], m2["racks"][r]["stopped_ns"])
                           for r in "ab")
    assert first[1] <= second[0], (first, second)
    assert "at most 1 of 2 rack(s) at once on" in cp.stdout and "the others queue" in cp.stdout
    assert "resumed: 2 rack(s) run again (a, b), 0 summarised" in cp.stdout, cp.stdout


def test_concurrency_packs_racks_into_each_nodes_cpus():
    """A node runs as many racks at once as their `cpus` fit in its CPUs; a rack asking for
    more CPUs than the node that declares its resource has is unplaceable (Ray would wait)."""
    from bench.fleet.config import fleet_from_dict
    from bench.fleet.engine import concurrency, unplaceable

    fleet = fleet_from_dict({"fleet": {"cpus": 0.5}, "racks": {
        **{f"r{i}": {} for i in range(16)}, "big": {"cpus": 4, "resources": {"rack:r0": 1}}}})
    node = {"node_id": "n" * 20, "host": "bench-1",
            "resources": {"CPU": 2.0, **{f"rack:r{i}": 1.0 for i in range(16)}}}
    (b,) = concurrency(fleet, [node])
    assert (b["racks"], b["at_once"], b["rack_cpus"]) == (17, 4, [0.5, 4.0])
    why = unplaceable(fleet, node["resources"], [node])
    assert list(why) == ["big"] and "asks for 4 CPU" in why["big"] and "has 2" in why["big"]
