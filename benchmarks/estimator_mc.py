"""Virtual-time Monte Carlo of the interval estimator (and the chrony-style comparator).

Thousands of simulated device clocks (bench/sim/clock_model.py's ClockModel, a pure function of the
reference instant: no sockets, no sleeping) drawn from wide ranges: resolution 1 ns to 1 s, drift
±100 ppm, frequency wander, read jitter, loopback-like (0.2–1 ms) and sideband-like (20–40 ms)
brackets, steps, counter reboots and wraps, the odd corrupted read, and drivers that declare a
finer resolution than their clock delivers. Each is read at a dithered
rate over 5 min to 1 h and fitted; every reported segment is checked against the truth.

"The model held" for a segment means: no true break (step, reboot, wrap) inside its span, no
undetected corrupted read inside it, and the true frequency stayed within the wander allowance
given to the estimator. Coverage counts only those; the others are reported apart.

    .venv/bin/python benchmarks/estimator_mc.py [--devices N] [--workers 2] [--seed S]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.chrony_style import fit_chrony  # noqa: E402
from bench.analysis.estimate import fit_clock, wander_allowance_ns_per_s  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
RESOLUTIONS_S = [1e-9, 1e-6, 1e-3, 0.01, 0.1, 1.0]
WANDER_K = 5.0           # allowance = K sigma of the frequency walk over the run


def draw(rng: np.random.Generator, i: int) -> dict:
    """One simulated device: its clock parameters, read schedule and brackets."""
    counter = rng.uniform() < 0.3
    q = float(rng.choice(RESOLUTIONS_S))
    duration = float(rng.uniform(300, 3600))
    n = int(rng.integers(40, 400))
    wander = float(10 ** rng.uniform(-2.5, -0.3)) if rng.uniform() < 0.4 else 0.0
    sideband = rng.uniform() < 0.3
    steps, reboots, wrap, outlier = (), (), 0, False
    u = rng.uniform()
    if not counter and u < 0.2:
        size = float(10 ** rng.uniform(-6, 1)) * rng.choice([-1, 1])
        steps = ((float(rng.uniform(0.2, 0.8) * duration), size),)
    elif counter and u < 0.15:
        reboots = (float(rng.uniform(0.2, 0.8) * duration),)
    elif counter and u < 0.25:
        q_ns = max(1, round(q * NS))
        top = min(40, 61 - int(math.log2(q_ns)))        # the period must fit in int64 ns
        wrap = 1 << int(rng.integers(8, top))
    elif u > 0.93:
        outlier = True
    uptime = float(rng.uniform(0, 1e6))
    if wrap:      # make the wrap fall inside the run
        period = wrap * max(1, round(q * NS)) / NS
        if period < duration * 0.8:
            wrap = 0
        else:
            uptime = float(period - rng.uniform(0.2, 0.8) * duration)
    params = ClockParams(
        offset_s=float(rng.uniform(-100, 100)), drift_ppm=float(rng.uniform(-100, 100)),
        wander_ppm=wander, resolution_s=q, counter=counter, uptime_s=uptime, wrap_ticks=wrap,
        steps=steps, reboots=reboots, reboot_down_s=5.0,
        sample_delay_s=0.0, jitter_s=float(rng.uniform(0, 2e-4)))
    if sideband:
        base, jit = rng.uniform(20e-3, 40e-3), rng.uniform(1e-3, 5e-3)
    else:
        base, jit = rng.uniform(0.2e-3, 1e-3), rng.uniform(0.02e-3, 0.3e-3)
    # a driver that declares a finer resolution than the clock delivers (a decisecond field that
    # never moves): the estimator must notice from the values
    declared = params.resolution_ns
    if q >= 1e-3 and rng.uniform() < 0.1:
        declared = max(1, declared // int(rng.choice([10, 1000])))
    return {"i": i, "params": params, "declared_ns": declared, "duration_s": duration, "n": n,
            "base_s": float(base),
            "jit_s": float(jit), "sideband": bool(sideband), "outlier": outlier,
            "seed": int(rng.integers(1 << 31))}


def simulate(dev: dict):
    """Bracketed reads of one device in virtual time: s, e, v, sample instants, the model, the
    index of a corrupted read (or -1)."""
    rng = np.random.default_rng(dev["seed"])
    p: ClockParams = dev["params"]
    m = ClockModel(p, T0, dev["seed"])
    n = dev["n"]
    dt = dev["duration_s"] / n
    s = T0 + np.round((np.arange(n) + rng.uniform(0, 1, n)) * dt * NS).astype(np.int64)
    up_delay = np.round((dev["base_s"] / 2 + rng.exponential(dev["jit_s"], n)) * NS)
    dn_delay = np.round((dev["base_s"] / 2 + rng.exponential(dev["jit_s"], n)) * NS)
    dev_jit = np.round(rng.exponential(p.jitter_s, n) * NS) if p.jitter_s > 0 else np.zeros(n)
    at = s + up_delay.astype(np.int64) + dev_jit.astype(np.int64)
    e = at + dn_delay.astype(np.int64)
    keep = np.array([not m.down(int(t)) for t in at])
    s, e, at = s[keep], e[keep], at[keep]
    v = np.array([m.read_ns(int(t)) for t in at], dtype=np.int64)
    bad = -1
    if dev["outlier"] and len(v) > 20:
        bad = int(rng.integers(5, len(v) - 5))
        v[bad] += int(max(10 * p.resolution_ns, 0.05 * NS) * rng.choice([-1, 1]) *
                      rng.uniform(1, 10)) // p.resolution_ns * p.resolution_ns
    return s, e, v, at, m, bad


def wander_allowance_ppm(p: ClockParams, span_s: float) -> float:
    return wander_allowance_ns_per_s(p.wander_ppm, span_s, WANDER_K) * 1e-3


def _true_reading(m: ClockModel, t: int) -> int:
    """The exact (unquantized) reading in the device's own wrapped timescale."""
    d = m.true_ns(t)
    if m.p.counter and m.p.wrap_ticks:
        d %= m.p.wrap_ticks * m.p.resolution_ns
    return d


def _freq_within(m: ClockModel, a: int, b: int, t0: int, w_ppm: float) -> bool:
    """True frequency within w of its value at t0 over [a, b] (the model's walk is constant
    over each second, so checking every second is exact)."""
    if not m.p.wander_ppm:
        return True
    ka, kb = max(0, (a - m.t0_ns) // NS), max(0, (b - m.t0_ns) // NS)
    m._extend(kb + 1)              # the walk's own cache: read, never changed
    f = m._freq[ka:kb + 1] * 1e6
    f0 = m.drift_ppm(t0) - m.p.drift_ppm
    return bool(np.all(np.abs(f - f0) <= w_ppm))


def score(dev: dict) -> dict:
    s, e, v, at, m, bad = simulate(dev)
    p: ClockParams = dev["params"]
    span_s = (int(e[-1]) - int(s[0])) / NS
    w_ppm = wander_allowance_ppm(p, span_s)
    fit = fit_clock(s, e, v, dev["declared_ns"], wander_ns_per_s=w_ppm * 1e3)
    true_breaks = [b for b in m.breaks() if s[0] < b["t_ns"] <= e[-1]]
    out = {"i": dev["i"], "res_s": p.resolution_s, "sideband": dev["sideband"],
           "counter": p.counter, "wander": p.wander_ppm > 0, "segments": [],
           "true_breaks": [], "false_breaks": 0, "outlier_injected": bad >= 0,
           "outlier_found": any(o["index"] == bad for o in fit.outliers),
           "outliers_reported": len(fit.outliers), "res_used": fit.resolution_ns,
           "misdeclared": dev["declared_ns"] < p.resolution_ns,
           "res_caught": fit.resolution_ns >= p.resolution_ns}
    for b in true_breaks:
        found = [r for r in fit.breaks if r.after_ns < b["t_ns"] <= r.before_ns]
        hit = bool(found)
        size = b["size_ns"]
        if found and size is not None:
            out.setdefault("sizes", []).append(bool(found[0].size_ns.contains(size)))
            out.setdefault("kinds", []).append(found[0].kind == b["kind"])
        # plainly visible: a jump larger than two ticks plus two of the widest brackets
        visible = size is None or abs(size) > 2 * (p.resolution_ns + int(np.max(e - s)))
        out["true_breaks"].append({"kind": b["kind"], "hit": hit, "visible": visible,
                                   "size_ns": None if size is None else abs(size)})
    for r in fit.breaks:
        if not any(r.after_ns < b["t_ns"] <= r.before_ns for b in true_breaks):
            out["false_breaks"] += 1
    bad_t = int(at[bad]) if bad >= 0 and not out["outlier_found"] else None
    for sg in fit.segments:
        broken = any(sg.start_ns < b["t_ns"] <= sg.end_ns for b in true_breaks) or \
            (bad_t is not None and sg.start_ns <= bad_t <= sg.end_ns)
        held = not broken and _freq_within(m, sg.start_ns, sg.end_ns, sg.epoch_ns, w_ppm)
        ep = sg.epoch_ns
        true_off = _true_reading(m, ep) - ep
        true_drift = m.drift_ppm(ep)
        idx = np.flatnonzero((s >= sg.start_ns) & (e <= sg.end_ns))
        if bad >= 0:
            idx = idx[idx != bad]
        k = idx[:: max(1, len(idx) // 3)][:3]
        maps_ok = all(lo <= int(at[j]) <= hi for j in k
                      for lo, hi in [sg.to_reference(int(v[j]), fit.resolution_ns)])
        rec = {"held": held, "reads": sg.reads,
               "off_in": sg.offset_ns.lo <= true_off <= sg.offset_ns.hi,
               "drift_in": sg.drift_ppm.lo <= true_drift <= sg.drift_ppm.hi,
               "map_in": maps_ok, "off_w": sg.offset_ns.width,
               "drift_w": sg.drift_ppm.width, "bmin": sg.bracket_ns["min"]}
        if held and sg.reads >= 3:
            c = fit_chrony(s[idx], e[idx], v[idx], fit.resolution_ns, epoch_ns=ep)
            if c is not None:
                rec.update(c_off_in=c.offset_ns.lo <= true_off <= c.offset_ns.hi,
                           c_drift_in=c.drift_ppm.lo <= true_drift <= c.drift_ppm.hi,
                           c_off_w=c.offset_ns.width, c_drift_w=c.drift_ppm.width,
                           c_off_err=abs(c.offset_ns.point - true_off),
                           off_err=abs(sg.offset_ns.point - true_off))
        out["segments"].append(rec)
    return out


def run(devices: int, workers: int = 2, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    devs = [draw(rng, i) for i in range(devices)]
    if workers > 1:
        with Pool(workers) as pool:
            return pool.map(score, devs, chunksize=64)
    return [score(d) for d in devs]


def drift_after_one_hour(n_dev: int = 12, seed: int = 7) -> dict:
    """A 10 ms clock read once a second for one hour through 2 ms brackets: drift bound width."""
    rng = np.random.default_rng(seed)
    widths, ins = [], []
    for _k in range(n_dev):
        p = ClockParams(offset_s=float(rng.uniform(-1, 1)), drift_ppm=float(rng.uniform(-100, 100)),
                        resolution_s=0.01)
        dev = {"params": p, "duration_s": 3600.0, "n": 3600, "base_s": 2e-3, "jit_s": 1e-9,
               "outlier": False, "seed": int(rng.integers(1 << 31))}
        s, e, v, at, m, _ = simulate(dev)
        sg = fit_clock(s, e, v, p.resolution_ns).segments[0]
        widths.append(sg.drift_ppm.width)
        ins.append(sg.drift_ppm.lo <= p.drift_ppm <= sg.drift_ppm.hi)
    return {"median_width_ppm": float(np.median(widths)), "max_width_ppm": float(np.max(widths)),
            "all_inside": bool(all(ins)), "devices": n_dev}


def summarize(results: list[dict]) -> dict:
    segs = [sg for r in results for sg in r["segments"]]
    held = [sg for sg in segs if sg["held"]]
    notheld = [sg for sg in segs if not sg["held"]]
    # coverage per device: every held segment's offset, drift and mapping inside
    dev_ok = [all(sg["off_in"] and sg["drift_in"] and sg["map_in"] for sg in r["segments"]
                  if sg["held"]) for r in results if any(sg["held"] for sg in r["segments"])]
    tb = [b for r in results for b in r["true_breaks"]]
    big = [b for b in tb if b["visible"]]
    out = {
        "devices": len(results), "segments": len(segs), "held_segments": len(held),
        "coverage_devices": float(np.mean(dev_ok)) if dev_ok else float("nan"),
        "devices_scored": len(dev_ok),
        "coverage_offset": float(np.mean([sg["off_in"] for sg in held])),
        "coverage_drift": float(np.mean([sg["drift_in"] for sg in held])),
        "coverage_mapping": float(np.mean([sg["map_in"] for sg in held])),
        "notheld_offset_inside": float(np.mean([sg["off_in"] for sg in notheld])) if notheld
        else float("nan"), "notheld_segments": len(notheld),
        "breaks_injected": len(tb), "breaks_detected": float(np.mean([b["hit"] for b in tb]))
        if tb else float("nan"),
        "breaks_visible": len(big),
        "breaks_visible_detected": float(np.mean([b["hit"] for b in big]))
        if big else float("nan"),
        "false_breaks": sum(r["false_breaks"] for r in results),
        "outliers_injected": sum(r["outlier_injected"] for r in results),
        "outliers_found": sum(r["outlier_found"] for r in results),
        "outliers_reported": sum(r["outliers_reported"] for r in results),
        "break_size_inside": f"{sum(sum(r.get('sizes', [])) for r in results)}/"
                             f"{sum(len(r.get('sizes', [])) for r in results)}",
        "break_kind_right": f"{sum(sum(r.get('kinds', [])) for r in results)}/"
                            f"{sum(len(r.get('kinds', [])) for r in results)}",
        "resolution_misdeclared": sum(r["misdeclared"] for r in results),
        "resolution_caught": sum(r["misdeclared"] and r["res_caught"] for r in results),
    }
    by_kind = {}
    for b in tb:
        k = by_kind.setdefault(b["kind"], [0, 0])
        k[0] += 1
        k[1] += b["hit"]
    out["breaks_by_kind"] = {k: f"{h}/{n}" for k, (n, h) in sorted(by_kind.items())}
    # tightness on held segments with at least 30 reads
    tight = [sg for sg in held if sg["reads"] >= 30]
    out["median_off_width_over_min_bracket"] = float(np.median(
        [sg["off_w"] / sg["bmin"] for sg in tight]))
    per_res = {}
    for r in results:
        for sg in r["segments"]:
            if sg["held"] and sg["reads"] >= 30:
                per_res.setdefault((r["res_s"], r["sideband"]), []).append(sg["off_w"] / sg["bmin"])
    out["off_width_over_min_bracket_by_resolution"] = {
        f"{q:g}s/{'sideband' if sb else 'loopback'}": round(float(np.median(x)), 3)
        for (q, sb), x in sorted(per_res.items())}
    for flag, key in ((True, "with_wander"), (False, "without_wander")):
        x = [sg["off_w"] / sg["bmin"] for r in results if r["wander"] == flag
             for sg in r["segments"] if sg["held"] and sg["reads"] >= 30]
        out[f"median_off_width_over_min_bracket_{key}"] = round(float(np.median(x)), 3)
    ch = [sg for sg in held if "c_off_in" in sg]
    out["chrony_segments"] = len(ch)
    out["chrony_offset_miss"] = float(1 - np.mean([sg["c_off_in"] for sg in ch]))
    out["chrony_drift_miss"] = float(1 - np.mean([sg["c_drift_in"] for sg in ch]))
    out["chrony_median_off_width_over_min_bracket"] = float(np.median(
        [sg["c_off_w"] / sg["bmin"] for sg in ch if sg["reads"] >= 30]))
    out["chrony_median_offset_error_ns"] = float(np.median([sg["c_off_err"] for sg in ch]))
    out["interval_median_point_error_ns"] = float(np.median([sg["off_err"] for sg in ch]))
    c_by = {}
    for r in results:
        for sg in r["segments"]:
            if "c_off_in" in sg:
                c_by.setdefault(r["res_s"], []).append(sg["c_off_in"])
    out["chrony_offset_miss_by_resolution"] = {f"{q:g}s": round(1 - float(np.mean(x)), 4)
                                               for q, x in sorted(c_by.items())}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=12_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t = time.perf_counter()
    res = run(a.devices, a.workers, a.seed)
    summ = summarize(res)
    summ["seconds"] = round(time.perf_counter() - t, 1)
    summ["drift_after_1h_10ms_clock_2ms_brackets"] = drift_after_one_hour()
    for k, val in summ.items():
        print(f"{k}: {val}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
