"""Redfish date-times: `DateTime` and `Created` as the bench reads them (stdlib `datetime`;
the `redfish` library parses none)."""
from __future__ import annotations

import datetime as dt
import re

NS = 1_000_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")


def parse_offset(text: str) -> dt.timezone:
    m = _OFFSET.match(text or "")
    if not m:
        raise ValueError(f"not a UTC offset: {text!r}")
    minutes = int(m[2]) * 60 + int(m[3])
    return dt.timezone(dt.timedelta(minutes=-minutes if m[1] == "-" else minutes))


def parse_datetime_ns(text: str, local_offset: str | None = None) -> int:
    """A Redfish date-time (`2026-11-29T18:03:29+01:00`) -> Unix-epoch ns (UTC).

    Without an offset in the string, `local_offset` (`DateTimeLocalOffset`) applies; with neither,
    ValueError: the instant would be ambiguous.
    """
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        if local_offset is None:
            raise ValueError(f"date-time {text!r} has no UTC offset")
        t = t.replace(tzinfo=parse_offset(local_offset))
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000
