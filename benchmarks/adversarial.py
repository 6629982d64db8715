"""Adversarial clocks built from first principles, independent of the soundness fuzz's `draw`
(issue 39): what an ntpd or chrony client, a hunting PLL, a clock stepped and stepped back, a
tick that lags its own edge and a driver that misstates the resolution do to a clock's reading.
Each is read through the real probe schedule (bench.sim.probing.read_like_runner: aimed and
exploration reads, loopback- or sideband-like brackets, lost reads) and fitted by the real
estimator (bench.analysis.estimate.fit_clock) as the fuzz does; every bound labelled proven is
checked against the clock's exact offset.

The clock: offset(t) = θ0 + ρ0·(t − t0) + the phase its corrections added (slews: a rate for a
while; steps) + a PLL's hunting (a rate A·sin(2πt/P + φ), integrated exactly); its reading at t
is the value of its last tick edge shown by t: edge n (the clock crossing n·q) shows λn late.

Per case: coverage (devices whose every proven bound holds the truth), the share of devices
whose latest segment is proven, the median proven width, proven misses with what the reads
showed, and whether the model statement (bench.model.summary.model_statement, the model line
on screen) names the assumption the case breaks.

    nice .venv/bin/python benchmarks/adversarial.py [--devices-per-case N] [--seed S]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis.estimate import fit_clock  # noqa: E402
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM  # noqa: E402
from bench.model.summary import model_statement  # noqa: E402
from bench.sim.probing import read_like_runner  # noqa: E402

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_790_000_000 * NS


@dataclass
class _Params:
    """What read_like_runner asks of a clock model's parameters."""
    resolution_ns: int
    counter: bool = False


@dataclass
class Clock:
    """A wall clock from first principles. Times in reference ns; rates in ppm."""
    t0_ns: int
    offset_ns: float
    drift_ppm: float
    tick_ns: int                                  # the real tick the value is floored to
    slews: list[tuple[float, float, float]] = field(default_factory=list)  # (at s, for s, ppm)
    steps: list[tuple[float, float]] = field(default_factory=list)          # (at s, size ns)
    hunt: tuple[float, float, float] | None = None   # (amplitude ppm, period s, phase rad)
    lag_ms: tuple[float, float] | None = None        # each edge shows λ ∈ [lo, hi] ms late
    update_ns: int = 0     # the value moves only every update_ns, showing the clock then
    seed: int = 0

    @property
    def p(self) -> _Params:
        return _Params(self.tick_ns)

    def down(self, t_ns: int) -> bool:
        return False

    def offset(self, t_ns: int) -> float:
        """The clock minus the reference at t, ns (exact, in float)."""
        x = (t_ns - self.t0_ns) / NS
        off = self.offset_ns + self.drift_ppm * 1e3 * x
        for a, d, r in self.slews:
            off += r * 1e3 * min(max(x - a, 0.0), d)
        off += sum(size for a, size in self.steps if a <= x)
        if self.hunt:
            amp, per, ph = self.hunt
            w = 2 * math.pi / per
            off += amp * 1e3 / w * (math.cos(ph) - math.cos(w * x + ph))
        return off

    def rate_ppm(self, t_ns: int) -> float:
        x = (t_ns - self.t0_ns) / NS
        r = self.drift_ppm + sum(p for a, d, p in self.slews if a <= x < a + d)
        if self.hunt:
            amp, per, ph = self.hunt
            r += amp * math.sin(2 * math.pi / per * x + ph)
        return r

    def max_rate_ppm(self, t1: int, t2: int) -> float:
        ts = np.arange(t1, t2, NS // 50, dtype=np.int64)
        return max(abs(self.rate_ppm(int(t))) for t in ts)

    def clock_ns(self, t_ns: int) -> int:
        return int(t_ns) + round(self.offset(int(t_ns)))

    def _edge_ns(self, n: int) -> int:
        """The reference instant the clock crosses n·tick (a fixed point: the offset moves at
        ppm rates, so three rounds reach the ns)."""
        target = n * self.tick_ns
        t = target - round(self.offset(target))
        for _ in range(3):
            t = target - round(self.offset(t))
        return t

    def _lag_ns(self, n: int) -> int:
        lo, hi = self.lag_ms or (0.0, 0.0)
        u = zlib.crc32(f"{self.seed}/{n}".encode()) / 2 ** 32
        return round((lo + (hi - lo) * u) * MS)

    def read_ns(self, t_ns: int) -> int:
        t_ns = int(t_ns)
        if self.update_ns:        # shows its clock at its last update, to the ns it declares
            u = self.t0_ns + (t_ns - self.t0_ns) // self.update_ns * self.update_ns
            return self.clock_ns(u) // self.tick_ns * self.tick_ns
        n = self.clock_ns(t_ns) // self.tick_ns
        if not self.lag_ms:
            return n * self.tick_ns
        while self._edge_ns(n) + self._lag_ns(n) > t_ns:   # the latest edge shown by t
            n -= 1
        return n * self.tick_ns

    def true_steps(self) -> list[tuple[int, float]]:
        return [(self.t0_ns + round(a * NS), s) for a, s in self.steps]


# -- the cases ------------------------------------------------------------------------------

def _sign(rng) -> float:
    return float(rng.choice([-1.0, 1.0]))


def _daemon(rng, clock: Clock, dur: float, mode: str) -> None:
    """An NTP client correcting every 2-8 s the offset its clock drifted (ρ0) since its last
    correction, measured with ±0.2 ms of noise: by a slew at 500 ppm (ntpd's kernel limit),
    at 1,000-83,333 ppm (chrony's short slews), or by a step of ±1-50 ms (a client stepping to
    a noisy server's answer)."""
    err, x = 0.0, 0.0        # the error relative to θ0 the daemon corrects
    while True:
        poll = float(rng.uniform(2, 8))
        err += clock.drift_ppm * 1e3 * poll
        x += poll
        if x >= dur:
            return
        if mode == "step":
            size = float(rng.uniform(1, 50)) * MS * _sign(rng)
            clock.steps.append((x, size))
            err += size
            continue
        fix = -err + float(rng.uniform(-0.2, 0.2)) * MS
        rate = 500.0 if mode == "ntpd" else float(10 ** rng.uniform(3, math.log10(83_333)))
        d = abs(fix) / (rate * 1e3)
        clock.slews.append((x, d, math.copysign(rate, fix)))
        err += fix


def make(rng: np.random.Generator, case: str, seed: int) -> dict:
    """One device of `case`: its clock, read plan, what the driver declares, and the
    assumption it breaks ("" when inside the stated model)."""
    rate_hz = float(rng.choice([1.0, 2.0]))
    n = int(rng.integers(30, 90))
    dur = n / rate_hz + 2
    tick = int(float(rng.choice([1e-3, 0.01, 0.1, 1.0])) * NS)
    clk = Clock(T0, float(rng.uniform(-2, 2)) * NS,
                float(rng.uniform(50, 200)) * _sign(rng), tick, seed=seed)
    dev = {"case": case, "rate_hz": rate_hz, "n": n, "sideband": bool(rng.uniform() < 0.25),
           "declared_ns": tick, "lag_ns": 0, "breaks": "", "seed": seed}
    if case in ("ntpd_slew", "chrony_slew", "ntp_step"):
        _daemon(rng, clk, dur, {"ntpd_slew": "ntpd", "chrony_slew": "chrony"}.get(case, "step"))
    elif case in ("step_back_once", "step_back_repeated"):
        every = float(rng.uniform(6, 15)) if case == "step_back_repeated" else dur
        x = float(rng.uniform(3, 0.5 * dur))
        while x < dur:
            size = float(10 ** rng.uniform(-2, 0)) * NS * _sign(rng)
            back = float(rng.uniform(0.1, 2.0))
            clk.steps += [(x, size), (x + back, -size)]
            x += every
    elif case in ("lag_declared", "lag_undeclared", "lag_short_declared"):
        clk.tick_ns = dev["declared_ns"] = int(float(rng.choice([0.01, 0.1, 1.0])) * NS)
        lo = float(rng.uniform(0, 10))
        clk.lag_ms = (lo, min(20.0, lo + float(rng.uniform(2, 10))))
        dev["lag_ns"] = {"lag_declared": 20 * MS, "lag_undeclared": 0}.get(
            case, round(clk.lag_ms[1] * MS * float(rng.uniform(0.3, 0.8))))
    elif case in ("res_finer", "res_coarser", "res_finer_unaligned"):
        k = int(rng.integers(10, 101))
        if case == "res_coarser":
            clk.tick_ns = int(float(rng.choice([1e-5, 1e-4, 1e-3])) * NS)
            dev["declared_ns"] = clk.tick_ns * k
        elif case == "res_finer":
            clk.tick_ns = int(float(rng.choice([0.1, 1.0])) * NS)
            dev["declared_ns"] = clk.tick_ns // k
        else:            # updates every real tick, shows its clock then to a declared fine tick
            real = int(float(rng.choice([0.1, 1.0])) * NS)
            clk.tick_ns = dev["declared_ns"] = max(MS, real // k // MS * MS)
            clk.update_ns = real
    elif case == "res_slow_update":   # a value that moves every 1.2-3 ticks, showing its clock
        clk.update_ns = round(float(rng.uniform(1.2, 3.0)) * tick)     # then, floored to it
    elif case == "pll_hunt":
        clk.hunt = (float(rng.uniform(100, 1500)), float(rng.uniform(10, 60)),
                    float(rng.uniform(0, 2 * math.pi)))
    dev["clock"] = clk
    return dev


CASES = ("ntpd_slew", "chrony_slew", "ntp_step", "step_back_once", "step_back_repeated",
         "lag_declared", "lag_undeclared", "lag_short_declared", "res_finer", "res_coarser",
         "res_finer_unaligned", "pll_hunt", "res_slow_update")


def _breaks_what(dev: dict, clk: Clock, t1: int, t2: int, prior: float) -> str:
    """The assumption of the stated model the device breaks over [t1, t2] ("" none)."""
    out = []
    if clk.max_rate_ppm(t1, t2) > prior:
        out.append("rate")
    if clk.lag_ms and clk.lag_ms[1] * MS > dev["lag_ns"]:
        out.append("lag")
    if clk.update_ns and clk.update_ns > dev["declared_ns"]:
        out.append("update")
    if len([a for a, _ in clk.true_steps() if t1 < a <= t2]) >= 2:
        out.append("steps")      # more than one unseen step per segment may happen
    return ",".join(out)


def _named(what: str, text: str) -> bool:
    """Does the model statement name every assumption `what` lists as assumed or bounded?"""
    need = {"rate": "assumed" in text.split(");")[0],
            "lag": "lags its clock" in text or "no lag declared" in text,
            "update": "lags its clock" in text or "no lag declared" in text,
            "steps": "at most one step inside a segment unseen" in text}
    return all(need[w] for w in what.split(",") if w)


def score(dev: dict) -> dict:
    rng = np.random.default_rng(dev["seed"])
    clk: Clock = dev["clock"]
    s, e, v, at, _bad = read_like_runner(clk, dev["n"], dev["rate_hz"], dev["declared_ns"], rng,
                                         sideband=dev["sideband"])
    fit = fit_clock(s, e, v, dev["declared_ns"], lag_ns=dev["lag_ns"])
    checked: dict[str, int] = {}
    misses = check(fit, clk, checked)
    what = _breaks_what(dev, clk, int(s[0]), int(e[-1]), fit.drift_prior_ppm)
    text = model_statement(fit.drift_prior_ppm, dev["lag_ns"], fit, dev["rate_hz"])["model"]
    last = fit.segments[-1] if fit.segments else None
    proven_last = last is not None and last.offset_status == "proven"
    return {"case": dev["case"], "seed": dev["seed"], "ok": not misses, "misses": misses[:3],
            "checked": checked, "missed": [m[0] for m in misses],
            "proven_last": proven_last, "width": last.offset_ns.width if proven_last else None,
            "breaks": what, "named": _named(what, text), "shown": _shown(fit),
            "miss_ns": max([m[-1] for m in misses if m[0] == "offset"] or [0.0]),
            "lag_beyond_ns": max(0.0, clk.lag_ms[1] * MS - dev["lag_ns"]) if clk.lag_ms else 0.0}


def _shown(fit) -> str:
    n = max(len(fit.breaks), fit.steps_seen + fit.unknown_breaks)
    return ("a lag the values prove" if fit.lag_seen_ns or fit.update_ns
            else "two or more breaks" if n >= 2 else "one break" if n == 1
            else "reads set aside only" if fit.outliers else "nothing")


def check(fit, clk: Clock, checked: dict[str, int] | None = None) -> list[tuple]:
    """Every bound labelled proven against the truth: the offset at the epoch and at five
    instants of each proven segment, a proven mean drift, a proven drift, the size of every
    break between two proven segments (the true steps in its window, else the offset's
    change across it). (kind, instant, how far off, ns or ppm); `checked` counts the bounds
    checked by kind."""
    out: list[tuple] = []
    n = checked if checked is not None else {}

    def count(kind: str) -> None:
        n[kind] = n.get(kind, 0) + 1
    for sg in fit.segments:
        if sg.offset_status == "proven":
            pts = np.linspace(sg.start_ns, sg.end_ns, 7).astype(np.int64)[1:-1]
            for t, b in [(sg.epoch_ns, sg.offset_ns)] + [(int(x), sg.proven_offset_at(int(x)))
                                                         for x in pts]:
                tr = clk.offset(int(t))
                count("offset") if b is not None else None
                if b is not None and not (b.lo <= tr <= b.hi):
                    out.append(("offset", int(t), max(b.lo - tr, tr - b.hi)))
        md = sg.mean_drift
        if md is not None and md["status"] == "proven":
            t1, t2 = md["from_ns"], md["to_ns"]
            tr = (clk.offset(t2) - clk.offset(t1)) / (t2 - t1) * 1e6
            count("mean_drift")
            if not md["lo"] <= tr <= md["hi"]:
                out.append(("mean_drift", t1, max(md["lo"] - tr, tr - md["hi"])))
        if sg.drift_status == "proven":
            tr = clk.rate_ppm(sg.epoch_ns)
            count("drift")
            if not sg.drift_ppm.lo - 1e-6 <= tr <= sg.drift_ppm.hi + 1e-6:
                out.append(("drift", sg.epoch_ns, max(sg.drift_ppm.lo - tr, tr - sg.drift_ppm.hi)))
    for k, br in enumerate(fit.breaks):
        if not (fit.segments[k].offset_status == fit.segments[k + 1].offset_status == "proven"):
            continue
        inside = [sz for a, sz in clk.true_steps() if br.after_ns < a <= br.before_ns]
        change = clk.offset(br.before_ns) - clk.offset(br.after_ns)
        count("size") if br.size_ns is not None else None
        if br.size_ns is not None and not (br.size_ns.contains(sum(inside)) if inside else False) \
                and not br.size_ns.contains(change):
            out.append(("size", br.after_ns, min(abs(br.size_ns.lo - change),
                                                  abs(change - br.size_ns.hi))))
    return out


def run(per_case: int, seed: int, cases: tuple[str, ...] = CASES) -> list[dict]:
    rng = np.random.default_rng(seed)
    devs = [make(rng, c, int(rng.integers(1 << 31))) for _ in range(per_case) for c in cases]
    return [score(d) for d in devs]


def table(results: list[dict]) -> str:
    by = defaultdict(list)
    for r in results:
        by[r["case"]].append(r)
    head = ("| case | devices | coverage | share proven (latest) | median proven width ms | "
            "breaks the model (share) | of those, named on the model line | proven misses: "
            "what the reads showed | worst offset miss ms |")
    out = [head, "|" + "---|" * 9]
    for c, rs in by.items():
        w = [r["width"] for r in rs if r["width"] is not None]
        br = [r for r in rs if r["breaks"]]
        shown: dict[str, int] = defaultdict(int)
        for r in rs:
            if not r["ok"]:
                shown[r["shown"]] += 1
        out.append(f"| {c} | {len(rs)} | {np.mean([r['ok'] for r in rs]):.4f} | "
                   f"{np.mean([r['proven_last'] for r in rs]):.3f} | "
                   f"{(np.median(w) / MS if w else float('nan')):.3f} | "
                   f"{len(br) / len(rs):.3f} | "
                   f"{(np.mean([r['named'] for r in br]) if br else float('nan')):.3f} | "
                   f"{', '.join(f'{k} {v}' for k, v in sorted(shown.items())) or '—'} | "
                   f"{max(r['miss_ns'] for r in rs) / MS:.3f} |")
    return "\n".join(out)


def lag_line(results: list[dict]) -> str:
    """How far the proven offsets of clocks lagging beyond the declared lag missed, per ms of
    lag beyond it (median, max), over those devices."""
    rs = [r for r in results if r["lag_beyond_ns"] > 0]
    if not rs:
        return ""
    per = [r["miss_ns"] / r["lag_beyond_ns"] for r in rs]
    return (f"lag beyond the declared: {len(rs)} devices, coverage "
            f"{np.mean([r['ok'] for r in rs]):.4f}, proven offsets miss by "
            f"{np.median(per):.3f} (median), {np.max(per):.3f} (max) ms per ms of lag beyond "
            f"the declared")


KINDS = ("offset", "mean_drift", "drift", "size")


def kinds_table(results: list[dict]) -> str:
    """Per case and kind of proven bound: the share of those checked that held the truth, of
    how many (offsets at the epoch and at five instants of each proven segment, proven mean
    drifts, proven drifts, sizes of breaks between two proven segments)."""
    by = defaultdict(list)
    for r in results:
        by[r["case"]].append(r)
    out = ["| case | " + " | ".join(f"{k} held (of checked)" for k in KINDS) + " |",
           "|---|" + "---|" * len(KINDS)]
    for c, rs in by.items():
        cells = []
        for k in KINDS:
            n = sum(r["checked"].get(k, 0) for r in rs)
            bad = sum(r["missed"].count(k) for r in rs)
            cells.append(f"{1 - bad / n:.4f} ({n})" if n else "— (0)")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices-per-case", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    ap.add_argument("--show-misses", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = run(a.devices_per_case, a.seed, tuple(a.cases))
    print(table(res))
    print()
    print(kinds_table(res))
    print()
    print(lag_line(res))
    if a.show_misses:
        for r in res:
            if not r["ok"]:
                print(r["case"], r["seed"], r["shown"], r["breaks"], r["misses"])
    print(f"seconds: {time.perf_counter() - t0:.0f} (prior {DEFAULT_DRIFT_PRIOR_PPM:g} ppm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
