"""Tick-edge probing against random dithered probing, in virtual time.

A 1 s clock (offset, drift ±100 ppm drawn at random) read through brackets of 0.8 ms plus an
exponential 0.3 ms, the device sampling anywhere in the bracket. Edge-aimed: each read is sent at
bench/probe_schedule's instant (at least 0.2 s after the last answer). Random: once a second with
±0.5 s of dither. Reads-to-target is the first read count at which the offset bound's width is at
most 1.5 times the narrowest bracket seen; the random schedule is bisected over prefixes of a long
series (its widths shrink with more reads), the edge schedule is followed read by read.

    .venv/bin/python benchmarks/probe_mc.py [--devices N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.analysis.probe_schedule import next_probe_ns  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
TARGET = 1.5
GAP = 200_000_000


def _device(seed: int):
    rng = np.random.default_rng(seed)
    p = ClockParams(offset_s=float(rng.uniform(-5, 5)), drift_ppm=float(rng.uniform(-100, 100)),
                    resolution_s=1.0)
    return rng, ClockModel(p, T0, seed)


def _read(rng, m, t):
    e = t + 800_000 + int(rng.exponential(300_000))
    return t, e, m.read_ns(t + int(rng.uniform() * (e - t)))


def _width(S, E, V, absolute=False):
    """The line model's offset width at the epoch: what aiming pins (the published bound is the
    wider two-sided hull, bench.analysis.estimate)."""
    sg = fit_clock(S, E, V, NS, publish=False).segments[-1]
    return sg.offset_at(sg.epoch_ns).width / (1e6 if absolute else min(np.subtract(E, S)))


def edge_run(seed: int, n_max: int = 60):
    rng, m = _device(seed)
    S, E, V, now, widths = [], [], [], T0, []
    for _ in range(n_max):
        s, e, v = _read(rng, m, next_probe_ns(S, E, V, NS, now, 1_000_000, GAP))
        S.append(s)
        E.append(e)
        V.append(v)
        now = e
        widths.append(_width(S, E, V))
        if len(S) == 30:
            ms30 = _width(S, E, V, absolute=True)
    w = np.array(widths)
    hit = np.flatnonzero(w <= TARGET)
    return (int(hit[0]) + 1 if len(hit) else None), w, ms30


def random_run(seed: int, n_max: int = 3000):
    rng, m = _device(seed)
    t = T0 + np.cumsum(rng.uniform(0.5, 1.5, n_max) * NS).astype(np.int64)
    S, E, V = map(list, zip(*(_read(rng, m, int(x)) for x in t)))
    at = {n: _width(S[:n], E[:n], V[:n]) for n in (30, 100, 300, 1000, n_max)}
    at["ms30"] = _width(S[:30], E[:30], V[:30], absolute=True)
    if at[n_max] > TARGET:
        return None, at
    lo, hi = 1, n_max
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _width(S[:mid], E[:mid], V[:mid]) <= TARGET:
            hi = mid
        else:
            lo = mid
    return hi, at


def run(devices: int = 60) -> dict:
    t = time.perf_counter()
    edge = [edge_run(1000 + k) for k in range(devices)]
    rand = [random_run(1000 + k) for k in range(devices // 2)]
    e_n = np.array([n if n is not None else 10 ** 9 for n, _, _ in edge], dtype=float)
    r_n = np.array([n if n is not None else 10 ** 9 for n, _ in rand], dtype=float)
    ew = np.array([w for _, w, _ in edge])
    return {
        "devices_edge": devices, "devices_random": devices // 2,
        "edge_reads_to_target_median": float(np.median(e_n)) if np.median(e_n) < 10 ** 9
        else "> 60",
        "edge_reads_to_target_p90": float(np.percentile(e_n, 90)),
        "edge_within_30_reads": float(np.mean(e_n <= 30)),
        "edge_width_over_min_bracket_after_30_median": round(float(np.median(ew[:, 29])), 3),
        "edge_width_ms_after_30_median": round(float(np.median([x for _, _, x in edge])), 3),
        "random_width_ms_after_30_median": round(float(np.median([a["ms30"] for _, a in rand])), 2),
        "random_reads_to_target_median": (float(np.median(r_n)) if np.median(r_n) < 10 ** 9
                                          else "> 3000"),
        "random_within_30_reads": float(np.mean(r_n <= 30)),
        "random_width_over_min_bracket_median": {
            n: round(float(np.median([a[n] for _, a in rand])), 2)
            for n in rand[0][1] if n != "ms30"},
        "seconds": round(time.perf_counter() - t, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=60)
    a = ap.parse_args(argv)
    for k, v in run(a.devices).items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
