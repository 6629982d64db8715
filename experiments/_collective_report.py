"""experiments/collective_clock.py's analysis, table, verdict and figure (not an experiment).

Changes are paired by repeat against the baseline arm (the control unless chosen) and bounded
by the sign test's order statistics (bench/analysis/step_change.py); printed intervals are
rounded outward (bench.units.directed).
The run folder gets collective_clock.json (every run's figures and per-step times),
collective_clock.txt (the table and verdict as printed) and plots/step_times.png.
"""
from __future__ import annotations

from typing import Any

from bench.analysis.step_change import (
    UNDECIDED,
    Interval,
    quantile,
    ratio_interval_pct,
    verdict,
)
from bench.units import directed

MEASURES = (("median_ns", "step median"), ("p99_ns", "step p99"),
            ("allreduce_ns", "all-reduce median"), ("throughput", "throughput"))


def pct(iv: Interval) -> str:
    """[lo, hi] % rounded outward to 0.1 %."""
    return f"[{directed(iv.lo, 1, 1, False)}, {directed(iv.hi, 1, 1, True)}] %"


def _changes(runs: list[dict], control: list[dict]) -> dict[str, Interval]:
    ctl = {c["repeat"]: c for c in control}
    paired = [r for r in runs if r["repeat"] in ctl]
    return {m: ratio_interval_pct([r[m] for r in paired], [ctl[r["repeat"]][m] for r in paired])
            for m, _ in MEASURES}


def _arm_row(name: str, runs: list[dict], control: list[dict]) -> dict[str, Any]:
    steps = [float(s) for r in runs for s in r["step_ns"]]
    row: dict[str, Any] = {
        "arm": name, "runs": len(runs), "steps": len(steps),
        "median_ns": quantile(steps, 0.5), "p99_ns": quantile(steps, 0.99),
        "allreduce_ns": quantile([r["allreduce_ns"] for r in runs], 0.5),
        "throughput": quantile([r["throughput"] for r in runs], 0.5),
        "wall_reads": sum(r["wall_reads"] for r in runs) / len(runs),
        "mono_reads": sum(r["mono_reads"] for r in runs) / len(runs),
        "ranks": runs[-1]["ranks"],
        "stepped": [rk["stepped_at"] for r in runs for rk in r["ranks"]]}
    if runs is not control:
        row["change"] = {m: vars(iv) for m, iv in _changes(runs, control).items()}
    return row


def analyse(by_arm: dict[str, list[dict]], params: Any, descriptions: dict[str, str],
            headline: str) -> dict[str, Any]:
    """Per arm its figures and its changes against the baseline (`params.baseline`: the
    control, or faketime_zero to leave libfaketime's own cost out); the verdict on the
    `headline` arm ("a ±1 s rank offset"), or on the last arm when that was not run."""
    control = by_arm[params.baseline]
    rows = [_arm_row(a, runs, control) for a, runs in by_arm.items()]
    head = headline if headline in by_arm else list(by_arm)[-1]
    out: dict[str, Any] = {"arms": rows, "headline": head, "baseline": params.baseline,
                           "descriptions": {a: descriptions[a] for a in by_arm},
                           "backend": control[0]["backend"], "torch": control[0]["torch"]}
    if head == params.baseline:
        out["verdict"] = {"word": UNDECIDED, "line": "UNDECIDED: no arm but the baseline was run"}
        return out
    iv = Interval(**next(r for r in rows if r["arm"] == head)["change"]["median_ns"])
    v = verdict(iv, params.within_pct, params.confidence)
    what = f"under {descriptions[head]}" if head != headline else "under a ±1 s rank offset"
    if params.baseline != "control":
        what += f" (against {params.baseline})"
    conf = f"{100 * iv.confidence:.2f} % confidence, {iv.n} paired repeats"
    if v.word == "changed":
        line = f"step time changed by {pct(iv)} {what} ({conf})"
    elif v.word == "unchanged":
        line = (f"step time unchanged {what}: within {pct(iv)}; the smallest change these runs "
                f"could have shown is {directed(v.smallest_pct, 1, 1, True)} % ({conf})")
    elif iv.confidence < params.confidence:
        line = (f"UNDECIDED: step time changed by {pct(iv)} {what} at only {conf} (below "
                f"{100 * params.confidence:g} %: more repeats)")
    else:
        line = (f"UNDECIDED: step time changed by {pct(iv)} {what}, wider than ±"
                f"{params.within_pct:g} %: these runs could have shown only a change beyond "
                f"{directed(v.smallest_pct, 1, 1, True)} % ({conf}; more repeats narrow it)")
    out["verdict"] = {"word": v.word, "line": line, "interval_pct": vars(iv),
                      "smallest_pct": v.smallest_pct}
    return out


def table_lines(result: dict[str, Any]) -> list[str]:
    """The per-arm table: absolute figures, then each change against the baseline."""
    head = (f"{'arm':<13} {'step median':>11} {'p99':>9} {'all-reduce':>10} {'samples/s':>9} "
            f"{'wall reads':>10} {'mono reads':>10}   step median change   p99 change")
    lines = [head, "-" * len(head)]
    for r in result["arms"]:
        ch = r.get("change")
        med = pct(Interval(**ch["median_ns"])) if ch else "(baseline)"
        p99 = pct(Interval(**ch["p99_ns"])) if ch else ""
        lines.append(f"{r['arm']:<13} {r['median_ns'] / 1e3:8.1f} µs {r['p99_ns'] / 1e3:6.0f} µs "
                     f"{r['allreduce_ns'] / 1e3:7.1f} µs {r['throughput']:9.0f} "
                     f"{r['wall_reads']:10.2f} {r['mono_reads']:10.2f}   {med:<20} {p99}")
    lines.append("wall/mono reads: clock reads per step inside the all-reduce (per rank): "
                 "clock_gettime(CLOCK_REALTIME) + gettimeofday + time / the monotonic clocks")
    return lines


def _rank_text(k: dict[str, Any]) -> str:
    rate = "" if k["stepped_at"] is not None else f", {k['rate_ppm']:+.0f} ppm"
    return (f"rank {k['rank']} {k['offset_first_ns'] / 1e6:+.3f} -> "
            f"{k['offset_last_ns'] / 1e6:+.3f} ms{rate}")


def _step_text(r: dict[str, Any]) -> str:
    """Where the mid-run step landed, over every rank of every run of the arm."""
    st = r["stepped"]
    landed = [s for s in st if s is not None and s >= 0]
    at = f"at measured step {min(landed)}-{max(landed)} of {r['steps'] // r['runs']} in " \
        f"{len(landed)}" if landed else "in 0"
    return (f"; the step landed {at}/{len(st)} rank-runs, in the warm-up in "
            f"{sum(1 for s in st if s == -1)}, after the end in {st.count(None)}")


def applied_lines(result: dict[str, Any]) -> list[str]:
    """What reached the workers: each arm's per-rank wall-clock offset (first and last measured
    step, against the host's) and rate, from the workers' own clock reads."""
    out = ["perturbation as the workers saw it (wall clock against the host's; last repeat):"]
    for r in result["arms"]:
        ranks = "; ".join(_rank_text(k) for k in r["ranks"])
        step = _step_text(r) if r["arm"].startswith("step") else ""
        out.append(f"  {r['arm']:<13} {ranks}{step}")
    return out


def write_report(store: Any, by_arm: dict[str, list[dict]], result: dict[str, Any],
                 params: Any) -> list[str]:
    """The table, what reached the workers and the verdict: written to the run folder (with
    every run's figures and the figure) and returned for the terminal."""
    lines = [f"backend {result['backend']}, torch {result['torch']}; changes against "
             f"{result['baseline']}, "
             f"paired by repeat", *table_lines(result), "", *applied_lines(result), "",
             result["verdict"]["line"]]
    store.dir.write_json("collective_clock.json", {"result": result, "runs": by_arm})
    store.dir.write_text("collective_clock.txt", "\n".join(lines) + "\n")
    try:
        plot(store, by_arm)
        lines.append(f"figure: {store.path / 'plots' / 'step_times.png'}")
    except Exception as exc:         # a figure that cannot be drawn costs only itself
        store.dir.write_text("plots_error.txt", f"{exc!r}\n")
    return lines


def plot(store: Any, by_arm: dict[str, list[dict]]) -> None:
    """plots/step_times.png: each arm's step-time distribution (pooled over its runs) as a CDF,
    and its wall-clock and monotonic reads per all-reduce."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
    for i, (arm, runs) in enumerate(by_arm.items()):
        steps = sorted(s / 1e3 for r in runs for s in r["step_ns"])
        a.plot(steps, [(k + 1) / len(steps) for k in range(len(steps))], label=arm, lw=1.2)
        for j, (key, colour) in enumerate((("wall_reads", "C3"), ("mono_reads", "C7"))):
            b.bar(i + 0.4 * j, sum(r[key] for r in runs) / len(runs), 0.4, color=colour,
                  label=("wall clock", "monotonic")[j] if i == 0 else None)
    b.set_xticks([i + 0.2 for i in range(len(by_arm))], list(by_arm))
    b.legend(fontsize=8)
    a.set_xscale("log")
    a.set_xlabel("step time (µs), all repeats")
    a.set_ylabel("fraction of steps")
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    b.set_ylabel("clock reads per all-reduce (per rank)")
    b.tick_params(axis="x", rotation=45, labelsize=8)
    fig.tight_layout()
    with store.dir.sub("plots") as d, d.atomic("step_times.png") as f:
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)
