"""Real short runs on a small simulated rack, shared by the report, compare and notebook tests.

Three runs of the same two-BMC rack, made once per test process and in parallel (they share the
machine's load, so their brackets are alike): the baseline (bmc-1 on firmware 2.14.0), a firmware
update of bmc-1 to 2.15.0 whose `by_firmware` table makes its log latency about 3 s longer, and
an update to 2.14.1 that changes nothing in the clock model.
"""
from __future__ import annotations

import threading
from pathlib import Path

from racks import UTC_BMC2, sim_rack_text

from bench.run.experiment import run_experiment

DURATION_S = "16"
BASELINE, REGRESSED, UNCHANGED = "2.14.0", "2.15.0", "2.14.1"


def rack_text(firmware: str) -> str:
    """bmc-1 and bmc-2 of the default rack (bmc-2 without its wrong UTC offset), bmc-1 on
    `firmware`: 2.15.0 logs about 3 s late, 2.14.1 changes no timing."""
    return sim_rack_text(["bmc-1", "bmc-2"], name="fw-test", seed=8, changes={
        "bmc-1": {"sim": {"firmware": firmware, "by_firmware": {
            REGRESSED: {"log_latency_s": [3.0, 3.2]}, UNCHANGED: {"sample_delay_s": 0.0002}}}},
        "bmc-2": {"sim": {**UTC_BMC2["bmc-2"]["sim"], "log_latency_s": [0.1, 0.3]}}})


_runs: dict[str, Path] = {}
_lock = threading.Lock()


def shared_runs(tmp_path_factory) -> dict[str, Path]:
    """{firmware version: run folder} for the three versions, made on first use."""
    with _lock:
        if _runs:
            return dict(_runs)
        root = tmp_path_factory.mktemp("fw-runs")
        errors = []

        def go(fw: str) -> None:
            try:
                rack = root / f"rack-{fw}.toml"
                rack.write_text(rack_text(fw))
                _runs[fw] = run_experiment("clock_offset", rack, root / f"out-{fw}",
                                           {"duration_s": DURATION_S, "stimulus_every_s": "5"},
                                           quiet=True)   # 2+ events a side: latency is judged
            except BaseException as exc:       # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(fw,)) for fw in
                   (BASELINE, REGRESSED, UNCHANGED)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            _runs.clear()
            raise errors[0]
        return dict(_runs)
