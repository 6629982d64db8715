"""What the terminal shows when a run ends: the reference line, the table (bench.output.terminal),
the experiment's measurements, the incident result (compact), and one overall verdict, last."""
from __future__ import annotations

from bench.model.texttable import WIDTH, render, terminal_width, wrap
from bench.model.vocabulary import glossary_lines
from bench.units import fmt_bounds, fmt_bounds_ns, fmt_interval_ns, fmt_ns, fmt_ns_up


def reference_line(manifest) -> str:
    """One line on what the bounds rest on: the reference's grade and the bound added.
    `manifest`: the dict as written, or a bench.model.documents.Manifest."""
    from bench.model.documents import Manifest, ReferenceHealth
    m = Manifest.of(manifest)
    h = m.reference_run or m.reference or ReferenceHealth()
    basis = h.basis or ("linuxptp" if h.verified else "allowance")
    return (f"reference: {h.source or '?'}, basis {basis}, grade {h.grade or '?'}"
            f"{'' if h.verified else ' (UNVERIFIED)'}; "
            f"{fmt_ns_up(m.uncertainty_ns())} added to every bracket")


def _value(m: dict) -> str:
    """A measurement's bound (or value) with its unit; a distribution's with n and its p50."""
    x = m.get("extra") or {}
    p50 = (x.get("percentiles") or {}).get("p50")
    if p50 and m.get("unit") == "ns":
        return (f"{_value({**m, 'extra': {}})} (n={x.get('n')}, "
                f"p50 {fmt_bounds_ns(p50[0], p50[1])})")
    return _single_value(m)


def _single_value(m: dict) -> str:
    """A measurement's bound (an interval when lo and hi differ) or value, with its unit."""
    unit, lo, hi, pt = m.get("unit", ""), m.get("lo"), m.get("hi"), m.get("point")
    if lo is not None and hi is not None and lo != hi:
        return fmt_interval_ns(lo, hi) if unit == "ns" else fmt_bounds(lo, hi, unit, 6)
    if unit == "ns":
        return fmt_ns(pt)
    return f"{pt:.6g} {unit}".strip() if isinstance(pt, (int, float)) else str(pt)


def measurement_lines(path, width: int | None = WIDTH) -> list[str]:
    """The experiment's own measurements (measurements.json), a distribution as one row."""
    from bench.model.rundata import load_measurements
    ms = load_measurements(path)
    if not ms:
        return []
    rows = [[m.get("device", ""), m.get("name", ""), _value(m), m.get("basis", ""),
             m.get("outcome", "")] for m in ms]
    return ["measurements (the experiment's own)",
            *render(["device", "measurement", "value", "basis", "outcome"], rows, width=width,
                    clip=1)]


def incident_lines(path, width: int | None = WIDTH) -> list[str]:
    """incident.json's end-to-end result in two or three lines (which plane broke first)."""
    p = path / "incident.json"
    if not p.exists():
        return []
    try:
        from bench import saferead
        e = saferead.load_object(p).get("end_to_end") or {}
    except (OSError, ValueError, AttributeError) as exc:
        return [f"incident: incident.json unreadable ({exc})"]
    if not e.get("played"):
        return wrap(f"incident: not scored: {e.get('why', '?')}", width)
    rc, nm = e.get("rackclock", {}), e.get("naive", {})
    out = wrap(f"incident: which plane broke first: one of {{{', '.join(e.get('first_set', []))}}}"
               f" (true first: {e.get('true_first')}, "
               f"{'contained' if e.get('first_contains_truth') else 'NOT CONTAINED'}); "
               f"the naive merge says {e.get('naive_first')}", width)
    out += wrap(f"  pairs: rackclock {rc.get('right')} ordered right, {rc.get('wrong')} wrong, "
                f"{rc.get('unordered')} unordered; naive merge {nm.get('right')} right, "
                f"{nm.get('wrong')} WRONG", width)
    return out + [x for m in e.get("missing", []) for x in wrap(f"  not scored: {m}", width, "    ")]


def overall_line(run, checks, width: int | None = WIDTH) -> str:
    """The verdict (wrapped at `width`), by the report's own rule (bench.model.verdict.overall): FAIL (a
    limit, a measurement or the incident's order fails, a bound misses the simulated truth, the
    run did not complete, a used device gave nothing), UNDECIDED (a limit or a measurement is
    undecided; with neither, a clock), else PASS; with the reasons."""
    from bench.model.rundata import load_measurements
    from bench.model.verdict import incident_result, overall
    o = overall(run, checks, load_measurements(run.path), incident_result(run.path))
    return "\n".join(wrap(f"verdict: {o.text()}", width))


FIGURES_UP_TO = 40     # clocks: a run draws its offset figures up to this many (about 0.12 s of
                       # CPU each; the default rack's 18: 2.1 s), beyond it only when asked


def figure_clocks(summary) -> int:
    """The clocks an offset figure is drawn for (bench.output.plots.offset_plots): those with a
    segment. `summary`: a bench.model.documents.RunSummary."""
    return sum(1 for d in summary.devices.values() for c in d.clocks.values() if c.segments)


def draws_figures(clocks: int, asked: bool = False) -> bool:
    """Whether a run draws its offset figures: asked (`rackclock run --offset-figures`), or
    at most FIGURES_UP_TO clocks (300 clocks' figures cost 35-40 s of CPU after the probing,
    most of the wait: benchmarks/README.md, the wait after the probing)."""
    return asked or clocks <= FIGURES_UP_TO


def figures_lines(run, width: int | None = WIDTH) -> list[str]:
    """Where the offset figures are not, how to get them: the run left them undrawn (more than
    FIGURES_UP_TO clocks, not asked for) and none is in RUN/plots/ yet."""
    n = figure_clocks(run.summary)
    plots = run.path / "plots"
    if draws_figures(n) or (plots.is_dir() and any(plots.glob("offset_*"))):
        return []
    return wrap(f"offset figures: not drawn by the run ({n} clocks, more than "
                f"{FIGURES_UP_TO}); `rackclock report {run.path} --offset-figures` draws them "
                f"into {plots}", width, "  ")


def closing_text(path, wide: bool = False) -> tuple[str, str]:
    """(everything before the verdict, the verdict line) of a run folder."""
    from bench.model.limit_checks import check_run, text_table
    from bench.model.rundata import load_run
    from bench.output.terminal import table
    run = load_run(path)
    width = None if wide else terminal_width()
    parts = ["\n".join(wrap(reference_line(run.manifest), width)),
             table(run.summary, run.manifest, width, limits=False)]
    ms = measurement_lines(run.path, width)
    checks = check_run(run.summary, run.manifest, run=run)
    for block in (until_lines(run, width), ms,
                  text_table(checks, width).splitlines() if checks else [],
                  incident_lines(run.path, width), figures_lines(run, width)):
        if block:
            parts.append("\n".join(block))
    words = glossary_lines("\n".join(parts))
    if words:
        parts.append("\n".join(x for w in words for x in wrap(w, width)))
    return "\n\n".join(parts), overall_line(run, checks, width)


def until_lines(run, width: int | None = WIDTH) -> list[str]:
    """--until-decided (the manifest's `until_decided`): which drifts were decided and when,
    which not and why, by the summary's own fit (the watch's fits only said when)."""
    u = run.manifest.raw.get("until_decided")
    if not isinstance(u, dict):
        return []
    yes: list[str] = []
    no: list[str] = []
    for w in u.get("clocks") or []:
        decided, text = _until_clock(run, w, u)
        (yes if decided else no).append(text)
    out = wrap(_until_head(u), width)
    if yes:
        out += wrap("  decided: " + "; ".join(yes), width, "    ")
    if no:
        out += wrap("  NOT decided: " + "; ".join(no), width, "    ")
    return out


def _until_head(u: dict) -> str:
    """The --until-decided block's first line: the width asked for and how the run ended."""
    from bench.model.decided import fmt_run
    ceiling = float(u.get("ceiling_s") or 0)
    stop = u.get("all_decided_after_s")
    head = (f"until decided (mean drift ppm, proven, <= {u['decided_ppm']:g} wide"
            if u.get("decided_ppm") else "until decided (mean drift ppm, proven, <= a tenth "
            "of its prior's width")
    return head + (f"): all decided, probing stopped after {fmt_run(stop)}" if stop is not None
                   else f"): the ceiling ({fmt_run(ceiling)}) was reached")


def _until_clock(run, w: dict, u: dict) -> tuple[bool, str]:
    """(decided?, its text) for one clock the watch followed (`w`, an entry of
    until_decided's clocks), by the summary's fit of its last segment."""
    from bench.model.decided import fmt_run, mean_drift, target_ppm
    from bench.units import ppm_interval
    c = run.summary.devices.get(w["device"])
    c = c.clocks.get(w["clock"]) if c is not None else None
    name = f"{w['device']} {w['clock']}"
    if c is None or not c.segments or c.assumptions is None:
        return False, f"{name}: no fit"
    m = mean_drift(c.segments[-1])
    target = target_ppm(c.assumptions.drift_prior_ppm, u.get("decided_ppm"))
    if m is not None and m[1] - m[0] <= target:
        seen = w.get("decided_after_s")
        return True, (f"{name} {ppm_interval(*m)}"
                      + (f" after {fmt_run(seen)}" if seen is not None else " at the end"))
    return False, f"{name} " + _undecided_text(c, m, target, u.get("decided_ppm"))


def _undecided_text(c, m, target: float, decided_ppm) -> str:
    """Why a clock's mean drift `m` (ppm interval or None) was not decided, and how long a run
    would decide it."""
    from bench.model.decided import clock_decided, fmt_run
    from bench.units import ppm_interval
    after = (clock_decided(c.segments, c.assumptions.drift_prior_ppm,
                           decided_ppm) or {}).get("drift_decided_after_s")
    why = f"; a run of about {fmt_run(after)} would decide it" if after else ""
    return (f"{ppm_interval(*m)} ({m[1] - m[0]:.0f} wide > {target:g})"
            if m is not None else "no mean drift") + why
