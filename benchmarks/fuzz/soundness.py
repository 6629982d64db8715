"""Soundness fuzz: adversarial simulated clocks through the real probe schedule and the real
estimator; every interval published as proven is checked against the truth.

Each device is short (30–70 reads at 1–2 Hz): a clock model (bench/sim/clock_model.py) with one
adversarial behaviour, read as the runner reads it (bench/sim/probing.py: the real probe
schedule, aimed and exploration reads, loopback- or sideband-like brackets, the device sampling
anywhere in the bracket, lost reads). Then bench.analysis.estimate.fit_clock, and the frozen
pre-issue estimator (benchmarks/fuzz/baseline_estimate.py) on the same reads for the width ratio.

Checked, for every segment whose status is "proven": the offset at its epoch, the offset band at
five instants across it, the drift at its epoch (when proven: never since the drift rests on
bench.analysis.publish.RATE_CHANGE_ASSUMPTION), the reference interval of its middle read's value
(Segment.proven_to_reference: what the latency bounds are made of); for every break between two
proven segments with one true step in its window: its size. The drift bounds published as
"assumed" are checked too and reported apart ("drift held"): how often that assumption fails.

    nice .venv/bin/python benchmarks/fuzz/soundness.py [--devices N] [--workers 2] [--seed S]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from contextlib import nullcontext
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.analysis.polygon import _envelope_lists  # noqa: E402
from bench.analysis.unseen import UNSEEN_P, stated_step_ns  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402
from bench.sim.probing import read_like_runner  # noqa: E402
from benchmarks.fuzz import baseline_estimate  # noqa: E402


def _baseline_envelope(m, c):
    """The frozen baseline's _max_envelope, built in plain Python lists as the estimator now
    does: the same float operations in the same order, so the same envelope bit for bit
    (tests/test_estimate_fast.py), at a third of the cost."""
    M, C, X = _envelope_lists(m.tolist(), c.tolist())
    return np.array(M), np.array(C), np.array(X)


baseline_estimate._max_envelope = _baseline_envelope

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
TICKS_S = [1e-6, 1e-3, 0.01, 0.1, 1.0]
BASELINE_EVERY = 4      # one device in this many (by seed) is also fitted by the baseline
READS = (20, 51)        # reads per device, [lo, hi)
BEHAVIOURS = ("clean", "step", "slew", "slew_beyond", "freq_step", "wander", "beyond_prior",
              "reboot", "wrap", "misdeclared", "bad_burst", "read_lag", "discipline", "hunting",
              "tick_lag", "blip", "two_at_once", "lag_undeclared", "slow_update", "disciplined",
              "repeated_blips", "lag_beyond")
# outside the stated model: two unseen steps, a lag nobody declared, a value that updates slower
# than its tick, a rate beyond the stated one; their misses are counted against the stated
# miss-risk, not the coverage
NOT_ADMITTED = ("blip", "lag_undeclared", "slow_update", "slew_beyond", "disciplined",
                "repeated_blips", "lag_beyond")


def draw(rng: np.random.Generator, behaviour: str, reads: tuple[int, int] = READS) -> dict:
    """One device: clock parameters, read plan and what the estimator is told."""
    q = float(rng.choice(TICKS_S))
    rate = float(rng.choice([1.0, 2.0]))
    n = int(rng.integers(*reads))
    dur = n / rate
    sideband = rng.uniform() < 0.25
    kw = dict(offset_s=float(rng.uniform(-50, 50)), drift_ppm=float(rng.uniform(-100, 100)),
              resolution_s=q)
    dev = {"behaviour": behaviour, "rate_hz": rate, "n": n, "sideband": bool(sideband),
           "bad": 0, "lag_s": 0.0, "wander_allow": 0.0, "seed": int(rng.integers(1 << 31))}
    at = float(rng.uniform(0.3, 0.8) * dur)
    if behaviour == "step":
        size = float(10 ** rng.uniform(-4, np.log10(2.0))) * float(rng.choice([-1, 1]))
        kw["steps"] = ((at, size),)
    elif behaviour == "slew":
        kw["slews"] = ((at, float(rng.uniform(2, 0.4 * dur)),
                        float(rng.uniform(50, 500) * rng.choice([-1, 1]))),)
    elif behaviour == "slew_beyond":
        kw["slews"] = ((at, float(rng.uniform(2, 0.4 * dur)),
                        float(10 ** rng.uniform(np.log10(600), 4) * rng.choice([-1, 1]))),)
    elif behaviour == "freq_step":
        kw["freq_steps"] = ((at, float(rng.uniform(1, 300) * rng.choice([-1, 1]))),)
    elif behaviour == "wander":
        kw["wander_ppm"] = float(10 ** rng.uniform(-1, 1))
        dev["wander_allow"] = kw["wander_ppm"]
    elif behaviour == "beyond_prior":
        kw["drift_ppm"] = float(10 ** rng.uniform(np.log10(600), np.log10(5000))
                                * rng.choice([-1, 1]))
    elif behaviour in ("reboot", "wrap"):
        kw.update(counter=True, uptime_s=float(rng.uniform(100, 1e6)), offset_s=0.0)
        q = max(q, 1e-3)
        kw["resolution_s"] = q
        if behaviour == "reboot":
            kw["reboots"] = (at,)
            kw["reboot_down_s"] = float(rng.uniform(1, 5))
        else:
            ticks = 1 << 20 if q >= 0.01 else 1 << 28
            kw.update(wrap_ticks=ticks, uptime_s=ticks * q - at)
    elif behaviour == "read_lag":     # time() behind its own clock by a varying 4–8 ms
        q = 1.0
        kw["resolution_s"] = q
        dev["lag_s"] = 0.008
    elif behaviour == "bad_burst":
        dev["bad"] = int(rng.integers(1, 4))
    elif behaviour == "discipline":     # NTP corrections of ±0.5–5 ms every 4–64 s, slewed
        kw["discipline"] = (4.0, 64.0, 0.5, 5.0, float(rng.uniform(50, 500)))
    elif behaviour == "hunting":        # a PLL hunting up to ±450 ppm, every 2–20 s
        kw["hunting"] = (float(rng.uniform(10, 450)), float(rng.uniform(2, 20)))
    elif behaviour in ("tick_lag", "lag_undeclared"):   # edges 2–10 ms late, varying
        lo = float(rng.uniform(0, 4))
        kw["tick_lag_ms"] = (lo, lo + float(rng.uniform(2, 6)))
        if behaviour == "tick_lag":
            dev["lag_declared_s"] = 0.010
    elif behaviour == "blip":           # a step and its correction 1–10 s later, 10 ms–1 s
        size = float(10 ** rng.uniform(-2, 0)) * float(rng.choice([-1, 1]))
        kw["blips"] = ((at * 0.7, size, float(rng.uniform(1, 10))),)
        dev["blip_s"] = abs(size)
    elif behaviour == "slow_update":    # the value moves every 1.5 tick
        kw["update_s"] = q * 1.5
    elif behaviour == "disciplined":    # a PLL hunting or an NTP client slewing beyond R
        q = float(rng.choice([0.1, 1.0, 0.01]))
        kw["resolution_s"] = q
        if rng.uniform() < 0.5:
            kw["hunting"] = (float(rng.uniform(700, 1200)), float(rng.uniform(40, 60)))
        else:
            kw["discipline"] = (20.0, 40.0, 2.0, 10.0, float(rng.uniform(500, 2000)))
        if q == 0.1 and rng.uniform() < 0.5:     # net-snmp's hrSystemDate: a declared lag
            kw["tick_lag_ms"] = (4.0, 8.0)
            dev["lag_declared_s"] = 0.010
    elif behaviour == "repeated_blips":  # steps undone a few s later, again and again
        q = float(rng.choice([1.0, 0.1]))
        kw["resolution_s"] = q
        size, back = ((0.1, 0.3), 3.0) if q == 1.0 else ((0.03, 0.05), 2.0)
        first, every = float(rng.uniform(2, 8)), float(rng.uniform(6, 12))
        kw["blips"] = tuple((first + k * every, float(rng.uniform(*size) * rng.choice([-1, 1])),
                             back) for k in range(int(dur // every) + 1))
    elif behaviour == "lag_beyond":     # edges lag 5-40 ms, beyond the declared 10 ms
        kw["tick_lag_ms"] = (5.0, float(rng.uniform(15, 40)))
        dev["lag_declared_s"] = 0.010
    elif behaviour == "two_at_once":    # discipline and a declared lagging tick together
        kw["discipline"] = (4.0, 64.0, 0.5, 5.0, float(rng.uniform(50, 500)))
        kw["tick_lag_ms"] = (1.0, float(rng.uniform(3, 9)))
        dev["lag_declared_s"] = 0.010
    p = ClockParams(**kw, sample_delay_s=0.0)
    declared = p.resolution_ns
    if behaviour == "misdeclared":
        declared = max(1, declared // int(rng.choice([10, 1000])))
    dev.update(params=p, declared_ns=declared, modulus_ns=(p.wrap_ticks * p.resolution_ns
                                                             if p.wrap_ticks else 0))
    return dev


def simulate(dev: dict):
    """Reads as the runner takes them: (s, e, v, sample instants, model, bad read indices)."""
    rng = np.random.default_rng(dev["seed"])
    m = ClockModel(dev["params"], T0, dev["seed"])
    s, e, v, at, bad = read_like_runner(m, dev["n"], dev["rate_hz"], dev["declared_ns"], rng,
                                        sideband=dev["sideband"], lag_s=dev["lag_s"],
                                        bad=dev["bad"])
    if dev["modulus_ns"]:            # the summary unwraps counters before fitting
        from bench.analysis.counters import unwrap
        v = unwrap(s, e, v, dev["modulus_ns"], dev["declared_ns"])[0]
    return s, e, v, at, m, bad


def _truth_offset(m: ClockModel, t: int, dev: dict) -> float:
    return float(m.true_ns(int(t)) - int(t))


def score(dev: dict) -> dict:
    s, e, v, at, m, bad = simulate(dev)
    span = (int(e[-1]) - int(s[0])) / NS
    w = 0.0
    if dev["wander_allow"]:
        from bench.analysis.estimate import wander_allowance_ns_per_s
        w = wander_allowance_ns_per_s(dev["wander_allow"], span)
    lag = int(dev["lag_s"] * NS)
    declared_lag = int(dev.get("lag_declared_s", 0.0) * NS)
    fit = fit_clock(s - lag, e, v, dev["declared_ns"], wander_ns_per_s=w, lag_ns=declared_lag,
                    free_running=CLAIM if dev.get("claim") else "")
    old_w = None
    if dev["seed"] % BASELINE_EVERY == 0:     # the width ratio is a statistic: a sample will do
        try:
            old = baseline_estimate.fit_clock(s, e, v, dev["declared_ns"], wander_ns_per_s=w)
            old_w = old.segments[-1].offset_ns.width if old.segments else None
        except Exception:
            old_w = None
    true_breaks = [b for b in m.breaks() if s[0] < b["t_ns"] <= e[-1] and b["kind"] != "wrap"]
    misses = []
    assumed_drift = []
    mean_drift, mean_drift_assumed = [], []
    checked = 0
    bad_t = {int(at[i]) for i in bad}
    for sg in fit.segments:
        if sg.offset_status == "proven":
            pts = np.linspace(sg.start_ns, sg.end_ns, 7).astype(np.int64)[1:-1]
            for t, b in [(sg.epoch_ns, sg.offset_ns)] + [(int(x), sg.proven_offset_at(int(x)))
                                                         for x in pts]:
                if b is None:
                    continue
                tr = _truth_offset(m, int(t), dev)
                checked += 1
                if not (b.lo <= tr <= b.hi):
                    misses.append(("offset", int(t), b.lo - tr, b.hi - tr))
            idx = np.flatnonzero((s >= sg.start_ns) & (e <= sg.end_ns))
            idx = [i for i in idx if int(at[i]) not in bad_t]
            for i in idx[len(idx) // 2: len(idx) // 2 + 1]:
                iv = sg.proven_to_reference(int(v[i]), fit.resolution_ns)
                if iv is None:
                    continue
                lo, hi = iv
                checked += 1
                # the instant whose clock value the device showed (a lagging tick shows an
                # earlier one; bench.sim.clock_model.ClockModel.shown_at)
                shown = m.shown_at(int(at[i]))
                if not (lo <= shown - (lag if dev["lag_s"] else 0) <= hi) and not dev["lag_s"]:
                    misses.append(("map", int(at[i]), lo, hi))
        md = sg.mean_drift
        if md is not None:      # the offset's mean rate over [from, to], against the truth's
            t1, t2 = md["from_ns"], md["to_ns"]
            tr = (_truth_offset(m, t2, dev) - _truth_offset(m, t1, dev)) / (t2 - t1) * 1e6
            held = md["lo"] <= tr <= md["hi"]
            if md["status"] == "proven":
                checked += 1
                mean_drift.append((md["hi"] - md["lo"], (t2 - t1) / NS))
                if not held:
                    misses.append(("mean_drift", t1, t2, md["lo"], md["hi"], tr))
            else:
                mean_drift_assumed.append(held)
        if sg.drift_status in ("proven", "assumed"):
            tr = m.drift_ppm(sg.epoch_ns)
            held = sg.drift_ppm.lo - 1e-6 <= tr <= sg.drift_ppm.hi + 1e-6
            if sg.drift_status == "proven":
                checked += 1
                if not held:
                    misses.append(("drift", sg.epoch_ns, sg.drift_ppm.lo, sg.drift_ppm.hi, tr))
            else:
                assumed_drift.append(held)
    delays, windows, amb = [], [], 0
    period = NS / dev["rate_hz"]
    for k, br in enumerate(fit.breaks):
        amb += br.ambiguous_reads
        windows.append((br.before_ns - br.after_ns) / period)
        inside = [tb for tb in true_breaks if br.after_ns < tb["t_ns"] <= br.before_ns]
        both = fit.segments[k].offset_status == fit.segments[k + 1].offset_status == "proven"
        if both and len(inside) == 1 and inside[0]["kind"] == "step":
            checked += 1
            if not br.size_ns.contains(inside[0]["size_ns"]):
                misses.append(("size", br.after_ns, br.size_ns.lo, br.size_ns.hi))
    for tb in true_breaks:
        hit = [br for br in fit.breaks if br.after_ns < tb["t_ns"] <= br.before_ns]
        later = [br for br in fit.breaks if br.before_ns >= tb["t_ns"]]
        if tb["kind"] == "step" or hit or later:
            delays.append(((later[0].before_ns - tb["t_ns"]) / NS) if later else None)
    st = [sg.offset_status for sg in fit.segments]
    new_w = fit.segments[-1].offset_ns.width if fit.segments else None
    last_proven = bool(fit.segments) and fit.segments[-1].offset_status == "proven"
    rate_max = _max_rate_ppm(m, int(s[0]), int(e[-1])) if dev["behaviour"] == "disciplined" \
        else None
    bound_miss = [x for x in misses if x[0] != "map"]
    return {"behaviour": dev["behaviour"], "ok": not bound_miss, "maps_ok": len(bound_miss) == len(misses),
            "misses": misses[:3],
            "checked": checked, "verdict": fit.verdict, "assumed_drift": assumed_drift,
            "mean_drift": mean_drift, "mean_drift_assumed": mean_drift_assumed,
            "drift_proven": sum(sg.drift_status == "proven" for sg in fit.segments),
            "assumed": "assumed" in st or fit.verdict in ("assumed", "beyond_prior"),
            "undecided": "undecided" in st or fit.verdict == "undecided",
            "ratio": (new_w / old_w) if new_w and old_w else None,
            "delays": delays, "windows": windows, "amb": amb, "reads": len(v),
            "step_size": (abs(true_breaks[0]["size_ns"]) if true_breaks and
                          true_breaks[0]["kind"] == "step" else None),
            "tick": dev["params"].resolution_ns, "seed": dev["seed"],
            "blip_s": dev.get("blip_s"), "admitted": dev["behaviour"] not in NOT_ADMITTED,
            # the statement for the blip's own duration: a step of at least this size lasting
            # that long shows with probability >= UNSEEN_P
            "blip_x": (stated_step_ns(fit.resolution_ns, fit.segments[-1].bracket_ns["median"],
                                      fit.segments[-1].offset_ns.width, dev["rate_hz"],
                                      within_s=dev["params"].blips[0][2],
                                      rate_ppm=fit.drift_prior_ppm)[0]
                       if dev["params"].blips and fit.segments and fit.segments[-1].bracket_ns
                       else None),
            "line_ratio": _line_ratio(fit),
            "proven_last": last_proven, "width_last": new_w if last_proven else None,
            "rate_beyond_ppm": (max(0.0, rate_max - fit.drift_prior_ppm)
                                if rate_max is not None else None),
            "rate_assumed": bool(getattr(fit, "rate_assumed", "")),
            "claimed": bool(getattr(fit, "rate_basis", "")),
            "worst_miss_ns": max([_miss_ns(x) for x in bound_miss] or [0.0]),
            "lag_beyond_ns": _lag_beyond_ns(dev, declared_lag),
            "shown": _shown(fit), "revealed": _revealed(fit, dev, (s - lag, e, v), declared_lag)}


def _shown(fit) -> str:
    """What the reads showed against the stated model (misses_table): a lag the values prove
    (lag_seen, a slow update: assumed), two or more breaks (STEP_HISTORY: assumed; those the
    reads showed under the prior before a refit beyond it count), one break
    (the model's step), reads set aside only (the model's bad reads), or nothing (the reads
    are consistent with it: no break, no read set aside)."""
    n = max(len(fit.breaks), fit.steps_seen + fit.unknown_breaks)   # seen before a refit too
    return ("a lag the values prove" if fit.lag_seen_ns or fit.update_ns
            else "two or more breaks" if n >= 2 else "one break" if n == 1
            else "reads set aside only" if fit.outliers else "nothing")


REVEALED = ("a lag the values prove", "two or more steps", "a read set aside within X",
            "one break below X", "a blip >= X")


def _revealed(fit, dev: dict, reads: tuple, lag_ns: int) -> str:
    """What the output shows that no clock inside the stated model explains (revealed_table),
    from what it states: a lag or a slow update the values prove; two or more steps (breaks,
    steps seen before a refit, reads set aside in two places or together as a burst); a read
    set aside as a bad answer that misses the reads around it by less than the step X the
    clock states for 10 s (a bad answer the model admits is one the clock could not have given;
    a step that size could hide); one break whose size interval reaches below that X (a step
    its reads could miss elsewhere, so its return may have gone unseen); a blip at or above the
    X the clock states for the blip's own duration (the statement says it shows). "" where the
    reads read as a clock of the admitted model does: nothing, one far-off bad answer, one
    break above X, or one break that a refit beyond the prior explains as a rate beyond R (an
    admitted `beyond_prior` clock reads the same)."""
    last = fit.segments[-1] if fit.segments else None
    if fit.lag_seen_ns or fit.update_ns:
        return REVEALED[0]
    aside = sorted(o["index"] for o in fit.outliers)
    places = sum(1 for k, i in enumerate(aside) if k == 0 or i - aside[k - 1] > 1)
    if len(fit.breaks) >= 2 or fit.steps_seen + fit.unknown_breaks >= 2 or places >= 2 or \
            (aside and places < len(aside)):
        return REVEALED[1]
    if last is None or not last.bracket_ns:
        return ""
    x = stated_step_ns(fit.resolution_ns, last.bracket_ns["median"], last.offset_ns.width,
                       dev["rate_hz"], rate_ppm=fit.drift_prior_ppm)[0]
    if aside and min(_aside_miss_ns(fit, o, reads, lag_ns) for o in fit.outliers) < x:
        return REVEALED[2]
    sized = [b for b in fit.breaks if b.size_ns is not None and b.kind in ("step", "unknown")]
    if len(sized) == 1 and (sized[0].size_ns.lo <= 0 <= sized[0].size_ns.hi
                            or min(abs(sized[0].size_ns.lo), abs(sized[0].size_ns.hi)) < x):
        return REVEALED[3]
    for _at, size, back in dev["params"].blips:
        xb = stated_step_ns(fit.resolution_ns, last.bracket_ns["median"], last.offset_ns.width,
                            dev["rate_hz"], within_s=back, rate_ppm=fit.drift_prior_ppm)[0]
        if abs(size) * NS >= xb:
            return REVEALED[4]
    return ""


def _aside_miss_ns(fit, o: dict, reads: tuple, lag_ns: int) -> float:
    """How far a read set aside misses the envelope (bench/analysis/envelope.py, under the
    fit's rate bound) of the reads kept in the segment around it, ns."""
    from bench.analysis.envelope import build
    s, e, v = reads
    sg = fit.segment_at(int(o["s_ns"])) or fit.segment_at(int(o["e_ns"]))
    if sg is None:
        return 0.0
    out = {x["index"] for x in fit.outliers}
    k = [i for i in range(len(s)) if i not in out and sg.start_ns <= s[i] and e[i] <= sg.end_ns]
    if not k:
        return 0.0
    q = fit.resolution_ns
    env = build(s[k], e[k], v[k], q, fit.drift_prior_ppm, lag_ns)
    lo, _ = env.at(int(o["s_ns"]) - lag_ns)
    _, hi = env.at(int(o["e_ns"]))
    return float(max(o["value_ns"] - o["e_ns"] - hi, lo - (o["value_ns"] + q - o["s_ns"] + lag_ns)))


def revealed_table(results: list[dict]) -> str:
    """Per behaviour outside the model: the devices whose output shows what the admitted model
    does not explain (_revealed), with the coverage of the bounds labelled proven among them
    (1.0000 is the issue's bar) and the share still labelled proven; and those whose reads read
    as an admitted clock does, with the same. Then how many were revealed by each sign."""
    out = ["| behaviour | revealed | coverage | share proven (latest) | not revealed | coverage | "
           "share proven (latest) | " + " | ".join(REVEALED) + " |", "|---|" + "---|" * (6 + len(REVEALED))]
    for name in NOT_ADMITTED:
        rs = [r for r in results if r["behaviour"] == name]
        if not rs:
            continue
        cells = []
        for g in ([r for r in rs if r["revealed"]], [r for r in rs if not r["revealed"]]):
            cov = f"{np.mean([r['ok'] for r in g]):.4f}" if g else "—"
            pl = f"{np.mean([r['proven_last'] for r in g]):.3f}" if g else "—"
            cells += [str(len(g)), cov, pl]
        by = [str(sum(r["revealed"] == k for r in rs)) for k in REVEALED]
        out.append(f"| {name} | " + " | ".join(cells + by) + " |")
    return "\n".join(out)


def _miss_ns(x: tuple) -> float:
    """How far outside its bound the truth was, ns (a mean drift's miss in ppm is left out)."""
    if x[0] == "offset":
        return max(float(x[2]), -float(x[3]))
    return 0.0


def _lag_beyond_ns(dev: dict, declared_ns: int) -> float:
    """How far the tick's largest lag goes beyond the declared one, ns (0: within it)."""
    lag = dev["params"].tick_lag_ms
    return max(0.0, lag[1] * 1e6 - declared_ns) if lag else 0.0


def _max_rate_ppm(m: ClockModel, t1: int, t2: int) -> float:
    """The clock's largest |rate| over [t1, t2], ppm, on a 50 ms grid."""
    ts = np.arange(t1, t2, NS // 20, dtype=np.int64)
    return max(abs(m.drift_ppm(int(x))) for x in ts)


def _line_ratio(fit) -> float | None:
    """The published offset's width over the single line's at the same epoch (last segment)."""
    if not fit.segments or fit.segments[-1].offset_line is None:
        return None
    sg = fit.segments[-1]
    return sg.offset_ns.width / max(1.0, sg.offset_line.width)


# --claim-free-running: every device says nothing disciplines its clock (as a Redfish service
# with NTP.ProtocolEnabled=false does), whatever its behaviour: the claimed rate bound holds on the
# admitted behaviours (the model's 600 ppm) and is a lie on `disciplined` (700-2,000 ppm)
CLAIM = "the fuzz's claim"


def devices(n: int, seed: int, reads: tuple[int, int] = READS, claim: bool = False
            ) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{**draw(rng, BEHAVIOURS[i % len(BEHAVIOURS)], reads), "claim": claim}
            for i in range(n)]


def run(n: int, workers: int = 2, seed: int = 1, reads: tuple[int, int] = READS,
        deadline_s: float = math.inf, claim: bool = False) -> list[dict]:
    """Scores of n devices; past `deadline_s` of wall time it stops and returns those done
    (the table then says how many)."""
    devs = devices(n, seed, reads, claim)
    t0, out = time.perf_counter(), []
    with Pool(workers) if workers > 1 else nullcontext() as pool:
        it = pool.imap_unordered(score, devs, chunksize=32) if pool else map(score, devs)
        for r in it:
            out.append(r)
            if len(out) % 5000 == 0:
                print(f"{len(out)} devices, {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                      flush=True)
            if time.perf_counter() - t0 > deadline_s:
                print(f"deadline: {len(out)} of {n} devices", file=sys.stderr, flush=True)
                break
    return out


def table(results: list[dict]) -> list[dict]:
    by = defaultdict(list)
    for r in results:
        by[r["behaviour"]].append(r)
    rows = []
    for name in BEHAVIOURS + ("all",):
        rs = results if name == "all" else by.get(name, [])
        if not rs:
            continue
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        d = [x for r in rs for x in r["delays"] if x is not None]
        und = sum(1 for r in rs for x in r["delays"] if x is None)
        win = [x for r in rs for x in r["windows"]]
        rows.append({
            "behaviour": name, "devices": len(rs),
            "coverage": sum(r["ok"] for r in rs) / len(rs),
            "map_coverage": sum(r["maps_ok"] for r in rs) / len(rs),
            "checked": sum(r["checked"] for r in rs),
            "assumed": float(np.mean([r["assumed"] for r in rs])),
            "undecided": float(np.mean([r["undecided"] for r in rs])),
            "beyond_prior": float(np.mean([r["verdict"] == "beyond_prior" for r in rs])),
            "drift_proven": sum(r["drift_proven"] for r in rs),
            "drift_assumed_held": (float(np.mean(ad)) if (ad := [x for r in rs
                                                                  for x in r["assumed_drift"]])
                                   else float("nan")),
            "width_ratio_median": float(np.median(ratios)) if ratios else float("nan"),
            "line_ratio_median": (float(np.median(lr)) if (lr := [r["line_ratio"] for r in rs
                                                                  if r["line_ratio"]])
                                  else float("nan")),
            "detection_delay_s_median": float(np.median(d)) if d else float("nan"),
            "breaks_undetected": und,
            "ambiguous_share": sum(r["amb"] for r in rs) / max(1, sum(r["reads"] for r in rs)),
            "break_window_probe_intervals_median": float(np.median(win)) if win else float("nan"),
        })
    return rows


def markdown(rows: list[dict]) -> str:
    head = ("| behaviour | devices | coverage | maps | assumed | undecided | beyond_prior | width ratio "
            "to previous (median) | width ÷ line (median) | detection delay s (median) | "
            "true breaks undetected | "
            "ambiguous reads | break window, probe intervals (median) | drifts proven | "
            "assumed drifts holding the truth |")
    out = [head, "|" + "---|" * 15]
    for r in rows:
        out.append(f"| {r['behaviour']} | {r['devices']} | {r['coverage']:.4f} | "
                   f"{r['map_coverage']:.4f} | "
                   f"{r['assumed']:.3f} | {r['undecided']:.3f} | {r['beyond_prior']:.3f} | "
                   f"{r['width_ratio_median']:.3f} | {r['line_ratio_median']:.3f} | "
                   f"{r['detection_delay_s_median']:.2f} | "
                   f"{r['breaks_undetected']} | {r['ambiguous_share']:.4f} | "
                   f"{r['break_window_probe_intervals_median']:.2f} | {r['drift_proven']} | "
                   f"{r['drift_assumed_held']:.4f} |")
    return "\n".join(out)


def proven_table(results: list[dict]) -> str:
    """Per behaviour: the share of devices whose latest segment is labelled proven, and the
    median width of those proven offsets (what soundness costs), and the rate bound's status."""
    out = ["| behaviour | devices | share proven (latest segment) | median proven width ms | "
           "rate bound assumed (share) | fitted under the claim (share) |",
           "|---|---|---|---|---|---|"]
    by = defaultdict(list)
    for r in results:
        by[r["behaviour"]].append(r)
    for name in BEHAVIOURS + ("admitted", "all"):
        rs = (results if name == "all" else [r for r in results if r["admitted"]]
              if name == "admitted" else by.get(name, []))
        if not rs:
            continue
        w = [r["width_last"] for r in rs if r["width_last"] is not None]
        med = f"{np.median(w) / 1e6:.3f}" if w else "—"
        out.append(f"| {name} | {len(rs)} | {np.mean([r['proven_last'] for r in rs]):.3f} | "
                   f"{med} | {np.mean([r['rate_assumed'] for r in rs]):.3f} | "
                   f"{np.mean([r['claimed'] for r in rs]):.3f} |")
    return "\n".join(out)


def rate_table(results: list[dict]) -> str:
    """Disciplined clocks (rates beyond the default R): coverage where the rate bound the fit
    used held the truth's largest rate, and where it did not, how far proven bounds missed per
    ppm beyond it."""
    rs = [r for r in results if r["behaviour"] == "disciplined"]
    if not rs:
        return ""
    held = [r for r in rs if r["rate_beyond_ppm"] == 0]
    beyond = [r for r in rs if r["rate_beyond_ppm"]]
    per = [r["worst_miss_ns"] / 1e3 / r["rate_beyond_ppm"] for r in beyond]
    cov = (f"{np.mean([r['ok'] for r in held]):.4f}" if held else "—")
    cb = (f"{np.mean([r['ok'] for r in beyond]):.4f}" if beyond else "—")
    return ("| disciplined | devices | coverage | miss per ppm beyond R, µs (median, max) |\n"
            "|---|---|---|---|\n"
            f"| R held | {len(held)} | {cov} | — |\n"
            f"| beyond R | {len(beyond)} | {cb} | "
            + (f"{np.median(per):.3f}, {np.max(per):.3f} |" if per else "— |"))


def lag_table(results: list[dict]) -> str:
    """Ticks lagging beyond the declared lag (none declared: `lag_undeclared`; 10 ms declared:
    `lag_beyond`), which no read tells from an offset when the lag stays put: coverage, and how
    far the proven offsets missed per ms of lag beyond the declaration (the model line says
    which lag it assumes, bench.model.summary.model_statement)."""
    out = ["| behaviour | devices | coverage | lag beyond the declared, ms (median) | "
           "miss per ms of lag beyond the declared, ms (median, max) |", "|---|---|---|---|---|"]
    for name in ("lag_undeclared", "lag_beyond"):
        rs = [r for r in results if r["behaviour"] == name and r["lag_beyond_ns"]]
        if not rs:
            continue
        per = [r["worst_miss_ns"] / r["lag_beyond_ns"] for r in rs]
        out.append(f"| {name} | {len(rs)} | {np.mean([r['ok'] for r in rs]):.4f} | "
                   f"{np.median([r['lag_beyond_ns'] for r in rs]) / 1e6:.2f} | "
                   f"{np.median(per):.3f}, {np.max(per):.3f} |")
    return "\n".join(out)


def calibration_table(results: list[dict]) -> str:
    """The unseen-step statement against what happened: for the devices outside the stated
    model, the share whose published proven bounds missed the truth; for blips, split at the
    stated X for the blip's own duration T (a step of at least X lasting T shows with
    probability >= p, unseen.stated_step_ns: measured where smaller): above X the misses must stay within
    1 − p."""
    out = [f"| behaviour | devices | proven bounds missing the truth | blips >= X | missed among "
           f"them (stated <= {1 - UNSEEN_P:.2f}) | blips < X | missed among them |",
           "|---|---|---|---|---|---|---|"]
    for name in NOT_ADMITTED:
        rs = [r for r in results if r["behaviour"] == name]
        if not rs:
            continue
        miss = sum(not r["ok"] for r in rs) / len(rs)
        big = [r for r in rs if r["blip_s"] is not None and r["blip_x"] is not None
               and r["blip_s"] * NS >= r["blip_x"]]
        small = [r for r in rs if r["blip_s"] is not None and r not in big]

        def f(g: list) -> str:
            return f"{sum(not r['ok'] for r in g) / len(g):.4f}" if g else "—"
        out.append(f"| {name} | {len(rs)} | {miss:.4f} | {len(big)} | {f(big)} | {len(small)} | "
                   f"{f(small)} |")
    return "\n".join(out)


SHOWN = ("nothing", "reads set aside only", "one break", "two or more breaks",
         "a lag the values prove")


def misses_table(results: list[dict]) -> str:
    """What the reads of each device whose proven bounds missed showed (_shown), per behaviour
    outside the model; and, beside them, how the admitted devices whose latest segment is
    proven read: a miss whose reads the admitted ones show as well cannot be told from them."""
    out = ["| behaviour | devices missed | " + " | ".join(SHOWN) + " |",
           "|---|---|" + "---|" * len(SHOWN)]
    for name in NOT_ADMITTED:
        rs = [r for r in results if r["behaviour"] == name and not r["ok"]]
        if rs:
            out.append(f"| {name} | {len(rs)} | "
                       + " | ".join(str(sum(r["shown"] == k for r in rs)) for k in SHOWN) + " |")
    adm = [r for r in results if r["admitted"] and r["proven_last"]]
    if adm:
        out.append(f"| admitted, latest proven (for comparison) | {len(adm)} | "
                   + " | ".join(str(sum(r["shown"] == k for r in adm)) for k in SHOWN) + " |")
    return "\n".join(out)


def mean_drift_table(results: list[dict]) -> str:
    """The proven mean frequency over a window (Segment.mean_drift) per behaviour: how many
    were published as proven (all checked against the truth's mean over the same window, in
    the coverage), their median width and window, and how often one published as assumed
    held the truth."""
    out = ["| behaviour | mean drifts proven | median width ppm | median window s | "
           "assumed ones holding the truth |", "|---|---|---|---|---|"]
    by = defaultdict(list)
    for r in results:
        by[r["behaviour"]].append(r)
    for name in BEHAVIOURS + ("all",):
        rs = results if name == "all" else by.get(name, [])
        if not rs:
            continue
        md = [x for r in rs for x in r["mean_drift"]]
        ma = [x for r in rs for x in r["mean_drift_assumed"]]
        w = f"{np.median([x[0] for x in md]):.1f}" if md else "—"
        win = f"{np.median([x[1] for x in md]):.1f}" if md else "—"
        held = f"{np.mean(ma):.4f} of {len(ma)}" if ma else "—"
        out.append(f"| {name} | {len(md)} | {w} | {win} | {held} |")
    return "\n".join(out)


STEP_BINS_S = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 2.0)


def delay_table(results: list[dict]) -> str:
    """Detection of the `step` devices' steps by size (|s|, s) and by tick: how many, the share
    found (a break whose window holds it, or a later one), the median delay from the step to
    the end of that break's window."""
    out = ["| step size | tick | steps | found | delay s (median) | delay s (p90) |",
           "|---|---|---|---|---|---|"]
    steps = [r for r in results if r["behaviour"] == "step" and r["step_size"] is not None
             and r["delays"]]
    for lo, hi in zip(STEP_BINS_S[:-1], STEP_BINS_S[1:]):
        for tick in sorted({r["tick"] for r in steps}):
            rs = [r for r in steps if lo * NS <= r["step_size"] < hi * NS and r["tick"] == tick]
            if not rs:
                continue
            d = [r["delays"][0] for r in rs if r["delays"][0] is not None]
            med = f"{np.median(d):.2f}" if d else "—"
            p90 = f"{np.percentile(d, 90):.2f}" if d else "—"
            out.append(f"| {lo:g}–{hi:g} | {tick / NS:g} | {len(rs)} | {len(d) / len(rs):.3f} | "
                       f"{med} | {p90} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reads", type=int, nargs=2, default=READS, metavar=("LO", "HI"),
                    help="reads per device, uniform in [LO, HI)")
    ap.add_argument("--deadline-s", type=float, default=math.inf,
                    help="stop after this much wall time and report the devices done")
    ap.add_argument("--claim-free-running", action="store_true",
                    help="every device claims a free-running clock (fit_clock's free_running)")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    res = run(a.devices, a.workers, a.seed, tuple(a.reads), a.deadline_s, a.claim_free_running)
    print(markdown(table(res)))
    print()
    print(delay_table(res))
    print()
    print(mean_drift_table(res))
    print()
    print(calibration_table(res))
    print()
    print(misses_table(res))
    print()
    print(proven_table(res))
    print()
    print(rate_table(res))
    print()
    print(lag_table(res))
    print()
    print(revealed_table(res))
    for r in [r for r in res if r["revealed"] and not r["ok"]][:20]:
        print("REVEALED MISS", r["behaviour"], r["seed"], r["tick"], r["revealed"], r["misses"])
    bad = [r for r in res if r["admitted"] and not (r["ok"] and r["maps_ok"])]
    for r in bad[:20]:
        print("MISS", r["behaviour"], r["seed"], r["tick"], r["misses"])
    print(f"seconds: {time.perf_counter() - t:.0f}")
    return 0 if all(r["ok"] for r in res if r["admitted"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
