"""SIGHUP reloads the watched rack file: a device added and one removed, and the device that
stayed goes on without a gap (its worker never reopened; no slot of its plan's grid skipped
across the reload). Against a rack served by `rackclock sim`, a lab rack to the watch."""
from __future__ import annotations

import csv
import signal
import tomllib

import pytest
import tomli_w
from racks import served_rack
from watch_helpers import start_watch, state, stop_watch, until

from bench.analysis.probe_schedule import AIM_REACH
from bench.model.rundata import load_run
from bench.ports import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path, monkeypatch):
    with served_rack(tmp_path, monkeypatch, ["bmc-1", "cdu-1", "pdu-2"]) as out:
        yield tomllib.loads((out / "rack.toml").read_text())


def _rack(data: dict, devices: list[str], path):
    devs = {k: v for k, v in data["devices"].items() if k in devices}
    if "cdu-9" in devices:               # cdu-1 at a port nothing listens on: never connects
        devs["cdu-9"] = {**data["devices"]["cdu-1"], "address": f"tcp://127.0.0.1:{free_port()}"}
    path.write_text(tomli_w.dumps({**data, "devices": devs}))


def _reads(day, device):
    p = [load_run(d) for d in day if (load_run(d).path / "samples" / f"{device}.csv").exists()]
    return sum(len(r.samples(device).select("read")) for r in p)


def test_sighup_adds_and_removes_devices_without_a_gap(served, tmp_path):
    rack = tmp_path / "watched.toml"
    _rack(served, ["bmc-1", "cdu-1"], rack)
    out = tmp_path / "out"
    proc = start_watch(out, "--rack", str(rack), "--reference-allowance", "1ms",
                       "--rate", "2", "--fit-every", "1s")
    try:
        st = until(lambda: (s := state(out)) and s.get("day") and s, 90, "watch.json", proc)
        day = [st["day"]]
        until(lambda: _reads(day, "cdu-1") >= 6 and _reads(day, "bmc-1") >= 6, 120,
              "reads of both devices", proc)
        _rack(served, ["cdu-1", "pdu-2", "cdu-9"], rack)
        proc.send_signal(signal.SIGHUP)
        until(lambda: state(out)["devices"] == ["cdu-1", "cdu-9", "pdu-2"], 60, "the reload",
              proc)
        until(lambda: _reads(day, "pdu-2") >= 6, 120, "reads of the added device", proc)
        # the added device that never connects has its series, and the watch is not healthy
        until(lambda: (_metric(st["url"], "rackclock_device_errors_total", device="cdu-9",
                               kind="unreachable") or 0) >= 1, 60, "cdu-9's errors", proc)
        assert _metric(st["url"], "rackclock_device_reads_total", device="cdu-9") == 0
        assert _metric(st["url"], "rackclock_device_up", device="cdu-9") == 0
        assert _metric(st["url"], "rackclock_device_last_read_age_seconds", device="cdu-9") >= 0
        assert _metric(st["url"], "rackclock_watch_healthy") == 0
        n = _reads(day, "cdu-1")
        until(lambda: _reads(day, "cdu-1") >= n + 6, 120, "more reads of cdu-1", proc)
    finally:
        text = stop_watch(proc)
    assert proc.returncode == 0, text
    run = load_run(day[0])
    events = run.events()
    reload = [e for e in events if e.kind == "reload"]
    assert len(reload) == 1 and "pdu-2" in reload[0].message and "bmc-1" in reload[0].message
    opened = [e for e in events if e.kind == "identity" and e.device == "cdu-1"]
    assert len(opened) == 1                                  # never reopened
    assert not [e for e in events if e.kind == "reopen" and e.device == "cdu-1"]
    probes = []                                   # [planned instant, last bracket end]
    with open(run.path / "samples" / "cdu-1.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "read":
                continue
            if r["late_ns"]:                      # a probe's first read carries its lateness
                probes.append([int(r["s_ns"]) - int(r["late_ns"]), int(r["e_ns"])])
            elif probes:
                probes[-1][1] = max(probes[-1][1], int(r["e_ns"]))
    t = reload[0].t_ns
    assert probes[0][0] < t < probes[-1][0]        # probes on both sides of it
    period = 0.5e9
    # one probe per slot of the plan's grid (probe_schedule.grid_slot), dithered in it or aimed
    # up to AIM_REACH periods past its centre; a slot is skipped when the probe before it overran
    # into it (a loaded machine) or the worker's thread came late to plan the next (one slot:
    # 1.38 s between planned probes once in three CI-like runs), never a stretch of slots as a
    # worker stopped and reopened would leave
    for (p0, end0), (p1, _) in zip(probes, probes[1:]):
        assert p1 - p0 <= (3 + AIM_REACH) * period or end0 > p0 + period, (p0, p1, end0)
    # the removed device stopped, the added one started after the reload
    bmc = run.samples("bmc-1")
    assert max(int(bmc.s_ns[i]) for i in bmc.select("read")) < t + 10 * 10**9
    pdu = run.samples("pdu-2")
    assert min(int(pdu.s_ns[i]) for i in pdu.select("read")) > t - 10**9


def _metric(url: str, name: str, **labels) -> float | None:
    import re
    import urllib.request
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as r:
        text = r.read().decode()
    for line in text.splitlines():
        m = re.match(rf"{name}(?:\{{(.*)\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            return float(m.group(2))
    return None


def test_restart_resumes_the_current_segments_from_disk(served, tmp_path):
    """A watch killed (SIGKILL: nothing closed) and started again: the old day is summarised and
    marked killed, and the new watch's bounds start from the old day's reads (its first fit
    already counts them), not from nothing."""
    rack = tmp_path / "watched.toml"
    _rack(served, ["cdu-1"], rack)
    out = tmp_path / "out"
    args = ("--rack", str(rack), "--reference-allowance", "1ms", "--rate", "2",
            "--fit-every", "1s")
    proc = start_watch(out, *args)
    try:
        day = [until(lambda: (s := state(out)) and s.get("day"), 90, "watch.json", proc)]
        until(lambda: _reads(day, "cdu-1") >= 10, 120, "reads of cdu-1", proc)
    finally:
        proc.kill()
        proc.wait(30)
    before = _reads(day, "cdu-1")
    (out / "watch.json").unlink()
    proc = start_watch(out, *args)
    try:
        st = until(lambda: (s := state(out)) and s.get("day") not in (None, day[0]) and s, 90,
                   "the new watch.json", proc)
        taken = until(lambda: _metric(st["url"], "rackclock_clock_reads_total", device="cdu-1"),
                      60, "the resumed clock in the metrics", proc)
        assert taken >= before
        until(lambda: _metric(st["url"], "rackclock_clock_offset_lo_seconds", device="cdu-1")
              is not None, 60, "bounds of the resumed clock", proc)
    finally:
        text = stop_watch(proc)
    assert proc.returncode == 0, text
    old = load_run(day[0])
    assert old.manifest.status == "killed" and old.summary.devices
    new = load_run(st["day"])
    resumed = [e for e in new.events() if e.kind == "resume" and e.device == "cdu-1"]
    assert len(resumed) == 1 and f"{before} reads" in resumed[0].message
