"""Speed of bench/stability against allantools, side by side on the same random-walk phase series.

MTIE: ours (O(N) per tau) against allantools.mtie (O(N·m) per tau), octave taus, results checked
equal. At 10^6 points allantools' full octave set takes minutes, so by default it is timed on
taus up to 2^SHORT_K there and its full-set time is extrapolated from its measured cost per
window element (N−m)·(m+1), which is what its rolling max/min touches; `--full` times it instead.
The deviations (ADEV, OADEV, MDEV, TDEV, TIE rms) are allantools' own in bench/stability, timed
through our wrapper against a direct call (the ratio shows the wrapper costs nothing).
Every MTIE timing is repeated (`--repeats`, default 3; `--full-repeats` for allantools' full set
at 10^6, default 1: minutes each) and printed as median [min–max].

    .venv/bin/python benchmarks/stability_speed.py [--full] [--repeats 3] [--full-repeats 1]
        [--points 100000,1000000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import allantools  # noqa: E402
from spread import spread  # noqa: E402

from bench.analysis.stability import _taus, deviation, mtie  # noqa: E402

SHORT_K = 14


def _time(f, *a, **k):
    t = time.perf_counter()
    r = f(*a, **k)
    return time.perf_counter() - t, r


def _times(repeats: int, f, *a, **k) -> tuple[list[float], object]:
    """`repeats` timed calls: their times, and the last result."""
    ts, r = [], None
    for _ in range(repeats):
        t, r = _time(f, *a, **k)
        ts.append(t)
    return ts, r


def _ratio(num: list[float], den: list[float]) -> list[float]:
    """Ratios of the i-th timings (taken side by side), as many as the shorter list."""
    return [x / y for x, y in zip(num, den)]


def mtie_row(n: int, full: bool, repeats: int = 3, full_repeats: int = 1) -> dict:
    x = np.cumsum(np.random.default_rng(n).normal(size=n)) * 1e-9
    m_all, tau_all = _taus(n, 1.0, None)
    t_ours, (t1, d1) = _times(repeats, mtie, x)
    row = {"points": n, "taus": len(tau_all), "ours_s": spread(t_ours, "{:.3f}"),
           "load": round(os.getloadavg()[0], 2)}
    if full or n <= 100_000:
        t_at, (t2, d2, _, _) = _times(repeats if n <= 100_000 else full_repeats,
                                      allantools.mtie, x, taus=tau_all)
        assert np.array_equal(t1, t2) and np.array_equal(d1, d2)
        row.update(allantools_s=spread(t_at, "{:.2f}"), measured="all taus", equal=True,
                   ratio=spread(_ratio(t_at, t_ours), "{:.1f}"))
    else:
        short = tau_all[m_all <= 2 ** SHORT_K]
        m_s = m_all[m_all <= 2 ** SHORT_K]
        t_at, t_os = [], []
        for _ in range(repeats):            # side by side, alternating
            t, (t2, d2, _, _) = _time(allantools.mtie, x, taus=short)
            t_at.append(t)
            t, (t3, d3) = _time(mtie, x, taus=short)
            t_os.append(t)
            assert np.array_equal(t2, t3) and np.array_equal(d2, d3)
        elements = (float(np.sum((n - m_all) * (m_all + 1.0)))
                    / float(np.sum((n - m_s) * (m_s + 1.0))))
        est = [t * elements for t in t_at]
        row.update(allantools_short_s=spread(t_at, "{:.2f}"), ours_short_s=spread(t_os, "{:.3f}"),
                   short_ratio=spread(_ratio(t_at, t_os), "{:.1f}"),
                   allantools_extrapolated_s=spread(est, "{:.1f}"),
                   extrapolated_ratio=spread([e / statistics.median(t_ours) for e in est],
                                             "{:.0f}"),
                   measured=f"taus <= 2^{SHORT_K} side by side; the full set extrapolated from "
                            "the cost per window element, a lower bound (the cost per element "
                            "grows once windows outgrow the cache): --full measures it", equal=True)
    row["mtie_equal"] = True
    return row


def _warm_times(f, *a, repeat: int = 3, **k) -> list[float]:
    """`repeat` timed calls after one untimed warm-up (first calls pay for imports and caches,
    which would favour whichever side ran second)."""
    f(*a, **k)
    return [_time(f, *a, **k)[0] for _ in range(repeat)]


def deviation_row(n: int, repeats: int = 3) -> dict:
    y = np.cumsum(np.random.default_rng(n + 1).normal(size=n)) * 1e-9
    row = {"points": n}
    for name in ("adev", "oadev", "mdev", "tdev", "tierms"):
        r = 1 if name == "tierms" and n > 100_000 else repeats
        t_w = _warm_times(deviation, name, y, repeat=r)
        t_d = _warm_times(getattr(allantools, name), y, taus="octave", repeat=r)
        row[name] = {"ours_s": spread(t_w, "{:.3f}"), "allantools_s": spread(t_d, "{:.3f}"),
                     "ratio": spread(_ratio(t_d, t_w), "{:.2f}")}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="time allantools' MTIE on all taus at 10^6")
    ap.add_argument("--repeats", type=int, default=3, help="timings per MTIE figure")
    ap.add_argument("--full-repeats", type=int, default=1,
                    help="timings of allantools' full MTIE at 10^6 (minutes each)")
    ap.add_argument("--points", default="100000,1000000",
                    help="series lengths, comma-separated (the suite's smoke run: small ones)")
    a = ap.parse_args(argv)
    points = [int(x) for x in a.points.split(",")]
    for n in points:
        print("mtie", mtie_row(n, a.full, a.repeats, a.full_repeats), flush=True)
    for n in points:
        print("deviations", deviation_row(n, a.repeats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
