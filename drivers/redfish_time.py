"""Redfish date-times: `DateTime` and `Created` as the bench reads them (stdlib `datetime`;
the `redfish` library parses none)."""
from __future__ import annotations

import datetime as dt
import logging
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


_LEAP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:)60(?=[.,Z+-]|$)")


def _leap_second(text: str) -> tuple[str, bool]:
    """RFC 3339's leap second (`23:59:60`) read as the Unix-time second the reference repeats
    then (the kernel's leap insertion, as ptp4l/phc2sys and chronyd apply it): `:60` as `:59`,
    so that 23:59:60.5 is the same Unix instant as the reference's second 23:59:59.5. Said in
    bench.log (docs/DESIGN.md, "Leap seconds")."""
    m = _LEAP.match(text)
    if not m:
        return text, False
    logging.getLogger(__name__).info("leap second %r read as the reference's repeated second "
                                     "23:59:59 (Unix time, kernel leap insertion)", text)
    return m[1] + "59" + text[m.end():], True


def parse_datetime_ns(text: str, local_offset: str | None = None) -> int:
    """A Redfish date-time (`2026-11-29T18:03:29+01:00`) -> Unix-epoch ns (UTC).

    Without an offset in the string, `local_offset` (`DateTimeLocalOffset`) applies; with neither,
    ValueError: the instant would be ambiguous. A leap second (`23:59:60Z`, RFC 3339 section
    5.7) is the reference's repeated second (`_leap_second`).
    """
    text, leap = _leap_second(text)
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        if local_offset is None:
            raise ValueError(f"date-time {text!r} has no UTC offset")
        t = t.replace(tzinfo=parse_offset(local_offset))
    if leap and t.astimezone(dt.UTC).strftime("%H:%M:%S") != "23:59:59":
        raise ValueError("second 60 is a leap second, only at 23:59:60 UTC")
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000
