"""Hostile devices beside a clean one, side by side in one run: clock read count, offset width
and errors per device, the bench's peak memory, and each server's session counts.

    .venv/bin/python benchmarks/hostile_devices.py [--duration 30] [--only clean,slowlog]

Every device is its own server process on loopback (tests/hostile.py) whose clock is
CLOCK_REALTIME + offset_s, so each proven offset bound is checked against the truth here.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile import HostileDevice  # noqa: E402

PROFILES = {
    "clean": ("redfish", {"offset_s": 2.5}),
    "slowlog": ("redfish", {"offset_s": -1.25, "entries": 2000, "page_delay_s": 0.15}),
    "bigbody": ("redfish", {"offset_s": 0.75, "big_every": 5, "big_bytes": 100_000_000}),
    "endless": ("redfish", {"offset_s": 0.4, "endless_every": 7}),
    "badyear": ("redfish", {"offset_s": -3.0, "bad_year_every": 4, "bad_year": 9999,
                            "entries": 5, "bad_created": "0001-01-01T00:00:00+00:00"}),
    "relogin": ("redfish", {"offset_s": 1.0, "unauthorized_every": 10}),
    "modbus-clean": ("modbus", {"offset_s": 5.0}),
    "modbus-bad": ("modbus", {"offset_s": -7.0, "wrong_function_every": 3,
                              "extra_registers_every": 5}),
}


def run(names: list[str], duration_s: float, workdir: Path, bench_root: Path = ROOT) -> dict:
    """One run of the bench (its own process, from `bench_root`: another checkout measures
    another version) against the named hostile devices."""
    env = {**os.environ, "HOSTILE_BMC_PASSWORD": "hostile-pw-31d4", "PYTHONPATH": str(bench_root)}
    os.environ["HOSTILE_BMC_PASSWORD"] = env["HOSTILE_BMC_PASSWORD"]
    with ExitStack() as stack:
        devs = {n: stack.enter_context(HostileDevice(*PROFILES[n])) for n in names}
        rack = {"rack": {"name": "hostile"},
                "devices": {n: d.device(n) for n, d in devs.items()}}
        (workdir / "rack.toml").write_text(tomli_w.dumps(rack))
        with open(workdir / "out.txt", "w") as fo, open(workdir / "err.txt", "w") as fe:
            proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack",
                                     str(workdir / "rack.toml"), "--reference-allowance", "1ms",
                                     "--duration", str(duration_s), "--out",
                                     str(workdir / "runs"), "--quiet"], env=env, cwd=bench_root,
                                    stdout=fo, stderr=fe)
            _, status, rusage = os.wait4(proc.pid, 0)     # its own peak memory, not ours
            proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = (workdir / "out.txt").read_text(), (workdir / "err.txt").read_text()
    folder = Path(out.strip().splitlines()[-1].removeprefix("run folder: "))
    summary = json.loads((folder / "summary.json").read_text())
    result = {"folder": str(folder), "exit": proc.returncode, "stderr": err[-2000:],
              "peak_rss_mb": rusage.ru_maxrss / 1024, "devices": {}}
    for n, d in devs.items():
        s = summary["devices"][n]
        clocks = list(s["clocks"].values())
        c = clocks[0] if clocks else {}
        segs = c.get("segments") or []
        off = segs[-1]["offset_ns"] if segs else None
        truth = PROFILES[n][1]["offset_s"] * 1e9
        result["devices"][n] = {
            "reads": c.get("reads", 0), "errors": s.get("errors", {}),
            "width_ms": (off["hi"] - off["lo"]) / 1e6 if off else None,
            "truth_inside": (off["lo"] <= truth <= off["hi"]) if off else None,
            "server": d.counts}
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--only", default=",".join(PROFILES))
    ap.add_argument("--bench-root", type=Path, default=ROOT,
                    help="checkout whose bench is measured (e.g. `git archive` of an older commit)")
    a = ap.parse_args()
    names = a.only.split(",")
    with tempfile.TemporaryDirectory(prefix="rackclock-hostile-bench-") as tmp:
        r = run(names, a.duration, Path(tmp), a.bench_root.resolve())
    print(f"{'device':<14}{'reads':>6}  {'width':>10}  truth   errors / server counts")
    for n, d in r["devices"].items():
        w = f"{d['width_ms']:.2f} ms" if d["width_ms"] is not None else "-"
        print(f"{n:<14}{d['reads']:>6}  {w:>10}  {str(d['truth_inside']):<6}  {d['errors']} "
              f"{d['server']}")
    print(f"exit status {r['exit']}; bench peak RSS {r.get('peak_rss_mb')} MB")


if __name__ == "__main__":
    main()
