"""The typed model of the run folder (bench/model/documents.py) on a real short run of the
simulated rack: every key of summary.json and manifest.json reaches a typed field with the value
written (nothing lost), the statuses are the enums' members, and an old or partial folder loads
and reports."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from racks import sim_rack_text

from bench.analysis.proven_segment import Bound
from bench.model import documents as doc
from bench.model.run_statuses import BoundStatus, BreakKind, ErrorKind, RowStatus, RunStatus, Verdict
from bench.model.rundata import load_run
from bench.run.experiment import run_experiment


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    """bmc-3 stepped 750 ms and pdu-1's agent restarted (its sysUpTime counter from zero) within
    a 16 s run, with pdu-1's outlet stimulus: breaks of two kinds, a counter, latencies. Both
    faults come on the devices' own progress (bench/sim/faults.py), not at a time from the
    simulator's start, which a loaded host reached before the first read."""
    root = tmp_path_factory.mktemp("model-run")
    rack = root / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-3", "pdu-1"], name="model-test", seed=5, changes={
        "bmc-3": {"sim": {"faults": [{"kind": "step", "after_samples": 8, "size_s": -0.75}]}},
        "pdu-1": {"sim": {"faults": [{"kind": "reboot", "after_samples": 6}], "reboot_down_s": 1.0}},
    }))
    path = run_experiment("clock_offset", rack, root / "out",
                          {"duration_s": "16", "stimulus_every_s": "4"}, quiet=True)
    assert json.loads((path / "manifest.json").read_text())["status"] == "completed"
    return path


def same(typed, raw, where: str, missing: list) -> None:
    """Does the typed value hold the raw JSON value? Records: every raw key is a field of the
    same value (recorded in `missing` otherwise); Bounds: lo, hi, point (and n)."""
    if dataclasses.is_dataclass(typed) and isinstance(raw, dict):
        rest = getattr(typed, "extra", None) or getattr(typed, "options", None) or {}
        for k, v in raw.items():
            if k in rest:          # a key the model does not type, kept beside the fields
                same(rest[k], v, f"{where}.{k}", missing)
            elif not hasattr(typed, k) or k == "raw":
                missing.append(f"{where}.{k}")
            else:
                same(getattr(typed, k), v, f"{where}.{k}", missing)
        assert typed.raw == raw if hasattr(typed, "raw") else True, where
    elif isinstance(raw, dict):
        assert isinstance(typed, dict) and set(typed) == set(raw), where
        for k in raw:
            same(typed[k], raw[k], f"{where}.{k}", missing)
    elif isinstance(raw, list):
        assert isinstance(typed, (list, tuple)) and len(typed) == len(raw), where
        for i, (t, r) in enumerate(zip(typed, raw)):
            same(t, r, f"{where}[{i}]", missing)
    else:
        assert typed == raw and type(typed) in (type(raw), bool) or \
            isinstance(typed, str) and typed == raw, (where, typed, raw)


def test_every_key_of_the_run_reaches_a_typed_field(run_path):
    run = load_run(run_path)
    raw_m = json.loads((run_path / "manifest.json").read_text())
    raw_s = json.loads((run_path / "summary.json").read_text())
    missing: list = []
    same(run.manifest, raw_m, "manifest", missing)
    same(run.summary, raw_s, "summary", missing)
    assert missing == []
    assert run.manifest.extra == {"incident": raw_m["incident"]}     # the experiment's own key
    # typed all the way down, not dicts that happen to compare equal
    d = run.summary.devices["bmc-3"]
    c = d.clocks["datetime"]
    assert isinstance(c, doc.ClockSummary) and isinstance(c.segments[0], doc.SegmentSummary)
    assert isinstance(c.segments[0].offset_ns, Bound) and isinstance(c.breaks[0], doc.BreakRecord)
    assert run.manifest.device("pdu-1").clock("sysuptime").counter


def test_the_run_shows_its_breaks_statuses_and_latency_as_enums(run_path):
    run = load_run(run_path)
    assert run.manifest.status is RunStatus.COMPLETED
    bmc3 = run.summary.devices["bmc-3"].clocks["datetime"]
    pdu = run.summary.devices["pdu-1"]
    kinds = {b.kind for b in bmc3.breaks} | {b.kind for c in pdu.clocks.values() for b in c.breaks}
    # the counter's restart is a reboot; a 1 s tick's -750 ms step 7 s in may be too short a
    # side to tell a step (kind "unknown"), but its size bound holds the truth either way
    assert BreakKind.REBOOT in kinds and all(isinstance(k, BreakKind) for k in kinds), kinds
    assert len(bmc3.breaks) == 1
    size = bmc3.breaks[0].size_ns
    assert size.lo <= -0.75e9 <= size.hi
    for c in (bmc3, *pdu.clocks.values()):
        assert isinstance(c.verdict, Verdict)
        for sg in c.segments:
            assert isinstance(sg.offset_status, BoundStatus) and sg.truth.inside
    lat = pdu.latency["outlet_reboot:3"]
    assert lat.sent >= 2 and lat.logged_ns is not None and lat.logged_ns.n >= 1
    assert all(e.logged_ns is None or e.logged_ns.lo <= e.logged_ns.hi for e in lat.events)
    # errors of the reboot (pdu-1 silent for 1 s) are ErrorKinds
    assert all(isinstance(k, ErrorKind) for k in pdu.errors)
    assert set(run.samples("pdu-1").status) <= {*RowStatus, *ErrorKind}
    assert run.truth.clock("bmc-3", "datetime").breaks[0].kind == BreakKind.STEP
    assert any(e.kind == "stimulus" for e in run.events())


def test_enums_write_the_same_json():
    assert json.dumps({ErrorKind.TIMEOUT: RunStatus.KILLED}) == '{"timeout": "killed"}'
    assert f"{Verdict.BEYOND_PRIOR}" == "beyond_prior" and BoundStatus.PROVEN == "proven"


def _old_folder(src: Path, dst: Path) -> Path:
    """The run as a bench before issue 11 wrote it: no statuses, verdicts, assumptions, bands or
    calibration; plus a key from a newer bench on every level."""
    shutil.copytree(src, dst)
    s = json.loads((dst / "summary.json").read_text())
    for d in s["devices"].values():
        d["from_the_future"] = {"x": 1}
        for c in d["clocks"].values():
            for k in ("verdict", "assumptions", "outliers", "wraps"):
                c.pop(k, None)
            for sg in c["segments"]:
                for k in ("offset_status", "drift_status", "drift_assumes", "band"):
                    sg.pop(k, None)
                sg["truth"].pop("drift_in", None)
                sg["new_bound"] = {"lo": 1, "hi": 2}
    s["new_top_level"] = [1, 2]
    (dst / "summary.json").write_text(json.dumps(s))
    m = json.loads((dst / "manifest.json").read_text())
    for k in ("calibration", "reference_run", "reference_end", "probe_plan", "duration_s"):
        m.pop(k, None)
    m["status"] = "paused_by_a_newer_bench"
    (dst / "manifest.json").write_text(json.dumps(m))
    return dst


def test_an_old_folder_with_unknown_keys_loads_and_reports(run_path, tmp_path):
    from bench.model import verdict as vd
    from bench.output.report_html import build_report
    from bench.output.terminal import table

    old = load_run(_old_folder(run_path, tmp_path / "old"))
    assert old.manifest.status == "paused_by_a_newer_bench"           # kept, not an error
    assert old.summary.raw["new_top_level"] == [1, 2]
    assert old.summary.devices["bmc-3"].raw["from_the_future"] == {"x": 1}
    sg = old.summary.devices["bmc-3"].clocks["datetime"].segments[0]
    assert sg.offset_status is None and sg.band is None and sg.truth.drift_in
    # what the summary no longer says is derived again, the same as it was written
    new = {(v.device, v.clock): v for v in vd.clock_verdicts(load_run(run_path))}
    for v in vd.clock_verdicts(old):
        assert v.offset_status in set(BoundStatus)
        assert v.assumptions.drift_prior_ppm == new[(v.device, v.clock)].assumptions.drift_prior_ppm
    assert "bmc-3" in table(old.summary, old.manifest)
    rr = build_report(old.path, formats=("png",))
    assert "this section failed" not in (old.path / "report.html").read_text()
    assert rr.written


def test_a_partial_folder_loads(run_path, tmp_path):
    """A run killed before its summary (and a manifest from before the devices opened)."""
    from bench.output.report_html import build_report

    p = tmp_path / "partial"
    shutil.copytree(run_path, p)
    (p / "summary.json").unlink()
    (p / "truth.json").unlink()
    m = json.loads((p / "manifest.json").read_text())
    (p / "manifest.json").write_text(json.dumps({"experiment": m["experiment"],
                                                 "status": "running"}))
    with open(p / "events.csv", "a") as f:
        f.write("1700000000000000000,bmc-3,info,cut")            # a line cut short
    run = load_run(p)
    assert run.manifest.status is RunStatus.RUNNING and run.manifest.devices == {}
    assert run.summary.devices == {} and not run.summary.raw and run.truth is None
    assert run.manifest.uncertainty_ns() == 0 and run.run_id == "partial"
    assert all(e.message is not None for e in run.events())
    build_report(p, formats=("png",))
    assert "no summary.json" in (p / "report.html").read_text()


def test_an_old_summary_of_a_clock_beyond_its_prior_is_derived_as_such():
    """A summary without verdict and assumptions (an older bench's) whose drift bound reaches
    beyond the inventory's prior was fitted within the widened prior: it says beyond_prior."""
    from bench.analysis.breaks import WIDE_PRIOR_FACTOR
    from bench.model import verdict as vd
    from bench.model.documents import ClockSummary

    def clock(lo, hi):
        return ClockSummary.of("datetime", {"segments": [{
            "start_ns": 0, "end_ns": 10**10, "reads": 20, "epoch_ns": 5 * 10**9,
            "offset_ns": {"lo": -1e6, "hi": 1e6, "point": 0.0},
            "drift_ppm": {"lo": lo, "hi": hi, "point": (lo + hi) / 2}}]})

    wide = clock(-4000.0, 300.0)
    assert vd.fitted_prior(wide, 600.0) == 600.0 * WIDE_PRIOR_FACTOR
    assert vd.clock_verdict(wide, 600.0) == Verdict.BEYOND_PRIOR
    inside = clock(-597.0, 300.0)              # on the prior's edge: assumed, not beyond it
    assert vd.fitted_prior(inside, 600.0) == 600.0
    assert vd.clock_verdict(inside, 600.0) == Verdict.ASSUMED
    assert vd.clock_verdict(clock(10.0, 30.0), 600.0) == Verdict.PROVEN
