"""Per-device figures: offset over time with the proven band, the reads, breaks and (simulated
racks) the truth. Drawn from summary.json and the samples; nothing is recomputed here."""
from __future__ import annotations

import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.model.clock_records import ClockSummary  # noqa: E402
from bench.model.rundata import Run  # noqa: E402
from bench.output.tie import (  # noqa: E402
    break_label,
    fit_title,
    half_height,
    title_of,
    widening_caption,
)

PLANE_COLOURS = {"bmc": "#1f77b4", "pdu": "#d62728", "cooling": "#2ca02c", "optic": "#9467bd",
                 "reference": "#7f7f7f",
                 "gpu": "#76b900"}         # the GPU telemetry lane (the baseboard's controller)


def plane_colour(plane: str) -> str:
    return PLANE_COLOURS.get(plane, "#8c564b")


def _segment_lines(segs) -> list:
    """Per segment its fitted line (point offset and drift) as a function of reference time."""
    return [sg.line() for sg in segs]


def _segment_index(segs, t: np.ndarray) -> np.ndarray:
    """Index of the segment each instant belongs to (the last one starting at or before it)."""
    starts = np.asarray([sg.start_ns for sg in segs], dtype=np.int64)
    return np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(segs) - 1)


def _iso(ns: float) -> str:
    from datetime import datetime
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]


def unit_for(values_ns) -> tuple[float, str]:
    """(scale, unit) so that the largest magnitude reads between 1 and 1000."""
    v = np.asarray(values_ns, dtype=np.float64)
    v = v[np.isfinite(v)]
    m = float(np.max(np.abs(v))) if len(v) else 0.0
    for scale, unit in _UNITS:
        if m >= scale:
            return scale, unit
    return 1.0, "ns"


def offset_title(device: str, clock: str, c: ClockSummary) -> str:
    """'bmc-1 · datetime: [0.8, 4.4] ms proven, drift [-73, 126] ppm assumed': the last
    segment's intervals with their words (bench.output.tie.title_of), never a point."""
    return title_of(device, clock, c)


@dataclass(frozen=True)
class _Frame:
    """What an offset figure draws against: each segment's fitted line, run time 0, the scale
    (`sc`) and the axes' half height (`half`, ns)."""
    segs: tuple
    lines: list
    t_start: int
    sc: float
    half: float

    def resid(self, t: Any, y: Any) -> np.ndarray:
        """y minus the fitted line of the segment of each t, in the figure's unit."""
        t = np.asarray(t, dtype=np.int64)
        k = _segment_index(self.segs, t)
        base = np.array([self.lines[j](ti) for j, ti in zip(k, t)], dtype=float)
        return (np.asarray(y, dtype=float) - base) / self.sc

    def x(self, t_ns: Any) -> Any:
        return (t_ns - self.t_start) / 1e9


def stated_bounds(segs, lines) -> list[tuple[int, float, float]]:
    """Per segment (epoch, lo, hi) of its offset bound at the epoch minus its own line there, ns:
    the interval the title states (for the last segment), where the figure draws it."""
    return [(sg.epoch_ns, float(sg.offset_ns.lo) - float(line(sg.epoch_ns)),
             float(sg.offset_ns.hi) - float(line(sg.epoch_ns))) for sg, line in zip(segs, lines)]


def offset_figure(run: Run, device: str, clock: str, c: ClockSummary, plane: str) -> Any:
    """Offset minus each segment's own fitted line against run time in s, at the scale of the
    bound the title states: that bound at each segment's epoch (a dark bar), every read's own
    interval (omitted where a coarse tick makes each wider than the plot), the proven band
    between reads in a lighter shade (the rate bound widens it with the time to the nearest read,
    so it may leave the axes; the caption says so), breaks and counter wraps, and (simulated
    racks) the truth."""
    segs = c.segments
    lines = _segment_lines(segs)
    t0 = run.manifest.started_ns or segs[0].start_ns
    probe = _Frame(segs, lines, t0, 1.0, 1.0)
    s, e, v, q = run.clock_reads(device, clock)
    mid = (s + e) // 2
    rlo, rhi = (probe.resid(mid, v - e), probe.resid(mid, v + q - s)) if len(s) else ((), ())
    truth = run.truth.clock(device, clock) if run.truth else None
    info = run.manifest.device(device).clock(clock)
    modulus = (info.modulus_ns or 0) if info else 0
    tt, td = _truth_resid(probe, truth, modulus)
    stated = stated_bounds(segs, lines)
    half = half_height(stated, np.asarray(rlo), np.asarray(rhi), td)
    sc, unit = unit_for([half])
    fr = _Frame(segs, lines, t0, sc, half)
    fig, ax = plt.subplots(figsize=(6.4, 3.7), dpi=150)
    _draw_reads(ax, fr, mid, np.asarray(rlo) / sc, np.asarray(rhi) / sc, q)
    rate = _draw_bands(ax, fr, plane_colour(plane), c)
    _draw_stated(ax, fr, stated, plane_colour(plane))
    _draw_breaks(ax, fr, c)
    if len(tt):
        for k, (x, y) in enumerate(zip(*tt_split(fr, tt, td))):
            ax.plot(x, y, color="k", lw=1, label="truth (simulated)" if k == 0 else None)
    ax.set_ylim(-half / sc, half / sc)
    ax.set_xlabel("run time (s)")
    ax.set_ylabel(f"offset − segment fit ({unit})")
    title = fit_title(offset_title(device, clock, c), 6.2)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
              frameon=False)         # below the axes: never over the data
    fig.text(0.01, 0.01, textwrap.fill(caption(rate), 110), fontsize=7, va="bottom", color="0.25")
    # fixed margins in inches, the widest a tight layout gave the default rack's figures (a
    # title line: 0.16 in): drawn once, by the save (bench/output/figures.py)
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.85 / w, right=1 - 0.4 / w, bottom=1.53 / h,
                        top=1 - (0.17 + 0.16 * (title.count("\n") + 1)) / h)
    return fig


def caption(rate_ppm: float | None) -> str:
    """The offset figure's caption: what the two shades and the grey bars are."""
    return widening_caption(rate_ppm) + ". Grey: each read's own interval."


def _truth_resid(fr: _Frame, truth: Any, modulus: int) -> tuple[np.ndarray, np.ndarray]:
    """The simulated truth inside the segments, minus each segment's own line (ns)."""
    if truth is None or not truth.t_ns:
        return np.zeros(0, np.int64), np.zeros(0)
    tt = np.asarray(truth.t_ns, dtype=np.int64)
    to = np.asarray(truth.offset_ns, dtype=np.float64)
    keep = np.zeros(len(tt), bool)
    for sg in fr.segs:
        keep |= (tt >= sg.start_ns) & (tt <= sg.end_ns)
    tt, to = tt[keep], to[keep]
    if not len(tt):
        return tt, to
    d = fr.resid(tt, to)
    if modulus:
        d -= np.round(d / modulus) * modulus
    return tt, d


def tt_split(fr: _Frame, tt: np.ndarray, d: np.ndarray) -> tuple[list, list]:
    """The truth's (x, y) per segment, in the figure's units (no line across a break)."""
    k = _segment_index(fr.segs, tt)
    xs, ys = [], []
    for j in range(len(fr.segs)):
        m = k == j
        if m.any():
            xs.append(fr.x(tt[m]))
            ys.append(d[m] / fr.sc)
    return xs, ys


def _draw_reads(ax: Any, fr: _Frame, mid: Any, lo: Any, hi: Any, q: Any) -> None:
    """Every read's own interval, unless a coarse tick makes each wider than the plot."""
    if not len(mid):
        return
    if np.median(hi - lo) <= 2 * fr.half / fr.sc:
        ax.vlines(fr.x(mid), lo, hi, color="0.6", lw=0.6, label="reads (each one's interval)")
    else:
        ax.plot([], [], " ", label=f"reads not drawn: each spans its {fmt_tick(q)} tick, "
                                   f"wider than the plot")


def _draw_bands(ax: Any, fr: _Frame, colour: str, c: ClockSummary) -> float | None:
    """Each segment's proven band against its own line, light: between reads the rate bound
    widens it. Returns that rate (ppm) when the summary states it."""
    a = c.assumptions
    rate = (a.rate_bound_ppm or a.drift_prior_ppm) if a is not None else None
    label = "proven band between reads" + (f" (widened at {rate:g} ppm)" if rate else "")
    for k, sg in enumerate(fr.segs):
        b = sg.band
        if not b:
            continue
        t = np.asarray(b.t_ns, dtype=np.int64)
        base = fr.lines[k](t)
        blo, bhi = np.asarray(b.lo) - base, np.asarray(b.hi) - base
        ax.fill_between(fr.x(t), blo / fr.sc, bhi / fr.sc, color=colour, alpha=0.18,
                        lw=0, label=label if k == 0 else None)
    return rate


def _draw_stated(ax: Any, fr: _Frame, stated: list, colour: str) -> None:
    """The bound at each segment's epoch: the interval the title states, as a dark bar."""
    for k, (epoch, lo, hi) in enumerate(stated):
        ax.vlines(fr.x(epoch), lo / fr.sc, hi / fr.sc, color=colour, lw=4, alpha=0.95,
                  label="bound at the epoch (the title's)" if k == 0 else None, zorder=4)


def _draw_breaks(ax: Any, fr: _Frame, c: ClockSummary) -> None:
    for br in c.breaks:
        a, b2 = fr.x(br.after_ns), fr.x(br.before_ns)
        ax.axvspan(a, b2, color="k", alpha=0.15)
        ax.axvline((a + b2) / 2, color="k", ls="--", lw=0.8,
                   label=f"break ({break_label(br, c.counter)})" if br is c.breaks[0] else None)
    for i, w in enumerate(c.wraps):
        ax.axvline(fr.x((w.after_ns + w.before_ns) / 2), color="0.3", ls=":",
                   lw=1.0, label="counter wrap (unwrapped)" if i == 0 else None)


def fmt_tick(q) -> str:
    from bench.units import fmt_ns
    q = np.asarray(q)
    return fmt_ns(float(np.median(q))) if q.size else "—"


def offset_plots(run: Run, out_dir: Path | None = None, formats=("png",),
                 devices: Collection[str] | None = None) -> list[Path]:
    """One offset figure per device clock with at least one segment (of `devices` only, when
    given); returns the files. A figure that fails leaves `offset_<device>_<clock>.error.txt`
    saying why, and the others are drawn."""
    from bench import safeio
    out_dir = Path(out_dir or run.path / "plots")
    with safeio.folder(out_dir) as d:
        return _offset_plots(run, d, formats, devices)


def _offset_plots(run: Run, out, formats, devices: Collection[str] | None = None) -> list[Path]:
    written = []
    for device, d in run.summary.devices.items():
        if devices is not None and device not in devices:
            continue
        for clock, c in d.clocks.items():
            if not c.segments:
                continue
            try:
                fig = offset_figure(run, device, clock, c, d.plane)
                for fmt in formats:
                    with out.atomic(f"offset_{device}_{clock}.{fmt}") as f:
                        fig.savefig(f, format=fmt)
                    written.append(out.path / f"offset_{device}_{clock}.{fmt}")
            except Exception as exc:   # one figure that cannot be drawn costs only itself
                out.write_text(f"offset_{device}_{clock}.error.txt", f"{exc!r}\n")
            finally:
                plt.close("all")
    return written
