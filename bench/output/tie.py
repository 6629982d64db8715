"""The TIE view: a clock's offset (device minus reference) against run time, minus one constant,
with its proven envelope, its reads and its breaks; and, as the secondary view, the same minus
each segment's own fitted line (the residuals).

The envelope points come from `envelope()`, the one place that asks the estimator for them:
summary.json's `band`, which bench.model.summary writes from the estimator's own two-sided bound
at an instant (bench.analysis.proven_segment.Segment.proven_offset_at). The axes are scaled to the
envelope where it is within four times its median width, so an envelope that is wide only near a
segment's ends (one side has few reads there) leaves the axes instead of flattening the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.analysis.breaks import Break
from bench.analysis.statuses import BreakKind
from bench.units import fmt_ns

_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]


def envelope(seg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_ns, lo_ns, hi_ns) of a segment's proven offset envelope: the estimator's band points
    as summary.json holds them (the bound at the epoch alone where a folder has no band)."""
    b = seg.band
    if b is None or not b.t_ns:
        o = seg.offset_ns
        return (np.array([seg.epoch_ns], dtype=np.int64), np.array([o.lo], dtype=float),
                np.array([o.hi], dtype=float))
    return (np.asarray(b.t_ns, dtype=np.int64), np.asarray(b.lo, dtype=float),
            np.asarray(b.hi, dtype=float))


def unit_for(magnitude_ns: float) -> tuple[float, str]:
    for scale, unit in _UNITS:
        if magnitude_ns >= scale:
            return scale, unit
    return 1.0, "ns"


@dataclass
class Tie:
    """One clock's TIE data, in run seconds and ns relative to `ref_ns` (not yet scaled)."""
    label: str
    plane: str
    counter: bool
    ref_ns: float                      # the constant subtracted (first segment's offset point)
    ylim_ns: tuple[float, float]       # the axes' range, relative to ref
    segments: list = field(default_factory=list)    # (t_s, lo, hi, line_at(t_ns) - ref)
    reads: tuple = ()                  # (x_s, lo, hi) of every read's own offset interval
    breaks: list = field(default_factory=list)      # (after_s, before_s, label)
    truth: tuple | None = None         # (t_s, offset - ref)
    title: str = ""                    # the per-clock figure's: offset and drift intervals
    short: str = ""                    # a panel's: the offset interval and its word
    rebased: bool = False              # each segment minus its own point (after a reboot)
    stated: list = field(default_factory=list)      # (epoch_s, lo, hi, base): bound at the epoch
    rate_ppm: float | None = None      # the rate bound that widens the envelope between reads

    @property
    def scale(self) -> tuple[float, str]:
        lo, hi = self.ylim_ns
        return unit_for(max(abs(lo), abs(hi), hi - lo))


def short_of(c) -> str:
    """'[0.8, 4.4] ms proven'; a counter's zero as time of day: 'zero 12:44:23.077Z ±3.23 µs'."""
    from bench.model.vocabulary import word
    from bench.output.terminal import compact_offset
    sg = c.segments[-1]
    off = compact_offset(sg.offset_ns, c.counter)
    return ("zero " + off.split(" ", 1)[-1] if c.counter else off) + f" {word(sg.offset_status)}"


def title_of(device: str, clock: str, c) -> str:
    """'bmc-1 · datetime: [0.80, 4.38] ms proven at the epoch, drift [-116, 95.6] ppm assumed':
    intervals and their words, never a point."""
    from bench.model.vocabulary import word
    from bench.output.terminal import compact_offset, ppm_interval
    sg = c.segments[-1]
    what = ("zero at " if c.counter else "") + compact_offset(sg.offset_ns, c.counter)
    d = sg.drift_ppm
    return (f"{device} · {clock}: {what} {word(sg.offset_status)}, drift "
            f"{ppm_interval(d.lo, d.hi)} ppm {word(sg.drift_status or 'assumed')}"
            + (f" ({len(c.segments)} segments)" if len(c.segments) > 1 else ""))


def fit_title(text: str, width_in: float, fontsize: float = 9.0) -> str:
    """The title in lines that fit `width_in` inches at `fontsize` (about 0.6 em a
    character), broken after a comma where one is near: never cut at the figure's edge."""
    chars = max(20, int(width_in * 72 / (0.6 * fontsize)))
    lines, rest = [], text
    while len(rest) > chars:
        lines.append(rest[:(cut := _break_at(rest, chars))].rstrip())
        rest = rest[cut:].lstrip()
    return "\n".join([*lines, rest])


def _break_at(text: str, chars: int) -> int:
    """Where to break a line of at most `chars`: after the last comma outside brackets (never
    inside `[-600, 600]` or `(2 segments)`) past its first third, else at the last blank outside
    brackets, else at the last blank, else at `chars`."""
    depth, comma, outside, blank = 0, -1, -1, -1
    for i, ch in enumerate(text[:chars + 1]):
        depth += (ch in "[(") - (ch in "])")
        if ch == " ":
            blank = i
            outside = i if depth == 0 else outside
            comma = i if depth == 0 and i and text[i - 1] in ",;." else comma
    for at in (comma if comma > chars // 3 else -1, outside, blank):
        if at > 0:
            return at
    return chars


def half_height(stated, read_lo, read_hi, truth_resid) -> float:
    """The axes' half height, ns: 2.5 times the widest bound at an epoch (the title's scale);
    up to 10 times it for the reads' own intervals that are as narrow (twice their median reach;
    a coarse tick's are not counted, a stray read may leave the axes); the truth. Never the band
    between reads, which the rate bound widens."""
    core = max([hi - lo for _, lo, hi in stated] + [1.0])
    half = 2.5 * core
    narrow = (read_hi - read_lo) <= 10 * core
    if narrow.any():
        reach = 2 * float(np.median(np.maximum(-read_lo, read_hi)[narrow]))
        half = max(half, min(reach, 10 * core))
    if len(truth_resid):
        half = max(half, 1.15 * float(np.max(np.abs(truth_resid))))
    return half


def _truth(run, device: str, clock: str, c, t0: int):
    truth = run.truth.clock(device, clock) if run.truth else None
    if truth is None or not truth.t_ns:
        return None
    info = run.manifest.device(device).clock(clock)
    modulus = (info.modulus_ns or 0) if info else 0
    tt = np.asarray(truth.t_ns, dtype=np.int64)
    to = np.asarray(truth.offset_ns, dtype=np.float64)
    keep = np.zeros(len(tt), bool)      # inside a segment: a break's own interval is unfitted
    for sg in c.segments:
        keep |= (tt >= sg.start_ns) & (tt <= sg.end_ns)
    tt, to = tt[keep], to[keep]
    if modulus and len(tt):           # a wrapping counter's truth, on the fitted zero's turn
        line = c.segments[0].line()(tt)
        to = to - np.round((to - line) / modulus) * modulus
    return (tt - t0) / 1e9, to - _refs(c, tt)


def _ylim(tie: Tie) -> tuple[float, float]:
    """The axes' range, at the scale of the bound the title states: every segment's fitted
    line (its travel is the drift), the bound at each epoch and the truth, padded by 1.5 times
    the widest bound at an epoch (reads may leave it: the residual panel shows them). The
    envelope between reads, which the rate bound widens with the time to the nearest read, may
    leave it too (drawn light: the caption says so)."""
    core = max([hi - lo for _, lo, hi, _ in tie.stated] + [1.0])
    los = [float(line.min()) for *_, line in tie.segments if len(line)]
    his = [float(line.max()) for *_, line in tie.segments if len(line)]
    los += [base + lo for _, lo, _, base in tie.stated]
    his += [base + hi for _, _, hi, base in tie.stated]
    if tie.truth is not None and len(tie.truth[1]):
        los.append(float(tie.truth[1].min()))
        his.append(float(tie.truth[1].max()))
    lo, hi = min(los), max(his)
    pad = max(1.5 * core, 0.1 * (hi - lo), 1.0)
    return lo - pad, hi + pad


def _refs(c, starts) -> np.ndarray:
    """Per instant the constant subtracted: the first segment's offset point, or after a reboot
    (a counter's zero moved) the point of the segment in force."""
    points = np.array([float(sg.offset_ns.point) for sg in c.segments])
    if not rebased(c):
        return np.full(len(starts), points[0])
    seg_starts = np.array([sg.start_ns for sg in c.segments], dtype=np.int64)
    k = np.clip(np.searchsorted(seg_starts, starts, side="right") - 1, 0, len(points) - 1)
    return points[k]


def rebased(c) -> bool:
    return any(b.kind == BreakKind.REBOOT for b in c.breaks)


def break_label(br: Break, counter: bool) -> str:
    """'step -750 ms', 'reboot (counter restarted)' -- never a raw 10-digit number."""
    size = br.size_ns.point if br.size_ns is not None else None
    if br.kind == BreakKind.REBOOT or size is None:
        return (br.kind or "break") + (" (counter restarted)" if counter else "")
    return f"{br.kind} {'+' if size > 0 else ''}{fmt_ns(size)}"


def tie_of(run, device: str, plane: str, clock: str, c) -> Tie:
    """The TIE data of one clock with at least one segment."""
    t0 = run.manifest.started_ns or c.segments[0].start_ns
    ref = float(c.segments[0].offset_ns.point)
    tie = Tie(f"{device} · {clock}", plane, c.counter, ref, (0.0, 0.0),
              title=title_of(device, clock, c), short=short_of(c), rebased=rebased(c))
    for sg in c.segments:
        t, blo, bhi = envelope(sg)
        r = _refs(c, t)
        tie.segments.append(((t - t0) / 1e9, blo - r, bhi - r, sg.line()(t) - r))
    s, e, v, q = run.clock_reads(device, clock)
    if len(s):
        r = _refs(c, s)
        tie.reads = (((s + e) // 2 - t0) / 1e9, (v - e).astype(float) - r,
                     (v + q - s).astype(float) - r)
    tie.breaks = [((b.after_ns - t0) / 1e9, (b.before_ns - t0) / 1e9, break_label(b, c.counter))
                  for b in c.breaks]
    tie.truth = _truth(run, device, clock, c, t0)
    tie.stated = [_stated(c, sg, t0) for sg in c.segments]
    a = c.assumptions
    tie.rate_ppm = (a.rate_bound_ppm or a.drift_prior_ppm) if a is not None else None
    tie.ylim_ns = _ylim(tie)
    return tie


def _stated(c, sg, t0: int) -> tuple[float, float, float, float]:
    """(epoch in run s, lo, hi, base) of a segment's offset bound at its epoch: lo and hi
    minus its own line there, base that line minus the TIE's constant."""
    at = float(sg.line()(sg.epoch_ns))
    ref = float(_refs(c, np.array([sg.epoch_ns], dtype=np.int64))[0])
    return ((sg.epoch_ns - t0) / 1e9, float(sg.offset_ns.lo) - at, float(sg.offset_ns.hi) - at,
            at - ref)


def ref_text(tie: Tie) -> str:
    """What was subtracted, in words: 'offset − 0.80 ms' or, for a counter, its zero."""
    if tie.counter:
        return "offset − its zero instant" + (" (each segment's)" if tie.rebased else "")
    return f"offset − ({fmt_ns(tie.ref_ns, 6)})" if tie.ref_ns else "offset"


def draw_tie(ax, tie: Tie, colour: str, legend: bool = True) -> None:
    """Envelope (light: the rate bound widens it between reads), the bound at each epoch (a
    dark bar), reads (grey: each one's interval; or, where a read spans a coarse tick wider than
    the axes, only its ends that fall inside), breaks (dashed), truth (black)."""
    sc, unit = tie.scale
    ylo, yhi = (x / sc for x in tie.ylim_ns)
    if len(tie.reads) == 3:
        x, lo, hi = tie.reads
        draw_reads(ax, x, lo / sc, hi / sc, (ylo, yhi))
    for k, (t, lo, hi, _) in enumerate(tie.segments):
        ax.fill_between(t, lo / sc, hi / sc, color=colour, alpha=0.2, lw=0,
                        label=envelope_label(tie.rate_ppm if legend else None) if k == 0 else None)
    for k, (x, lo, hi, base) in enumerate(tie.stated):
        ax.vlines(x, (base + lo) / sc, (base + hi) / sc, color=colour, lw=3.5, zorder=4,
                  label="bound at the epoch (the title's)" if k == 0 else None)
    _draw_breaks(ax, tie.breaks)
    if tie.truth is not None:
        ax.plot(tie.truth[0], tie.truth[1] / sc, color="k", lw=1.0, label="truth (simulated)")
    ax.set_ylim(ylo, yhi)
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)


def _draw_breaks(ax, breaks) -> None:
    """Each break a shaded span with a dashed line at its middle (the first one labelled)."""
    for k, (a, b, text) in enumerate(breaks):
        ax.axvspan(a, b, color="k", alpha=0.12, lw=0)
        ax.axvline((a + b) / 2, color="k", ls="--", lw=0.9,
                   label=f"break: {text}" if k == 0 else None)


def draw_reads(ax, x, lo, hi, ylim, what: str = "", legend: bool = True) -> None:
    """Each read's offset interval as a grey bar; where reads are wider than the axes (a
    coarse tick), only their ends that fall inside, as markers."""
    ylo, yhi = ylim
    if not len(x):
        return
    labels = ((f"reads{what} (each one's interval)",
               f"read{what}: offset at least (a tick-wide read's low end)",
               f"read{what}: offset at most (its high end)") if legend else (None,) * 3)
    if np.median(hi - lo) <= (yhi - ylo):
        ax.vlines(x, lo, hi, color="0.6", lw=0.7, label=labels[0])
        return
    inl, inh = (lo > ylo) & (lo < yhi), (hi > ylo) & (hi < yhi)
    ax.plot(x[inl], lo[inl], "^", color="0.45", ms=3.5, lw=0, label=labels[1])
    ax.plot(x[inh], hi[inh], "v", color="0.65", ms=3.5, lw=0, label=labels[2])


def draw_residuals(ax, tie: Tie, colour: str) -> None:
    """The secondary view, at the scale of the bound the title states: the envelope (light:
    between reads the rate bound widens it, so it may leave the axes), reads and truth minus
    each segment's fitted line, and each segment's bound at its epoch (a dark bar)."""
    parts = [_residual_part(tie, k) for k in range(len(tie.segments))]
    half = _residual_half_height(tie, parts)
    sc, unit = unit_for(half)
    for k, (segment, part) in enumerate(zip(tie.segments, parts)):
        _draw_residual_segment(ax, tie, colour, segment, part, (half, sc), first=k == 0)
    for k, (x, lo, hi, _) in enumerate(tie.stated):
        ax.vlines(x, lo / sc, hi / sc, color=colour, lw=3.5, zorder=4,
                  label="bound at the epoch (the title's)" if k == 0 else None)
    ax.set_ylim(-half / sc, half / sc)
    ax.set_ylabel(f"− segment fit ({unit})")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)


def _residual_half_height(tie: Tie, parts) -> float:
    """Half the residual view's height, ns: what the stated bounds, the reads and the truth
    (all minus the fit) need."""
    reads = [p[1] for p in parts if p[1] is not None]
    truth = [p[2] for p in parts if p[2] is not None]
    return half_height([x[:3] for x in tie.stated], _joined(r[1] for r in reads),
                       _joined(r[2] for r in reads), _joined(tr[1] for tr in truth))


def _joined(arrays) -> np.ndarray:
    """The arrays end to end (empty if there are none)."""
    return np.concatenate(list(arrays) or [np.zeros(0)])


def _draw_residual_segment(ax, tie: Tie, colour: str, segment, part, scale, first: bool) -> None:
    """One segment of the residual view: its envelope, reads and truth minus its fit; `scale`
    is (half height, ns per unit); only the first segment labels the legend."""
    half, sc = scale
    t, lo, hi, line = segment
    _, rd, tr = part
    ax.fill_between(t, (lo - line) / sc, (hi - line) / sc, color=colour, alpha=0.2, lw=0,
                    label=envelope_label(tie.rate_ppm).replace(",", " − fit,", 1) if first else None)
    if rd is not None:
        draw_reads(ax, rd[0], rd[1] / sc, rd[2] / sc, (-half / sc, half / sc), " − fit",
                   legend=first)
    if tr is not None:
        ax.plot(tr[0], tr[1] / sc, color="k", lw=1.0, label="truth − fit" if first else None)


def envelope_label(rate_ppm: float | None) -> str:
    """The light shade's legend entry: two short lines (a legend beside the axes is narrow)."""
    return "proven envelope, widened\nbetween reads" + (f" at {rate_ppm:g} ppm" if rate_ppm else "")


def widening_caption(rate_ppm: float | None) -> str:
    """What the light shade of an offset figure is, in one sentence."""
    by = f"the {rate_ppm:g} ppm rate bound" if rate_ppm else "the rate bound"
    return (f"Light: the proven band between reads, widened by {by} times the time to the "
            "nearest read, so it may leave the axes; dark bar: the offset bound at the epoch, as "
            "the title states")


def _residual_part(tie: Tie, k: int):
    """Segment k's reads and truth minus its fitted line, ns: ((x, lo, hi) | None,
    (t, y) | None)."""
    t, _, _, line = tie.segments[k]
    rd = tr = None
    if len(tie.reads) == 3 and len(t) > 1:
        x, rlo, rhi = tie.reads
        keep = (x >= t[0] - 1) & (x <= t[-1] + 1)
        base = np.interp(x[keep], t, line)
        rd = (x[keep], rlo[keep] - base, rhi[keep] - base)
    if tie.truth is not None and len(t) > 1:
        tt, to = tie.truth
        keep = (tt >= t[0]) & (tt <= t[-1])
        tr = (tt[keep], to[keep] - np.interp(tt[keep], t, line))
    return t, rd, tr
