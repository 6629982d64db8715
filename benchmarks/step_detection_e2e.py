"""Step detection end to end: Redfish BMC emulators with a 1 s `DateTime` read at 2 Hz by the real
runner, each stepped by step faults (bench/sim/faults.py) the emulator fires on its own progress
(after so many clock samples, then a random part of a second so the step's tick phase is uniform),
+d then −d then +d ~20 s apart, d from 10 ms to 1 s. The delay from each true step (truth.json) to
the end of the first break window reported at or after it, in probe intervals (0.5 s), per size
and sign (issue 28 item 3; the offline figures in virtual time: benchmarks/step_detection.py).

    nice .venv/bin/python benchmarks/step_detection_e2e.py [--runs 2] [--devices 20] [--duration 80]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path

import numpy as np
import tomli_w

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run.experiment import run_experiment  # noqa: E402
from bench.sim.serve import DEFAULT_RACK  # noqa: E402

NS = 1_000_000_000
SIZES_MS = (10, 30, 100, 300, 1000)
RATE_HZ = 2.0
FIRST_STEP_SAMPLES = 72      # ~18 s of reads before the first step (a probe is 2 reads)
STEP_EVERY_SAMPLES = 80      # ... and ~20 s between steps: the p99 target is 15 s


def rack(devices: int, seed: int) -> dict:
    """`devices` BMCs cut from the default rack's bmc-3 (a 1 s DateTime), no scheduled steps; the
    i-th steps by ±SIZES_MS[i % 5] (sign alternating per device), three times."""
    data = tomllib.loads(DEFAULT_RACK.read_text())
    tmpl = data["devices"]["bmc-3"]
    rng = np.random.default_rng(seed)
    data["rack"].update(name="step-e2e", seed=seed)
    data["devices"] = {}
    for i in range(devices):
        d = json.loads(json.dumps(tmpl))
        size = SIZES_MS[i % len(SIZES_MS)] / 1000 * (1 if (i // len(SIZES_MS)) % 2 == 0 else -1)
        sim = d["sim"]
        sim.pop("steps", None)
        sim.update(offset_s=float(rng.uniform(-5, 5)), drift_ppm=float(rng.uniform(-100, 100)))
        sim["faults"] = [{"kind": "step", "size_s": size * (1 if k % 2 == 0 else -1),
                          "after_samples": FIRST_STEP_SAMPLES + k * STEP_EVERY_SAMPLES
                          + int(rng.integers(0, 16)), "in_s": float(rng.uniform(0, 1))}
                         for k in range(3)]
        data["devices"][f"bmc-s{i:02d}"] = d
    return data


def delays(folder: Path) -> list[tuple[int, float | None]]:
    """(true step size in ms, delay in probe intervals or None when never found) per true step
    with a later step or the run's end at least 15 s after it."""
    summary = json.loads((folder / "summary.json").read_text())
    truth = json.loads((folder / "truth.json").read_text())
    out = []
    for name, dev in summary["devices"].items():
        clock = dev["clocks"].get("datetime")
        tc = truth["devices"].get(name, {}).get("clocks", {}).get("datetime")
        if not clock or not tc or not clock.get("segments"):
            continue
        end = clock["segments"][-1]["end_ns"]
        steps = [b for b in tc["breaks"] if b["kind"] == "step"]
        for k, st in enumerate(steps):
            t = st["t_ns"]
            horizon = min([end] + [s["t_ns"] for s in steps[k + 1:]])
            if horizon - t < 15 * NS:
                continue
            later = [b for b in clock["breaks"] if b["before_ns"] >= t and b["after_ns"] < horizon]
            d = (later[0]["before_ns"] - t) * RATE_HZ / NS if later else None
            out.append((round(st["size_ns"] / 1e6), d))
    return out


def _cell(x, k: float = 1) -> str:
    return "—" if x is None else ("never" if np.isinf(x) else f"{x / k:.1f}")


def table(found: dict[int, list]) -> str:
    out = ["| step | found | delay, probe intervals: median | p99 | p99, s |",
           "|---|---|---|---|---|"]
    for ms in SIZES_MS:
        for sign in (1, -1):
            res = found.get(sign * ms, [])
            d = sorted(x for x in res if x is not None)
            # an unfound step counts as never (infinite) in the median and p99
            full = d + [np.inf] * (len(res) - len(d))
            med = np.percentile(full, 50, method="higher") if full else None
            p99 = np.percentile(full, 99, method="higher") if full else None
            out.append(f"| {sign * ms:+d} ms | {len(d)}/{len(res)} | {_cell(med)} | {_cell(p99)} | "
                       f"{_cell(p99, RATE_HZ)} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--devices", type=int, default=20)
    ap.add_argument("--duration", type=float, default=80.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the run folders here")
    a = ap.parse_args(argv)
    found: dict[int, list] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        base = a.keep or Path(tmp)
        for r in range(a.runs):
            rf = Path(tmp) / f"rack{r}.toml"
            rf.write_text(tomli_w.dumps(rack(a.devices, a.seed + r)))
            folder = run_experiment("clock_offset", rf, base / f"run{r}",
                                    {"duration_s": str(a.duration), "stimulus_every_s": "none"},
                                    quiet=True)
            for size, d in delays(Path(folder)):
                found[size].append(d)
    print(f"{a.runs} runs of {a.devices} BMCs, {a.duration:g} s each, 1 s DateTime at "
          f"{RATE_HZ:g} Hz; delay to the end of the first break window after the step")
    print(table(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
