"""bench/analysis/counters.py on synthetic read series with known wraps and reboots."""
import numpy as np
import pytest

from bench.analysis.counters import AMBIGUOUS, JUMP, REBOOT, split_reboots, step_wraps, unwrap, zero_bounds

MS = 1_000_000
TICK = 10 * MS
MOD = 2 ** 32 * TICK


def reads(t0_ns, n, period_ns, uptime_ns, modulus_ns=MOD, drift=20e-6, reboot_at=None,
          reboot_zero_delay=0, seed=1):
    """Brackets [s, e] around a true sample instant, and the counter's reading then; the
    counter reads `uptime_ns` (unwrapped) at t0."""
    zero_ns = t0_ns - int(uptime_ns / (1 + drift))
    rng = np.random.default_rng(seed)
    t = t0_ns + np.arange(n, dtype=np.int64) * period_ns + rng.integers(0, period_ns // 4, n)
    s = t - rng.integers(50_000, 400_000, n)
    e = t + rng.integers(50_000, 400_000, n)
    zero = np.full(n, zero_ns, dtype=np.int64)
    if reboot_at is not None:
        zero[t >= reboot_at] = reboot_at + reboot_zero_delay
    alive = t >= zero
    true = ((t - zero) * (1 + drift)).astype(np.int64)
    v = (true // TICK) * TICK % modulus_ns
    return s[alive], e[alive], v[alive], t[alive]


def test_wrap_in_the_middle_is_unwrapped_and_not_a_break():
    t0 = 1_800_000_000 * 10 ** 9
    s, e, v, t = reads(t0, 120, 500 * MS, MOD - 30 * 10 ** 9)      # 30 s before the wrap
    assert (np.diff(v) < 0).sum() == 1            # the series does wrap
    codes = step_wraps(s, e, v, MOD, TICK)
    assert sorted(set(codes.tolist())) == [0, 1]
    u, wraps = unwrap(s, e, v, MOD, TICK)
    assert np.all(np.diff(u) > 0)
    k = int(np.argmax(np.diff(v) < 0)) + 1
    assert wraps[:k].max() == 0 and np.all(wraps[k:] == 1)
    seg = split_reboots(s, e, v, MOD, TICK)
    assert len(seg) == 1 and seg[0]["wraps"] == 1 and seg[0]["kind"] == "first"


def test_reboot_splits_and_bounds_contain_true_instant():
    t0 = 1_800_000_000 * 10 ** 9
    zero = t0 - int(86_400e9 / (1 + 20e-6))
    reboot = t0 + 20 * 10 ** 9 + 123_456_789
    s, e, v, t = reads(t0, 100, 500 * MS, 86_400 * 10 ** 9, reboot_at=reboot)
    codes = step_wraps(s, e, v, MOD, TICK)
    assert (codes == REBOOT).sum() == 1 and (codes == JUMP).sum() == 0
    seg = split_reboots(s, e, v, MOD, TICK)
    assert [x["kind"] for x in seg] == ["first", "reboot"]
    r = seg[1]
    assert r["zero_lo_ns"] < reboot <= r["zero_hi_ns"]
    assert r["zero_hi_ns"] - r["zero_lo_ns"] < 50 * MS
    assert np.all(t[r["start"]:] >= reboot) and t[r["start"] - 1] < reboot
    b = seg[0]
    assert b["zero_lo_ns"] < zero <= b["zero_hi_ns"]


def test_wrap_then_reboot():
    t0 = 1_800_000_000 * 10 ** 9
    reboot = t0 + 40 * 10 ** 9                 # wraps 10 s in, reboots 40 s in, answers 5 s later
    s, e, v, t = reads(t0, 200, 400 * MS, MOD - 10 * 10 ** 9, reboot_at=reboot)
    keep = (t < reboot) | (t > reboot + 5 * 10 ** 9)
    s, e, v, t = s[keep], e[keep], v[keep], t[keep]
    seg = split_reboots(s, e, v, MOD, TICK)
    assert [(x["kind"], x["wraps"]) for x in seg] == [("first", 1), ("reboot", 0)]
    assert seg[1]["zero_lo_ns"] < reboot <= seg[1]["zero_hi_ns"]
    u, wraps = unwrap(s, e, v, MOD, TICK)
    assert np.all(np.diff(u[:seg[0]["stop"]]) > 0) and np.all(np.diff(u[seg[1]["start"]:]) > 0)


def test_forward_jump_is_not_a_reboot_and_a_long_gap_is_ambiguous():
    s = np.array([0, 10**9, 2 * 10**9]) + 10**18
    e = s + MS
    v = np.array([100 * 10**9, 101 * 10**9, 900 * 10**9])
    assert step_wraps(s, e, v, MOD, TICK).tolist() == [0, JUMP]
    s2 = np.array([10**18, 10**18 + 2 * MOD])
    v2 = np.array([5 * 10**9, 5 * 10**9 + 2])
    assert step_wraps(s2, s2 + MS, v2, MOD, TICK)[0] == 2        # 2 wraps, one k fits
    assert step_wraps(s2, s2 + MS, v2, MOD, TICK, rate_tol=0.6)[0] == AMBIGUOUS


def test_counter_without_modulus_and_input_checks():
    s = np.array([0, 10**9, 2 * 10**9]) + 10**18
    v = np.array([50 * 10**9, 51 * 10**9, 10**9 // 2])
    assert step_wraps(s, s + MS, v).tolist() == [0, REBOOT]
    with pytest.raises(ValueError):
        step_wraps(s[::-1], s[::-1] + MS, v)
    lo, hi = zero_bounds(10**18, 10**18 + MS, 5 * 10**9, TICK)
    assert lo < 10**18 - 5 * 10**9 < hi
