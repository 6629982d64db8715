"""A CSV log: a header naming a timestamp column, one stamp a row."""
from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from bench.logs.logstamps import (
    BAD_INPUT,
    ISO,
    Context,
    ParsedLog,
    Unparsed,
    _why,
    iso_stamp,
)

CSV_TIME = ("timestamp", "time", "ts", "date", "datetime", "created", "@timestamp")


def parse_csv(src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """A CSV with a header: the first column named like a timestamp (ISO 8601 values) and the
    rest joined as text. A quoted field may span lines; a row csv refuses is one unparsed row."""
    where = [0]

    def feed() -> Iterator[str]:
        for n, line in src:
            where[0] = n
            yield line + "\n"
    rows = csv.reader(feed())
    header = _csv_header(rows, out, where)
    if not header:
        return
    tcol = _time_column(header)
    if tcol is None:
        out.reject(where[0], ",".join(header), f"no timestamp column (one of {CSV_TIME})")
        return
    while (row := _csv_row(rows, out, where)) is not None:
        n = where[0]
        if not row:
            continue
        try:
            _csv_record(n, row, tcol, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, ",".join(row), _why(exc))


def _csv_header(rows: Iterator[list[str]], out: ParsedLog, where: list[int]) -> list[str] | None:
    """The first row csv takes (rows it refused before it said as unparsed); None at the end."""
    header = _csv_row(rows, out, where)
    while header == []:
        header = _csv_row(rows, out, where)
    return header


def _time_column(header: list[str]) -> int | None:
    """The index of the first column named like a timestamp (CSV_TIME), None if none is."""
    cols = [h.strip().lower() for h in header]
    return next((i for i, h in enumerate(cols) if h in CSV_TIME), None)


def _csv_record(n: int, row: list[str], tcol: int, ctx: Context, out: ParsedLog) -> None:
    """Row n as a stamp: column tcol's ISO 8601 instant, the other columns joined as text."""
    if tcol >= len(row):
        raise Unparsed("row has no timestamp column")
    m = ISO.fullmatch(row[tcol].strip())
    if not m:
        raise Unparsed(f"{row[tcol][:60]!r} is not ISO 8601")
    v, q, notes = iso_stamp(m, ctx)
    text_ = " ".join(x for i, x in enumerate(row) if i != tcol)
    out.stamps.add(n, v, q, "wall", row[tcol], text_, None, notes)


def _csv_row(rows: Iterator[list[str]], out: ParsedLog, where: list[int]) -> list[str] | None:
    """The next row ([] for a row csv refused, said as unparsed; None at the end)."""
    try:
        return next(rows)
    except StopIteration:
        return None
    except csv.Error as exc:
        out.reject(where[0], "", f"CSV: {exc}")
        return []
