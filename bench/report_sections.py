"""The report as a list of sections. A section is a function `(run) -> html fragment | None`
(None: nothing to say for this run); a new measurement joins the report by appending its
function to SECTIONS (or passing its own list to bench.report.build_report).

`run` is a bench.rundata.Run; when the report builds it, it is a `ReportRun` that also says where
figures go and in which formats. Use `figure_html(run, fig, stem, caption)` to write a figure into
RUN/plots/ and embed it (base64 PNG, so the HTML needs no network and no other file).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from bench import figures
from bench.residuals import regular_series, segment_residuals
from bench.rundata import Run
from bench.display import offset_cell
from bench.units import fmt_ns, fmt_ppm


@dataclass(frozen=True)
class ReportRun(Run):
    """A Run plus the report's figure settings; `written` collects every figure file."""

    formats: tuple = ("png", "svg", "pdf")
    written: list = field(default_factory=list, compare=False)


def esc(x) -> str:
    return html.escape(str(x))


def table_html(head: list[str], rows: list[list], cls: str = "") -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def note_html(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def figure_html(run, fig, stem: str, caption: str) -> str:
    """Write `fig` into RUN/plots/<stem>.{formats} and return it embedded with its caption."""
    formats = getattr(run, "formats", ("png",))
    paths, png = figures.save(fig, run.path / "plots", stem, formats)
    written = getattr(run, "written", None)
    if written is not None:
        written.extend(paths)
    files = ", ".join(p.name for p in paths)
    return (f'<figure><img src="{figures.data_uri(png)}" alt="{esc(stem)}">'
            f'<figcaption>{esc(caption)} <span class="files">(plots/{esc(files)})</span>'
            f'</figcaption></figure>')


def iso(ns) -> str:
    if not ns:
        return "—"
    return datetime.fromtimestamp(int(ns) / 1e9, timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def clock_items(run):
    """(device, plane, clock name, clock summary) for every clock with at least one segment."""
    for device, d in sorted(run.summary.get("devices", {}).items()):
        for clock, c in d.get("clocks", {}).items():
            if c.get("segments"):
                yield device, d.get("plane", ""), clock, c


def longest_segment(c: dict) -> dict:
    return max(c["segments"], key=lambda sg: sg.get("reads", 0))


# -- sections ------------------------------------------------------------------------------------

def overview(run) -> str:
    m = run.manifest
    git = m.get("git", {})
    rows = [["run", m.get("run_id", run.path.name)], ["experiment", m.get("experiment", "")],
            ["status", m.get("status", "") + (f": {m['error']}" if m.get("error") else "")],
            ["started", iso(m.get("started_ns"))], ["ended", iso(m.get("ended_ns"))],
            ["duration", f"{m.get('duration_s', '—')} s"],
            ["rack", f"{m.get('inventory', {}).get('name', '')} "
                     f"({'simulated' if m.get('simulated') else 'lab'}; file {m.get('rack_file', '')})"],
            ["stimuli", "sent" if m.get("armed") else "not armed (printed only)"],
            ["parameters", ", ".join(f"{k}={v}" for k, v in m.get("parameters", {}).items())],
            ["rackclock", f"{m.get('versions', {}).get('rackclock', '')} at "
                          f"{str(git.get('revision', ''))[:12]}{' (dirty)' if git.get('dirty') else ''}"]]
    return "<h2>Run</h2>" + table_html(["", ""], rows, "kv")


def identities(run) -> str:
    """Device identities and firmware, their errors, and the reference's health."""
    rows = []
    summ = run.summary.get("devices", {})
    for name, d in sorted(run.manifest.get("devices", {}).items()):
        ident = d.get("identity") or summ.get(name, {}).get("identity") or {}
        errs = summ.get(name, {}).get("errors", {})
        rows.append([name, d.get("plane", ""), d.get("driver", ""), ident.get("vendor", ""),
                     ident.get("model", ""), ident.get("serial", ""), ident.get("firmware", ""),
                     d.get("state", "") or ("not started: " + d["error"] if d.get("error") else ""),
                     ", ".join(f"{k} {v}" for k, v in errs.items()) or "0"])
    out = ["<h2>Devices and reference</h2>",
           table_html(["device", "plane", "driver", "vendor", "model", "serial", "firmware",
                       "state", "errors"], rows)]
    first = [(n, k, v) for n, d in sorted(summ.items()) for k, v in d.get("first_errors", {}).items()]
    if first:
        out.append(table_html(["device", "error", "first message"], [list(x) for x in first]))
    ref_rows = []
    for key, label in (("reference", "at start"), ("reference_end", "at end")):
        h = run.manifest.get(key)
        if h:
            ref_rows.append([label, h.get("source", ""), h.get("grade", ""),
                             "yes" if h.get("verified") else "no", fmt_ns(h.get("uncertainty_ns")),
                             h.get("basis", ""), h.get("note", "")])
    if ref_rows:
        out.append(table_html(["reference", "source", "grade", "verified", "uncertainty",
                               "basis", "note"], ref_rows))
    return "".join(out)


def clocks(run) -> str | None:
    """Per clock segment: proven offset and drift, jitter, brackets, breaks, the truth check."""
    rows, brk, notes = [], [], []
    for device, plane, clock, c in clock_items(run):
        for k, sg in enumerate(c["segments"]):
            o, dr = sg["offset_ns"], sg["drift_ppm"]
            t = sg.get("truth")
            truth = "" if not t else ("inside" if t.get("offset_in") and t.get("drift_in", True)
                                      else "OUTSIDE")
            rows.append([device, clock, k + 1, sg["reads"], iso(sg["epoch_ns"]),
                         offset_cell(o, bool(c.get("counter"))).split(" (width")[0],
                         fmt_ns(o["hi"] - o["lo"]),
                         f"[{fmt_ppm(dr['lo'])}, {fmt_ppm(dr['hi'])}]",
                         fmt_ns(sg.get("resolution_ns") or c.get("resolution_ns")),
                         fmt_ns(sg["bracket_ns"]["median"]), fmt_ns(sg["jitter_ns"].get("std")),
                         truth])
        for key in ("zone_note", "resolution_note", "note"):
            if c.get(key):
                notes.append(f"{device} · {clock}: {c[key]}")
        for b in c.get("breaks", []):
            sz = b.get("size_ns") or {}
            brk.append([device, clock, b["kind"], iso(b["after_ns"]), iso(b["before_ns"]),
                        f"[{fmt_ns(sz.get('lo'))}, {fmt_ns(sz.get('hi'))}]" if sz else "—"])
    if not rows:
        return "<h2>Clocks</h2>" + note_html("No clock has a fit in this run.")
    out = ["<h2>Clocks</h2>",
           table_html(["device", "clock", "seg", "reads", "epoch", "offset (proven)", "width",
                       "drift (proven)", "resolution", "bracket p50", "residual std", "truth"],
                      rows),
           note_html("Offset is device minus reference at the segment's epoch; a counter's is shown "
                     "as the instant of its zero. Residual std is of interval midpoints "
                     "against the point fit: for a coarse clock it is the tick, not the noise.")]
    out += [note_html(n) for n in notes]
    if brk:
        out.append("<h3>Breaks</h3>" + table_html(
            ["device", "clock", "kind", "after", "at or before", "size (proven)"], brk))
    return "".join(out)


def offsets(run) -> str | None:
    figs = []
    for device, plane, clock, c in clock_items(run):
        fig = figures.offset_print_figure(run, device, clock, c, plane)
        figs.append(figure_html(
            run, fig, f"offset_{device}_{clock}",
            f"{device} · {clock}: offset minus each segment's own fitted line. Shaded: the "
            f"proven band; grey: each read's own offset interval; dashed: breaks"
            + ("; black: the simulated truth." if run.truth else ".")))
    if not figs:
        return None
    return "<h2>Offset over time</h2>" + "".join(figs)


def _residuals(run, device, clock, c):
    s, e, v, q = run.clock_reads(device, clock)
    return segment_residuals(s, e, v, q, longest_segment(c))


def jitter_figure_of(run, device: str, plane: str, clock: str, c: dict):
    """(figure, caption) of the residuals and brackets of one clock, or (None, why not)."""
    r = _residuals(run, device, clock, c)
    if len(r) < 3:
        return None, f"{device} · {clock}: {len(r)} reads, no histogram."
    cap = (f"{device} · {clock}: residuals of the reads of its longest segment against the "
           f"point fit, and the widths of their brackets.")
    if r.coarse:
        cap += (f" The resolution ({fmt_ns(r.resolution_ns)}) is over "
                f"{r.resolution_ns / np.median(r.bracket):.3g}× the median bracket: the "
                f"residual shows where the reads fell within the tick, not clock noise; "
                f"the bracket widths are what the bench itself contributes.")
    return figures.residual_figure(r, device, clock, plane), cap


def per_clock(run, title: str, kind: str, figure_of) -> str | None:
    """A section of one figure per clock (`figure_of` -> (figure, caption), or (None, why not)),
    saved as plots/<kind>_<device>_<clock>."""
    figs = []
    for device, plane, clock, c in clock_items(run):
        fig, cap = figure_of(run, device, plane, clock, c)
        figs.append(note_html(cap) if fig is None else
                    figure_html(run, fig, f"{kind}_{device}_{clock}", cap))
    return f"<h2>{title}</h2>" + "".join(figs) if figs else None


def jitter(run) -> str | None:
    return per_clock(run, "Residual jitter and brackets", "jitter", jitter_figure_of)


def stability_figure_of(run, device: str, plane: str, clock: str, c: dict):
    """(figure, caption) of ADEV/TDEV/MTIE for one clock, or (None, why not)."""
    from bench import stability as stab

    r = _residuals(run, device, clock, c)
    ser = regular_series(r.t_ns, r.mid)
    if not ser.ok:
        return None, f"{device} · {clock}: no ADEV/TDEV/MTIE: {ser.note}."
    rate = 1.0 / ser.interval_s
    phase_s = (ser.x - ser.x[0]) * 1e-9
    curves = {"adev": stab.deviation("adev", phase_s, rate)}
    t, d = stab.deviation("tdev", phase_s, rate)
    curves["tdev"] = (t, d * 1e9)
    curves["mtie"] = stab.mtie(ser.x, rate)
    floor = r.resolution_ns / math.sqrt(12) if r.coarse else None
    cap = (f"{device} · {clock}: ADEV, TDEV and MTIE of the residual offset (interval "
           f"midpoints minus the point fit, averaged into {len(ser.x)} bins of "
           f"{ser.interval_s:g} s).")
    if floor:
        cap += (f" Coarse clock: with a {fmt_ns(r.resolution_ns)} tick the curves are "
                f"dominated by quantization (dotted: what the tick alone gives); they bound "
                f"the oscillator's instability only from above.")
    return figures.stability_figure(curves, device, clock, plane, ser.interval_s, floor), cap


def stability(run) -> str | None:
    return per_clock(run, "Stability (ADEV, TDEV, MTIE)", "stability", stability_figure_of)


def _b(x: dict | None) -> str:
    return f"[{fmt_ns(x['lo'])}, {fmt_ns(x['hi'])}]" if x else "—"


def latency_rows(run) -> tuple[list[list], list[dict]]:
    """(table rows per device and stimulus, one entry per stimulus event for the figure)."""
    rows, events = [], []
    for device, d in sorted(run.summary.get("devices", {}).items()):
        for stim, L in sorted((d.get("latency") or {}).items()):
            evs = L.get("events", [])
            br = [e["e_ns"] - e["s_ns"] for e in evs if "e_ns" in e]
            rows.append([device, stim, L.get("sent", len(evs)),
                         (L.get("logged_ns") or L.get("observed_ns") or {}).get("n", 0),
                         fmt_ns(float(np.median(br))) if br else "—", _b(L.get("logged_ns")),
                         _b(L.get("observed_ns"))])
            for k, e in enumerate(evs):
                events.append({"label": f"{device} {stim} #{k + 1}", "plane": d.get("plane", ""),
                               "logged": e.get("logged_ns"), "observed": e.get("observed_ns")})
    return rows, events


def latency(run) -> str | None:
    """Stimulus brackets and log latencies (summary.json's per-device `latency`)."""
    rows, events = latency_rows(run)
    if not rows:
        return None
    out = ["<h2>Stimuli and log latency</h2>",
           table_html(["device", "stimulus", "sent", "logged", "stimulus bracket p50",
                       "logged latency (proven)", "observed latency"], rows),
           note_html("Logged latency: from the stimulus bracket to the device's own log stamp "
                     "mapped through the calibrated clock (widened by the stamp's resolution). "
                     "Observed: to the bracket of the first log fetch that saw the entry.")]
    if any(e["logged"] or e["observed"] for e in events):
        out.append(figure_html(run, figures.latency_figure(events), "latency",
                               "Log latency of each stimulus event: thick, proven from the "
                               "device's stamp; thin, from the first fetch that saw it."))
    return "".join(out)


def timeline(run) -> str | None:
    """The cross-plane timeline of the run's own events (bench/timeline.py): a lane figure for
    print and the paged, per-entry timeline (bench/timeline_page.py)."""
    from bench.timeline_cli import build_timeline
    from bench.timeline_page import timeline_html

    rows = build_timeline(run)
    if not rows:
        return None
    t0 = run.manifest.get("started_ns") or rows[0]["entry"].lo_ns
    blocks = len({r["block"] for r in rows})
    unordered = sum(1 for r in rows if r["unordered_count"])
    cap = (f"All {len(rows)} entries (stimuli, device log stamps mapped through the segment of "
           f"their clock in force, clock breaks), one lane per plane; {blocks} proven-ordered "
           f"blocks; thin bars ({unordered}) are unordered against another entry.")
    return ("<h2>Cross-plane timeline</h2>"
            + figure_html(run, figures.timeline_figure(rows, t0), "timeline", cap)
            + timeline_html(rows, int(t0)))


SECTIONS = [overview, identities, clocks, offsets, jitter, stability, latency, timeline]

from bench.report_measurements import measurements  # noqa: E402  (an experiment's own results)
SECTIONS.append(measurements)
