"""The report's figures, made for the screen first: page wide (FULL_IN) or half (HALF_IN), every
text at least 8.25 pt, which is 11 CSS px when the report embeds a figure at its own size (its
pixels / DPI * 96), every axis with its unit, one colour per plane (bench.output.plots.PLANE_COLOURS).
Layouts are fixed margins in inches (`margins`), never a tight layout or a tight bounding box:
each figure is drawn once, by the save that writes its PNG. Drawn from summary.json, the samples
and bench.analysis.stability; no fit is recomputed here.
"""
from __future__ import annotations

import base64
import io
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.analysis.residuals import Residuals  # noqa: E402
from bench.output.plots import fmt_tick, plane_colour, unit_for  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

COLUMN_IN = 3.5                 # single-column width of a printed figure (trend, fleet)
FULL_IN = 9.6                   # the report's page-wide figure: 922 CSS px, fits a 1024 px window
HALF_IN = 4.7
DPI = 96                        # pixels per inch of the PNGs: shown 1:1 at 100 % zoom
MIN_TEXT_PT = 8.25              # 11 CSS px at 100 % zoom (1 pt = 96/72 CSS px at printed size)
PRINT_RC: dict[RcKeyType, Any] = {
    "font.size": 7, "axes.titlesize": 7, "axes.labelsize": 7, "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5, "legend.fontsize": 6, "lines.linewidth": 0.9,
    "axes.linewidth": 0.6, "grid.linewidth": 0.4, "savefig.dpi": 200,
    "savefig.bbox": "tight", "savefig.pad_inches": 0.03, "svg.fonttype": "none"}
SCREEN_RC: dict[RcKeyType, Any] = {
    "font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5, "legend.fontsize": 8.5, "figure.titlesize": 10,
    "lines.linewidth": 1.0, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
    "savefig.dpi": DPI, "svg.fonttype": "none", "axes.titlelocation": "left",
    "axes.titley": 1.0}             # a title at its place, not placed by a layout of its own

@contextmanager
def print_style():
    with plt.rc_context(PRINT_RC):
        yield


@contextmanager
def screen_style():
    with plt.rc_context(SCREEN_RC):
        yield


def margins(fig, left=0.85, right=0.25, top=0.45, bottom=0.6, hspace=None, wspace=None):
    """Fixed margins in inches (a layout that costs no draw)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - top / h, bottom=bottom / h,
                        hspace=hspace, wspace=wspace)


# -- writing -------------------------------------------------------------------------------------

def save(fig, out_dir: Path, stem: str, formats=("png",), tight: bool = True
         ) -> tuple[list[Path], bytes]:
    """Write the figure in every format; return the files and the PNG bytes (for embedding).
    The PNG is drawn once, into memory, and written from there. `tight`: a tight bounding box
    (the print figures of trend and fleet); the report's figures have fixed margins."""
    from bench import safeio
    out_dir = Path(out_dir)
    kw = {"bbox_inches": "tight", "pad_inches": 0.03} if tight else {}
    dpi = DPI if not tight else 200
    paths = []
    with plt.rc_context(PRINT_RC if tight else SCREEN_RC):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, **kw)
        if _title_over_offset(fig):        # rare: drawn again with the title placed above it
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi, **kw)
        png = buf.getvalue()
        with safeio.folder(out_dir) as d:
            for fmt in formats:
                with d.atomic(f"{stem}.{fmt}") as f:
                    if fmt == "png":
                        f.write(png)
                    else:
                        fig.savefig(f, format=fmt, dpi=dpi, **kw)
                paths.append(out_dir / f"{stem}.{fmt}")
    plt.close(fig)
    return paths, png


def _title_over_offset(fig) -> bool:
    """After a draw: whether an axes whose title sits at a fixed height (SCREEN_RC's
    `axes.titley`, which spares every draw the title's own layout pass) shows a y-axis offset
    text ('1e-5', '+1.2e3') that the title may cover. Those axes get matplotlib's automatic
    title placement back (the caller draws again)."""
    hit = False
    for ax in fig.axes:
        off = ax.yaxis.offsetText
        titled = any(t.get_text() for t in (ax.title, ax._left_title, ax._right_title))
        if titled and not ax._autotitlepos and off.get_visible() and off.get_text():
            ax._autotitlepos = True      # matplotlib's own switch (set_title(y=None) never sets it)
            hit = True
    return hit


def _visible_texts(fig):
    out = list(fig.texts)
    for ax in fig.axes:
        out += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        out += [t for t in ax.get_xticklabels() + ax.get_yticklabels()]
        out += list(ax.texts)
        leg = ax.get_legend()
        if leg is not None:
            out += list(leg.get_texts())
    for leg in fig.legends:
        out += list(leg.get_texts())
    return [t for t in out if t.get_text() and t.get_visible()]


def texts(fig) -> list[str]:
    """Every text a reader sees in the figure: titles, axis labels, tick labels, legend entries
    and annotations (what the report's legibility test reads). Call it after `save`: the save's
    draw set the tick labels, so no second draw is needed."""
    return [t.get_text() for t in _visible_texts(fig)]


def smallest_text_pt(fig) -> float:
    """The smallest font size (pt) of any text a reader sees."""
    sizes = [t.get_fontsize() for t in _visible_texts(fig)]
    return float(min(sizes)) if sizes else 0.0


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's header."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# -- residuals -----------------------------------------------------------------------------------

def residual_figure(r: Residuals, device: str, clock: str, plane: str):
    """Two panels: the reads' residuals against the point fit, and their bracket widths.

    A fine clock's residual is the midpoint of the read's offset interval minus the fit; a coarse
    one's is the same midpoint but dominated by the tick, and the panel says so."""
    colour = plane_colour(plane)
    with screen_style():
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(HALF_IN, 4.6))
        if r.coarse:
            # the midpoint is the tick's quantization: show instead how close each read's tick
            # edge came to the fit, which is what narrows the bound
            edge = np.minimum(np.abs(r.lo), np.abs(r.hi))
            sc, unit = unit_for(edge)
            a1.hist(edge / sc, bins=min(40, max(8, len(r) // 3)), color=colour, alpha=0.8,
                    histtype="stepfilled")          # one patch, not one a bin: same picture
            a1.set_xlabel(f"distance of the read's tick edge from the fit ({unit})")
            a1.set_title(f"{device} · {clock}: {len(r)} reads of a {fmt_tick(r.resolution_ns)} "
                         f"tick\n(the tick dominates: edges near the fit narrow the bound)")
        else:
            sc, unit = unit_for(r.mid)
            a1.hist(r.mid / sc, bins=min(40, max(8, len(r) // 3)), color=colour, alpha=0.8,
                    histtype="stepfilled")
            width = float(np.median(r.hi - r.lo))
            a1.set_xlabel(f"interval midpoint − fit ({unit}); median interval width "
                          f"{width / sc:.3g} {unit}")
            a1.set_title(f"{device} · {clock}: {len(r)} reads against the point fit")
        a1.set_ylabel("reads")
        bsc, bunit = unit_for(r.bracket)
        a2.hist(r.bracket / bsc, bins=min(40, max(8, len(r) // 3)), color=colour, alpha=0.5,
                histtype="stepfilled", edgecolor=colour)
        med = float(np.median(r.bracket))
        a2.axvline(med / bsc, color="k", lw=0.8, ls="--", label=f"median {med / bsc:.3g} {bunit}")
        a2.set_xlabel(f"bracket width e − s ({bunit})")
        a2.set_ylabel("reads")
        a2.legend(loc="upper right")
        for a in (a1, a2):
            a.grid(alpha=0.3)
        margins(fig, left=0.7, top=0.75, bottom=0.55, hspace=0.6)
    return fig


# -- stability -----------------------------------------------------------------------------------

def stability_figure(curves: dict, device: str, clock: str, plane: str, interval_s: float,
                     floor_ns: float | None = None):
    """ADEV and MDEV (fractional frequency) above, TDEV and MTIE (time) below, log-log against
    tau in s, error bars where the curve has them; legends beside the axes, never on the data.

    `curves`: {"adev"|"mdev": (tau, dev[, err]), "tdev": (tau, ns[, err ns]), "mtie": (tau, ns)};
    `floor_ns`: the phase noise a clock's tick alone gives (q/√12), drawn as the white-PM ADEV
    it implies."""
    colour = plane_colour(plane)

    def draw(ax, key, scale, fmt, label, **kw):
        c = curves.get(key)
        if c is None or len(c[0]) == 0:
            return
        t, d = np.asarray(c[0]), np.asarray(c[1]) / scale
        err = np.asarray(c[2]) / scale if len(c) > 2 else None
        if err is not None:
            ax.errorbar(t, d, yerr=np.minimum(err, d * 0.999), fmt=fmt, ms=2.5, color=colour,
                        elinewidth=0.6, capsize=1.5, label=label, **kw)
        else:
            ax.plot(t, d, fmt, ms=2.5, color=colour, label=label, **kw)

    with screen_style():
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(HALF_IN * 1.4, 5.0), sharex=True)
        draw(a1, "adev", 1.0, "o-", "ADEV")
        draw(a1, "mdev", 1.0, "s--", "MDEV", alpha=0.7)
        if floor_ns and "adev" in curves:
            tt = np.asarray(curves["adev"][0], dtype=float)
            a1.plot(tt, np.sqrt(3) * floor_ns * 1e-9 / tt, color="0.5", ls=":",
                    label="tick alone\n(white PM, q/√12)")
        a1.set_xscale("log")
        a1.set_yscale("log")
        a1.set_ylabel("deviation of fractional\nfrequency (dimensionless)")
        a1.set_title(f"{device} · {clock}: stability of the residual offset "
                     f"(τ0 = {interval_s:g} s)")
        a1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        vals = [np.asarray(curves[k][1], dtype=float) for k in ("tdev", "mtie") if k in curves]
        sc, unit = unit_for(np.concatenate(vals) if vals else [1.0])
        draw(a2, "tdev", sc, "o-", "TDEV")
        draw(a2, "mtie", sc, "^--", "MTIE", alpha=0.7)
        a2.set_xscale("log")
        a2.set_yscale("log")
        a2.set_ylabel(f"time error ({unit})")
        a2.set_xlabel("averaging time τ (s)")
        a2.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        a2.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        a2.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())    # the majors are 1-2-5
        a2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        for a in (a1, a2):      # a 1-2-5 grid: 2 minor ticks a decade, not 8 (each costs a draw)
            a.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(base=10, subs=(2.0, 5.0)))
            a.grid(alpha=0.3, which="both")
        margins(fig, left=1.2, right=1.75, top=0.45, bottom=0.55, hspace=0.12)
    return fig


# -- stimuli and log latency ---------------------------------------------------------------------

def latency_figure(series: list[dict]):
    """Log latency as a distribution, one row per device and stimulus type: a histogram of the
    events' latency bounds (midpoints, with the range every event's bound allows shaded) and
    the empirical CDF as a pair of staircases (of the bounds' lower and of their upper ends:
    the true CDF of these events lies between them).

    `series`: [{"label", "plane", "bounds": [(lo_ns, hi_ns), ...], "basis"}]."""
    n = len(series)
    with screen_style():
        fig, axes = plt.subplots(n, 2, figsize=(FULL_IN, 1.3 + 1.9 * n), squeeze=False)
        for (a1, a2), sr in zip(axes, series):
            b = np.asarray(sr["bounds"], dtype=float)
            sc, unit = unit_for(b.ravel())
            lo, hi = np.sort(b[:, 0]) / sc, np.sort(b[:, 1]) / sc
            c = plane_colour(sr.get("plane", ""))
            mid = (b[:, 0] + b[:, 1]) / 2 / sc
            a1.axvspan(lo.min(), hi.max(), color=c, alpha=0.12, lw=0,
                       label="range the bounds allow")
            a1.hist(mid, bins=min(20, max(4, len(mid))), color=c, alpha=0.8, histtype="stepfilled",
                    label="event bound midpoints")
            a1.set_ylabel("events")
            a1.set_xlabel(f"latency ({unit})")
            a1.set_title(f"{sr['label']}: {len(b)} event(s), {sr['basis']}", loc="left")
            k = np.arange(1, len(b) + 1) / len(b)
            a2.step(np.concatenate([[lo[0]], lo]), np.concatenate([[0], k]), where="post",
                    color=c, label="CDF of lower bounds")
            a2.step(np.concatenate([[hi[0]], hi]), np.concatenate([[0], k]), where="post",
                    color=c, ls="--", label="CDF of upper bounds")
            a2.set_ylim(0, 1.05)
            a2.set_ylabel("fraction of events")
            a2.set_xlabel(f"latency ({unit})")
            for a in (a1, a2):
                a.grid(alpha=0.3)
        axes[0][0].legend(loc="lower left", bbox_to_anchor=(0, 1.18), ncol=2, frameon=False)
        axes[0][1].legend(loc="lower left", bbox_to_anchor=(0, 1.18), ncol=2, frameon=False)
        margins(fig, left=0.7, right=0.2, top=0.85, bottom=0.55, hspace=0.85, wspace=0.22)
    return fig


def latency_strip_figure(series: list[dict]):
    """Log latency of every device and stimulus type on one axes: a row each, every event's
    proven bound as a thin bar (stacked within the row) and its midpoint as a dot, on a
    symmetric-log axis (linear within ±1 ms) so µs and s share it."""
    n = len(series)
    with screen_style():
        fig, ax = plt.subplots(figsize=(FULL_IN, 1.2 + 0.34 * max(n, 1)))
        top = 1e-3
        for i, sr in enumerate(series):
            y = n - 1 - i
            b = np.asarray(sr["bounds"], dtype=float) / 1e9
            top = max(top, float(np.max(np.abs(b))))
            c = plane_colour(sr.get("plane", ""))
            dy = (np.arange(len(b)) / max(1, len(b) - 1) - 0.5) * 0.5 if len(b) > 1 else [0.0]
            ax.hlines(y + np.asarray(dy), b[:, 0], b[:, 1], color=c, lw=1.6)
            ax.plot(b.mean(axis=1), y + np.asarray(dy), "o", color=c, ms=3)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xscale("symlog", linthresh=1e-3, linscale=1.0)
        top = 10 ** np.ceil(np.log10(top * 1.1))
        neg = min([0.0] + [float(np.min(np.asarray(s["bounds"], dtype=float))) / 1e9
                           for s in series])
        left = 10 ** np.ceil(np.log10(max(-neg * 1.1, 1e-3)))
        ax.set_xlim(-left, top)
        dec = 10.0 ** np.arange(-3, np.log10(top) + 0.5)
        ax.set_xticks(np.concatenate([-dec[::-1][dec[::-1] <= left * 1.001], [0], dec]))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda x, _: "0" if x == 0 else f"{x * 1e3:.0f} ms" if abs(x) < 1 else f"{x:.0f} s"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_yticks(range(n))
        ax.set_yticklabels([f"{s['label']} ({len(s['bounds'])})" for s in series][::-1])
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlabel("stimulus to log latency (symmetric log scale, linear within ±1 ms)")
        ax.grid(alpha=0.3, axis="x")
        margins(fig, left=0.3 + 0.068 * max([len(s["label"]) + 4 for s in series] or [8]),
                right=0.25, top=0.2, bottom=0.6)
    return fig


def reference_figure(t_s, uncertainty_ns, grades, offset_ns=None):
    """The reference's health over the run: its error bound (and, where linuxptp reports it,
    the offset from its master) above, its grade as a step below."""
    order = ["ok", "warn", "unverified", "fail"]
    with screen_style():
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(FULL_IN, 3.4), sharex=True,
                                     gridspec_kw={"height_ratios": [2.2, 1]})
        u = np.asarray(uncertainty_ns, dtype=float)
        vals = [u] + ([np.abs(np.asarray(offset_ns, dtype=float))] if offset_ns is not None
                      else [])
        sc, unit = unit_for(np.concatenate(vals) if any(len(v) for v in vals) else [1.0])
        a1.step(t_s, u / sc, where="post", color="k", label="error bound added to brackets")
        if offset_ns is not None:
            a1.plot(t_s, np.asarray(offset_ns, dtype=float) / sc, ".", ms=2, color="#1f77b4",
                    label="offset from master (ptp4l)")
        a1.set_ylabel(f"time ({unit})")
        a1.set_title("reference health over the run")
        a1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        g = [order.index(x) if x in order else len(order) - 1 for x in grades]
        a2.step(t_s, g, where="post", color="0.3")
        a2.set_yticks(range(len(order)))
        a2.set_yticklabels(order)
        a2.set_ylim(-0.5, len(order) - 0.5)
        a2.set_ylabel("grade")
        a2.set_xlabel("run time (s)")
        for a in (a1, a2):
            a.grid(alpha=0.3)
        margins(fig, left=0.95, right=2.6, top=0.4, bottom=0.55, hspace=0.12)
    return fig


def timeline_figure(rows: list[dict], t0_ns: int, span: tuple[int, int] | None = None):
    """The cross-plane timeline for print: one lane per plane, every entry a bar over its proven
    interval (run time, s), stacked within its lane; hollow bars are unordered against another
    entry. Given the run's `span`, the axis spans the run and the entries wholly before or
    after it are counted above the axes ("5 records from 2.0 h to 59.6 min before the run"),
    not drawn (the paged timeline lists them); else nothing is left out.

    `rows`: bench.analysis.timeline_order.order's output."""
    from bench.output.timeline_page import by_span
    before, _, after = by_span(rows, span)
    apart = {id(r) for r in before + after}
    lanes = _lanes(rows)
    with screen_style():
        fig, ax = plt.subplots(figsize=(FULL_IN, 1.0 + 0.5 * len(lanes) + 0.2 * bool(apart)))
        _timeline_lanes(ax, lanes, apart, t0_ns)
        if span:
            d = (span[1] - span[0]) / 1e9
            ax.set_xlim((span[0] - t0_ns) / 1e9 - 0.01 * d, (span[1] - t0_ns) / 1e9 + 0.01 * d)
            _apart_notes(ax, before, after, span)
        ax.set_xlabel("run time (s)")
        ax.grid(alpha=0.3, axis="x")
        margins(fig, left=1.5, top=0.2 + 0.2 * bool(apart), bottom=0.55)
    return fig


def _lanes(rows: list[dict]) -> dict[str, list[dict]]:
    """The rows by lane (their plane, else their source), lanes in order of first entry."""
    lanes: dict[str, list[dict]] = {}
    for r in rows:
        lanes.setdefault(r["entry"].plane or r["entry"].source, []).append(r)
    return lanes


def _timeline_lanes(ax, lanes: dict[str, list[dict]], apart: set[int], t0_ns: int) -> None:
    """Every lane's entries (those `apart` left out), banded, labelled with their counts."""
    for li, (_lane, members) in enumerate(lanes.items()):
        _timeline_lane(ax, [r for r in members if id(r) not in apart], len(lanes) - 1 - li, t0_ns)
        if li % 2:
            ax.axhspan(len(lanes) - 1 - li - 0.5, len(lanes) - li - 0.5, color="0.95",
                       zorder=0, lw=0)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"{lane} ({sum(id(r) not in apart for r in m)})"
                        for lane, m in lanes.items()][::-1])
    ax.set_ylim(-0.6, len(lanes) - 0.4)


def _apart_notes(ax, before: list[dict], after: list[dict], span: tuple[int, int]) -> None:
    """Above the axes: the entries wholly before or after the run, counted, not drawn."""
    from bench.output.timeline_page import apart_text
    for side, group, x, ha in (("before", before, 0.0, "left"), ("after", after, 1.0, "right")):
        if group:
            text = apart_text(group, span[0] if side == "before" else span[1], side)
            ax.text(x, 1.02, ("◀ " if side == "before" else "") + text + ", not drawn"
                    + (" ▶" if side == "after" else ""), transform=ax.transAxes, ha=ha,
                    va="bottom", fontsize=8.5, color="0.3")


def _timeline_lane(ax, members: list[dict], y0: int, t0_ns: int, depth: int = 8) -> None:
    """One lane's entries, stacked in `depth` sub-rows: one collection of bars (thin where the
    entry is unordered against another) and the bars' end marks, one line per colour (two
    artists a lane, not two per entry: the same picture, drawn in a fraction of the time)."""
    from matplotlib.collections import LineCollection
    if not members:
        return
    bars, widths, colours = [], [], []
    ends: dict[str, tuple[list[float], list[float]]] = {}
    for k, r in enumerate(members):
        en = r["entry"]
        y = y0 - 0.4 + 0.8 * (k % depth) / max(1, depth - 1)
        lo, hi = (en.lo_ns - t0_ns) / 1e9, (en.hi_ns - t0_ns) / 1e9
        c = plane_colour(en.plane)
        bars.append(((lo, y), (hi, y)))
        widths.append(1.0 if r.get("unordered_count", r["unordered_with"]) else 2.5)
        colours.append(c)
        xs, ys = ends.setdefault(c, ([], []))
        xs += [lo, hi]
        ys += [y, y]
    ax.add_collection(LineCollection(bars, linewidths=widths, colors=colours, capstyle="butt"))
    for c, (xs, ys) in ends.items():
        ax.plot(xs, ys, color=c, ls="none", marker="|", ms=3)


# -- verdict page --------------------------------------------------------------------------------

def human_time_label(x_s: float) -> str:
    """A tick label in the unit a reader takes in: '-1 h', '30 min', '-2 s', '5 ms', '0'."""
    a = abs(x_s)
    if a == 0:
        return "0"
    for scale, unit in ((3600, "h"), (60, "min"), (1, "s"), (1e-3, "ms"), (1e-6, "µs"),
                        (1e-9, "ns")):
        if a >= scale * 0.999:
            return f"{x_s / scale:.3g} {unit}"
    return f"{x_s * 1e9:.2g} ns"


def rack_offset_figure(rows: list[dict]):
    """Every clock's offset against the reference, one row each, on a shared symmetric-log axis
    (linear within ±1 ms) so that planes hours apart and planes within a millisecond share one
    picture: a thin bar over the calibrated span (first to last read: the offset's range as the
    limits judge it, never the band's extrapolated edges), a thick one at the epoch (the table's
    bound); the span's range is written beside each bar.

    `rows`: [{"label", "plane", "lo_ns", "hi_ns", "epoch_lo_ns", "epoch_hi_ns", "text"}]."""
    n = len(rows)
    with screen_style():
        fig, ax = plt.subplots(figsize=(FULL_IN, 1.3 + 0.3 * max(n, 1)))
        lim = max([abs(r[k]) / 1e9 for r in rows for k in ("lo_ns", "hi_ns")] or [1.0])
        for i, r in enumerate(rows):
            y = n - 1 - i
            c = plane_colour(r["plane"])
            ax.plot([r["lo_ns"] / 1e9, r["hi_ns"] / 1e9], [y, y], color=c, lw=2.5, alpha=0.55,
                    solid_capstyle="butt", marker="|", ms=9, mew=1.2)
            ax.plot([r["epoch_lo_ns"] / 1e9, r["epoch_hi_ns"] / 1e9], [y, y], color=c, lw=7,
                    solid_capstyle="butt")
            ax.annotate(r["text"], (r["hi_ns"] / 1e9, y), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=8.5)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xscale("symlog", linthresh=1e-3, linscale=1.0)
        top = 10 ** np.ceil(np.log10(max(lim * 1.2, 2e-3)))
        ax.set_xlim(-top, top * 100)          # room on the right for the written ranges
        dec = 10.0 ** np.arange(-3, np.log10(top) + 0.5)
        ax.set_xticks(np.concatenate([-dec[::-1], [0], dec]))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda x, _: "0" if x == 0 else f"{x * 1e3:.0f} ms" if abs(x) < 1 else f"{x:.0f} s"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        plt.setp(ax.get_xticklabels(), rotation=40, ha="right")
        ax.set_yticks(range(n))
        ax.set_yticklabels([r["label"] for r in rows][::-1])
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlabel("device clock − reference (symmetric log scale, linear within ±1 ms)")
        ax.set_title("Every clock against the reference: thick, the proven bound at the epoch; "
                     "thin, the range over the calibrated span")
        ax.grid(alpha=0.3, axis="x")
        margins(fig, left=0.3 + 0.068 * max([len(r["label"]) for r in rows] or [8]), right=0.15,
                top=0.35, bottom=0.95)
    return fig


# -- the TIE view (bench.output.tie holds its data) ----------------------------------------------

def tie_figure(tie):
    """One clock: the TIE (offset minus a constant, its proven envelope, reads, breaks, truth)
    above, and the secondary view, the same minus each segment's fit, below."""
    from bench.output.tie import draw_residuals, draw_tie, fit_title, ref_text
    colour = plane_colour(tie.plane)
    with screen_style():
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(FULL_IN, 5.0), sharex=True,
                                     gridspec_kw={"height_ratios": [1.6, 1]})
        draw_tie(a1, tie, colour)
        a1.set_ylabel(f"{ref_text(tie)}\n({tie.scale[1]})")
        title = fit_title(tie.title, FULL_IN - 1.6, 9.5)        # wrapped, never cut
        a1.set_title(title)
        draw_residuals(a2, tie, colour)
        a2.set_xlabel("run time (s)")
        margins(fig, left=1.45, right=3.3, top=0.35 + 0.17 * title.count("\n"), bottom=0.55,
                hspace=0.1)
    return fig


def rack_tie_figure(ties: list, columns: int = 3):
    """Every clock's TIE on one page: a panel per clock (its offset minus its own first offset
    point, so a slope is its drift), its proven envelope, reads and breaks; one shared legend."""
    from bench.output.tie import draw_tie, fit_title
    rows = max(1, -(-len(ties) // columns))
    panel_in = (FULL_IN - 0.85) / (columns + 0.45 * (columns - 1)) + 0.1   # an axes and its gap
    with screen_style():
        fig, axes = plt.subplots(rows, columns, figsize=(FULL_IN, 0.9 + 2.6 * rows),
                                 squeeze=False, sharex=True)
        for ax, tie in zip(axes.ravel(), ties):
            draw_tie(ax, tie, plane_colour(tie.plane), legend=False)
            ax.set_title(f"{tie.label}\n{fit_title(tie.short, panel_in, 9)}", fontsize=9)
            ax.set_ylabel(f"offset − {'c per segment' if tie.rebased else 'c'} ({tie.scale[1]})")
        for ax in axes.ravel()[len(ties):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("run time (s)")
            ax.xaxis.set_tick_params(labelbottom=True)
        handles, labels = {}, []
        for ax in axes.ravel()[:len(ties)]:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                key = lab.split(":")[0]
                if key not in handles:
                    handles[key] = h
                    labels.append(lab if key != "break" else "break (dashed)")
        fig.legend(list(handles.values()), labels, loc="upper left", ncol=3, frameon=False,
                   bbox_to_anchor=(0.01, 1.0))
        margins(fig, left=0.75, right=0.1, top=1.1, bottom=0.55, hspace=0.75, wspace=0.45)
    return fig
