"""The regression gallery (docs/REGRESSION.md): copies of one small simulated rack where one thing
changed, each run once per test process beside a shared baseline (in parallel: they share the
machine's load, so their brackets are alike).

The rack: bmc-1 (NTP-disciplined Redfish BMC), bmc-2 (free running; its DateTime given a 1 ms
tick here so that a drift bound narrows within a short run), cdu-1 (Modbus CDU), pdu-2 (SNMPv2c
PDU). Each case names the device that changed, its change, and the measure that shows it.
Faults recur every 8-10 s from the simulator's start to 2 min: on loaded cores the first read
can come 30 s after the simulator started, so a fault set at one instant may precede the run."""
from __future__ import annotations

import threading
from pathlib import Path

from racks import UTC_BMC2, sim_rack_text

from bench.run.experiment import run_experiment

DEVICES = ["bmc-1", "bmc-2", "cdu-1", "pdu-2"]
BASE = {**UTC_BMC2, "bmc-2": {"sim": {**UTC_BMC2["bmc-2"]["sim"], "resolution_s": 0.001}}}
DURATION_S = "45"
EVERY_S = "3"

CASES = {   # name: (device, its sim changes, the measure that regresses)
    "a-bmc-log-latency": ("bmc-1", {"log_latency_s": [0.9, 1.5], "firmware": "2.15.0"},
                          "latency.test_event.median"),
    "b-bmc-stepped-at-ntp-polls": ("bmc-1", {"steps": [
        {"at_s": float(t), "size_s": 0.4 if k % 2 == 0 else -0.4}
        for k, t in enumerate(range(10, 130, 8))]}, "breaks"),
    "d-datetime-late-and-jittery": ("bmc-1", {"sample_delay_s": 0.08, "jitter_s": 0.05},
                                    "bracket"),
    "e-pdu-agent-restarts": ("pdu-2", {"reboots": [float(t) for t in range(12, 130, 10)],
                                       "reboot_down_s": 2.0}, "breaks"),
    "f-cdu-alarms-logged-later": ("cdu-1", {"log_latency_s": [1.6, 2.4]},
                                  "latency.test_alarm.median"),
}

# A worse oscillator (bmc-2 38 -> 98 ppm) on a 1 s DateTime: the drift bounds of two short runs
# span most of the ±600 ppm prior (90 s at 8 reads/s: 480 ppm wide); compare names the length
# that decides it (about 13 min each at 8 reads/s). Run only when asked
# (RACKCLOCK_GALLERY_LONG=1): its own baseline, both at LONG_DURATION_S.
LONG_CASES = {"c-worse-oscillator": ("bmc-2", {"drift_ppm": 98.0}, "drift")}
LONG_DURATION_S = "900"
LONG_RATE = {"bmc-2": {"rate_hz": 8.0}}


def long_pair(root: Path) -> tuple[Path, Path]:
    """(baseline, candidate) of the long case, run at once."""
    out: dict[str, Path] = {}
    dev, sim, _ = LONG_CASES["c-worse-oscillator"]

    def go(tag: str, changes: dict) -> None:
        rack = root / f"long-{tag}.toml"
        rack.write_text(sim_rack_text([dev], name="gallery-long", seed=11, changes=changes))
        out[tag] = run_experiment("regression", rack, root / f"long-{tag}",
                                  {"duration_s": LONG_DURATION_S, "stimulus_every_s": "none"},
                                  quiet=True)
    base = {dev: {**LONG_RATE[dev], "sim": dict(BASE[dev]["sim"])}}
    cand = {dev: {**LONG_RATE[dev], "sim": {**BASE[dev]["sim"], **sim}}}
    ts = [threading.Thread(target=go, args=a) for a in (("baseline", base), ("candidate", cand))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out["baseline"], out["candidate"]


def rack_text(case: str | None) -> str:
    changes = {k: {"sim": dict(v["sim"])} for k, v in BASE.items()}
    if case is not None and case in CASES:
        dev, sim, _ = CASES[case]
        changes.setdefault(dev, {"sim": {}})["sim"].update(sim)
    return sim_rack_text(DEVICES, name="gallery", seed=11, changes=changes)


_runs: dict[str, Path] = {}
_lock = threading.Lock()
_slots = threading.Semaphore(4)     # runs at once: seven simulators starting together on 2
                                    # loaded cores took over a minute to start


def baseline_of(runs: dict[str, Path], case: str) -> Path:
    return runs["baseline"]


def gallery_runs(root: Path, cases: list[str] | None = None) -> dict[str, Path]:
    """{"baseline" | case: run folder}, run in parallel once per process."""
    with _lock:
        if _runs:
            return dict(_runs)
        errors: list[BaseException] = []

        def go(case: str | None) -> None:
            try:
                with _slots:
                    tag = case or "baseline"
                    rack = root / f"{tag}.toml"
                    rack.write_text(rack_text(case))
                    _runs[tag] = run_experiment("regression", rack, root / tag,
                                                {"duration_s": DURATION_S,
                                                 "stimulus_every_s": EVERY_S}, quiet=True)
            except BaseException as exc:       # reported below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(c,))
                   for c in [None, "unchanged", *(cases or CASES)]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            _runs.clear()
            raise errors[0]
        return dict(_runs)
