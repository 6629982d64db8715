"""Real short runs on a small simulated rack, shared by the report, compare and notebook tests.

Three runs of the same two-BMC rack, made once per test process and in parallel (they share the
machine's load, so their brackets are alike): the baseline (bmc-1 on firmware 2.14.0), a firmware
update of bmc-1 to 2.15.0 whose `by_firmware` table makes its log latency about 3 s longer, and
an update to 2.14.1 that changes nothing in the clock model.
"""
from __future__ import annotations

import threading
from pathlib import Path

from bench.bench import run_experiment

DURATION_S = "13"
BASELINE, REGRESSED, UNCHANGED = "2.14.0", "2.15.0", "2.14.1"

RACK = """
[rack]
name = "fw-test"
reference = "realtime"
simulated = true
seed = 8

[devices.bmc-1]
plane = "bmc"
driver = "redfish_bmc"
address = "https://127.0.0.1:0"
username = "root"
password_env = "RACKCLOCK_SIM_BMC_PASSWORD"
verify_tls = false
rate_hz = 2.0
stimuli = ["test_event"]

[devices.bmc-1.sim]
offset_s = 0.0031
drift_ppm = 0.2
resolution_s = 1.0
ntp = true
sample_delay_s = 0.0002
jitter_s = 0.0001
log_latency_s = [0.05, 0.25]
firmware = "{firmware}"

[devices.bmc-1.sim.by_firmware."2.15.0"]      # the regression: logs ~3 s late
log_latency_s = [3.0, 3.2]

[devices.bmc-1.sim.by_firmware."2.14.1"]      # a patch release that changes no timing
sample_delay_s = 0.0002

[devices.bmc-2]
plane = "bmc"
driver = "redfish_bmc"
address = "https://127.0.0.1:0"
username = "root"
password_env = "RACKCLOCK_SIM_BMC_PASSWORD"
verify_tls = false
rate_hz = 2.0
stimuli = ["test_event"]

[devices.bmc-2.sim]
offset_s = -41.27
drift_ppm = 38.0
resolution_s = 1.0
sample_delay_s = 0.0003
jitter_s = 0.0002
log_latency_s = [0.1, 0.3]
firmware = "1.9.3"
"""

_runs: dict[str, Path] = {}
_lock = threading.Lock()


def rack_text(firmware: str) -> str:
    return RACK.replace("{firmware}", firmware)


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
                                           {"duration_s": DURATION_S}, quiet=True)
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
