"""`rackclock report RUN`: a self-contained HTML report (RUN/report.html, figures embedded, no
network needed to read it) and the figures as files in RUN/plots/ (PNG; SVG and PDF on request).

The report is the list SECTIONS below (bench.output.report_sections and its siblings); each
draws from the run folder through bench.model.rundata.load_run. It opens on the verdict page;
sections are drawn in forked worker processes, one per core (a section's WEIGHT: the heavier, the
earlier).
"""
from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from bench import safeio
from bench.model.rundata import load_run
from bench.output import report_sections as rs
from bench.output.report_measurements import measurements
from bench.output.report_sections import ReportRun, esc, note_html
from bench.output.report_tie import clock_figures, rack_tie
from bench.output.report_verdict import horizons, verdict_page

# the report's sections in order: bench.output.report_sections, and the verdict page, the TIE
# sections and an experiment's own results in modules of their own
Section = Callable[..., str | None]          # (ReportRun) or (ReportRun, (k, n)) -> html
WEIGHT: dict[Section, int] = {rs.stability: 12, clock_figures: 10, rs.jitter: 6, rack_tie: 3,
                              rs.timeline: 2}   # default 1
# drawn in n shares (a figure per clock; jitter and stability only with --details)
PARTS: dict[Section, int] = {clock_figures: 4, rs.stability: 4, rs.jitter: 2}

SECTIONS = [verdict_page, measurements, rack_tie, rs.overview, rs.limits, rs.identities, rs.clocks,
            rs.chrony_columns, horizons, clock_figures, rs.latency, rs.timeline, rs.reference_health,
            rs.jitter, rs.stability]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:960px;margin:1.2em auto;
     padding:0 12px;color:#222}
h1{font-size:1.4em;margin-bottom:.2em} h2{font-size:1.2em;border-bottom:1px solid #ccc;
     margin-top:1.6em} h3{font-size:1.02em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} table.kv thead{display:none}
figure{display:inline-block;margin:.6em 1em .6em 0;max-width:100%;vertical-align:top}
figure img{max-width:100%;height:auto} figcaption{font-size:13px;color:#444}
table.verdict td:nth-child(1){white-space:nowrap} table.verdict{width:100%}
p.overall{font-size:18px;padding:.4em .6em;border-left:6px solid #888;background:#f6f6f6}
p.overall.pass{border-color:#2a7d2a} p.overall.fail{border-color:#b00;background:#fdf0f0}
p.overall.undecided{border-color:#c80} p.incident{font-size:15px;margin:.3em 0}
.files{color:#888} .note{font-size:13px;color:#555;max-width:60em;margin:.3em 0}
.error{color:#a00}
@media print{body{max-width:none;margin:0} h2{break-after:avoid} figure{break-inside:avoid}}
"""

_RR: ReportRun | None = None   # the ReportRun a forked worker draws from, and its jobs
Job = tuple[Section, tuple[int, int] | None]
_JOBS: list[Job] = []


def _jobs(sections: list[Section]) -> list[Job]:
    """(section, part) in page order: a section in n PARTS is n jobs (k, n)."""
    return [(s, (k, PARTS[s]) if PARTS.get(s, 1) > 1 else None)
            for s in sections for k in range(PARTS.get(s, 1))]


def _section(index: int) -> tuple[str, list, dict, dict]:
    """Run one job on a fresh copy of the report's run: (html, files, texts, text sizes).
    A section that fails becomes a visible error in the report, never a missing report.
    Only the index crosses to a worker (forked: it has the run and the sections already)."""
    if _RR is None:
        raise RuntimeError("no report run to draw from (_run_sections sets it)")
    rr = dataclasses.replace(_RR, written=[], figure_texts={}, figure_pt={})
    section, part = _JOBS[index]
    try:
        frag = (section(rr) if part is None else section(rr, part)) or ""
    except Exception as exc:   # one broken section must not cost the whole report
        frag = (f"<h2>{esc(section.__name__)}</h2><p class='error'>this section failed: "
                f"{esc(repr(exc))}</p><pre class='note'>{esc(traceback.format_exc())}</pre>")
    return frag, rr.written, rr.figure_texts, rr.figure_pt


def _run_sections(rr: ReportRun, sections: list[Section], processes: int) -> list[str]:
    """Every section's html in order; with more than one process, sections are drawn in forked
    worker processes (the heaviest first), each a figure set of its own."""
    global _RR, _JOBS
    _RR, _JOBS = rr, _jobs(sections)
    jobs = _JOBS
    order = sorted(range(len(jobs)), key=lambda i: -WEIGHT.get(jobs[i][0], 1))
    if processes > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(processes, mp_context=ctx) as pool:
            futs = {i: pool.submit(_section, i) for i in order}
            results = {i: f.result() for i, f in futs.items()}
    else:
        results = {i: _section(i) for i in order}
    parts = []
    for i in range(len(jobs)):
        frag, written, texts, pts = results[i]
        rr.written.extend(written)
        rr.figure_texts.update(texts)
        rr.figure_pt.update(pts)
        if frag:
            parts.append(frag)
    return parts


def _before_fork(rr: ReportRun) -> None:
    """What every worker would otherwise do for itself, done once before they fork: the
    samples read, and with --details allantools (scipy underneath: about 0.7 s of CPU an
    import) for the stability figures."""
    for device in rr.devices:
        rr.samples(device)
    if rr.details:
        import allantools  # noqa: F401


@contextmanager
def _fewer_collections():
    """Python's cycle collector seldom while figures are drawn (matplotlib makes many small
    objects and frees them with plt.close: a collection every 700 allocations cost 12-15 % of
    the report's CPU), and what exists before any worker forks frozen out of it (so no
    collection copies the parent's pages into a worker). About 60 MB more at the peak of a
    --details report. Restored after."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def default_processes() -> int:
    """One worker per core, at most 4, where the cores are idle; with them busy already (the
    1-minute load average at or above their count) the report draws in its own process: on 2
    cores at load 12 two workers cost 0.2-0.4 s more CPU and 1-9 s more wall (benchmarks/
    README.md, the report)."""
    cores = max(1, min(4, os.cpu_count() or 1))
    return cores if os.getloadavg()[0] < cores else 1


def build_report(path: str | Path, sections=None, formats=("png",), details: bool = False,
                 processes: int | None = None) -> ReportRun:
    """Write RUN/report.html and RUN/plots/*; returns the ReportRun (`.written` lists figures).
    `formats`: the figure files written (the page embeds PNG whatever they are); `details`: the
    per-clock jitter and stability figures too; `processes`: worker processes drawing sections
    (default: one per core, at most 4)."""
    run = load_run(path)
    safeio.Folder.open(run.path).close()     # UnsafeFolder before any drawing
    rr = ReportRun(run.path, run.manifest, run.summary, run.truth, formats=tuple(formats),
                   details=details)
    procs = default_processes() if processes is None else processes
    if procs > 1:
        _before_fork(rr)
    with _fewer_collections():
        parts = _run_sections(rr, list(SECTIONS if sections is None else sections), procs)
    if not rr.summary.raw:
        parts.insert(0, note_html("This run has no summary.json (it did not finish): only what "
                                  "the manifest says is shown."))
    title = f"rackclock run {rr.run_id}"
    doc = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
           f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
           f"<h1>{esc(title)}</h1>" + "\n".join(parts) + "</body></html>\n")
    safeio.write_text(rr.path / "report.html", doc)
    return rr
