"""The pytest plugin as a lab's regression suite sees it: a tiny test file run through pytester
against a small simulated rack given with --rack (served for the session, calibrated for real)."""
from __future__ import annotations

from racks import UTC_BMC2, sim_rack_text

pytest_plugins = ["pytester"]

RACK = sim_rack_text(["bmc-1", "bmc-2"], name="plugin-test", seed=3,
                     changes={**UTC_BMC2, "bmc-2": {"stimuli": [], **UTC_BMC2["bmc-2"]}})

LAB_SUITE = """
from bench.pytest_plugin import ms, s, us

def test_bmc1_within_a_second(calibration):
    bmc = calibration["bmc-1"]
    assert bmc.firmware == "2.14.0"
    assert bmc.offset_bound() < 1 * s
    assert bmc.offset().lo <= 3.1 * ms <= bmc.offset().hi
    assert bmc.latency_bound("test_event") < 2 * s
    assert bmc.bracket_median() < 500 * ms and bmc.resolution() == 1 * s

def test_bmc2_offset_is_what_the_rack_says(calibration):
    o = calibration["bmc-2"].offset()
    assert o.lo <= -41.27 * s <= o.hi and o.width < 1 * s

def test_bmc2_within_5ms(calibration):          # fails: bmc-2 is 41 s off
    assert calibration["bmc-2"].offset_bound() < 5 * ms

def test_drivers_answer(rack_drivers):
    assert sorted(rack_drivers) == ["bmc-1", "bmc-2"]
    assert rack_drivers["bmc-2"].identity().firmware == "1.9.3"
    r = rack_drivers["bmc-1"].read_clock("datetime")
    assert r.s_ns <= r.e_ns and r.resolution_ns == 1 * s and abs(r.value_ns - r.s_ns) < 2 * s
"""


def test_lab_suite_runs_against_a_calibrated_rack(pytester):
    rack = pytester.path / "rack.toml"
    rack.write_text(RACK)
    pytester.makepyfile(test_lab=LAB_SUITE)
    result = pytester.runpytest("--rack", str(rack), "--calibrate-s", "8", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_bmc2_within_5ms*",      # in units, not raw ns
                                 "*bmc-2 offset_bound: 4[12].* s < 5 ms is false*"])


def test_without_a_rack_every_fixture_skips_with_the_reason(pytester, monkeypatch):
    monkeypatch.delenv("RACKCLOCK_RACK", raising=False)
    pytester.makepyfile(test_lab=LAB_SUITE)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*no rack file given (pytest --rack FILE or RACKCLOCK_RACK=FILE)*"])
