"""How long a run of the default simulated rack needs until every 1 s clock's drift is decided
to a width (issue 45 item 7): `rackclock run --until-decided CLOCKS --decided-ppm P`, run for
real, beside what a plain run of `--predict` seconds said it would need (summary.json's
`drift_decided_after_s`, bench.model.decided, recomputed at P).

    .venv/bin/python benchmarks/until_decided.py [--decided-ppm 60] [--max-duration 1800]
        [--predict 60] [--devices bmc-1,pdu-2] [--clocks pdu-2.sysuptime]

Prints one row per clock waited for (the plain run's estimate, when the watch first saw it
decided, its drift in the final summary) and the line "probing ran S s (...): K of N decided".
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from racks import sim_rack_text  # noqa: E402
from spread import temp_dir  # noqa: E402

from bench.model.decided import clock_decided, mean_drift  # noqa: E402
from bench.model.rundata import load_run  # noqa: E402

ONE_S = ("bmc-1.datetime", "bmc-2.datetime", "bmc-3.datetime", "cdu-1.rtc", "cdu-2.rtc",
         "cdu-rf-1.datetime", "pdu-1.hrsystemdate", "shelf-1.datetime", "ipmi-1.sel",
         "ipmi-2.sel_init", "hmc-1.datetime", "k8s-1.apiserver")   # the default rack's 1 s clocks


def rackclock_run(out: Path, rack: Path | None, *args: str) -> Path:
    """`rackclock run ... --quiet`; its run folder."""
    cmd = [sys.executable, "-m", "bench.cli", "run", "--out", str(out), "--quiet", *args]
    cmd += ["--rack", str(rack)] if rack else []
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    if not last.startswith("run folder: "):
        sys.exit(f"rackclock run failed ({p.returncode}): {p.stderr[-2000:]}")
    return Path(last.removeprefix("run folder: "))


def predicted(path: Path, clocks: list[str], ppm: float) -> dict[str, float | None]:
    """Each clock's estimate of the run length it needs (None: decided already; nan: no fit)."""
    out: dict[str, float | None] = {}
    s = load_run(path).summary
    for name in clocks:
        dev, _, clock = name.partition(".")
        c = s.devices[dev].clocks.get(clock) if dev in s.devices else None
        x = clock_decided(c.segments, c.assumptions.drift_prior_ppm, ppm) \
            if c is not None and c.assumptions is not None else None
        out[name] = x["drift_decided_after_s"] if x else float("nan")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decided-ppm", type=float, default=60.0)
    ap.add_argument("--max-duration", type=float, default=1800.0)
    ap.add_argument("--predict", type=float, default=60.0,
                    help="a plain run of this many seconds first, for the estimates (0: none)")
    ap.add_argument("--devices", default=None, help="devices of the default rack (default: all)")
    ap.add_argument("--clocks", default=None, help="DEVICE.CLOCK,... (default: the 1 s clocks)")
    ap.add_argument("--out", type=Path, default=None, help="keep the run folders here")
    a = ap.parse_args()
    out = a.out or temp_dir("until-decided-")
    rack = None
    devices = a.devices.split(",") if a.devices else None
    if devices:
        rack = out / "rack.toml"
        rack.write_text(sim_rack_text(devices))
    clocks = a.clocks.split(",") if a.clocks else [
        c for c in ONE_S if devices is None or c.split(".")[0] in devices]
    guess = predicted(rackclock_run(out, rack, "--duration", f"{a.predict:g}"), clocks,
                      a.decided_ppm) if a.predict else {}
    path = rackclock_run(out, rack, "--until-decided", ",".join(clocks), "--decided-ppm",
                         f"{a.decided_ppm:g}", "--max-duration", f"{a.max_duration:g}")
    run = load_run(path)
    u = run.manifest.raw["until_decided"]
    seen = {f"{w['device']}.{w['clock']}": w for w in u["clocks"]}
    probed = (run.manifest.raw["probed_until_ns"] - run.manifest.raw["started_ns"]) / 1e9
    print(f"drift decided at <= {a.decided_ppm:g} ppm; estimates from a {a.predict:g} s run")
    print(f"{'clock':<20} {'estimate s':>10} {'seen decided after s':>21} {'final mean drift ppm':>22}"
          f" {'width':>7}")
    k = 0
    for name in clocks:
        dev, _, clock = name.partition(".")
        c = run.summary.devices[dev].clocks.get(clock) if dev in run.summary.devices else None
        d = mean_drift(c.segments[-1]) if c is not None and c.segments else None
        ok = d is not None and d[1] - d[0] <= a.decided_ppm
        k += ok
        g = guess.get(name, float("nan"))
        w = seen.get(name, {}).get("decided_after_s")
        print(f"{name:<20} {'decided' if g is None else f'{g:.0f}':>10} "
              f"{'—' if w is None else f'{w:.1f}':>21} "
              f"{'—' if d is None else f'[{d[0]:.1f}, {d[1]:.1f}]':>22} "
              f"{'—' if d is None else f'{d[1] - d[0]:.1f}':>7}")
    why = "all decided" if u["all_decided_after_s"] is not None else "the ceiling"
    print(f"probing ran {probed:.1f} s ({why}; ceiling {a.max_duration:g} s): {k} of "
          f"{len(clocks)} decided")
    print(f"run folder: {path}" + ("" if a.out else " (removed when the script ends)"))


if __name__ == "__main__":
    main()
