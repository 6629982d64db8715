"""A stimulus whose latency has no bound says why under the stimulus table (issue 45 item 6:
optic-1's tx_enable was sent twice and never seen, with no reason given)."""
from __future__ import annotations

from bench.output.terminal import latency_table

S = 1_000_000_000


def _summary(latency: dict) -> dict:
    return {"devices": {"optic-1": {"plane": "optics", "errors": {}, "clocks": {},
                                    "latency": latency}}}


def test_an_entry_without_a_stamp_and_a_stimulus_never_seen_say_why():
    seen = {"lo": 985_821_023, "hi": 1_007_652_382, "point": 996_736_702.5, "n": 1}
    text = latency_table(_summary({
        "tx_disable:1": {"sent": 1, "observed_ns": seen, "events": [
            {"seq": 19, "s_ns": 10 * S, "e_ns": 10 * S + 15_000_000,
             "observed_ns": {"lo": seen["lo"], "hi": seen["hi"]},
             "event": "1 bridge: port 2 IntL asserted", "logged_unbounded":
                 "the entry carries no stamp"}]},
        "tx_enable:1": {"sent": 2, "events": [
            {"seq": 21, "s_ns": 20 * S, "e_ns": 20 * S + 9_000_000},
            {"seq": 40, "s_ns": 40 * S, "e_ns": 40 * S + 9_000_000}]}}), 100)
    lines = text.splitlines()
    assert "optic-1 tx_disable:1: not stamped: the entry carries no stamp (1 of 1)" in lines
    assert ("optic-1 tx_enable:1: never seen: neither a log entry nor a pushed event followed "
            "it in the run (2 sent)") in " ".join(x.strip() for x in lines)
    assert all(len(ln) <= 100 for ln in lines)


def test_a_bounded_latency_says_nothing_more():
    b = {"lo": 1_000_000, "hi": 3_000_000, "point": 2e6, "n": 1}
    text = latency_table(_summary({"tx_disable:1": {
        "sent": 1, "logged_ns": b, "observed_ns": b, "events": [
            {"seq": 1, "s_ns": S, "e_ns": S + 1000, "event": "x", "logged_ns": b,
             "observed_ns": b, "logged_via": "proven"}]}}), 100)
    assert len(text.splitlines()) == 3, text
