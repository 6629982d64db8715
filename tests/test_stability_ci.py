"""bench.analysis.stability_ci (issue 45 item 1): the deviations, EDF, noise identification and
confidence intervals match allantools; the inherited bounds hold the truth; MTIE and max |TE|
match a brute-force computation."""
from __future__ import annotations

import math

import allantools
import allantools.ci as aci
import numpy as np
import pytest

from bench.analysis import stability_ci as sc

TAU0 = 0.25


def _series(kind: str, n: int = 3000, seed: int = 7) -> np.ndarray:
    """Phase (s) of one power-law noise: white PM, white FM, random-walk FM, and a mixture."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n)
    x = {"wpm": w * 1e-9, "wfm": np.cumsum(w) * 1e-9 * TAU0,
         "rwfm": np.cumsum(np.cumsum(w)) * 1e-12,
         "mix": w * 1e-9 + np.cumsum(rng.standard_normal(n)) * 3e-10}[kind]
    return x + 1e-6 * np.arange(n) * TAU0            # a frequency offset on top


@pytest.mark.parametrize("kind", ["wpm", "wfm", "rwfm", "mix"])
def test_deviations_match_allantools(kind):
    x = _series(kind)
    m = sc.standard_taus(TAU0, len(x))
    assert list(m * TAU0) == [1, 2, 5, 10, 20, 50, 100, 200]
    m = np.concatenate(([1, 2, 3], m))                    # and the shortest taus too
    for name in sc.STATISTICS:
        ours = sc.deviation(name, x, m, TAU0)
        t, d, _, _ = getattr(allantools, name)(x, rate=1 / TAU0, data_type="phase",
                                               taus=m * TAU0)
        assert np.allclose(t, m * TAU0, rtol=1e-12)
        assert np.allclose(ours, d, rtol=1e-9, atol=0), (name, ours / d - 1)


def test_standard_taus_are_multiples_of_the_grid_up_to_a_third_of_the_span():
    assert list(sc.standard_taus(1.0, 61)) == [1, 2, 5, 10, 20]
    assert list(sc.standard_taus(1.5, 100)) == [1, 2, 5, 10, 20]   # no 1-2-5 tau: m 1-2-5
    assert list(sc.standard_taus(0.005, 12001) * 5) == [1000, 2000, 5000, 10000, 20000]
    assert list(sc.standard_taus(0.25, 12)) == []                    # under 3 s: none
    assert list(sc.standard_taus(1.0, 61, 1.0))[-1] == 50


@pytest.mark.parametrize("kind", ["wpm", "wfm", "rwfm", "mix"])
def test_noise_id_matches_allantools(kind):
    x = _series(kind)
    for m in (1, 2, 5, 10, 50, 100):
        assert sc.noise_id(x, m) == aci.autocorr_noise_id(x, m)[0], (kind, m)
    assert sc.noise_ids(x, np.array([1, 5])) == [sc.noise_id(x, 1), sc.noise_id(x, 5)]
    assert sc.noise_id(x, len(x) // 20) is None                    # 20 points: too few


def test_edf_matches_allantools_greenhall():
    cells = [(a, m, n, ov, mo) for a in range(-2, 3) for m in (1, 2, 3, 5, 10, 33, 34, 60, 200)
             for n in (100, 1000, 12001) for ov, mo in sc.EDF_KIND.values() if 3 * m + 1 <= n]
    a, m, n, ov, mo = (np.array(v) for v in zip(*cells))
    ours = sc.edf_greenhall(a, m, n, ov, mo)
    checked = 0
    for i, (al, mm, nn, o, md) in enumerate(cells):
        try:
            theirs = aci.edf_greenhall(alpha=al, d=2, m=mm, N=nn, overlapping=o, modified=md)
        except (NotImplementedError, AssertionError):
            assert np.isnan(ours[i]), cells[i]
            continue
        assert ours[i] == pytest.approx(theirs, rel=1e-9), cells[i]
        checked += 1
    assert checked > 300


def test_confidence_interval_matches_allantools_and_holds_the_estimate():
    edf = np.array([0.7, 1.0, 1.5, 2.36, 5.4, 14.7, 29.6, 59.9, 299.9, 300.1, 393.8, 3999.0,
                    9213.9, 1e6])
    dev = np.linspace(1e-9, 2e-9, len(edf))
    lo, hi = sc.confidence_interval(dev, edf)
    for i, (d, e) in enumerate(zip(dev, edf)):
        tlo, thi = aci.confidence_interval(d, e)
        assert lo[i] == pytest.approx(tlo, rel=1e-9) and hi[i] == pytest.approx(thi, rel=1e-9), e
        assert lo[i] < d < hi[i]
    assert sc.ONE_SIGMA == pytest.approx(aci.ONE_SIGMA_CI, rel=1e-15)
    lo95, hi95 = sc.confidence_interval(dev, edf, 0.95)
    assert np.all(lo95 < lo) and np.all(hi95 > hi)


def test_inherited_bound_holds_the_true_deviation():
    """True phase known; the estimate off by at most E_i at each point: the true deviation lies
    within `deviation_bound` of the estimate, itself within 2·√2·max E/τ for ADEV."""
    rng = np.random.default_rng(3)
    true = _series("mix", 2000, seed=11)
    e_max = rng.uniform(0.1e-9, 2e-9, len(true))
    est = true + e_max * rng.uniform(-1, 1, len(true))
    worst = true + e_max * np.where(np.arange(len(true)) % 2, 1, -1)   # an adversarial error
    m = sc.standard_taus(TAU0, len(true))
    for name in sc.STATISTICS:
        b = sc.deviation_bound(name, e_max, m, TAU0)
        for x in (est, worst):
            gap = np.abs(sc.deviation(name, x, m, TAU0) - sc.deviation(name, true, m, TAU0))
            assert np.all(gap <= b * (1 + 1e-12)), name
        if name != "tdev":
            assert np.all(b <= 2 * math.sqrt(2) * e_max.max() / (m * TAU0) * (1 + 1e-12))


def _mtie_brute(x, w):
    return max(max(x[i:i + w]) - min(x[i:i + w]) for i in range(len(x) - w + 1))


def test_mtie_and_max_te_match_brute_force():
    x = np.array([0.0, 3.0, -1.0, 2.5, 2.5, 7.0, -4.0, 0.5, 1.0, 6.0, -2.0, 3.0])
    lo, hi = x - np.arange(len(x)) % 3, x + 1.0
    m = np.arange(1, len(x))
    est, mlo, mhi = sc.mtie_bounds(x, lo, hi, m)
    for k, w in enumerate(m + 1):
        assert est[k] == _mtie_brute(list(x), w)
        assert mhi[k] == max(max(hi[i:i + w]) - min(lo[i:i + w]) for i in range(len(x) - w + 1))
        assert mlo[k] == max(0.0, max(max(lo[i:i + w]) - min(hi[i:i + w])
                                      for i in range(len(x) - w + 1)))
        assert mlo[k] <= est[k] <= mhi[k]
    assert np.isnan(sc.mtie_bounds(x, lo, hi, [len(x)])[0][0])
    v, a, b = sc.max_te_bounds(x, lo, hi)
    assert v == 7.0 and b == 8.0
    assert a == max(max(0.0, lo_, -hi_) for lo_, hi_ in zip(lo, hi))
    v, a, b = sc.max_te_bounds([-1.0, 0.5], [-2.0, -0.5], [1.0, 1.0])
    assert (v, a, b) == (1.0, 0.0, 2.0)


def test_mtie_bounds_hold_a_random_truth():
    rng = np.random.default_rng(5)
    true = np.cumsum(rng.standard_normal(500))
    lo, hi = true - rng.uniform(0, 3, 500), true + rng.uniform(0, 3, 500)
    est = np.clip(true + rng.normal(0, 2, 500), lo, hi)
    m = np.array([1, 2, 5, 10, 20, 50, 100, 200, 499])
    t_true = sc.mtie_bounds(true, true, true, m)[0]
    _, mlo, mhi = sc.mtie_bounds(est, lo, hi, m)
    assert np.all(mlo <= t_true) and np.all(t_true <= mhi)
