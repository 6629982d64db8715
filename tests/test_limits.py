"""Limits in a rack file, judged from the bounds: pass when every value the bounds allow meets
the limit, fail when none does, undecided when the bound straddles it; the same checks in the
terminal table, the report and JUnit."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from bench.config.inventory import InventoryError, rack_from_dict
from bench.model import limit_checks as limits
from bench.output.terminal import table


def _seg(lo, hi, dlo, dhi):
    return {"offset_ns": {"lo": lo, "hi": hi, "point": (lo + hi) / 2},
            "drift_ppm": {"lo": dlo, "hi": dhi, "point": (dlo + dhi) / 2},
            "bracket_ns": {"median": 1e6}, "reads": 10, "start_ns": 0, "end_ns": 10**10,
            "epoch_ns": 5 * 10**9, "band": {"t_ns": [0, 10**10], "lo": [lo, lo - 1e6],
                                              "hi": [hi, hi + 1e6]}}


def _summary():
    def dev(plane, seg, lat):
        return {"plane": plane, "errors": {}, "clocks": {"c": {"segments": [seg], "breaks": []}},
                "latency": {"s": {"sent": 1, "events": [{"logged_ns": {"lo": lat[0],
                                                                       "hi": lat[1]}}]}}}
    return {"devices": {
        "ok-1": dev("bmc", _seg(-5e6, 5e6, -10, 10), (1e8, 2e8)),        # all pass
        "bad-1": dev("bmc", _seg(3.6e12, 3.6e12 + 1e7, 60, 70), (6e8, 9e8)),   # all fail
        "mid-1": dev("bmc", _seg(90e6, 120e6, -200, 200), (4e8, 6e8))}}      # all straddle


MANIFEST = {"inventory": {"limits": {"planes": {"bmc": {
    "offset_within": "100ms", "drift_within_ppm": 50, "latency_max": "500ms"}}}}}


def test_pass_fail_undecided_from_the_bounds():
    got = {(c.device, c.measure): c.verdict for c in limits.check_run(_summary(), MANIFEST)}
    for m in ("offset", "drift", "latency"):
        assert got[("ok-1", m)] == "pass"
        assert got[("bad-1", m)] == "fail"
        assert got[("mid-1", m)] == "undecided"


def test_device_limit_overrides_its_plane():
    man = {"inventory": {"limits": {**MANIFEST["inventory"]["limits"],
                                    "devices": {"bad-1": {"offset_within": "2h"}}}}}
    got = {(c.device, c.measure): c for c in limits.check_run(_summary(), man)}
    assert got[("bad-1", "offset")].verdict == "pass"
    assert got[("bad-1", "offset")].limit == "within ±7200 s"


def test_table_and_junit_show_the_checks():
    text = table(_summary(), MANIFEST)
    assert "limits: 3 pass, 3 fail, 3 undecided" in text
    assert "UNDECIDED" in text and "FAIL" in text
    suite = ET.fromstring(limits.junit(limits.check_run(_summary(), MANIFEST)))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("9", "3", "3")
    failed = sorted(c.get("classname") for c in suite if c.find("failure") is not None)
    assert failed == ["bad-1"] * 3


def test_rack_file_limits_are_checked_when_loaded():
    base = {"rack": {"name": "r"}, "devices": {}}
    r = rack_from_dict({**base, "limits": {"planes": {"bmc": {"latency_max": "500ms"}}}})
    assert r.public()["limits"] == {"planes": {"bmc": {"latency_max": "500ms"}}, "devices": {}}
    with pytest.raises(InventoryError, match="unknown limit 'ofset_within'"):
        rack_from_dict({**base, "limits": {"planes": {"bmc": {"ofset_within": "1s"}}}})
    with pytest.raises(InventoryError, match="not a duration"):
        rack_from_dict({**base, "limits": {"devices": {"x": {"offset_within": "soon"}}}})
    assert "limits" not in rack_from_dict(base).public()
