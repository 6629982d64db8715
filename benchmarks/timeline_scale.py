"""Timeline at scale: one million log lines over a dozen devices, parsed, mapped through each
clock's segments and ordered, and the same work on a slice through the per-line paths side by
side (Segment.to_reference in a loop; bench.analysis.timeline_order.order's per-entry lists) for the ratio.

Each device: a clock model (offset, drift, 1 s / 10 ms / 1 ms resolution; every third one
stepped back 750 ms half-way), calibrated by the estimator on 60 s of virtual reads; its log
lines are stamps of the model at random instants over that minute (the truth is checked: every
interval must hold its line's instant).

    .venv/bin/python benchmarks/timeline_scale.py [--lines 1000000] [--devices 12]
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.timeline_map import calibrations, map_stamps  # noqa: E402
from bench.analysis.timeline_order import Entry, order, order_arrays  # noqa: E402
from bench.model.logformats import Context, parse_log  # noqa: E402
from bench.sim.cascade import calibrate  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402

NS = 1_000_000_000
T0 = 1_796_000_000 * NS


def devices(n: int, rng) -> list[tuple[str, ClockModel]]:
    out = []
    for k in range(n):
        res = (1.0, 0.01, 0.001)[k % 3]
        steps = ((30.0, -0.75),) if k % 3 == 0 else ()
        m = ClockModel(ClockParams(offset_s=rng.uniform(-60, 60), drift_ppm=rng.uniform(-50, 50),
                                   resolution_s=res, steps=steps), T0, seed=k)
        out.append((f"dev-{k}", m))
    return out


def iso_lines(values_ns: np.ndarray, q: int) -> str:
    digits = {NS: 0, 10_000_000: 2, 1_000_000: 3}.get(q, 9)
    out = []
    for v in values_ns.tolist():
        s, f = divmod(v, NS)
        frac = f".{f // 10 ** (9 - digits):0{digits}d}" if digits else ""
        out.append(datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S")
                   + frac + "Z event")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--devices", type=int, default=12)
    ap.add_argument("--slice", type=int, default=20_000, help="lines for the per-line paths")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    devs = devices(a.devices, rng)
    t = time.perf_counter()
    cals = [calibrations([("bench", calibrate(m, T0, 60.0, seed=k, name=d), {})])
            for k, (d, m) in enumerate(devs)]
    t_cal = time.perf_counter() - t
    per = a.lines // a.devices
    truth, vals, qs, _keys = [], [], [], []
    for _d, m in devs:
        ti = np.sort(T0 + rng.integers(2 * NS, 58 * NS, per))
        truth.append(ti)
        vals.append(np.array([m.read_ns(int(x)) for x in ti], dtype=np.int64))
        qs.append(m.p.resolution_ns)
    # parse: ISO 8601 text of one device's lines (the per-line Python cost), scaled to all
    text = iso_lines(vals[0], qs[0])
    t = time.perf_counter()
    log = parse_log(text, "iso8601", Context())
    t_parse_one = time.perf_counter() - t
    assert len(log.stamps) == per and not log.unparsed
    # map: every device's lines through its calibrations (log order decides across the step)
    t = time.perf_counter()
    lo, hi, grp, st, q = [], [], [], [], []
    for k, c in enumerate(cals):
        mp = map_stamps(c, vals[k], qs[k], np.arange(per), not_after_ns=T0 + 3600 * NS)
        lo.append(mp.lo_ns), hi.append(mp.hi_ns)
        grp.append(np.where(mp.status == 3, -1, k * 64 + mp.calibration))
        st.append(vals[k]), q.append(np.full(per, qs[k]))
    t_map = time.perf_counter() - t
    lo, hi = np.concatenate(lo), np.concatenate(hi)
    tt = np.concatenate(truth)
    missed = int(np.sum((tt < lo) | (tt > hi)))
    t = time.perf_counter()
    perm, block, unordered = order_arrays(lo, hi, np.concatenate(grp), np.concatenate(st),
                                          np.concatenate(q))
    t_order = time.perf_counter() - t
    # the per-line paths on a slice, side by side
    n = min(a.slice, per)
    seg = cals[1][0].segment
    t = time.perf_counter()
    for v in vals[1][:n].tolist():
        seg.to_reference(v, qs[1])
    t_scalar = time.perf_counter() - t
    t = time.perf_counter()
    map_stamps(cals[1], vals[1][:n], qs[1], np.arange(n))
    t_vec = time.perf_counter() - t
    m_ord = min(n, 5000)
    ents = [Entry("d", "p", "", int(x), int(y)) for x, y in zip(lo[:m_ord], hi[:m_ord])]
    t = time.perf_counter()
    order(ents)
    t_list = time.perf_counter() - t
    t = time.perf_counter()
    order_arrays(lo[:m_ord], hi[:m_ord])
    t_arr = time.perf_counter() - t
    total = per * a.devices
    print(f"lines: {total:,} over {a.devices} devices ({sum(len(c) for c in cals)} segments); "
          f"calibration fits {t_cal:.2f} s")
    print(f"parse ISO 8601: {per:,} lines in {t_parse_one:.2f} s "
          f"({t_parse_one / per * 1e6:.2f} µs/line; all {total:,}: ~{t_parse_one / per * total:.1f} s)")
    print(f"map: {t_map:.2f} s; order: {t_order:.2f} s; map + order {t_map + t_order:.2f} s; "
          f"intervals missing their instant: {missed}; blocks {int(block[-1]) + 1:,}; "
          f"entries unordered against another: {int(np.sum(unordered > 0)):,}")
    print(f"per-line mapping (Segment.to_reference loop) on {n:,} lines: {t_scalar:.3f} s vs "
          f"vectorised {t_vec:.3f} s: {t_scalar / t_vec:.0f}x")
    print(f"per-entry order() lists on {m_ord:,} entries: {t_list:.3f} s vs order_arrays "
          f"{t_arr:.4f} s: {t_list / max(t_arr, 1e-9):.0f}x")
    return 0 if missed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
