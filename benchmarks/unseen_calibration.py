"""The unseen-step statement against measurement (issue 39 item 3): for clocks of tick q read at
r Hz through the real probe schedule (virtual time, bench/sim/probing.py) and fitted by the real
estimator, the share of blips of size s lasting T that the reads show (a break, a read set
aside, a step or a lag the fit names), per size; the measured X99 (the smallest size from which
every larger one on the grid shows in at least 99 % of the trials) beside the X the
summary states for that T (bench/analysis/unseen.stated_step_ns) and the exploration reads'
guarantee alone (unseen.unseen_step_ns).

    nice .venv/bin/python benchmarks/unseen_calibration.py [--trials 150] [--workers 2]
        [--ticks 1,0.1,0.01] [--rates 1,2] [--durations 3,10,30] [--json OUT]

--json writes every measured row; --module writes bench/analysis/unseen_table.py from them (the
table the summary's stated X reads: bench/analysis/unseen.calibrated_step_ns).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.analysis.unseen import stated_step_ns, unseen_step_ns  # noqa: E402
from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402
from bench.sim.probing import read_like_runner  # noqa: E402

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
BEFORE_S = 20.0           # reads before the blip: the window has converged



def trial(args: tuple) -> tuple[bool, int, int, float, float, float]:
    """(shown, stated X, guaranteed X, bracket median ns, width ns, rate bound ppm): one blip."""
    q, r, s, T, seed = args
    rng = np.random.default_rng(seed)
    at = BEFORE_S + float(rng.uniform(0, 2.0))
    p = ClockParams(offset_s=float(rng.uniform(-50, 50)), drift_ppm=float(rng.uniform(-100, 100)),
                    resolution_s=q, blips=((at, s * float(rng.choice([-1, 1])), T),),
                    sample_delay_s=0.0)
    m = ClockModel(p, T0, seed)
    n = int((at + T + 10.0) * r)
    S, E, V, _a, _b = read_like_runner(m, n, r, int(round(q * NS)), rng)
    fit = fit_clock(S, E, V, int(round(q * NS)))
    shown = bool(fit.breaks or fit.outliers or fit.steps_seen or fit.unknown_breaks
                 or fit.lag_seen_ns or fit.update_ns)
    sg = fit.segments[0]
    b, w = float(sg.bracket_ns["median"]), float(sg.offset_ns.width)
    R = fit.drift_prior_ppm
    return (shown, stated_step_ns(fit.resolution_ns, b, w, r, within_s=T, rate_ppm=R)[0],
            unseen_step_ns(fit.resolution_ns, b, w, r, within_s=T, rate_ppm=R), b, w, R)


def sizes_for(q: float) -> list[float]:
    """Sizes from a thousandth of the tick (at least 1 ms) up to twice the tick, 1-2-5 steps
    (a step of more than a tick and the bracket and width shows on every read)."""
    out, x = [], 1e-3
    while x <= 2 * q * 1.0001:
        out += [round(x * m, 6) for m in (1, 2, 5) if max(1e-3, q / 1000) <= x * m <= 2 * q * 1.0001]
        x *= 10
    return out


def measure(q: float, r: float, T: float, trials: int, pool) -> dict:
    """Detection per size, ascending, until two sizes in a row show in >= 99 %."""
    rows, good = [], 0
    for s in sizes_for(q):
        res = pool.map(trial, [(q, r, s, T, 1000 * k + int(s * 1e6)) for k in range(trials)])
        det = float(np.mean([x[0] for x in res]))
        rows.append({"size_ns": int(round(s * NS)), "shown": det,
                     "stated_ns": int(np.median([x[1] for x in res])),
                     "guaranteed_ns": int(np.median([x[2] for x in res])),
                     "bracket_ns": float(np.median([x[3] for x in res])),
                     "width_ns": float(np.median([x[4] for x in res]))})
        good = good + 1 if det >= 0.99 else 0
        if good >= 2:
            break
    x99 = None
    for k in range(len(rows)):
        if all(rw["shown"] >= 0.99 for rw in rows[k:]) and good >= 2:
            x99 = rows[k]["size_ns"]
            break
    return {"q_ns": int(round(q * NS)), "rate_hz": r, "within_s": T, "trials": trials,
            "x99_ns": x99, "rows": rows}


def table_rows(out: list[dict]) -> list[dict]:
    """The calibration table's rows: per (tick, rate, time), X99 and the trials' median bracket
    and width at that size (the last size measured where none reached 99 %)."""
    rows = []
    for m in out:
        at = next((rw for rw in m["rows"] if rw["size_ns"] == m["x99_ns"]), m["rows"][-1])
        rows.append({"q_ns": m["q_ns"], "rate_hz": m["rate_hz"], "within_s": m["within_s"],
                     "x99_ns": m["x99_ns"], "trials": m["trials"],
                     "bracket_ns": round(at["bracket_ns"]), "width_ns": round(at["width_ns"])})
    return rows


FIELDS = ("q_ns", "rate_hz", "within_s", "x99_ns", "trials", "bracket_ns", "width_ns")


def write_module(path: Path, out: list[dict], args: str) -> None:
    """bench/analysis/unseen_table.py: its docstring kept, the rows as tuples of FIELDS."""
    head = Path(__file__).resolve().parents[1] / "bench" / "analysis" / "unseen_table.py"
    text = head.read_text()
    doc = text[:text.index('"""', 3) + 3] + "\n"
    body = "\n".join(f"    {tuple(r[f] for f in FIELDS)!r}," for r in table_rows(out))
    path.write_text(f"{doc}# {time.strftime('%Y-%m-%d')}, benchmarks/unseen_calibration.py {args}\n"
                    f"from typing import Any\n\nFIELDS = {FIELDS!r}\n"
                    f"ROWS: tuple[dict[str, Any], ...] = tuple(dict(zip(FIELDS, r)) for r in (\n{body}\n))\n")


def verify(q: float, r: float, T: float, trials: int, pool) -> dict:
    """Blips of exactly the X a clock like the trials states (stated_step_ns at the median
    bracket and width of a pilot of clean reads), lasting T: the share that shows, which the
    statement says is >= 0.99."""
    pilot = pool.map(trial, [(q, r, 0.0, T, 7_000_000 + k) for k in range(8)])
    b, w = float(np.median([x[3] for x in pilot])), float(np.median([x[4] for x in pilot]))
    x, measured = stated_step_ns(int(round(q * NS)), b, w, r, within_s=T,
                                 rate_ppm=max(x[5] for x in pilot))
    res = pool.map(trial, [(q, r, x / NS, T, 9_000_000 + k) for k in range(trials)])
    return {"q_ns": int(round(q * NS)), "rate_hz": r, "within_s": T, "stated_ns": x,
            "measured": measured, "shown": float(np.mean([z[0] for z in res])), "trials": trials}


def fmt_ms(ns) -> str:
    return "—" if ns is None else f"{ns / 1e6:g}"


def cells(a) -> list[tuple[float, float, float]]:
    return [(float(q), float(r), float(T)) for q in a.ticks.split(",")
            for r in a.rates.split(",") for T in a.durations.split(",")]


def verify_table(a, t0: float) -> int:
    print("| tick | rate Hz | lasting s | stated X ms | basis | blips of X shown | trials |")
    print("|---|---|---|---|---|---|---|")
    with Pool(a.workers) as pool:
        for q, r, T in cells(a):
            v = verify(q, r, T, a.trials, pool)
            print(f"| {q:g} s | {r:g} | {T:g} | {v['stated_ns'] / 1e6:.3g} | "
                  f"{'measured' if v['measured'] else 'exploration reads'} | {v['shown']:.3f} | "
                  f"{v['trials']} |", flush=True)
    print(f"seconds: {time.perf_counter() - t0:.0f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=150)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ticks", default="1,0.1,0.01")
    ap.add_argument("--rates", default="1,2")
    ap.add_argument("--durations", default="3,10,30")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--module", type=Path, help="write the calibration table module here")
    ap.add_argument("--verify", action="store_true",
                    help="only blips of the stated X itself: the share that shows")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.verify:
        return verify_table(a, t0)
    out = []
    with Pool(a.workers) as pool:
        for q in [float(x) for x in a.ticks.split(",")]:
            for r in [float(x) for x in a.rates.split(",")]:
                for T in [float(x) for x in a.durations.split(",")]:
                    out.append(measure(q, r, T, a.trials, pool))
                    print(f"done q={q} r={r} T={T}: {time.perf_counter() - t0:.0f} s",
                          file=sys.stderr, flush=True)
    print("| tick | rate Hz | lasting s | measured X99 ms | stated X ms | stated ÷ measured | "
          "exploration guarantee ms | bracket p50 ms | width ms | trials per size |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in out:
        last = m["rows"][-1]
        at = next((rw for rw in m["rows"] if rw["size_ns"] == m["x99_ns"]), last)
        ratio = (f"{at['stated_ns'] / m['x99_ns']:.2f}" if m["x99_ns"] else "—")
        print(f"| {m['q_ns'] / NS:g} s | {m['rate_hz']:g} | {m['within_s']:g} | "
              f"{fmt_ms(m['x99_ns'])} | {fmt_ms(at['stated_ns'])} | {ratio} | "
              f"{fmt_ms(at['guaranteed_ns'])} | {at['bracket_ns'] / 1e6:.2f} | "
              f"{at['width_ns'] / 1e6:.2f} | {m['trials']} |")
    print()
    for m in out:
        print(f"q={m['q_ns'] / NS:g} s r={m['rate_hz']:g} T={m['within_s']:g}: " + ", ".join(
            f"{rw['size_ns'] / 1e6:g} ms {rw['shown']:.3f}" for rw in m["rows"]))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    if a.module:
        write_module(a.module, out, " ".join(sys.argv[1:]))
    print(f"seconds: {time.perf_counter() - t0:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
