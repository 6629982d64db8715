"""How a comparison is written: terminal table, Markdown, JSON, JUnit XML."""
from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

from bench.compare.verdicts import Comparison, Row, fmt_span
from bench.compare.verdicts import fmt_value as fmt
from bench.model.outcomes import PASS, REGRESSED, UNDECIDED, UNDECIDED_ROW
from bench.model.texttable import WIDTH, fit_columns, left_out_lines, render, wrap
from bench.units import fmt_bounds, fmt_interval_ns, fmt_ns


def bounds(m, unit: str) -> str:
    """A value with its bounds, every figure to the precision of the bound's width."""
    if m is None:
        return "—"
    if m.lo == m.hi:
        return fmt(m.point, unit)
    return f"{_precise(m.point, m.hi - m.lo, unit)} {_interval(m.lo, m.hi, unit)}"


def _precise(x: float, width: float, unit: str, signed: bool = False) -> str:
    if unit != "ns":
        return fmt(x, unit, signed)
    return ("+" if signed and x > 0 else "") + fmt_ns(x, precision_ns=width / 10 or None)


def _interval(lo: float, hi: float, unit: str, signed: bool = False) -> str:
    text = fmt_interval_ns(lo, hi) if unit == "ns" else fmt_bounds(lo, hi, unit)
    return re.sub(r"(?<=[\[ ])(?=\d)", "+", text) if signed else text


def change(r: Row) -> str:
    """The change of the point values, and the interval the bounds prove it lies in."""
    c = r.change
    if c is None:
        return "—"
    b, k = r.baseline, r.candidate
    if b is None or k is None:           # never: a change has both sides
        return "—"
    if b.lo == b.hi and k.lo == k.hi:
        return fmt(c, r.unit, True)
    lo, hi = k.lo - b.hi, k.hi - b.lo
    return f"{_precise(c, hi - lo, r.unit, True)} {_interval(lo, hi, r.unit, True)}"


def verdict_cell(r: Row) -> str:
    v = r.verdict.upper() if r.failed or r.verdict == UNDECIDED_ROW else r.verdict
    if r.detectable is not None and not r.failed and not (
            r.baseline and r.baseline.basis == "exact"):   # an exact count: any change shows
        v += f" (detects {detectable_text(r)})"
    if r.decide_s is not None:
        v += f": run {fmt_span(r.decide_s)}"
    return v


def _up2(x: float) -> float:
    """x rounded up to two significant digits: a threshold is never printed smaller."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step - 1e-9) * step


def detectable_text(r: Row) -> str:
    """'≥+120 ms': the smallest change of this measure the pair would prove (bench.compare.
    verdicts.detectable), rounded up to two digits."""
    assert r.detectable is not None
    return "≥+" + fmt(_up2(r.detectable), r.unit)


def row_cells(r: Row) -> list[str]:
    m = r.baseline or r.candidate
    basis = (m.basis + (" (on the prior)" if any(x is not None and x.assumed for x in
                                                 (r.baseline, r.candidate)) else "")) if m else ""
    return [r.device, r.clock or "—", r.measure, basis, bounds(r.baseline, r.unit),
            bounds(r.candidate, r.unit), change(r),
            "—" if r.tolerance is None else "±" + fmt(r.tolerance, r.unit), verdict_cell(r)]


HEAD = ["device", "clock", "measure", "bounds", "baseline", "candidate", "change [proven]",
        "tolerance", "verdict"]
COMPACT = ["measure", "baseline", "candidate", "change [proven]", "tolerance", "verdict"]
KEEP = [0, 5, 3, 4, 2, 1]      # the compact columns in the order they are given room


def compact_cells(r: Row) -> list[str]:
    """The terminal's default row: the bounds alone (to their precision), the proven change."""
    def iv(m):
        return "—" if m is None else fmt(m.point, r.unit) if m.lo == m.hi else \
            _interval(m.lo, m.hi, r.unit)
    b, k = r.baseline, r.candidate
    ch = "—" if r.change is None or b is None or k is None else fmt(r.change, r.unit, True) if (
        b.lo == b.hi and k.lo == k.hi) else _interval(k.lo - b.hi, k.hi - b.lo, r.unit, True)
    return [_name(r), iv(b), iv(k), ch,
            "—" if r.tolerance is None else "±" + fmt(r.tolerance, r.unit), verdict_cell(r)]


def _table(head, rows, width: int | None = None) -> list[str]:
    return render(head, rows, width=width, clip=0)


def _name(r: Row) -> str:
    return f"{r.device} {r.clock + ' ' if r.clock else ''}{r.measure}"


def verdict_line(cmp: Comparison) -> str:
    fails, unsure = cmp.failures, cmp.undecided
    if fails:
        what = "; ".join(f"{_name(r)} {r.verdict}" for r in fails[:6]) + (
            f" and {len(fails) - 6} more" if len(fails) > 6 else "")
        line = f"{REGRESSED}: {len(fails)} regression(s): {what}"
        return line + (f" ({len(unsure)} more undecided)" if unsure else "")
    if not cmp.judged:
        return (f"{UNDECIDED}: nothing was judged (no measure bounded in both runs): "
                f"not a pass")
    if unsure:
        return _undecided_line(unsure)
    return f"{PASS}: every judged measure is proven unchanged or better within its tolerance"


def _undecided_line(unsure: list) -> str:
    """No regression proven, but these measures undecided: which, and the runs that would
    decide them."""
    spans = [r.decide_s for r in unsure if r.decide_s is not None]
    what = "; ".join(_name(r) for r in unsure[:6]) + (" …" if len(unsure) > 6 else "")
    return (f"{UNDECIDED}: no regression proven, but {len(unsure)} measure(s) "
            f"cannot be decided at their tolerance ({what})"
            + (f"; runs of {fmt_span(max(spans))} each would decide "
               f"{'them' if len(spans) == len(unsure) else f'{len(spans)} of them'}"
               if spans else ""))


def _identity_lines(cmp: Comparison) -> list[str]:
    if not cmp.identity_changes:
        return ["identity and firmware: no difference"]
    return ["identity and firmware differences:"] + [
        f"  {dev}: {what} {before or '—'} -> {after or '—'}"
        for dev, what, before, after in cmp.identity_changes]


def _nothing_to_compare(cmp: Comparison, empty: list[str]) -> list[str]:
    """The lines that replace the table when a run has no measures."""
    lost = sum(r.verdict == "lost" for r in cmp.rows)
    return ["", f"nothing to compare: the {' and the '.join(empty)} "
                f"{'has' if len(empty) == 1 else 'have'} no measures"
                + (f"; all {lost} measure(s) of the baseline are lost (--all lists them)"
                   if lost else ""), "", verdict_line(cmp)]


def _table_lines(cmp: Comparison, show_all: bool, width: int | None) -> list[str]:
    """The measures' table (every column when `width` is None) and what it left out."""
    rows = [r for r in cmp.rows if show_all or r.verdict != "not compared"]
    hidden = len(cmp.rows) - len(rows)
    if width is None:
        lines = [""] + render(HEAD, [row_cells(r) for r in rows], width=None)
    else:
        cells = [compact_cells(r) for r in rows]
        cols, left = fit_columns(COMPACT, cells, KEEP, width)
        lines = [""] + render(COMPACT, cells, cols, width, clip=0)
        lines += left_out_lines(left + ["point values", "bounds basis"], width)
    if hidden:
        lines.append(f"({hidden} measure(s) reported but not compared; --all shows them)")
    return lines


def terminal(cmp: Comparison, show_all: bool = False, width: int | None = WIDTH) -> str:
    """The comparison for a terminal, fitted to `width` columns (None: every column)."""
    lines = [f"baseline:  {cmp.baseline.path}", f"candidate: {cmp.candidate.path}",
             f"tolerances: {cmp.tolerances}", ""]
    lines += _identity_lines(cmp)
    lines += [x for n in cmp.notes for x in wrap(f"note: {n}", width)]
    empty = [label for run, label in ((cmp.baseline, "baseline"), (cmp.candidate, "candidate"))
             if not run.summary.devices]
    if empty and not show_all:
        return "\n".join(lines + _nothing_to_compare(cmp, empty))
    lines += _table_lines(cmp, show_all, width)
    for r in cmp.rows:
        if r.verdict in (UNDECIDED_ROW, "changed (not judged)") or r.failed:
            lines += wrap(f"  {_name(r)}: {verdict_cell(r)}: {r.reason}", width, "    ")
    lines += [""] + wrap(verdict_line(cmp), width, "  ")
    return "\n".join(lines)


def markdown(cmp: Comparison) -> str:
    def md_row(cells):
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = ["# rackclock compare", "", f"- baseline: `{cmp.baseline.path}`",
             f"- candidate: `{cmp.candidate.path}`", f"- tolerances: `{cmp.tolerances}`", "",
             f"**{verdict_line(cmp)}**", "", "## Identity and firmware", ""]
    if cmp.identity_changes:
        lines += [md_row(["device", "what", "baseline", "candidate"]),
                  md_row(["---"] * 4)]
        lines += [md_row([d, w, b or "—", a or "—"]) for d, w, b, a in cmp.identity_changes]
    else:
        lines.append("No difference.")
    if cmp.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in cmp.notes]
    lines += ["", "## Measures", "", md_row(HEAD + ["why"]), md_row(["---"] * (len(HEAD) + 1))]
    lines += [md_row(row_cells(r) + [r.reason]) for r in cmp.rows]
    return "\n".join(lines) + "\n"


def as_dict(cmp: Comparison) -> dict:
    def m(x):
        return None if x is None else {"lo": x.lo, "hi": x.hi, "point": x.point,
                                       "basis": x.basis, "note": x.note}

    return {"baseline": str(cmp.baseline.path), "candidate": str(cmp.candidate.path),
            "tolerances": cmp.tolerances,
            "outcome": cmp.outcome, "exit_status": cmp.exit_status(),
            "identity_changes": [{"device": d, "what": w, "baseline": b, "candidate": a}
                                 for d, w, b, a in cmp.identity_changes],
            "notes": list(cmp.notes),
            "measures": [{"device": r.device, "clock": r.clock, "measure": r.measure,
                          "unit": r.unit, "baseline": m(r.baseline), "candidate": m(r.candidate),
                          "change": r.change, "tolerance": r.tolerance, "verdict": r.verdict,
                          "reason": r.reason, "failed": r.failed, "decide_run_s": r.decide_s,
                          "detectable": r.detectable,
                          "events": None if r.baseline is None else r.baseline.events}
                         for r in cmp.rows]}


def to_json(cmp: Comparison) -> str:
    return json.dumps(as_dict(cmp), indent=1) + "\n"


def junit(cmp: Comparison) -> str:
    """One testcase per device × measure; regressions are failures, unjudged ones skipped."""
    suite = ET.Element("testsuite", name="rackclock compare", tests=str(len(cmp.rows)),
                       failures=str(len(cmp.failures)),
                       skipped=str(sum(r.verdict in ("not compared", UNDECIDED_ROW)
                                       for r in cmp.rows)), errors="0")
    props = ET.SubElement(suite, "properties")
    for k, v in (("baseline", cmp.baseline.path), ("candidate", cmp.candidate.path),
                 ("tolerances", cmp.tolerances)):
        ET.SubElement(props, "property", name=k, value=str(v))
    for dev, what, before, after in cmp.identity_changes:
        ET.SubElement(props, "property", name=f"{dev}.{what}", value=f"{before} -> {after}")
    for r in cmp.rows:
        tc = ET.SubElement(suite, "testcase", classname=r.device,
                           name=f"{r.clock + '.' if r.clock else ''}{r.measure}", time="0")
        cells = dict(zip(HEAD, row_cells(r)))
        text = (f"baseline {cells['baseline']}; candidate {cells['candidate']}; change "
                f"{cells['change [proven]']}; tolerance {cells['tolerance']}; {r.reason}"
                + (f"; these runs would show a change {detectable_text(r)}"
                   if r.detectable is not None else ""))
        if r.detectable is not None:
            ET.SubElement(ET.SubElement(tc, "properties"), "property", name="detectable",
                          value=f"{r.detectable:.6g} {r.unit}")
        if r.failed:
            f = ET.SubElement(tc, "failure", message=f"{r.device} {r.measure} {r.verdict}",
                              type=r.verdict)
            f.text = text
        elif r.verdict in ("not compared", UNDECIDED_ROW):
            ET.SubElement(tc, "skipped", message=f"{r.verdict}: {r.reason}")
        else:
            ET.SubElement(tc, "system-out").text = f"{r.verdict}: {text}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
