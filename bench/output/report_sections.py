"""The report as a list of sections. A section is a function `(run) -> html fragment | None`
(None: nothing to say for this run); a new measurement joins the report by appending its
function to SECTIONS (or passing its own list to bench.output.report_html.build_report).

`run` is a bench.model.rundata.Run; when the report builds it, it is a `ReportRun` that also says where
figures go and in which formats. Use `figure_html(run, fig, stem, caption)` to write a figure into
RUN/plots/ and embed it (base64 PNG, so the HTML needs no network and no other file).
"""
from __future__ import annotations

import html
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench import safeio
from bench.analysis.arrays import F64
from bench.analysis.residuals import regular_series, segment_residuals
from bench.analysis.statuses import BreakKind
from bench.model.rundata import Run
from bench.output import figures
from bench.units import fmt_bounds_ns, fmt_interval_ns, fmt_ns, fmt_ns_up, fmt_ppm


@dataclass(frozen=True)
class ReportRun(Run):
    """A Run plus the report's figure settings; `written` collects every figure file."""

    formats: tuple = ("png",)
    details: bool = False             # draw the per-clock jitter and stability figures too
    written: list = field(default_factory=list, compare=False)
    figure_texts: dict = field(default_factory=dict, compare=False)   # stem -> texts shown
    figure_pt: dict = field(default_factory=dict, compare=False)      # stem -> smallest text pt
    loaded: dict = field(default_factory=dict, compare=False, repr=False)  # device -> Samples

    def samples(self, device: str):
        """A device's samples, read once per report (every section that draws a clock reads
        them; forked workers inherit what the report read before they started)."""
        if device not in self.loaded:
            self.loaded[device] = super().samples(device)
        return self.loaded[device]


def esc(x) -> str:
    return html.escape(str(x))


def table_html(head: list[str], rows: Iterable[Iterable[object]], cls: str = "") -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def note_html(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def figure_html(run, fig, stem: str, caption: str) -> str:
    """Write `fig` into RUN/plots/<stem>.{formats} and return it embedded, at its own size (its
    text as large on the screen as its points say), with its caption."""
    formats = getattr(run, "formats", ("png",))
    paths, png = figures.save(fig, run.path / "plots", stem, formats, tight=False)
    for attr, value in (("figure_texts", figures.texts), ("figure_pt", figures.smallest_text_pt)):
        d = getattr(run, attr, None)
        if d is not None:                   # read after the save's draw: no second draw
            d[stem] = value(fig)
    written = getattr(run, "written", None)
    if written is not None:
        written.extend(paths)
    files = ", ".join(p.name for p in paths)
    w, h = figures.png_size(png)
    css_w = round(w / figures.DPI * 96)         # the figure's own size, in CSS pixels
    return (f'<figure style="width:{css_w}px"><img src="{figures.data_uri(png)}" '
            f'alt="{esc(stem)}" width="{css_w}" height="{round(h / figures.DPI * 96)}">'
            f'<figcaption>{esc(caption)} <span class="files">(plots/{esc(files)})</span>'
            f'</figcaption></figure>')


def iso(ns) -> str:
    if not ns:
        return "—"
    return datetime.fromtimestamp(int(ns) / 1e9, UTC).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def clock_items(run):
    """(device, plane, clock name, clock summary) for every clock with at least one segment
    that advanced (a stuck clock shows no offset or drift anywhere: only the verdict table
    names it)."""
    from bench.model.vocabulary import STUCK
    for d, c in run.summary.clocks():
        if c.segments and str(c.verdict) != STUCK:
            yield d.name, d.plane, c.name, c


def longest_segment(c):
    return c.longest


# -- sections ------------------------------------------------------------------------------------

def overview(run) -> str:
    m = run.manifest
    git = m.git
    rows = [["run", run.run_id], ["experiment", m.experiment],
            ["status", m.status + (f": {m.error}" if m.error else "")],
            ["started", iso(m.started_ns)], ["ended", iso(m.ended_ns)],
            ["duration", durations_text(m)],
            ["rack", f"{m.inventory.name} "
                     f"({'simulated' if m.simulated else 'lab'}; file {m.rack_file})"],
            ["stimuli", "sent" if m.armed else "not armed (printed only)"],
            ["parameters", ", ".join(f"{k}={v}" for k, v in m.parameters.items())],
            ["rackclock", f"{m.versions.get('rackclock', '')} at "
                          f"{str(git.get('revision', ''))[:12]}{' (dirty)' if git.get('dirty') else ''}"]]
    return "<h2>Run</h2>" + table_html(["", ""], rows, "kv")


def durations_text(m) -> str:
    """Both durations, named: how long the devices were probed, and the run's wall time (the
    rack's start, discovery and the summary included)."""
    probing = (None if m.probed_until_ns is None or m.started_ns is None
               else (m.probed_until_ns - m.started_ns) / 1e9)
    wall = m.duration_s if m.duration_s is not None else (
        None if m.ended_ns is None or m.started_ns is None else (m.ended_ns - m.started_ns) / 1e9)
    return "; ".join(f"{what} {'—' if v is None else f'{v:.1f} s'}"
                     for what, v in (("probing", probing), ("wall", wall)))


def identities(run) -> str:
    """Device identities and firmware, their errors, and the reference's health."""
    summ = run.summary.devices
    out = ["<h2>Devices and reference</h2>",
           table_html(["device", "plane", "driver", "vendor", "model", "serial", "firmware",
                       "state", "errors"], _identity_rows(run))]
    first = [(n, k, v) for n, d in sorted(summ.items()) for k, v in d.first_errors.items()]
    if first:
        out.append(table_html(["device", "error", "first message"], [list(x) for x in first]))
    ref_rows = _reference_rows(run.manifest)
    if ref_rows:
        out.append(table_html(["reference", "source", "grade", "verified", "uncertainty",
                               "basis", "note"], ref_rows))
    return "".join(out)


def _identity_rows(run) -> list[list]:
    """Per device: plane, driver, identity (the manifest's, else the summary's), state and
    errors."""
    rows = []
    summ = run.summary.devices
    for name, d in sorted(run.manifest.devices.items()):
        ds = summ.get(name)
        ident = d.identity or (ds.identity if ds else d.identity)
        rows.append([name, d.plane, d.driver, ident.vendor, ident.model, ident.serial,
                     ident.firmware,
                     d.state or ("not started: " + d.error if d.error else ""),
                     ds.errors_text() if ds else "0"])
    return rows


def _reference_rows(m) -> list[list]:
    """The reference's health at the run's start and end, those known."""
    return [[label, h.source, h.grade, "yes" if h.verified else "no",
             fmt_ns_up(h.uncertainty_ns), h.basis, h.note]
            for h, label in ((m.reference, "at start"), (m.reference_end, "at end")) if h]


def _break_size(b) -> str:
    """A step's proven size; a restart's as how far the zero moved, in days or hours."""
    sz = b.size_ns
    if sz is None:
        return "—"
    if b.kind == BreakKind.REBOOT or abs(sz.point) >= 600e9:
        from bench.compare.verdicts import fmt_span
        p = sz.point
        return (f"restart: zero moved {fmt_span(abs(p) / 1e9)} "
                f"{'later' if p < 0 else 'earlier'} (size {fmt_interval_ns(sz.lo, sz.hi)})")
    return fmt_bounds_ns(sz.lo, sz.hi)


def prior_of(run, device: str) -> float:
    return run.manifest.inventory.drift_prior_ppm(device)


def bound_cells(sg, counter: bool) -> tuple[str, str]:
    """(offset, drift) of a segment with the vocabulary's word for each: a drift at an instant
    is assumed unless the summary says otherwise (never called proven by default)."""
    from bench.model.vocabulary import word
    from bench.output.terminal import compact_offset, ppm_interval
    off = ("zero at " if counter else "") + compact_offset(sg.offset_ns, counter)
    d = sg.drift_ppm
    return (f"{off} {word(sg.offset_status)}",
            f"{ppm_interval(d.lo, d.hi)} ppm {word(sg.drift_status or 'assumed')}")


def clocks(run) -> str | None:
    """Per clock segment: proven offset and drift, jitter, brackets, breaks, the truth check."""
    rows, brk, notes = [], [], []
    for device, _plane, clock, c in clock_items(run):
        rows += [_segment_row(device, clock, c, k, sg) for k, sg in enumerate(c.segments)]
        notes += [f"{device} · {clock}: {text}"
                  for text in (c.zone_note, c.resolution_note, c.note) if text]
        brk += [[device, clock, b.kind, iso(b.after_ns), iso(b.before_ns), _break_size(b)]
                for b in c.breaks]
    if not rows:
        return "<h2>Clocks</h2>" + note_html("No clock has a fit in this run.")
    out = ["<h2>Clocks</h2>",
           table_html(["device", "clock", "seg", "reads", "epoch", "offset", "width",
                       "drift at the epoch", "mean drift", "resolution", "bracket p50",
                       "residual std", "truth"],
                      rows),
           note_html("Offset is device minus reference at the segment's epoch; a counter's is shown "
                     "as the instant of its zero. Residual std is of interval midpoints "
                     "against the point fit: for a coarse clock it is the tick, not the noise. "
                     "Drift is the frequency at the epoch: at best assumed (it holds with at "
                     "most one rate change in the segment the reads do not show; an unseen "
                     "slew is two), and assumed on the drift prior's edge too.")]
    out += [note_html(n) for n in notes]
    if brk:
        out.append("<h3>Breaks</h3>" + table_html(
            ["device", "clock", "kind", "after", "at or before", "size (proven)"], brk))
    return "".join(out)


def _segment_row(device: str, clock: str, c, k: int, sg) -> list:
    """The Clocks table's row of segment k of a clock."""
    o = sg.offset_ns
    truth = "" if sg.truth is None else ("inside" if sg.truth.inside else "OUTSIDE")
    off, drift = bound_cells(sg, c.counter)
    return [device, clock, k + 1, sg.reads, iso(sg.epoch_ns), off,
            fmt_ns_up(o.hi - o.lo), drift, mean_drift_text(sg),
            fmt_ns(sg.resolution_ns or c.resolution_ns),
            fmt_ns(sg.bracket_median_ns), fmt_ns(sg.jitter_ns.get("std")),
            truth]


def _residuals(run, device, clock, c):
    s, e, v, q = run.clock_reads(device, clock)
    return segment_residuals(s, e, v, q, c.longest)


def jitter_figure_of(run, device: str, plane: str, clock: str, c: dict):
    """(figure, caption) of the residuals and brackets of one clock, or (None, why not)."""
    r = _residuals(run, device, clock, c)
    if len(r) < 3:
        return None, f"{device} · {clock}: {len(r)} reads, no histogram."
    cap = (f"{device} · {clock}: residuals of the reads of its longest segment against the "
           f"point fit, and the widths of their brackets.")
    if r.coarse:
        cap = (f"{device} · {clock}: the resolution ({fmt_ns(r.resolution_ns)}) is over "
               f"{r.resolution_ns / np.median(r.bracket):.3g}× the median bracket, so a read's "
               f"residual is the tick, not clock noise: above, how close each read's tick edge "
               f"came to the fit (the reads that narrow the bound); below, the bracket widths, "
               f"what the bench itself contributes.")
    return figures.residual_figure(r, device, clock, plane), cap


ON_DEMAND = "Drawn on demand (`rackclock report RUN --details`): {}."


def per_clock(run, title: str, kind: str, figure_of, part: tuple[int, int] = (0, 1)
              ) -> str | None:
    """A section of one figure per clock (`figure_of` -> (figure, caption), or (None, why not)),
    saved as plots/<kind>_<device>_<clock>. `part` (k, n): the k-th of n contiguous shares of the
    clocks (the report draws the shares in parallel; the first carries the heading)."""
    items = list(clock_items(run))
    k, n = part
    figs = []
    for device, plane, clock, c in items[k * len(items) // n:(k + 1) * len(items) // n]:
        fig, cap = figure_of(run, device, plane, clock, c)
        figs.append(note_html(cap) if fig is None else
                    figure_html(run, fig, f"{kind}_{device}_{clock}", cap))
    if k:
        return "".join(figs) or None
    return f"<h2>{title}</h2>" + "".join(figs) if items else None


def jitter(run, part: tuple[int, int] = (0, 1)) -> str | None:
    if not getattr(run, "details", True):
        return None if part[0] else (
            "<h2>Residual jitter and brackets</h2>"
            + note_html(ON_DEMAND.format("a figure per clock of its residuals' and "
                                         "brackets' histograms")))
    return per_clock(run, "Residual jitter and brackets", "jitter", jitter_figure_of, part)


def stability_figure_of(run, device: str, plane: str, clock: str, c: dict):
    """(figure, caption) of ADEV/MDEV with error bars and TDEV/MTIE for one clock, or
    (None, why not)."""
    from bench.analysis import stability as stab

    r = _residuals(run, device, clock, c)
    ser = regular_series(r.t_ns, r.mid)
    if not ser.ok:
        return None, f"{device} · {clock}: no ADEV/MDEV/TDEV/MTIE: {ser.note}."
    rate = 1.0 / ser.interval_s
    phase_s = (ser.x - ser.x[0]) * 1e-9
    taus = stab.log_taus(len(ser.x), rate)
    curves: dict[str, tuple[F64, ...]] = {
        k: stab.deviation_with_errors(k, phase_s, rate, taus=taus) for k in ("adev", "mdev")}
    t, d, err = stab.deviation_with_errors("tdev", phase_s, rate, taus=taus)
    curves["tdev"] = (t, d * 1e9, err * 1e9)
    curves["mtie"] = stab.mtie(ser.x, rate, taus)
    floor = r.resolution_ns / math.sqrt(12) if r.coarse else None
    cap = (f"{device} · {clock}: ADEV and MDEV (fractional frequency) and TDEV and MTIE (time) "
           f"of the residual offset (interval midpoints minus the point fit, averaged into "
           f"{len(ser.x)} bins of {ser.interval_s:g} s). Error bars: ±dev/√N, N the terms "
           f"averaged at each τ (allantools); MTIE is a maximum, without one.")
    if floor:
        cap += (f" Coarse clock: with a {fmt_ns(r.resolution_ns)} tick the curves are "
                f"dominated by quantization (dotted: what the tick alone gives); they bound "
                f"the oscillator's instability only from above.")
    return figures.stability_figure(curves, device, clock, plane, ser.interval_s, floor), cap


def stability(run, part: tuple[int, int] = (0, 1)) -> str | None:
    if not getattr(run, "details", True):
        return None if part[0] else (
            "<h2>Stability (ADEV, MDEV, TDEV, MTIE)</h2>"
            + note_html(ON_DEMAND.format("a figure per clock of its ADEV, MDEV, TDEV and MTIE")))
    return per_clock(run, "Stability (ADEV, MDEV, TDEV, MTIE)", "stability",
                     stability_figure_of, part)


def _b(x) -> str:
    return fmt_bounds_ns(x.lo, x.hi) if x else "—"


def latency_rows(run: Any) -> tuple[list[list], list[dict], list[str]]:
    """(table rows per device and stimulus, one series per device and stimulus type for the
    distribution figure, the types with no bounded event)."""
    rows, series, empty = [], [], []
    for device, d in sorted(run.summary.devices.items()):
        for stim, L in sorted(d.latency.items()):
            rows.append(_latency_row(device, stim, L))
            s = _latency_series(f"{device} {stim}", d.plane, L.events)
            if s:
                series.append(s)
            else:
                empty.append(f"{device} {stim}")
    return rows, series, empty


def _latency_row(device: str, stim: str, L: Any) -> list:
    """device, stimulus, sent, events bounded, stimulus bracket p50, logged and observed."""
    br = [e.e_ns - e.s_ns for e in L.events if e.e_ns is not None]
    either = L.logged_ns or L.observed_ns
    return [device, stim, L.sent, either.n if either else 0,
            fmt_ns(float(np.median(br))) if br else "—", _b(L.logged_ns), _b(L.observed_ns)]


def _latency_series(label: str, plane: str, evs: Any) -> dict | None:
    """The events' bounds for the distribution figure: device stamps, else the first fetch."""
    logged = [(e.logged_ns.lo, e.logged_ns.hi) for e in evs if e.logged_ns]
    seen = [(e.observed_ns.lo, e.observed_ns.hi) for e in evs if e.observed_ns]
    if not (logged or seen):
        return None
    return {"label": label, "plane": plane, "bounds": logged or seen,
            "basis": "device stamps" if logged else "first fetch that saw it"}


def latency(run) -> str | None:
    """Stimulus brackets and log latencies (summary.json's per-device `latency`)."""
    rows, series, empty = latency_rows(run)
    if not rows:
        return None
    out = ["<h2>Stimuli and log latency</h2>",
           table_html(["device", "stimulus", "sent", "logged", "stimulus bracket p50",
                       "logged latency (proven)", "observed latency"], rows),
           note_html("Logged latency: from the stimulus bracket to the device's own log stamp "
                     "mapped through the calibrated clock (widened by the stamp's resolution). "
                     "Observed: to the bracket of the first log fetch that saw the entry.")]
    if series:
        out.append(figure_html(
            run, figures.latency_strip_figure(series), "latency",
            "Log latency per device and stimulus type (events in brackets): each event's "
            "bound as a bar, its midpoint as a dot; the table gives the bounds over all events."
            + ("" if getattr(run, "details", True) else " "
               + ON_DEMAND.format("the latency distributions (histograms and CDF bounds)"))))
    if series and getattr(run, "details", True):
        out.append(figure_html(
            run, figures.latency_figure(series), "latency_cdf",
            "Log latency per device and stimulus type as a distribution: histogram of the "
            "events' bound midpoints (shaded: the range every bound allows) and the empirical "
            "CDF of the bounds' lower (solid) and upper (dashed) ends; the events' true CDF "
            "lies between the two." + (f" No event bounded for: {', '.join(empty)}."
                                       if empty else "")))
    return "".join(out)


def reference_health(run: Any) -> str | None:
    """The reference's health over the run (RUN/reference.csv)."""
    p = run.path / "reference.csv"
    if not p.exists():
        return None
    rows = _snapshots(p)
    if len(rows) < 2:
        return None
    t0 = run.manifest.started_ns or int(rows[0]["t_ns"])
    t = [(int(r["t_ns"]) - t0) / 1e9 for r in rows]
    u = [float(r.get("uncertainty_ns") or 0) for r in rows]
    grades = [r.get("grade", "") for r in rows]
    cap = _reference_caption(len(rows), rows[-1].get("basis", ""))
    fig = figures.reference_figure(t, u, grades, _master_offsets(rows))
    return "<h2>Reference over the run</h2>" + figure_html(run, fig, "reference", cap)


def _snapshots(p: Any) -> list[dict]:
    """reference.csv's rows that carry a time stamp."""
    from bench import saferead
    return [r for r in saferead.csv_rows(p) if (r.get("t_ns") or "").lstrip("-").isdigit()]


def _reference_caption(n: int, basis: str) -> str:
    """The caption of the reference's figure: n snapshots on `basis`."""
    return (f"{n} snapshots of the reference ({basis}): the error bound added to every "
            f"bracket, the offset from the PTP master where linuxptp reports it, and the grade."
            + (" A simulated rack's reference is exact by construction: the bound is zero."
               if basis == "simulated" else ""))


def _master_offsets(rows: list[dict]) -> list[float] | None:
    """Each snapshot's offset from the PTP master (NaN where not reported); None without any."""
    offs = [r.get("offset_from_master_ns") for r in rows]
    if not any(x not in ("", None) for x in offs):
        return None
    return [float(x) if x not in ("", None) else np.nan for x in offs]


def timeline(run) -> str | None:
    """The cross-plane timeline of the run's own events (bench/analysis/timeline_order.py): a lane figure for
    print and the paged, per-entry timeline (bench/output/timeline_page.py)."""
    from bench.model.timeline_build import build_timeline
    from bench.output.timeline_page import run_span, timeline_html

    rows = build_timeline(run)
    if not rows:
        return None
    t0 = run.manifest.started_ns or rows[0]["entry"].lo_ns
    span = run_span(run)
    blocks = len({r["block"] for r in rows})
    unordered = sum(1 for r in rows if r["unordered_count"])
    cap = (f"All {len(rows)} entries (stimuli, device log stamps mapped through the segment of "
           f"their clock in force, clock breaks), one lane per plane; {blocks} proven-ordered "
           f"blocks; thin bars ({unordered}) are unordered against another entry. The axis "
           f"spans the run; entries from before or after it are counted above the axes and "
           f"listed, collapsed, in the timeline below.")
    return ("<h2>Cross-plane timeline</h2>"
            + figure_html(run, figures.timeline_figure(rows, t0, span), "timeline", cap)
            + timeline_html(rows, int(t0), span=span))



def chrony_columns(run) -> str | None:
    """chrony's `sourcestats` columns (NP, span, frequency, skew, offset, std dev) from a
    chrony-style regression over each clock's last segment, beside the proven bounds: the
    statistics an NTP engineer reads, labelled as what they are."""
    from bench.analysis.chrony_style import fit_chrony

    rows = []
    for device, _plane, clock, c in clock_items(run):
        sg = c.last
        s, e, v, q = run.clock_reads(device, clock)
        keep = (s >= sg.start_ns) & (e <= sg.end_ns)
        f = fit_chrony(s[keep], e[keep], v[keep], sg.resolution_ns or c.resolution_ns
                       or (int(q[0]) if len(q) else 1), epoch_ns=sg.epoch_ns)
        if f is None:
            continue
        o = sg.offset_ns
        counter = c.counter
        off = (f"{'+' if f.offset_ns.point >= o.point else ''}"
               f"{fmt_ns(f.offset_ns.point - o.point)} from the proven point" if counter
               else fmt_ns(f.offset_ns.point, 6))
        rows.append([device, clock, f.used, fmt_ns(f.span_ns), fmt_ppm(f.drift_ppm.point),
                     fmt_ppm(f.drift_ppm.width / 2), off, fmt_ns(f.residual_sd_ns),
                     *bound_cells(sg, counter)])
    if not rows:
        return None
    return ("<h2>Chrony-style statistics beside the bench's bounds</h2>"
            + table_html(["device", "clock", "NP", "span", "frequency", "skew", "offset",
                          "std dev", "offset (bound)", "drift (bound)"], rows)
            + note_html("Left of the bounds: statistics, not proofs. chrony's "
                        "regression (bench/analysis/chrony_style.py) over the last segment's reads: NP "
                        "points kept by its runs test, their span, the frequency and its skew "
                        "(99 % Student-t half-width, assuming independent Gaussian residuals, "
                        "which a coarse tick and one-sided delays are not), the offset at the "
                        "segment's epoch and the residuals' standard deviation. The two "
                        "right-hand columns are the bench's bounds, each with its word: proven, "
                        "or assumed (a drift at an instant rests on at most one unseen rate "
                        "change)."))


def limits(run) -> str | None:
    """The rack file's [limits], judged from the bounds; also written as RUN/limits.xml (JUnit)."""
    from bench.model import limit_checks as lim

    checks = lim.check_run(run.summary, run.manifest)
    if not checks:
        return None
    safeio.write_text(run.path / "limits.xml", lim.junit(checks))
    return ("<h2>Limits</h2>" + table_html(lim.HEAD + ["why"], [r + [c.why] for r, c in
                                                               zip(lim.rows(checks), checks)])
            + note_html(lim.counts_line(checks) + ". Pass: every value the bounds allow meets "
                        "the limit; fail: none does; JUnit: limits.xml."))


def mean_drift_text(sg) -> str:
    """'[-110, 110] ppm proven over 35.5 s': the one proven drift, over its window."""
    from bench.model.vocabulary import word
    from bench.output.terminal import ppm_interval
    m = sg.mean_drift_ppm
    if not m or m.get("lo") is None:
        return "—"
    win = (f" over {(m['to_ns'] - m['from_ns']) / 1e9:.3g} s" if m.get("to_ns") and
           m.get("from_ns") else "")
    return f"{ppm_interval(m['lo'], m['hi'])} ppm {word(m.get('status'))}{win}"
