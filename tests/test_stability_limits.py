"""MTIE and TDEV limits (issue 30 item 11): bounds from bracketed reads that contain the true
MTIE and TDEV of a wandering clock, judged pass / fail / undecided against a mask; masks from the
rack file checked when it is loaded."""
from __future__ import annotations

import numpy as np
import pytest

from bench.analysis.stability import deviation, mtie
from bench.config.inventory import InventoryError, rack_from_dict
from bench.model.stability_limits import judge, mtie_bounds, parse_mask, read_intervals, tdev_bounds

S = 1_000_000_000
T0 = 1_800_000_000 * S
PRIOR_PPM = 20.0


def truth(t_ns):
    """Offset ns: a 40 µs sine of period 30 s (rate at most 8.4 ppm, inside the prior)."""
    return 40_000 * np.sin(2 * np.pi * (t_ns - T0) / 30e9)


def reads(n=600, every_s=0.2, q=1_000, seed=2):
    rng = np.random.default_rng(seed)
    s = T0 + (np.arange(n) * every_s * 1e9).astype(np.int64) + rng.integers(0, 50_000_000, n)
    e = s + 1_000 + rng.integers(0, 2_000, n)                      # brackets of 1-3 µs
    at = s + ((e - s) * rng.random(n)).astype(np.int64)            # the device's sample instant
    v = ((at + truth(at).astype(np.int64)) // q) * q               # its reading, q ticks
    return s, e, v, np.full(n, q)


def test_bounds_contain_the_true_mtie_and_tdev():
    s, e, v, q = reads()
    args = read_intervals(s, e, v, q, 0, PRIOR_PPM)
    grid = np.arange(T0, int(s[-1]), 10_000_000)                    # the truth every 10 ms
    x = truth(grid)
    for tau in (1.0, 5.0, 20.0):
        lo, hi = mtie_bounds(*args, tau)
        _, m = mtie(x, rate=100.0, taus=[tau])
        assert lo <= m[0] <= hi, (tau, lo, m[0], hi)
        assert hi - lo < 2 * m[0] + 10_000                          # and say something
        tlo, thi = tdev_bounds(*args, tau)
        step = 0.2
        g2 = np.arange(T0, int(s[-1]), int(step * 1e9))
        _, d = deviation("tdev", truth(g2) * 1e-9, 1 / step, taus=[tau])
        assert tlo <= d[0] * 1e9 <= thi, (tau, tlo, d[0] * 1e9, thi)
    assert mtie_bounds(*args, 1000.0) is None                      # longer than the run


def test_judged_against_a_mask():
    s, e, v, q = reads()
    args = read_intervals(s, e, v, q, 0, PRIOR_PPM)
    lo, hi = mtie_bounds(*args, 5.0)
    assert judge("mtie", [(5.0, hi * 1.01)], *args)[0] == "pass"
    assert judge("mtie", [(5.0, lo * 0.99)], *args)[0] == "fail"
    assert judge("mtie", [(5.0, (lo + hi) / 2)], *args)[0] == "undecided"
    v_, text, why = judge("mtie", [(5.0, hi * 2), (1000.0, hi * 2)], *args)
    assert v_ == "undecided" and "1000 s: run too short" in why and "5 s: [" in text


def test_masks_in_the_rack_file():
    assert parse_mask({"10s": "50ns", "1s": "40ns"}, "x") == [(1.0, 40.0), (10.0, 50.0)]
    base = {"rack": {"name": "r"}, "devices": {}}
    r = rack_from_dict({**base, "limits": {"planes": {"host": {"mtie": {"1s": "40ns"}}}}})
    assert r.public()["limits"]["planes"]["host"]["mtie"] == {"1s": "40ns"}
    with pytest.raises(InventoryError, match="expected a table of tau = max"):
        rack_from_dict({**base, "limits": {"planes": {"host": {"tdev": "40ns"}}}})
    with pytest.raises(InventoryError, match="not a duration"):
        rack_from_dict({**base, "limits": {"planes": {"host": {"mtie": {"1s": "soon"}}}}})
