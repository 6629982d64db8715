"""net-snmp's hrSystemDate through a whole run: the proven offset-bound width at the end, with the
lag the driver declares and, refitted from the same reads, without it (issue 29 item 6, issue
28's lagging tick).

Starts `snmpd` on loopback (v2c), runs `clock_offset` against it for --duration seconds at 2 Hz
(the runner's aiming, a CLOCK_REALTIME reference with allowance 0: the agent's clock is the
reference itself, so the truth is offset 0), then per run prints the last segment's width at its
epoch, whether it and every band point hold 0, and the lag the reads show (reads that began after
a whole second and still showed the one before: how far past it they began).

    .venv/bin/python benchmarks/snmpd_hrsystemdate.py [--runs 1] [--duration 60]
    .venv/bin/python benchmarks/snmpd_hrsystemdate.py --virtual [--seeds 40]

`--virtual`: the schedule alone, side by side, in virtual time (bench.sim.probing, the runner's
mirror): a 1 s clock declared 100 ms at a random edge phase, 60 s at 2 Hz, aimed with the
declared tick (before issue 29) and with the tick the values prove; the final width's median,
90th percentile and largest over the seeds.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.model.rundata import load_run  # noqa: E402
from bench.model.summary import band  # noqa: E402
from bench.run.experiment import run_experiment  # noqa: E402
from drivers.snmp_pdu import HR_DATE_LAG_NS  # noqa: E402
from tests.test_snmp_pdu_snmpd import start_snmpd  # noqa: E402

NS = 1_000_000_000
ENV = "RACKCLOCK_BENCH_SNMPD_COMMUNITY"


def one_run(tmp: Path, duration_s: int) -> Path:
    agent, port = start_snmpd(tmp)
    os.environ[ENV] = "rc-snmpd-ro"
    (tmp / "rack.toml").write_text(
        f'[rack]\nname = "snmpd"\nreference = "realtime"\nsimulated = false\n\n'
        f'[devices.snmpd]\nplane = "pdu"\ndriver = "snmp_pdu"\n'
        f'address = "udp://127.0.0.1:{port}"\nversion = "2c"\ncommunity_env = "{ENV}"\n'
        f'rate_hz = 2.0\n')
    time.sleep(1.0)                        # the agent binds its port (the runner retries anyway)
    try:
        return run_experiment("clock_offset", tmp / "rack.toml", tmp / "runs",
                              {"duration_s": str(duration_s), "stimulus_every_s": "none"},
                              quiet=True, allowance_ns=0)
    finally:
        agent.terminate()
        agent.wait(10)


def report(path: Path) -> str:
    run = load_run(path)
    s, e, v = run.clock_reads("snmpd", "hrsystemdate")[:3]
    late = [int(si - (vi + NS)) for si, vi in zip(s, v) if si > vi + NS]
    out = [f"{len(s)} reads, bracket median {np.median(e - s) / 1e3:.0f} us, shown late by up to "
           f"{max(late, default=0) / 1e6:.2f} ms ({len(late)} reads)"]
    for lag in (HR_DATE_LAG_NS, 0):
        fit = fit_clock(s, e, v, 100_000_000, lag_ns=lag)
        seg = fit.segments[-1]
        o, b = seg.offset_ns, band(seg, 200)
        held = all(lo <= 0 <= hi for lo, hi in zip(b.lo, b.hi))
        out.append(f"  lag {lag / 1e6:4.1f} ms: {fit.verdict:9s} width {(o.hi - o.lo) / 1e6:6.2f} ms "
                   f"[{o.lo / 1e6:+.2f}, {o.hi / 1e6:+.2f}] ms, truth 0 at epoch "
                   f"{'in' if o.lo <= 0 <= o.hi else 'OUT'}, at every band point "
                   f"{'in' if held else 'OUT'}; segments {len(fit.segments)}, "
                   f"breaks {len(fit.breaks)}")
    return "\n".join(out)


def virtual(seeds: int) -> None:
    from bench.sim.clock_model import ClockModel, ClockParams
    from bench.sim.probing import read_like_runner
    widths: dict[bool, list] = {True: [], False: []}
    for seed in range(seeds):
        for declared in (True, False):
            rng = np.random.default_rng(seed)
            m = ClockModel(ClockParams(offset_s=float(rng.uniform(0, 1)), resolution_s=1.0,
                                       drift_ppm=float(rng.uniform(-20, 20))),
                           t0_ns=1_800_000_000 * NS, seed=seed)
            s, e, v, _, _ = read_like_runner(m, 120, 2.0, 100_000_000, rng, aim_declared=declared)
            o = fit_clock(s, e, v, 100_000_000).segments[-1].offset_ns
            widths[declared].append((o.hi - o.lo) / 1e6)
    for declared, w in widths.items():
        print(f"aimed with the {'declared 100 ms' if declared else 'proven 1 s  '} tick: width "
              f"median {np.median(w):.2f} ms, p90 {np.percentile(w, 90):.2f} ms, "
              f"max {max(w):.2f} ms, over 20 ms in {sum(x > 20 for x in w)} of {len(w)} seeds")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--virtual", action="store_true")
    ap.add_argument("--seeds", type=int, default=40)
    a = ap.parse_args()
    if a.virtual:
        return virtual(a.seeds)
    for k in range(a.runs):
        with tempfile.TemporaryDirectory() as tmp:
            path = one_run(Path(tmp), a.duration)
            print(f"run {k + 1}: " + report(path), flush=True)


if __name__ == "__main__":
    main()
