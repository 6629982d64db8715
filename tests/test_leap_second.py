"""RFC 3339 leap seconds (issue 42): a BMC's `23:59:60Z` is read, as the Unix-time second the
reference repeats then (the kernel's leap insertion), and said in the log; a second 60 at any
other UTC time is refused."""
from __future__ import annotations

import logging

import pytest

from drivers.redfish_time import parse_datetime_ns

NS = 1_000_000_000


def test_a_leap_second_is_the_references_repeated_second(caplog):
    before = parse_datetime_ns("2016-12-31T23:59:59Z")
    with caplog.at_level(logging.INFO, logger="drivers.redfish_time"):
        assert parse_datetime_ns("2016-12-31T23:59:60Z") == before
        assert parse_datetime_ns("2016-12-31T23:59:60.25Z") == before + NS // 4
    assert "leap second" in caplog.text and "repeated second" in caplog.text
    assert parse_datetime_ns("2017-01-01T00:59:60+01:00") == before
    assert parse_datetime_ns("2016-12-31T17:59:60", "-06:00") == before
    assert parse_datetime_ns("2017-01-01T00:00:00Z") == before + NS


@pytest.mark.parametrize("text", ["2016-12-31T23:58:60Z", "2016-12-31T12:59:60+01:00",
                                  "2016-12-31T23:59:61Z", "2016-12-31T23:59:60"])
def test_a_second_60_that_is_no_leap_second_is_refused(text):
    with pytest.raises(ValueError):
        parse_datetime_ns(text)
