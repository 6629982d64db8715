"""RFC 3339 stamps (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM)`, ASCII digits) read as columns with
numpy: the fast path of a big log's stamps. Only plain stamps are read here (years 1678-2261,
every field in its range, an offset under 24 h with minutes under 60); for anything else the
caller reads its lines one at a time with the exact parser (bench/logs/syslog_formats.py, datetime
arithmetic), which decides. Values are exact integer ns, as that parser gives them.
"""
from __future__ import annotations

import numpy as np

NS = 1_000_000_000
ZERO = ord("0")
YEARS = (1678, 2261)            # the int64 ns range, with a day to spare either side
POW10 = 10 ** np.arange(10, dtype=np.int64)


def _num(a: np.ndarray, first: int, width: int) -> np.ndarray:
    """The decimal number in columns first..first+width of rows of ASCII digits."""
    out = np.zeros(len(a), np.int64)
    for k in range(first, first + width):
        out = out * 10 + (a[:, k].astype(np.int64) - ZERO)
    return out


def _layout_ok(a: np.ndarray, zone: int, digits: int) -> bool:
    """Separators where RFC 3339 has them, digits elsewhere, in every row of `a`."""
    seps = {4: "-", 7: "-", 10: "T", 13: ":", 16: ":"}
    if digits:
        seps[19] = "."
    if zone == 6:
        seps[a.shape[1] - 3] = ":"
    for col, ch in seps.items():
        if not np.all(a[:, col] == ord(ch)):
            return False
    num = [c for c in range(a.shape[1] - zone) if c not in seps]
    if zone == 6:
        num += [a.shape[1] - 5, a.shape[1] - 4, a.shape[1] - 2, a.shape[1] - 1]
        if not np.all((a[:, -6] == ord("+")) | (a[:, -6] == ord("-"))):
            return False
    d = a[:, num]
    return bool(np.all((d >= ZERO) & (d <= ZERO + 9)))


def _days(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray | None:
    """Days since 1970-01-01 of valid dates (proleptic Gregorian), or None if one is not."""
    if np.any((month < 1) | (month > 12) | (day < 1)):
        return None
    first = ((year - 1970) * 12 + month - 1).astype("datetime64[M]")
    start = first.astype("datetime64[D]").astype(np.int64)
    end = (first + 1).astype("datetime64[D]").astype(np.int64)
    if np.any(day > end - start):
        return None
    days: np.ndarray = start + day - 1
    return days


def _block(a: np.ndarray, zone: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(value_ns, resolution_ns) of rows of one length and zone form (1: "Z", 6: "+HH:MM")."""
    width = a.shape[1]
    digits = max(width - 19 - zone - 1, 0)
    if width - 19 - zone not in (0, *range(2, 11)) or not _layout_ok(a, zone, digits):
        return None
    year, hour, minute, sec = _num(a, 0, 4), _num(a, 11, 2), _num(a, 14, 2), _num(a, 17, 2)
    if np.any((year < YEARS[0]) | (year > YEARS[1]) | (hour > 23) | (minute > 59) | (sec > 59)):
        return None
    days = _days(year, _num(a, 5, 2), _num(a, 8, 2))
    if days is None:
        return None
    off = np.zeros(len(a), np.int64)
    if zone == 6:
        oh, om = _num(a, width - 5, 2), _num(a, width - 2, 2)
        if np.any((oh > 23) | (om > 59)):
            return None
        off = np.where(a[:, -6] == ord("-"), -1, 1) * (oh * 3600 + om * 60)
    value = (days * 86400 + hour * 3600 + minute * 60 + sec - off) * NS
    res = int(POW10[9 - digits]) if digits else NS
    if digits:
        value += _num(a, 20, digits) * res
    return value, np.full(len(a), res, np.int64)


def rfc3339_ns(stamps: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(value_ns, resolution_ns) columns of RFC 3339 stamps, or None when one of them is not a
    plain stamp (read those lines the exact way)."""
    n = len(stamps)
    value, res = np.empty(n, np.int64), np.empty(n, np.int64)
    lens = np.fromiter(map(len, stamps), np.int64, n)
    widths = np.unique(lens)
    for width in widths.tolist():
        ix = np.flatnonzero(lens == width) if len(widths) > 1 else np.arange(n)
        text = "".join(stamps) if len(widths) == 1 else "".join([stamps[i] for i in ix.tolist()])
        if not text.isascii():
            return None
        a = np.frombuffer(text.encode("ascii"), np.uint8).reshape(len(ix), width)
        is_z = a[:, -1] == ord("Z")
        for zone, rows in ((1, is_z), (6, ~is_z)):
            if not rows.any():
                continue
            got = _block(a[rows], zone)
            if got is None:
                return None
            value[ix[rows]], res[ix[rows]] = got
    return value, res
