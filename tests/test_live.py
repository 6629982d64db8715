"""Live bounds in the progress display, the run's "time to calibrated", and the display telling
the same error count as the closing table."""
from __future__ import annotations

import io
import re

import numpy as np
from racks import sim_rack_text

import drivers.base
from bench.model.manifest_records import Identity, Manifest
from bench.model.rundata import load_run
from bench.output.live import LiveBounds, calibrated_cell
from bench.output.terminal import Progress
from bench.run.experiment import run_experiment
from bench.run.runner import DeviceStatus


def _reads(n, bracket_ns=1_000_000, q=1_000, offset_ns=5_000_000, seed=3):
    rng = np.random.default_rng(seed)
    t0 = 1_800_000_000_000_000_000
    s = t0 + np.arange(n) * 500_000_000 + rng.integers(0, 100_000_000, n)
    e = s + bracket_ns + rng.integers(0, bracket_ns, n)
    v = ((s + rng.integers(0, bracket_ns, n) + offset_ns) // q) * q
    return t0, [(int(a), int(b), int(c), q) for a, b, c in zip(s, e, v)]


def test_live_bounds_record_when_a_clock_is_calibrated():
    t0, rows = _reads(40)
    st = DeviceStatus("dev-1", "bmc")
    live = LiveBounds(t0)
    seen = []
    for k in range(4, 41):
        st.recent["c"] = rows[:k]
        live.update([st])
        seen.append(live.clocks[("dev-1", "c")].width_ns)
    x = live.clocks[("dev-1", "c")]
    assert x.calibrated_s is not None and 0 < x.calibrated_s < 21
    assert x.calibrated_width_ns <= 2 * x.min_bracket_ns
    assert re.search(r"c ±\S+ \S+ (proven|assumed) pinned@", live.text(st))
    rec = live.record()
    assert rec["dev-1"]["c"]["calibrated_after_s"] == x.calibrated_s
    assert calibrated_cell({"calibration": rec}, "dev-1", "c") == f"{x.calibrated_s:g} s"
    assert calibrated_cell({}, "dev-1", "c") == "—"


def test_the_calibration_record_is_the_manifests():
    """One Calibration: what the live display builds is what the manifest's reader reads back,
    and drivers return the documents' Identity."""
    t0, rows = _reads(40)
    st = DeviceStatus("dev-1", "bmc")
    live = LiveBounds(t0)
    for k in range(4, 41):
        st.recent["c"] = rows[:k]
        live.update([st])
    built = live.calibration()["dev-1"]["c"]
    assert built.calibrated_after_s is not None
    assert Manifest.of({"calibration": live.record()}).calibration_of("dev-1", "c") == built
    assert drivers.base.Identity is Identity
    ident = Identity(vendor="v", model="m", extra={"no_clock": ["module 1"]})
    assert Identity.of(ident.to_dict()) == ident and not Identity() and ident


def test_non_terminal_progress_prints_the_final_block_once():
    out = io.StringIO()
    p = Progress(10, stream=out)
    st = DeviceStatus("dev-1", "bmc", state="done")
    p([st], 10.0)
    p([st], 10.2)                        # the runner's last call after the loop
    assert out.getvalue().count("-- ") == 1, out.getvalue()


def test_display_and_table_count_the_same_errors(tmp_path, capfd):
    """pdu-1's agent restarts 4 s in, silent for 3 s: reads and log polls fail. The last
    progress block and the closing table give it the same error count."""
    rack = tmp_path / "reset.toml"
    rack.write_text(sim_rack_text(["pdu-1"], changes={
        "pdu-1": {"sim": {"reboots": [4.0], "reboot_down_s": 3.0}}}))
    path = run_experiment("clock_offset", rack, tmp_path / "runs",
                          {"duration_s": "12", "log_poll_s": "0.5"})
    err = capfd.readouterr()
    run = load_run(path)
    total = sum(run.summary["devices"]["pdu-1"]["errors"].values())
    live = re.findall(r"pdu-1 .*errors\s+(\d+)", err.err)
    assert total > 0 and live and int(live[-1]) == total, (total, live, err.err[-3000:])
    assert err.err.count("-- ") >= 1 and err.err.count("/ 12 s") == len(
        set(re.findall(r"-- +(\d+) / 12 s", err.err)))        # no block printed twice
    assert "calibration" in err.out and "pinned" in err.out
    cal = run.manifest["calibration"]["pdu-1"]
    assert set(cal) == {"sysuptime", "hrsystemdate"}
    assert "±" in err.err                                     # live offset widths were shown
