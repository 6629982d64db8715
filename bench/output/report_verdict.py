"""The report's verdict page, read in ten seconds: one overall line (PASS / FAIL / UNDECIDED and
why, bench.model.verdict.overall), the limits, which plane broke first (incident.json), a compact
per-clock table with the vocabulary's words, and every clock against the reference in one figure;
and, further down, the ordering horizons and what the bounds assume."""
from __future__ import annotations

from typing import Any

from bench import safeio
from bench.model.vocabulary import legend_lines
from bench.output import figures
from bench.output.report_sections import bound_cells, esc, figure_html, mean_drift_text, note_html, table_html
from bench.units import fmt_ns, fmt_ns_up, fmt_ppm


def _clock_cells(d, c, known: bool = False) -> list[str]:
    """The compact table's cells of one clock: offset and drift with their words, the proven
    mean drift, breaks and errors, truth."""
    from bench.model.verdict import truth_word
    from bench.model.vocabulary import STUCK, UNDECIDED, stuck_text
    errs = d.errors_text()
    name = f"{d.name} {c.name}"
    if str(c.verdict) == STUCK:
        return [name, stuck_text(c.raw.get("stuck")), "—", "—", errs, ""]
    if not c.segments:
        return [name, f"{UNDECIDED}: {c.note or 'no fit'}", "—", "—", errs, ""]
    sg = c.segments[-1]
    truth = truth_word(c, known)
    return [name, *bound_cells(sg, c.counter), mean_drift_text(sg), _breaks_errors(c, errs),
            truth]


def _breaks_errors(c, errs: str) -> str:
    """The 'breaks · errors' cell: the breaks by kind, the wraps, the errors, or a dash."""
    brk = (f"{len(c.breaks)} break ({', '.join(sorted({str(b.kind) for b in c.breaks}))})"
           if c.breaks else "") + (f" {len(c.wraps)} wrap" if c.wraps else "")
    return " · ".join(x for x in (brk.strip(), "" if errs == "0" else f"errors {errs}") if x) \
        or "—"


def _overall_html(run, checks, inc) -> str:
    from bench.model import verdict as vd
    from bench.model.rundata import load_measurements
    o = vd.overall(run, checks, load_measurements(run.path), inc)
    why = o.text(most=8).removeprefix(f"{o.word}: ")
    return f'<p class="overall {esc(o.word.lower())}"><b>{esc(o.word)}</b> {esc(why)}</p>'


def _limits_html(run, checks) -> str:
    from bench.model import limit_checks as lim
    if not checks:
        return ("<h3>Limits</h3>" + note_html(
            "No limits declared: the rack file's [limits] (offset_within, drift_within_ppm, "
            "latency_max per plane or device) turns these bounds into PASS / FAIL."))
    safeio.write_text(run.path / "limits.xml", lim.junit(checks))
    return ("<h3>Limits</h3>" + table_html(lim.HEAD, lim.rows(checks), "limits")
            + note_html(lim.counts_line(checks) + ". Why each is judged so: the Limits table "
                        "in the details below; JUnit: limits.xml."))


def _incident_html(run, inc) -> str:
    from bench.output.closing import incident_lines
    if inc is None:
        return ""
    lines = incident_lines(run.path, None)
    head, rest = (lines[0], lines[1:]) if lines else ("incident: no result", [])
    head = head.removeprefix("incident: ").removeprefix("which plane broke first: ")
    return ("<h3>Which plane broke first</h3>"
            + f'<p class="incident">{esc(head)}</p>'
            + "".join(note_html(x.strip()) for x in rest))


def _clock_table_html(run: Any) -> str:
    from bench.model.verdict import has_truth
    known = has_truth(run.summary)
    rows = [_clock_cells(d, c, known) for d, c in run.summary.clocks()]
    if not rows:
        return note_html("No device clock was measured in this run.")
    out = [table_html(["clock", "offset at the epoch", "drift at the epoch", "mean drift",
                       "breaks · errors", "truth"], rows, "verdict")]
    out += [note_html(x) for x in _legend(rows)]
    from bench.output.terminal import model_lines  # every clause of every clock's model
    out += [note_html(x) for x in model_lines(run.summary, None)]
    return "".join(out)


def _legend(rows: list[list[str]]) -> list[str]:
    """The legend lines of the status words the table's bound cells use."""
    words = {w for r in rows for w in ("proven", "assumed", "undecided", "stuck")
             if any(w in x for x in r[1:4])}
    return [x for x in legend_lines() if x.split(":")[0] in words]


def verdict_page(run) -> str | None:
    """The first screen: one overall line (PASS / FAIL / UNDECIDED and why), the limits, which
    plane broke first (where an incident was played), a compact per-clock table, and every clock
    against the reference in one figure."""
    from bench.model import verdict as vd
    from bench.model.limit_checks import check_run
    from bench.units import fmt_interval_ns

    checks = check_run(run.summary, run.manifest)
    inc = vd.incident_result(run.path)
    out = ["<h2>Verdict</h2>", _overall_html(run, checks, inc), _limits_html(run, checks),
           _incident_html(run, inc), "<h3>Clocks</h3>", _clock_table_html(run)]
    fig_rows, counters = [], []
    for v in vd.clock_verdicts(run):
        if v.segment is None or v.offset_range is None or str(v.verdict) == "stuck":   # set together
            continue
        if v.counter:
            counters.append(f"{v.device} {v.clock}")
            continue
        lo, hi = v.offset_range
        o = v.segment.offset_ns
        fig_rows.append({"label": f"{v.device} · {v.clock}", "plane": v.plane, "lo_ns": lo,
                         "hi_ns": hi, "epoch_lo_ns": o.lo, "epoch_hi_ns": o.hi,
                         "text": fmt_interval_ns(lo, hi)})
    if fig_rows:
        out.append(figure_html(
            run, figures.rack_offset_figure(fig_rows), "rack_offsets",
            "Every device clock's offset from the reference. Thick: the bound at the last "
            "segment's epoch (the table's); thin, and written beside it: the range over every "
            "segment's calibrated span (first to last read), as the limits judge it: the epoch "
            "bound and the envelope's points, each widened by the checked rate bound. Symmetric "
            "log axis: planes hours apart share it with planes within a millisecond."
            + (f" Counters ({', '.join(counters)}) have no time of day: their offset is the "
               f"instant of their zero, in the table." if counters else "")))
    return "".join(out)


def horizons(run) -> str | None:
    """The ordering horizon of each pair of planes and what every clock's bounds assume."""
    from bench.model import verdict as vd
    vs = vd.clock_verdicts(run)
    out = []
    hz = vd.ordering_horizons(vs)
    if hz:
        planes = sorted({p for pq in hz for p in pq})
        grid = [[p] + [fmt_ns(hz.get((min(p, q), max(p, q)))) for q in planes] for p in planes]
        out.append("<h3>Ordering horizon</h3>" + table_html(["plane"] + planes, grid)
                   + note_html("Two events stamped on these planes whose true instants are "
                               "farther apart than this are always proven in order: the sum of "
                               "both planes' widest stamp interval (proven band plus one tick). "
                               "Closer events may still be ordered; the timeline says which."))
    a_rows = [[v.device, v.clock, fmt_ppm(v.assumptions.drift_prior_ppm),
               f"{v.assumptions.wander_ppm:g} ppm/√h",
               fmt_ns(v.assumptions.resolution_ns) + f" ({v.assumptions.resolution_basis})",
               fmt_ns_up(v.assumptions.reference_uncertainty_ns)] for v in vs if v.assumptions]
    if a_rows:
        out.append("<h3>What the bounds assume</h3>" + table_html(
            ["device", "clock", "drift prior (±)", "wander allowance", "resolution",
             "reference allowance"], a_rows))
    return "<h2>Assumptions and ordering</h2>" + "".join(out) if out else None
