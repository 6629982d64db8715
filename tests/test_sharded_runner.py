"""The runner with its devices sharded over worker processes, against the simulated rack, and the
bench's admission (bench/run/admission.py). Faults are triggered by the test; every wait is a
condition with a deadline."""
from __future__ import annotations

import csv
import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from procs import wait_until
from racks import sim_rack_text

from bench.model.store import RunStore
from bench.reference.clock import Reference
from bench.run.experiment import run_experiment
from bench.run.probe import run_devices
from bench.run.runner import ProbePlan
from bench.run.simproc import SimProcess


def rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ok_reads(path: Path) -> list[dict]:
    return [r for r in rows(path) if r["kind"] == "read" and r["status"] == "ok"]


def test_sharded_devices_isolated(tmp_path):
    """Two worker processes: every device's samples land in the run folder, a device that
    never answers and one that reboots mid-run cost only themselves."""
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["cdu-1", "pdu-2", "bmc-1"]))
    with SimProcess(rack, tmp_path / "sim") as sim:
        devices = list(sim.rack.devices)
        cdu = sim.rack.device("cdu-1")
        devices.append(replace(cdu, name="dead-1", address="tcp://127.0.0.1:9"))  # nobody there
        store = RunStore(tmp_path / "runs", "sharded")
        store.write_manifest({"experiment": "test"})
        stop = threading.Event()
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_devices(
            devices, Reference.now_ns, store, ProbePlan(duration_s=600, stimulus_every_s=None),
            True, processes=2, stop=stop)))
        t.start()
        try:
            samples = store.path / "samples"
            wait_until(lambda: all(len(ok_reads(samples / f"{d}.csv")) >= 4
                                   for d in ("cdu-1", "pdu-2", "bmc-1")), 120, "reads of all")
            sim.fault("cdu-1", "reboot")
            wait_until(lambda: any(r["kind"] == "read" and r["status"] != "ok"
                                   for r in rows(samples / "cdu-1.csv")), 60, "cdu-1 failing")
            n_pdu, n_bmc = len(ok_reads(samples / "pdu-2.csv")), len(ok_reads(samples / "bmc-1.csv"))

            def recovered():
                r = rows(samples / "cdu-1.csv")
                last_err = max(i for i, x in enumerate(r) if x["status"] != "ok")
                return any(x["kind"] == "read" and x["status"] == "ok" for x in r[last_err:])
            wait_until(recovered, 120, "cdu-1 reading again after its reboot")
            wait_until(lambda: len(ok_reads(samples / "pdu-2.csv")) > n_pdu + 2
                       and len(ok_reads(samples / "bmc-1.csv")) > n_bmc + 2, 60,
                       "the other devices reading on")
        finally:
            stop.set()
            t.join(120)
        assert not t.is_alive()
        statuses, interrupted = out["r"]
    st = {s.name: s for s in statuses}
    assert not interrupted
    assert st["dead-1"].state == "failed" and st["dead-1"].reads == 0 and st["dead-1"].errors
    assert all(st[d].state == "done" and st[d].reads > 4 for d in ("cdu-1", "pdu-2", "bmc-1"))
    assert st["cdu-1"].errors > 0 and st["pdu-2"].errors == 0
    dead = rows(store.path / "samples" / "dead-1.csv")
    assert dead and all(r["status"] != "ok" for r in dead)
    m = json.loads((store.path / "manifest.json").read_text())
    assert m["runner"]["processes"] == 2 and len(set(m["runner"]["pids"])) == 2
    assert m["devices"]["cdu-1"]["identity"]["firmware"]      # sent up by its worker
    first = ok_reads(store.path / "samples" / "pdu-2.csv")
    assert first[0]["late_ns"] != "" and int(first[0]["late_ns"]) >= 0   # the probe's lateness
    events = rows(store.path / "events.csv")
    assert any(e["device"] == "dead-1" and e["level"] == "error" for e in events)
    said = [e["message"] for e in events if e["kind"] == "priority"]
    for k in (0, 1):           # each worker: its nice at start, then real time at the start line
        mine = [m for m in said if m.startswith(f"worker {k} ")]
        assert len(mine) == 2 and "nice" in mine[0], said
        assert "real-time priority" in mine[1] or "real time refused" in mine[1], said
        assert os.geteuid() != 0 or "real-time priority" in mine[1], said


EXPERIMENT = '''"""Probe every device for a few seconds."""
from dataclasses import dataclass
from bench.run.runner import ProbePlan


@dataclass(frozen=True)
class Params:
    duration_s: float = 4.0
    burst: int = 2


def run(bench, p):
    bench.probe(ProbePlan(duration_s=p.duration_s, stimulus_every_s=None, burst=p.burst))
'''


def calibration(tmp_path: Path, ms: float) -> Path:
    f = tmp_path / "cost.json"
    f.write_text(json.dumps({"measured": "test", "drivers": {
        "modbus_cooling": {"bench_ms_per_read": ms, "sim_ms_per_read": 0.0}}}))
    return f


def test_beyond_capacity_refused_or_fitted(tmp_path, capsys):
    """A rack needing more than the bench's capacity is refused with the numbers; with
    fit_rates it runs at rates scaled to fit, said in the manifest and the closing lines."""
    import os
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["cdu-1"]))              # 2 Hz x burst 2 = 4 reads/s
    exp = tmp_path / "probe_briefly.py"
    exp.write_text(EXPERIMENT)
    cores = len(os.sched_getaffinity(0))
    ms = 10 * cores * 0.8 * 1000 / 4                      # ten times what the bench can do
    path = run_experiment(str(exp), rack, tmp_path / "out", {}, quiet=False,
                          calibration=calibration(tmp_path, ms))
    m = json.loads((path / "manifest.json").read_text())
    assert m["status"] == "refused"
    a = m["admission"]
    assert a["need_cores"] == pytest.approx(10 * a["capacity_cores"], rel=1e-3) and not a["fits"]
    assert "needs" in m["error"] and "--fit-rates" in m["error"]
    assert not list((path / "samples").glob("*.csv"))
    assert "refused: the rack needs" in capsys.readouterr().err

    path = run_experiment(str(exp), rack, tmp_path / "out", {}, quiet=False, fit_rates=True,
                          calibration=calibration(tmp_path, ms))
    m = json.loads((path / "manifest.json").read_text())
    assert m["status"] == "completed"
    assert m["admission"]["fit_factor"] == pytest.approx(0.1, rel=1e-3)
    assert m["inventory"]["devices"]["cdu-1"]["rate_hz"] == pytest.approx(0.2, rel=1e-3)
    assert "rates scaled to 10 % of the rack file's by --fit-rates" in capsys.readouterr().out


def test_a_device_that_never_answers_does_not_hold_the_start_line(tmp_path):
    """The devices of a worker start together once their opens are over
    (bench/run/startline.py), but not after one whose open hangs: a Modbus "device" that
    accepts the connection and never answers holds its open for its whole timeout (30 s: the
    driver's and the plan's), and the others read meanwhile."""
    import socket
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["cdu-1", "pdu-2", "bmc-1"]))
    silent = socket.create_server(("127.0.0.1", 0))          # accepts, never answers
    with silent, SimProcess(rack, tmp_path / "sim") as sim:
        devices = list(sim.rack.devices)
        cdu = sim.rack.device("cdu-1")
        devices.append(replace(cdu, name="silent-1", options={**cdu.options, "timeout_s": 30.0},
                               address=f"tcp://127.0.0.1:{silent.getsockname()[1]}"))
        store = RunStore(tmp_path / "runs", "sharded")
        store.write_manifest({"experiment": "test"})
        stop = threading.Event()
        out = {}
        plan = ProbePlan(duration_s=600, stimulus_every_s=None, timeout_s=30.0)
        t = threading.Thread(target=lambda: out.update(r=run_devices(
            devices, Reference.now_ns, store, plan, True, processes=2, stop=stop)))
        t.start()
        try:
            samples = store.path / "samples"
            wait_until(lambda: all(len(ok_reads(samples / f"{d}.csv")) >= 4
                                   for d in ("cdu-1", "pdu-2", "bmc-1")), 50,
                       "reads of the answering devices while silent-1's open hangs")
            assert rows(samples / "silent-1.csv") == []       # its open has not ended yet
        finally:
            stop.set()
            t.join(120)
        assert not t.is_alive()
    events = rows(store.path / "events.csv")
    assert any(e["kind"] == "calendar" and "started together" in e["message"] for e in events)
