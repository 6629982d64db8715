"""Step detection on a 1 s clock read at 2 Hz, in virtual time through the real probe schedule
(bench/sim/probing.py) and the real estimator: forward and backward steps of 10 ms to 1 s, the
delay from the step to the end of the first break window at or after it, in probe intervals, and
the published offset width beside it (issue 28 item 3). The same figures end to end through the
emulators come from `--emulators` (a rack of stepped BMCs, one run).

    nice .venv/bin/python benchmarks/step_detection.py [--seeds 30]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402
from bench.sim.probing import read_like_runner  # noqa: E402

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
SIZES_MS = (10, 30, 100, 300, 1000)
RATE_HZ = 2.0
STEP_AT_S = 30.0


def one(seed: int, size_s: float, reads: int = 160) -> tuple[float | None, float]:
    """(delay in probe intervals or None when never found, published width at the end, ms)."""
    rng = np.random.default_rng(seed)
    p = ClockParams(offset_s=float(rng.uniform(-5, 5)), drift_ppm=float(rng.uniform(-100, 100)),
                    resolution_s=1.0, steps=((STEP_AT_S, size_s),))
    m = ClockModel(p, T0, seed)
    s, e, v, _, _ = read_like_runner(m, reads, RATE_HZ, NS, rng)
    fit = fit_clock(s, e, v, NS)
    t = T0 + int(STEP_AT_S * NS)
    later = [b for b in fit.breaks if b.before_ns >= t]
    delay = (later[0].before_ns - t) * RATE_HZ / NS if later else None
    return delay, fit.segments[-1].offset_ns.width / 1e6


def table(seeds: int) -> str:
    out = ["| step | found | delay, probe intervals: median | p99 | width ms (median) |",
           "|---|---|---|---|---|"]
    for ms in SIZES_MS:
        for sign in (1, -1):
            res = [one(k, sign * ms / 1000) for k in range(seeds)]
            d = [x for x, _ in res if x is not None]
            med = f"{np.median(d):.1f}" if d else "—"
            p99 = f"{np.percentile(d, 99):.1f}" if d else "—"
            out.append(f"| {sign * ms:+d} ms | {len(d)}/{seeds} | {med} | {p99} | "
                       f"{np.median([w for _, w in res]):.2f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    a = ap.parse_args(argv)
    print(f"paired edge reads (a flank and a bisecting read at every pinned edge), "
          f"{a.seeds} seeds per row")
    print(table(a.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
