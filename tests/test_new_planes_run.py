"""The IPMI, scheduler and host kernel planes through a whole run: the table, truth, the report,
`compare` and the timeline (with a `dmesg`-style log file mapped through the kernel log's clock)."""
from __future__ import annotations

import pytest
from racks import sim_rack_text

from bench.compare.verdicts import compare_runs, load_tolerances
from bench.model.rundata import load_run
from bench.model.timeline_build import build_timeline
from bench.output.terminal import table
from bench.run.experiment import run_experiment
from bench.sim.host_kernel_emu import kmsg_writable
from bench.sim.ipmi_bmc_emu import ipmi_sim_path

DEVICES = ["k8s-1"] + (["ipmi-1", "ipmi-2"] if ipmi_sim_path() else []) + \
    (["host-1"] if kmsg_writable() else [])


@pytest.fixture(scope="module")
def new_planes_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("newplanes")
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(DEVICES, changes={"k8s-1": {"sim": {"not_ready": [
        {"at_s": 3.0, "node": "gpu-node-2", "for_s": 60.0}]}}}))
    path = run_experiment("clock_offset", rack, tmp / "runs",
                          {"duration_s": "12", "stimulus_every_s": "4"},
                          quiet=True)
    return load_run(path)


def test_every_new_plane_is_in_the_table_with_bounds_that_contain_the_truth(new_planes_run):
    run = new_planes_run
    assert run.manifest["status"] == "completed"
    text = table(run.summary)
    for name in DEVICES:
        d = run.summary["devices"][name]
        assert name in text and d["clocks"], name
        unknown = {e.get("clock") for e in run.truth["devices"][name]["events"]
                   if e["kind"] == "no_truth"}          # the kernel log's, without debugfs
        assert unknown <= {"kmsg"}
        for clock, c in d["clocks"].items():
            if clock in unknown:
                continue
            for seg in c["segments"]:
                t = seg["truth"]
                assert t["offset_in"] and t["drift_in"], (name, clock, seg["offset_ns"], t)
        assert d["latency"], f"{name}: no stimulus-to-log latency"


def test_report_and_compare_cover_the_new_planes(new_planes_run, tmp_path):
    from bench.output import report_html as report
    run = new_planes_run
    built = report.build_report(run.path, formats=("png",))
    html = (run.path / "report.html").read_text()
    for name in DEVICES:
        assert name in html
    assert built is not None
    cmp = compare_runs(run, run, load_tolerances(None))
    devices = {r.device for r in cmp.rows}
    assert set(DEVICES) <= devices and not cmp.failures


def test_timeline_maps_the_new_planes_log_entries_through_their_clocks(new_planes_run, tmp_path):
    run = new_planes_run
    logs = []
    if "host-1" in DEVICES:
        smp = run.samples("host-1")
        reads = [i for i in smp.select("read", "kmsg")]
        mid = reads[len(reads) // 2]
        v = int(smp.value_ns[mid])
        dmesg = tmp_path / "dmesg.log"
        dmesg.write_text(f"[{v // 10**9:>5}.{v % 10**9 // 1000:06d}] NVRM: Xid (PCI:0000:3b:00): 79, "
                         f"GPU has fallen off the bus.\n")
        logs = [f"host-1:kmsg={dmesg}"]
    rows = build_timeline(run, logs)
    stamped = {(r["entry"].source, r["entry"].clock_key.split("/")[1]) for r in rows
               if r["entry"].basis == "stamp"}
    assert ("k8s-1", "apiserver") in stamped                  # Events by creationTimestamp
    if "ipmi-1" in DEVICES:
        assert ("ipmi-1", "sel") in stamped and ("ipmi-2", "sel_init") in stamped
    if "host-1" in DEVICES:
        xid = [r["entry"] for r in rows if "Xid" in r["entry"].label]
        # stamped with the kernel log's µs, not a second's; the read that showed v was taken
        # inside its bracket, so the stamp's interval must meet it
        assert len(xid) == 1 and xid[0].width_ns < 10**9
        assert xid[0].lo_ns <= int(smp.e_ns[mid]) and int(smp.s_ns[mid]) <= xid[0].hi_ns
        assert ("host-1", "kmsg") in stamped
    node = [r["entry"] for r in rows if "gpu-node-2 Ready=False" in r["entry"].label]
    assert node and node[0].basis == "observed"               # its clock cannot be read
