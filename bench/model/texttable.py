"""Plain-text tables that fit a terminal: columns kept in priority order while they fit the
width, the rest left to `--wide`; a cell too long for what is left is clipped with '…' (names
only: callers clip no number)."""
from __future__ import annotations

import shutil
import textwrap

WIDTH = 120          # the width every table fits where no terminal says its own (a log, a pipe)
MIN_WIDTH = 60       # narrower terminals get this much and wrap
GAP = "  "


def terminal_width() -> int:
    """The columns the terminal reports (`COLUMNS` first, as shutil reads it), WIDTH where
    standard output is no terminal; never below MIN_WIDTH."""
    return max(MIN_WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)


def widths_of(head: list[str], rows: list[list[str]]) -> list[int]:
    return [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]


def fit_columns(head: list[str], rows: list[list[str]], keep_order: list[int] | None = None,
                width: int | None = WIDTH) -> tuple[list[int], list[str]]:
    """Indices of the columns shown (in table order) and the names of those left out: columns are
    taken in `keep_order` (default: left to right) while the table still fits `width`
    (None: all)."""
    ws = widths_of(head, rows)
    order = keep_order if keep_order is not None else list(range(len(head)))
    if width is None:
        return sorted(order), []
    shown: list[int] = []
    total = -len(GAP)
    for i in order:
        if total + len(GAP) + ws[i] <= width or not shown:
            shown.append(i)
            total += len(GAP) + ws[i]
    return sorted(shown), [head[i] for i in order if i not in shown]


def render(head: list[str], rows: list[list[str]], cols: list[int] | None = None, width: int | None = WIDTH,
           clip: int = 0) -> list[str]:
    """Header, rule and rows of the columns `cols` (default all), left aligned; with a `width`,
    column `clip` (a name column) is cut with '…' so that no line is wider."""
    cols = list(range(len(head))) if cols is None else cols
    h = [head[i] for i in cols]
    rs = [[r[i] for i in cols] for r in rows]
    ws = widths_of(h, rs)
    if width is not None and clip in cols:
        rs = _clipped(h, rs, ws, cols.index(clip), width)
    f = GAP.join(f"{{:<{w}}}" for w in ws)
    return [f.format(*h).rstrip(), f.format(*("-" * w for w in ws)).rstrip(),
            *(f.format(*r).rstrip() for r in rs)]


def _clipped(h: list[str], rs: list[list[str]], ws: list[int], j: int,
             width: int) -> list[list[str]]:
    """The rows with column `j` cut with '…' (and its width `ws[j]` narrowed in place) so that
    no line is wider than `width`."""
    over = sum(ws) + len(GAP) * (len(ws) - 1) - width
    if over <= 0:
        return rs
    ws[j] = max(len(h[j]), ws[j] - over, 4)
    return [r[:j] + [r[j] if len(r[j]) <= ws[j] else r[j][:ws[j] - 1] + "…"] + r[j + 1:]
            for r in rs]


def wrap(text: str, width: int | None = WIDTH, indent: str = "  ") -> list[str]:
    """A long note as lines of at most `width` (None: one line)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def left_out_lines(left: list[str], width: int | None = WIDTH) -> list[str]:
    """The note under a fitted table naming the columns it left to `--wide` (none: no line)."""
    return wrap(f"(--wide adds: {', '.join(left)})", width) if left else []
