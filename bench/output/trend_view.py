"""`rackclock trend RUN RUN RUN...`: the measures of more than two runs side by side (e.g. a
firmware series, or the same rack week after week), in time order, with a figure.

Firmware and identity changes are listed first and marked on the figure's axis. Per device and
measure: each run's value and bounds, then the verdict of the last run against the reference
runs -- those since the previous firmware change, or a named baseline (bench.compare.eras) --
and the first step at which the bounds prove a change beyond the tolerance, both judged as
`rackclock compare` judges a pair (bench.compare.verdicts.verdict, the same tolerance file).
Runs are taken in time order (--as-given: as listed). Exit status by the one table
(bench.model.outcomes): 1 regressed, 3 undecided (0 with --allow-undecided), 0 pass, 2 bad input.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.compare.eras import Change, hull
from bench.compare.measures import Measure, identities, run_measures
from bench.compare.verdicts import JUDGED, fmt_value, verdict
from bench.model.outcomes import FAILING, PASS, REGRESSED, UNDECIDED, UNDECIDED_ROW, exit_code, outcome
from bench.model.rundata import Run
from bench.units import fmt_bounds, point_within

PASSING = ("unchanged", "improved")


@dataclass(frozen=True)
class Trend:
    device: str
    clock: str
    measure: str
    unit: str
    values: list                  # Measure | None per run, in run order
    overall: str                  # verdict of the last run against the reference runs
    reason: str
    first_change: int | None      # index of the run where a step first proves a change


def _started(run: Run) -> int:
    return int(run.manifest.started_ns or 0)


def trends(runs: list[Run], tolerances: Any, reference: list[int] | None = None) -> list[Trend]:
    """Per device and measure: the values over the runs and the verdict of the last run against
    the `reference` runs (their hull, bench.compare.eras; default: the first run)."""
    ref = reference or [0]
    per_run = [run_measures(r) for r in runs]
    planes = _planes(runs)
    keys = sorted({k for m in per_run for k in m})
    out = []
    for key in keys:
        device, clock, name = key
        vals = [m.get(key) for m in per_run]
        if _present(vals) < 2:
            continue
        rule = tolerances.rule(name, device, planes.get(device, ""))
        v, why = _last_against_reference(vals, ref, rule)
        unit = next(x.unit for x in vals if x is not None)
        out.append(Trend(device, clock, name, unit, vals, v, why, _first_change(vals, rule)))
    return out


def _present(vals: list) -> int:
    """How many runs have the measure."""
    return sum(v is not None for v in vals)


def _last_against_reference(vals: list, ref: list[int], rule: Any) -> tuple[str, str]:
    """(verdict, reason) of the last run's value against the hull of the reference runs'."""
    base = [m for i in ref if i < len(vals) - 1 and (m := vals[i]) is not None]
    last = vals[-1]
    if base and last is not None:
        v, _, why, _ = verdict(hull(base), last, rule)
        return v, why
    return "not compared", "not in both the reference runs and the last"


def _planes(runs: list[Run]) -> dict[str, str]:
    """Each device's plane, as the runs' identities give it."""
    return {d: x["plane"] for r in runs for d, x in identities(r).items()}


def _first_change(vals: list, rule: Any) -> int | None:
    """The index of the first run whose value a step from the run before proves changed."""
    prev = None
    for i, m in enumerate(vals):
        if m is None:
            continue
        if prev is not None and verdict(prev, m, rule)[0] in (*FAILING, "improved"):
            return i
        prev = m
    return None


def _cell(m: Measure | None, unit: str) -> str:
    if m is None:
        return "—"
    if m.lo == m.hi:
        return fmt_value(m.point, unit)
    return f"{fmt_value(point_within(m.point, m.lo, m.hi), unit)} {fmt_bounds(m.lo, m.hi, unit)}"


def run_labels(runs: list[Run]) -> list[str]:
    return [f"#{i + 1} {r.run_id}" for i, r in enumerate(runs)]


def _text_row(t: Trend) -> list[str]:
    return ([t.device, t.clock or "—", t.measure] + [_cell(m, t.unit) for m in t.values]
            + [t.overall.upper() if t.overall in (*FAILING, UNDECIDED_ROW) else t.overall,
               "—" if t.first_change is None else f"#{t.first_change + 1} vs #{t.first_change}"])


def _aligned(head: list[str], rows: list[list[str]]) -> list[str]:
    """Head, rule and rows in columns as wide as their widest cell."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    f = "  ".join(f"{{:<{w}}}" for w in widths)
    return [f.format(*head), f.format(*("-" * w for w in widths))] + \
        [f.format(*r).rstrip() for r in rows]


def reference_text(ref: list[int]) -> str:
    return f"run #{ref[0] + 1}" if len(ref) == 1 else f"runs #{ref[0] + 1}-#{ref[-1] + 1}"


def text(runs: list[Run], ts: list[Trend], show_all: bool = False,
         changes: list[Change] | None = None, ref: list[int] | None = None) -> str:
    ref = ref or [0]
    lines = _runs_and_changes(runs, changes)
    lines.append(f"the last run is judged against {reference_text(ref)}")
    shown = [t for t in ts if show_all or t.overall != "not compared"]
    head = ["device", "clock", "measure"] + [f"#{i + 1}" for i in range(len(runs))] + [
        f"last vs {reference_text(ref).split()[-1]}", "first proven step"]
    lines += ["", *_aligned(head, [_text_row(t) for t in shown])]
    if len(shown) < len(ts):
        lines.append(f"({len(ts) - len(shown)} measure(s) not judged; --all shows them)")
    lines += ["", verdict_line(ts, reference_text(ref))]
    return "\n".join(lines)


def _runs_and_changes(runs: list[Run], changes: list[Change] | None) -> list[str]:
    """The text's opening: the runs in time order, then the identity and firmware changes."""
    lines = ["runs, in time order:"] + [f"  {lab}  ({r.path})" for lab, r in
                                        zip(run_labels(runs), runs)]
    lines += ["", "identity and firmware changes:" if changes else
              "identity and firmware: no change over the runs"]
    return lines + [f"  at #{c.run + 1}: {c.device} {c.what} {c.before or '—'} -> "
                    f"{c.after or '—'}" for c in changes or []]


def trend_outcome(ts: list[Trend]) -> str:
    """PASS, REGRESSED or UNDECIDED of the last run (bench.model.outcomes)."""
    return outcome(any(t.overall in FAILING for t in ts),
                   any(t.overall == UNDECIDED_ROW for t in ts),
                   any(t.overall in JUDGED for t in ts))


def _names(ts: list[Trend]) -> str:
    return "; ".join(f"{t.device} {t.clock + ' ' if t.clock else ''}{t.measure} {t.overall}"
                     for t in ts[:6]) + (f" and {len(ts) - 6} more" if len(ts) > 6 else "")


def verdict_line(ts: list[Trend], against: str = "the first") -> str:
    o = trend_outcome(ts)
    if o == REGRESSED:
        return f"{REGRESSED}: last run against {against}: " + _names(
            [t for t in ts if t.overall in FAILING])
    unsure = [t for t in ts if t.overall == UNDECIDED_ROW]
    if o == UNDECIDED:
        return (f"{UNDECIDED}: no regression proven against {against}, but "
                + (f"{len(unsure)} measure(s) cannot be decided: {_names(unsure)}" if unsure
                   else "nothing was judged"))
    return f"{PASS}: every judged measure of the last run is proven unchanged against {against}"


MEASURES = ("drift", "latency", "bracket", "jitter")


def panels(ts: list[Trend], measures: tuple[str, ...] = MEASURES) -> list[Trend]:
    """The trends a figure can draw, regressions and undecided ones first."""
    pick = [t for t in ts if t.measure.split(".")[0] in measures and t.overall != "not compared"]
    return sorted(pick, key=lambda t: 0 if t.overall in FAILING else
                  1 if t.overall == UNDECIDED_ROW else 2)


def figure(runs: list[Run], ts: list[Trend], measures: tuple[str, ...] = MEASURES,
           max_panels: int = 24, changes: list[Change] | None = None) -> Any:
    """Small multiples: one panel per device and judged measure, each run's value with its
    bounds as an error bar, x the run's number in time order."""
    import matplotlib.pyplot as plt

    from bench.output.figures import COLUMN_IN, print_style

    planes = _planes(runs)
    pick = panels(ts, measures)[:max_panels]
    n = max(1, len(pick))
    cols = min(4, n)
    rows = -(-n // cols)
    with print_style():
        fig, axes = plt.subplots(rows, cols, figsize=(COLUMN_IN * 2, 0.4 + 1.45 * rows),
                                 squeeze=False)
        for ax in axes.ravel()[len(pick):]:
            ax.axis("off")
        for ax, t in zip(axes.ravel(), pick):
            _panel(ax, t, planes.get(t.device, ""), len(runs))
            for c in changes or []:        # firmware and identity changes on the axis
                if c.device == t.device:
                    ax.axvline(c.run + 0.5, color="tab:red", ls=":", lw=0.9)
                    ax.annotate(c.after, (c.run + 0.55, 1), xycoords=("data", "axes fraction"),
                                fontsize=5, color="tab:red", va="top")
        fig.suptitle("Trend over runs: value and proven bounds (or 95 % CI of the median) per "
                     "run; dashed: first step the bounds prove; dotted red: firmware or "
                     "identity change", fontsize=7)
        fig.tight_layout()
    return fig


def _panel(ax: Any, t: Trend, plane: str, n_runs: int) -> None:
    """One trend's panel: each run's value with its bounds as an error bar."""
    import numpy as np

    from bench.output.plots import plane_colour

    idx = [i for i, m in enumerate(t.values) if m is not None]
    ms = [t.values[i] for i in idx]
    sc, unit = _panel_scale(t, ms)
    pt = np.array([point_within(m.point, m.lo, m.hi) for m in ms]) / sc   # as the table prints it
    lo = np.array([m.lo for m in ms]) / sc
    hi = np.array([m.hi for m in ms]) / sc
    ax.errorbar(np.array(idx) + 1, pt, yerr=[pt - lo, hi - pt], fmt="o", ms=3,
                color=plane_colour(plane), capsize=2, elinewidth=0.8)
    if t.first_change is not None:
        ax.axvline(t.first_change + 0.5, color="k", ls="--", lw=0.7)
    ax.set_title(f"{t.device}{' · ' + t.clock if t.clock else ''}\n{t.measure}: "
                 f"{t.overall}", fontsize=6.5)
    ax.set_ylabel(f"{t.measure.split('.')[0]} ({unit})")
    ax.set_xticks(range(1, n_runs + 1))
    ax.set_xlim(0.5, n_runs + 0.5)
    ax.set_xlabel("run (time order)")
    ax.grid(alpha=0.3)


def _panel_scale(t: Trend, ms: list[Measure]) -> tuple[float, str]:
    """(divisor, unit) of a panel's axis: a time in the unit its bounds need, else as is."""
    from bench.output.figures import unit_for
    if t.unit == "ns":
        return unit_for([x for m in ms for x in (m.lo, m.hi)])
    return 1.0, t.unit


def as_dict(runs: list[Run], ts: list[Trend], changes: list[Change] | None = None,
            ref: list[int] | None = None) -> dict:
    def m(x):
        return None if x is None else {"lo": x.lo, "hi": x.hi, "point": x.point, "basis": x.basis}
    o = trend_outcome(ts)
    return {"runs": [str(r.path) for r in runs], "outcome": o, "exit_status": exit_code(o),
            "reference_runs": list(ref or [0]),
            "identity_changes": [{"run": c.run, "device": c.device, "what": c.what,
                                  "before": c.before, "after": c.after} for c in changes or []],
            "trends": [{"device": t.device, "clock": t.clock, "measure": t.measure,
                        "unit": t.unit, "values": [m(x) for x in t.values],
                        "last_vs_reference": t.overall, "reason": t.reason,
                        "first_change_run": t.first_change} for t in ts]}


def _testcase(suite: Any, t: Trend) -> None:
    """One measure's testcase: a regression fails, undecided or unjudged is skipped."""
    import xml.etree.ElementTree as ET
    tc = ET.SubElement(suite, "testcase", classname=t.device, time="0",
                       name=f"{t.clock + '.' if t.clock else ''}{t.measure}")
    if t.overall in FAILING:
        ET.SubElement(tc, "failure", message=f"{t.device} {t.measure} {t.overall}",
                      type=t.overall).text = t.reason
    elif t.overall not in PASSING:
        ET.SubElement(tc, "skipped", message=f"{t.overall}: {t.reason}")
    else:
        ET.SubElement(tc, "system-out").text = f"{t.overall}: {t.reason}"


def junit(runs: list[Run], ts: list[Trend], changes: list[Change] | None = None,
          ref: list[int] | None = None) -> str:
    """One testcase per device and measure (the last run against the reference runs):
    regressions fail, undecided and unjudged ones are skipped; the changes are properties."""
    import xml.etree.ElementTree as ET
    fails = [t for t in ts if t.overall in FAILING]
    suite = ET.Element("testsuite", name="rackclock trend", tests=str(len(ts)),
                       failures=str(len(fails)), errors="0",
                       skipped=str(sum(t.overall not in (*FAILING, *PASSING) for t in ts)))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="last run", value=str(runs[-1].path))
    ET.SubElement(props, "property", name="reference", value=", ".join(
        str(runs[i].path) for i in ref or [0]))
    for c in changes or []:
        ET.SubElement(props, "property", name=f"#{c.run + 1} {c.device}.{c.what}",
                      value=f"{c.before} -> {c.after}")
    for t in ts:
        _testcase(suite, t)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
