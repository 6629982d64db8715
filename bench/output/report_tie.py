"""The report's TIE sections: every clock's offset against time in one figure, and per clock
its TIE above its residuals (bench.output.tie holds the data and the drawing)."""
from __future__ import annotations

from bench.output import figures
from bench.output.report_sections import ON_DEMAND, clock_items, figure_html, note_html


def rack_tie(run) -> str | None:
    """Every clock's TIE (offset against time, its envelope, reads, breaks) in one figure."""
    from bench.output.tie import tie_of
    ties = [tie_of(run, dv, plane, ck, c) for dv, plane, ck, c in clock_items(run)]
    if not ties:
        return None
    return ("<h2>Offset against time (TIE)</h2>" + figure_html(
        run, figures.rack_tie_figure(ties), "tie_rack",
        "Each clock's offset minus a constant c (its first segment's offset point at the epoch, "
        "so a slope is its drift) against run time. Shaded: the proven envelope (the "
        "estimator's two-sided bound at each instant, holding with one unseen break); grey: "
        "the reads (a read of a coarse clock spans its tick: the ends inside the axes are "
        "marked); dashed: breaks; black: the simulated truth. Each axis spans the envelope "
        "where it is within four times its median width: an envelope that leaves it near a "
        "segment's end is wide there because one side of that instant has few reads."))


def needs_figure(c) -> str:
    """Why a clock's own figure belongs on the page (a break, a wrap, a bound that is not
    proven, a bound that misses the truth), or '' when the rack-wide TIE says enough."""
    from bench.model.vocabulary import PROVEN, word
    why = []
    if c.breaks:
        why.append("a break")
    if c.wraps:
        why.append("a wrap")
    if any(word(sg.offset_status) != PROVEN for sg in c.segments):
        why.append("an offset that is not proven")
    if any(sg.truth is not None and not sg.truth.inside for sg in c.segments):
        why.append("a bound that misses the truth")
    return ", ".join(why)


def clock_figures(run, part: tuple[int, int] = (0, 1)) -> str | None:
    """Per clock: the TIE with the residuals below (the secondary view), for the clocks that
    need a closer look (`needs_figure`; every clock with --details). `part` (k, n): the k-th of
    n contiguous shares of those clocks (the report draws the shares in parallel)."""
    from bench.output.tie import tie_of
    details = getattr(run, "details", True)
    items = [x for x in clock_items(run) if details or needs_figure(x[3])]
    rest = [f"{d} {ck}" for d, _, ck, c in clock_items(run) if not details and not needs_figure(c)]
    k, n = part
    figs = []
    for device, plane, clock, c in items[k * len(items) // n:(k + 1) * len(items) // n]:
        why = needs_figure(c)
        figs.append(figure_html(
            run, figures.tie_figure(tie_of(run, device, plane, clock, c)),
            f"tie_{device}_{clock}",
            f"{device} · {clock}" + (f" ({why})" if why else "") + ": above, the offset minus a "
            "constant with its proven envelope, reads and breaks; below, the same minus each "
            "segment's fitted line (residuals)."))
    if k:
        return "".join(figs) or None
    head = "<h2>Per clock: offset and residuals</h2>"
    if rest:
        others = ON_DEMAND.format("the figures of the others: " + ", ".join(rest))
        head += note_html(f"Shown here: the clocks with a break, a wrap or a bound that is not "
                          f"proven. {others}")
    return head + "".join(figs) if items or rest else None
