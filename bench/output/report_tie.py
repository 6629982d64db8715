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
        "so a slope is its drift) against run time. Dark bar: the offset bound at the epoch, as "
        "the panel's title states, and each axis is at its scale (it spans the fitted line, "
        "the truth and reads as narrow). Light: the proven envelope (the estimator's two-sided "
        "bound at each instant, holding with one unseen break), which the rate bound widens "
        "with the time to the nearest read, so it may leave the axes between reads and near a "
        "segment's end, where one side has few reads; grey: the reads (a read of a coarse "
        "clock spans its tick: the ends inside the axes are marked); dashed: breaks; black: "
        "the simulated truth."))


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
    items, rest = _shown_and_rest(run)
    k, n = part
    figs = [_clock_figure(run, device, plane, clock, c)
            for device, plane, clock, c in items[k * len(items) // n:(k + 1) * len(items) // n]]
    if k:
        return "".join(figs) or None
    head = "<h2>Per clock: offset and residuals</h2>"
    if rest:
        others = ON_DEMAND.format("the figures of the others: " + ", ".join(rest))
        head += note_html(f"Shown here: the clocks with a break, a wrap or a bound that is not "
                          f"proven. {others}")
    return head + "".join(figs) if items or rest else None


def _shown_and_rest(run) -> tuple[list, list[str]]:
    """(the clock items whose figures the page draws, the names of the others): every clock
    with --details, else those `needs_figure` picks."""
    details = getattr(run, "details", True)
    items = [x for x in clock_items(run) if details or needs_figure(x[3])]
    rest = [f"{d} {ck}" for d, _, ck, c in clock_items(run) if not details and not needs_figure(c)]
    return items, rest


def _clock_figure(run, device: str, plane: str, clock: str, c) -> str:
    """One clock's TIE above its residuals, with its caption."""
    from bench.output.tie import tie_of, widening_caption
    why = needs_figure(c)
    return figure_html(
        run, figures.tie_figure(tie_of(run, device, plane, clock, c)),
        f"tie_{device}_{clock}",
        f"{device} · {clock}" + (f" ({why})" if why else "") + ": above, the offset minus a "
        "constant with its proven envelope, reads and breaks; below, the same minus each "
        "segment's fitted line (residuals), at the scale of the bound the title states. "
        + widening_caption(c.assumptions.rate_bound_ppm or c.assumptions.drift_prior_ppm
                           if c.assumptions is not None else None) + ".")
