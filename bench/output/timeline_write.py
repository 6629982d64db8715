"""The timeline written out: a terminal table, timeline.json and timeline.csv (every entry, its
raw stamp beside its interval and the calibration it came from), OpenTelemetry-style log
records (timeline.otel.json, only when asked: the device's raw time as the record time, the
interval bounds, calibration and order as attributes; the OTLP/JSON shape of `resourceLogs`),
and timeline.html (one lane per plane, the user's own log lines marked). The entry files are
written by
bench/output/timeline_files.py, a chunk of rows at a time: memory does not grow with the number
of entries."""
from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench import safeio
from bench.model.narrow import give_back
from bench.model.texttable import wrap
from bench.model.timeline_table import BASES, STATUSES, Timeline, utc_text
from bench.output.timeline_files import columns, write_files
from bench.units import directed, fmt_ns_up

HTML_ROWS = 2000
FILES = {"json": "timeline.json", "csv": "timeline.csv", "otel": "timeline.otel.json",
         "html": "timeline.html"}
DEFAULT_FORMATS = ("json", "csv", "html")    # timeline.otel.json only when asked (--formats)


# the table's columns: (header, cell format); "what" takes the room left (at most 60)
COLUMNS = {"from (UTC)": "{:<27}", "from (s)": "{:>11}", "to (s)": "{:>11}", "width": "{:>9}",
           "status": "{:<12}", "device": "{:<10}", "device time": "{:<27}", "order": "{:<16}"}
DROP_FIRST = ("device time", "from (UTC)", "to (s)", "width", "order")   # in this order
WHAT_MIN, WHAT_MAX = 20, 60


def table_columns(width: int | None) -> list[str]:
    """The columns shown in `width` columns (None: all): those of DROP_FIRST give way in turn
    until "what" has WHAT_MIN; timeline.csv holds every one."""
    shown = list(COLUMNS)
    for name in DROP_FIRST:
        if width is None or _row_width(shown) + WHAT_MIN <= width:
            break
        shown.remove(name)
    return shown


def _row_width(shown: list[str]) -> int:
    return 7 + sum(int(COLUMNS[c][3:-1]) + 1 for c in shown)


def table_lines(tl: Timeline, t0: int, limit: int = 200,
                width: int | None = None) -> Iterator[str]:
    """The terminal table of a timeline, a line at a time (the command prints them), fitted to
    `width` (None: every column)."""
    for rep in tl.reports:
        yield from _report_lines(rep)
    for u in tl.unplaced:
        yield (f"{u['source']} event {u['line']} ({u['raw']}): {u['why']}")
    shown = table_columns(width)
    what = WHAT_MAX if width is None else max(WHAT_MIN, min(WHAT_MAX, width - _row_width(shown)))
    fmt = " ".join(COLUMNS[c] for c in shown)
    yield f"{'#':>5}  " + fmt.format(*shown) + " what"
    for i, mark, cells, label in _rows(tl, t0, min(limit, len(tl))):
        yield f"{i:>5}{mark} " + fmt.format(*(cells[c] for c in shown)) + f" {label[:what]}"
    yield from _table_footer(tl, shown, limit, width)


def _table_footer(tl: Timeline, shown: list[str], limit: int,
                  width: int | None) -> Iterator[str]:
    """Below the table: the columns left out, the entries not printed, what the mark means,
    and the count of entries and blocks."""
    left = [c for c in COLUMNS if c not in shown]
    if left:
        yield from wrap(f"(left out for the terminal's width: {', '.join(left)}; all in "
                        f"timeline.csv; --wide shows them)", width)
    if len(tl) > limit:
        yield (f"... {len(tl) - limit} more entries (all in timeline.json and timeline.csv; "
              f"--rows N to print more)")
    if any(rep.get("mapped") for rep in tl.reports):
        yield ("* a line of your log files")
    yield (f"{len(tl)} entries in {tl.blocks} proven-ordered blocks; {tl.unordered} entries "
          f"unordered against another")


def _rows(tl: Timeline, t0: int, n: int) -> Iterator[tuple[int, str, dict[str, str], str]]:
    """(index, mark, cells by column, label) of the first n entries."""
    utc = utc_text(tl.c["lo"][:n]).tolist()
    rows = [r for ch in columns(tl, n) for r in zip(
        ch.dev.tolist(), ch.label_text.to_pylist(), ch.lo.to_pylist(), ch.hi.to_pylist(),
        [BASES[b] for b in ch.basis.tolist()], [STATUSES[x] for x in ch.status.tolist()],
        ch.count.to_pylist(), ch.dtime.to_pylist(), ch.src.tolist())]
    for i, ((dev, label, lo, hi, basis, status, cnt, dtime, src), u) in enumerate(zip(rows, utc)):
        lo, hi = int(lo), int(hi)
        cells = {"from (UTC)": u, "from (s)": directed(lo - t0, 1e9, 6, False),
                 "to (s)": directed(hi - t0, 1e9, 6, True), "width": fmt_ns_up(hi - lo),
                 "status": status if basis in ("stamp", "event") else basis,
                 "device": tl.table.devices[dev][0][:10], "device time": dtime[:27],
                 "order": "proven" if cnt == "0" else f"unordered with {cnt}"}
        yield i, "*" if tl.table.sources[src].log else " ", cells, label


def span_cells(lo: int, hi: int, t0: int) -> str:
    """An entry's interval in run seconds (to the µs, rounded outward) and its width."""
    return (f"{directed(lo - t0, 1e9, 6, False):>11} {directed(hi - t0, 1e9, 6, True):>11} "
            f"{fmt_ns_up(hi - lo):>9}")


def _report_lines(rep: dict[str, Any]) -> Iterator[str]:
    """What a log file's report says: its mapping, how its lines were stamped, the assumptions,
    and the lines not parsed or not placed."""
    if "error" in rep:
        return                 # said once on stderr by the command
    yield (f"{rep['file']} -> {rep['device']}: {rep['format']} ({rep['how']}), "
          f"{rep['lines']} lines, {rep['mapped']} mapped, order: {rep.get('order', '-')}"
          + (f", {rep['status']}" if rep.get("status") else ""))
    for sb in rep.get("stamped_by", ()):
        yield (f"  stamped: {sb['says']}: {sb['lines']} lines" if "says" in sb else
               f"  not placed ({sb['lines']} lines, {sb['field']}): {sb['refused']}")
    for nt in rep["notes"]:
        yield (f"  assumed: {nt}" if not nt.startswith("lines over") else f"  {nt}")
    yield from _unparsed_lines(rep)
    yield from _unplaced_lines(rep)


def _unparsed_lines(rep: dict[str, Any]) -> Iterator[str]:
    """The lines of a log file not parsed: in one line when they share one reason, else the
    first 20 each with its reason."""
    whys = {u["why"] for u in rep["unparsed"]}
    if rep["unparsed_count"] and len(whys) == 1 and len(rep["unparsed"]) > 1:
        lines = ", ".join(str(u["line"]) for u in rep["unparsed"][:10])
        more = ", ..." if rep["unparsed_count"] > 10 else ""
        yield (f"  {rep['unparsed_count']} lines not parsed: {whys.pop()} (lines {lines}{more})")
    elif rep["unparsed_count"]:
        yield (f"  {rep['unparsed_count']} lines not parsed:")
        for u in rep["unparsed"][:20]:
            yield (f"    line {u['line']}: {u['why']}: {u['text'][:80]!r}")
        if rep["unparsed_count"] > 20:
            yield (f"    ... {rep['unparsed_count'] - 20} more (the first "
                  f"{len(rep['unparsed'])} in timeline.json)")


def _unplaced_lines(rep: dict[str, Any]) -> Iterator[str]:
    """The first 20 lines of a log file parsed but not placed on the timeline, with why."""
    for u in rep["unplaced"][:20]:
        yield (f"  line {u['line']} ({u['device_time']}): {u['why']}")
    if rep["unplaced_count"] > 20:
        yield (f"  ... {rep['unplaced_count'] - 20} more unplaced (the first "
              f"{len(rep['unplaced'])} in timeline.json)")


def write_html(tl: Timeline, path: Path, t0: int, limit: int = HTML_ROWS,
               first: dict[str, Any] | None = None,
               span: tuple[int, int] | None = None) -> None:
    from bench.output.first_break_view import answer_html
    from bench.output.timeline_page import timeline_html
    a = _span_start(tl, first)
    rows = tl.rows(a, a + limit)
    head = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>rackclock timeline"
            "</title></head><body><h1>Cross-plane timeline</h1>")
    if first is not None:
        head += answer_html(first, t0, first.get("window", ""))
    cut = (f"<p>{a} earlier entries (before the span of your log lines, from "
           f"{utc_text([int(tl.c['lo'][0])])[0]}) are collapsed, not drawn. </p>" if a else "")
    if len(tl) > len(rows):
        cut += (f"<p>Entries {a}–{a + len(rows) - 1} of {len(tl)} in proven order; all are in "
                f"timeline.json and timeline.csv.</p>")
    with safeio.open_part(path) as f:
        f.write((head + cut + timeline_html(rows, t0, span=_with_lines(span, rows, first))
                 + "</body></html>").encode("utf-8"))


def _with_lines(span: tuple[int, int] | None, rows: list[dict],
                first: dict[str, Any] | None) -> tuple[int, int] | None:
    """The page's axis: the run's span, widened to the user's own log lines on the page and to
    the --first window's lines, which are never gathered away as "before the run"."""
    if span is None:
        return None
    ends = _line_ends(rows, first)
    if not ends:
        return span
    return min(span[0], *(a for a, _ in ends)), max(span[1], *(b for _, b in ends))


def _line_ends(rows: list[dict], first: dict[str, Any] | None) -> list[tuple[int, int]]:
    """(lo, hi) ns of the user's log lines on the page and of the --first window's lines."""
    ends = [(int(r["entry"].lo_ns), int(r["entry"].hi_ns)) for r in rows if r.get("log")]
    if first is not None:
        ends += [(int(x["lo_ns"]), int(x["hi_ns"]))
                 for x in first.get("story") or first.get("first") or []]
    return ends


def _span_start(tl: Timeline, first: dict[str, Any] | None) -> int:
    """The first entry the page shows: the start of the --first window's lines, else of the
    user's log lines that meet the run's span (all of them when none does), else 0."""
    if not len(tl):
        return 0
    lo = tl.c["lo"]
    if first is not None and first.get("first"):
        start = min(int(x["lo_ns"]) for x in first["story"] or first["first"])
        return int(np.searchsorted(lo, start, "left"))
    user_src = np.array([s.user for s in tl.table.sources], dtype=bool)
    user = user_src[tl.c["src"]]
    if not user.any():
        return 0
    run = tl.c["basis"] != BASES.index("stamp")
    run_lo = int(tl.c["lo"][run].min()) if run.any() else int(lo[0])
    inside = np.flatnonzero(user & (tl.c["hi"] >= run_lo))
    return int(inside[0] if len(inside) else np.flatnonzero(user)[0])


def write_outputs(folder: Path, tl: Timeline, t0: int,
                  formats: Collection[str] = DEFAULT_FORMATS,
                  first: dict[str, Any] | None = None,
                  span: tuple[int, int] | None = None) -> list[Path]:
    """The files of `formats` (FILES), each written under a fresh temporary name (O_EXCL) and
    renamed into place: a name planted in the folder (a symlink) is replaced, never written
    through, and a reader never sees half a file."""
    paths = {f: folder / name for f, name in FILES.items() if f in formats}
    parts: dict[str, Path] = {}
    try:
        for f, p in paths.items():
            parts[f] = safeio.new_part(folder, p.name)
        if {"json", "csv", "otel"} & set(parts):
            write_files(tl, parts.get("json"), parts.get("csv"), parts.get("otel"), first)
            give_back()         # the chunks' freed text columns, before the page is made
        if "html" in parts:
            write_html(tl, parts["html"], t0, first=first, span=span)
        for f, tmp in parts.items():
            safeio.commit_part(tmp, paths[f])
    finally:
        for tmp in parts.values():
            tmp.unlink(missing_ok=True)
    return list(paths.values())
