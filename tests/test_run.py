"""`rackclock run` end to end on the simulated rack, as a user runs it, and a rack with a wrong
password and an unreachable device: clear errors for those, every sample kept for the others."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w
from racks import sim_rack_dict, sim_rack_text
from schema_check import check_folder, errors

from bench.config.inventory import load_rack, rack_from_dict
from bench.model.manifest import RunStart
from bench.model.rundata import load_run
from bench.ports import free_port
from bench.run.experiment import DEFAULT_RACK, run_experiment
from bench.sim.rack import read_samples, samples_in
from bench.sim.thread import SimRackThread

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--duration", "14", "--out",
                        str(out)], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    folder = Path(p.stdout.strip().splitlines()[-1].removeprefix("run folder: "))
    return load_run(folder), p.stdout


def test_run_folder_is_complete(default_run):
    run, stdout = default_run
    m = run.manifest
    assert m["status"] == "completed" and m["simulated"] and m["experiment"] == "clock_offset"
    assert m["versions"]["rackclock"] and "revision" in m["git"] and m["reference"]["source"]
    expected = {d.name for d in load_rack(DEFAULT_RACK).devices}
    assert set(run.summary["devices"]) == expected
    assert run.truth is not None
    # a plane whose real counterpart is missing here (ipmi_sim, a writable /dev/kmsg) is left
    # out with that reason; any other failure to serve is an error
    left_out = {n for n, d in m["devices"].items()
                if "is not installed" in d.get("error", "") or "is not writable here" in d.get("error", "")}
    for name in expected - left_out:
        assert (run.path / "samples" / f"{name}.csv").stat().st_size > 0
        assert m["devices"][name]["identity"], f"{name}: no identity recorded"
    assert list((run.path / "plots").glob("offset_*.png"))
    assert "device" in stdout and "run folder:" in stdout


def test_the_manifest_is_written_in_the_recorded_order(default_run):
    """The typed records (bench/model/manifest.py) write what the dict literals wrote: the
    recorded run's keys in its order (tests/data/recorded/, tests/test_manifest_records.py),
    and the start's values from the run as asked."""
    run, _ = default_run
    m = json.loads((run.path / "manifest.json").read_text())
    recorded = json.loads((ROOT / "tests" / "data" / "recorded" / "20261201T161000Z-clock_offset"
                           / "manifest.json").read_text())
    assert list(m) == [k for k in recorded if k in m] and set(m) <= set(recorded)
    probed = [d for d in m["devices"].values() if "identity" in d]
    want = [k for k in recorded["devices"]["bmc-1"] if k != "traffic"]
    assert probed and all([k for k in d if k != "traffic"] == want for d in probed)
    start = RunStart.from_dict(m)
    assert start.to_dict() == {k: m[k] if k != "devices" else {
        n: {f: d[f] for f in ("plane", "driver", "error") if f in d} for n, d in m[k].items()}
        for k in list(m)[3:21]}
    rack = load_rack(DEFAULT_RACK)
    assert (start.experiment, start.armed, start.simulated, start.rack_file, start.status) == (
        "clock_offset", True, True, "default", "completed")
    assert {n: d.plane for n, d in start.devices.items() if not d.error} == {
        d.name: d.plane for d in rack.devices if not start.devices[d.name].error}
    assert start.argv[-4:] == ["--duration", "14", "--out", start.argv[-1]]


def test_every_file_the_run_wrote_validates_against_its_schema(default_run):
    """manifest.json and summary.json against the schemas shipped in the package
    (bench/model/schemas/, issue 45 item 2), with their schema_version, and the header of every
    CSV in the folder against csv.schema.json (tests/schema_check.py)."""
    run, _ = default_run
    checked = check_folder(run.path)
    assert {"manifest.json", "summary.json", "samples/*.csv", "events.csv", "reference.csv",
            "bounds.csv", "stability.csv", "phase/*.csv", "sim/sim_samples.csv"} <= set(checked), checked


def test_the_timeline_page_spans_the_run_and_gathers_older_records(default_run):
    """`rackclock timeline` on the default run: timeline.html's axis spans the run (ticks from
    0 s to at most its probing end, whole seconds: the entries' bounds are ms or wider), and
    the Redfish equipment logs' seeded records from hours before it are gathered apart,
    collapsed under a line that counts them."""
    import re
    run, _ = default_run
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "bench.cli", "timeline", str(run.path), "--rows", "1"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    page = (run.path / "timeline.html").read_text()
    before = re.search(r"<summary>(\d+) records? from [^<]* before the run", page)
    assert before and int(before.group(1)) >= 1, page[:2000]
    svg = re.search(r'<svg[^>]* class="tl-run".*?</svg>', page, flags=re.S).group(0)
    ticks = [float(x) for x in re.findall(r'<text class="tick"[^>]*>([^<]*) s</text>', svg)]
    span_s = (run.manifest.probed_until_ns - run.manifest.started_ns) / 1e9
    assert ticks[0] == 0 and span_s - 5 <= ticks[-1] <= span_s and len(ticks) >= 4, (ticks, span_s)
    assert all(t == int(t) for t in ticks), ticks
    assert {"timeline.json", "timeline.csv"} <= set(check_folder(run.path))    # their schemas
    doc = json.loads((run.path / "timeline.json").read_text())
    doc["entries"][0]["lo"] = doc["entries"][0].pop("lo_ns")
    assert errors("timeline", doc)                                  # a renamed field fails


def test_every_bound_contains_the_truth(default_run):
    run, _ = default_run
    checked = 0
    for name, d in run.summary["devices"].items():
        # a clock whose truth the simulated rack cannot know says so (the kernel log's without
        # debugfs): it is left out of this check, never assumed
        unknown = {e.get("clock") for e in run.truth["devices"].get(name, {}).get("events", [])
                   if e["kind"] == "no_truth"}
        for clock, c in d["clocks"].items():
            if clock in unknown:
                continue
            for seg in c.get("segments", []):
                t = seg.get("truth")
                assert t is not None, f"{name}/{clock}: no truth check"
                assert t["offset_in"], \
                    f"{name}/{clock}: truth offset {t['offset_ns']} outside {seg['offset_ns']}"
                assert t.get("drift_in", True), f"{name}/{clock}: truth drift outside {seg['drift_ppm']}"
                checked += 1
    assert checked >= 3


def test_every_bracket_contains_the_emulators_sample_instant(default_run):
    run, _ = default_run
    taken = read_samples(run.path / "sim" / "sim_samples.csv")
    # served by third-party simulators (ipmi_sim) whose sample instants nobody records: their
    # truth is the host's clock, checked by test_every_bound_contains_the_truth
    third_party = {n for n, d in run.manifest["inventory"]["devices"].items()
                   if d["driver"] in ("ipmi_bmc", "host_kernel")}
    n = 0
    for name in set(run.devices) - third_party:
        smp = run.samples(name)
        for i in smp.select("read"):
            key = (name, smp.clock[i])
            s, e = int(smp.s_ns[i]), int(smp.e_ns[i])
            assert samples_in(taken.get(key, []), s, e), f"{key}: no sample instant in [{s}, {e}]"
            n += 1
    assert n > 50


def test_wrong_password_and_unreachable_device_are_clear_errors(tmp_path, monkeypatch):
    data = sim_rack_dict(["bmc-1", "bmc-2"])
    monkeypatch.setenv("RACKCLOCK_SIM_BMC_PASSWORD", "right-password-123")
    monkeypatch.setenv("WRONG_BMC_PASSWORD", "wrong-password-456")
    with SimRackThread(rack_from_dict(data), tmp_path / "sim") as sim:
        real = {"rack": {"name": "lab-like"}, "devices": {}}
        for d in sim.rack.devices:
            real["devices"][d.name] = {"plane": d.plane, "driver": d.driver, "address": d.address,
                                       "username": d.username, "password_env": d.password_env,
                                       "rate_hz": 2.0, "verify_tls": False}
        real["devices"]["bmc-2"]["password_env"] = "WRONG_BMC_PASSWORD"
        real["devices"]["bmc-dead"] = {**real["devices"]["bmc-1"],
                                       "address": f"https://127.0.0.1:{free_port()}"}
        rack_file = tmp_path / "lab.toml"
        rack_file.write_bytes(tomli_w.dumps(real).encode())
        refused = load_run(run_experiment("clock_offset", rack_file, tmp_path / "runs",
                                          {"duration_s": "6"}, quiet=True))
        folder = run_experiment("clock_offset", rack_file, tmp_path / "runs",
                                {"duration_s": "6"}, quiet=True, allowance_ns=1_000_000)
    # no linuxptp here and no allowance given: a lab rack run is refused, saying what to do
    assert refused.manifest["status"] == "refused"
    assert "allowance" in refused.manifest["error"]
    run = load_run(folder)
    assert run.manifest["status"] == "completed" and not run.manifest["simulated"]
    assert not run.manifest["reference"]["verified"]
    assert run.summary["reference_uncertainty_ns"] == 1_000_000
    good = run.summary["devices"]["bmc-1"]
    assert good["clocks"]["datetime"]["reads"] >= 5 and not good["errors"]
    assert "auth" in run.summary["devices"]["bmc-2"]["errors"]
    assert "unreachable" in run.summary["devices"]["bmc-dead"]["errors"]
    text = "".join(p.read_text() for p in run.path.rglob("*") if p.is_file() and p.suffix in
                   (".csv", ".json", ".toml", ".log"))
    assert "wrong-password-456" not in text and "right-password-123" not in text
    journal = (run.path / "events.csv").read_text()
    assert "bmc-2" in journal and "bmc-dead" in journal


def test_device_reset_mid_run_is_recorded_and_the_others_go_on(tmp_path):
    """pdu-1's agent restarts once it has answered 6 clock samples (the runner's first reads,
    however long the start took) and is silent for 3 s: its reads time out (rows with that
    status), the runner reconnects, the counter's restart is a reboot break whose truth lies in
    the bounds, and bmc-1 beside it measures on without an error."""
    rack = tmp_path / "reset.toml"
    rack.write_text(sim_rack_text(["bmc-1", "pdu-1"], changes={
        "pdu-1": {"sim": {"faults": [{"kind": "reboot", "after_samples": 6}],
                          "reboot_down_s": 3.0}}}))
    # 24 s: room for the reboot, 3 s down, failures, the reconnect and reads after it, even
    # where pdu-1's v3 open takes seconds (two CPU hogs beside the suite)
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "24", "stimulus_every_s": "none"}, quiet=True))
    assert run.manifest["status"] == "completed"
    pdu = run.samples("pdu-1")
    assert "timeout" in {pdu.status[i] for i in pdu.select("read", ok=False)}
    journal = (run.path / "events.csv").read_text()
    assert "reconnecting" in journal and journal.count("pdu-1,info,identity") == 2
    up = run.summary["devices"]["pdu-1"]["clocks"]["sysuptime"]
    assert [b["kind"] for b in up["breaks"]] == ["reboot"]
    assert all(seg["truth"]["offset_in"] for seg in up["segments"])
    assert not run.summary["devices"]["bmc-1"]["errors"]
    assert run.summary["devices"]["bmc-1"]["clocks"]["datetime"]["reads"] > 20


def test_the_calibrated_span_ranges_limits_judge_hold_the_truth(default_run):
    """Issue 30 item 2: limits judge an offset over each segment's first to last read; that
    range holds the simulated truth at every instant of the span."""
    import numpy as np

    from bench.model.limit_checks import segment_range, span_model
    from bench.model.summary import _truth_offset_at
    run, _ = default_run
    checked = 0
    for d, c in run.summary.clocks():
        tc = run.truth["devices"].get(d.name, {}).get("clocks", {}).get(c.name)
        if c.counter or not tc:
            continue
        prior, _ = span_model(c)
        for sg in c.segments:
            lo, hi = segment_range(sg, prior)
            for t in np.linspace(sg.start_ns, sg.end_ns, 50).astype(np.int64):
                assert lo <= _truth_offset_at(tc, int(t)) <= hi, (d.name, c.name, lo, hi)
                checked += 1
    assert checked >= 200
