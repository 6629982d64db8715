"""The report's "Measurements" section: whatever an experiment recorded with `lab.measure` /
`lab.distribution` (measurements.json), with no experiment-specific code: one table of named
results with unit, bound, limit and outcome, and for each distribution its CDF (the per-event
lower and upper bounds as two curves: the true distribution lies between them).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from bench.model.rundata import load_measurements
from bench.model.vocabulary import word
from bench.output.report_sections import esc, figure_html, note_html, table_html
from bench.units import fmt_bounds

_SCALE = {"ns": [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]}


def fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "—"
    for scale, u in _SCALE.get(unit, []):
        if abs(x) >= scale or u == "ns":
            return f"{x / scale:.4g} {u}"
    return f"{x:.6g} {unit}"


def _limit(m: dict) -> str:
    lo, hi = m.get("limit_lo"), m.get("limit_hi")
    if lo is None and hi is None:
        return "—"
    return f"[{fmt(lo, m['unit']) if lo is not None else '-inf'}, " \
           f"{fmt(hi, m['unit']) if hi is not None else '+inf'}]"


def cdf_figure(title: str, unit: str, series: list[tuple[str, list, list]]):
    """Empirical CDFs of per-event lower and upper bounds, one pair per label (legend beside the
    axes, never on the data)."""
    import matplotlib.pyplot as plt

    from bench.output.figures import HALF_IN, margins, screen_style, unit_for
    allv = np.concatenate([np.asarray(a + b, dtype=float) for _, a, b in series] or [np.zeros(1)])
    scale, u = unit_for(allv) if unit == "ns" else (1.0, unit)
    with screen_style():
        fig, ax = plt.subplots(figsize=(HALF_IN * 2, 3.2))
        for k, (label, lo, hi) in enumerate(series):
            c = f"C{k % 10}"
            for vals, ls, what in ((lo, "--", "lower"), (hi, "-", "upper")):
                v = np.sort(np.asarray(vals, dtype=float)) / scale
                if len(v):
                    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", color=c,
                            ls=ls, label=f"{label} ({what})")
        ax.set_xlabel(f"{title} ({u})")
        ax.set_ylabel("fraction of events")
        ax.grid(True, alpha=0.4)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        margins(fig, left=0.8, right=2.9, top=0.2, bottom=0.6)
    return fig


def measurements(run: Any) -> str | None:
    ms = load_measurements(run.path)
    if not ms:
        return None
    rows = [[m.get("device") or "—", m["name"], fmt(m["point"], m["unit"]),
             fmt_bounds(m['lo'], m['hi'], m['unit'], 4), m.get("basis", ""),
             _limit(m), word(m.get("outcome") or "no limit")] for m in ms]
    out = [f"<h2>Measurements ({esc(run.manifest.experiment)})</h2>",
           table_html(["device", "measurement", "value", "bound", "basis", "limit", "outcome"],
                      rows),
           note_html("Recorded by the experiment (measurements.json). Outcome: pass when the whole "
                     "bound lies within the limit, fail when wholly outside, undecided when it "
                     "straddles a limit edge; no limit: recorded, not judged.")]
    docs = {m["name"]: m["doc"] for m in ms if m.get("doc")}
    if docs:
        out.append(table_html(["measurement", "what it is"], sorted(docs.items()), "kv"))
    out += _distribution_figures(run, ms)
    return "".join(out)


def _distribution_figures(run: Any, ms: list[dict]) -> list[str]:
    """A CDF figure per measurement that recorded distributions, one pair of curves per device."""
    groups: dict[str, list] = defaultdict(list)
    for m in ms:
        d = (m.get("extra") or {}).get("distribution")
        if d:
            groups[m["name"]].append((m.get("device") or m["name"], d["lo"], d["hi"]))
    out = []
    for name, series in sorted(groups.items()):
        unit = next(m["unit"] for m in ms if m["name"] == name)
        stem = "cdf_" + "".join(ch if ch.isalnum() else "_" for ch in name)
        out.append(figure_html(run, cdf_figure(name, unit, series), stem,
                               f"{name}: CDF of each event's lower (dashed) and upper (solid) "
                               f"bound, per device; the true distribution lies between them."))
    return out
