"""Stability statistics against NIST SP 1065's published NBS14 values, and MTIE against
allantools' own (slow) MTIE on random walks."""
import allantools
import numpy as np
import pytest

from bench.analysis.stability import deviation, mtie, offset_series, resample, summary


def nbs14_1000() -> np.ndarray:
    """NIST SP 1065's 1000-point NBS14 set: fractional frequency from a Lehmer generator."""
    n = [1234567890]
    for _ in range(999):
        n.append(16807 * n[-1] % 2147483647)
    return np.array(n, dtype=np.float64) / 2147483647


@pytest.mark.parametrize("name,tau,published", [
    ("adev", 1, 2.922319e-01),
    ("oadev", 10, 9.159953e-02),
    ("mdev", 100, 2.170921e-02),
    ("tdev", 100, 1.253382),
])
def test_nbs14_published_values(name, tau, published):
    t, d = deviation(name, nbs14_1000(), rate=1.0, data_type="freq", taus=[tau])
    assert list(t) == [tau]
    assert d[0] == pytest.approx(published, rel=1e-4)


@pytest.mark.parametrize("n", [3, 10, 257, 1000, 4096, 20000])
def test_mtie_equals_allantools_on_random_walks(n):
    x = np.cumsum(np.random.default_rng(n).normal(size=n))
    t1, d1 = mtie(x)
    t2, d2, _, _ = allantools.mtie(x)
    assert np.array_equal(t1, t2)
    assert np.array_equal(d1, d2)


def test_mtie_explicit_taus_and_rate():
    x = np.cumsum(np.random.default_rng(7).normal(size=3000))
    taus = [0.5, 1.0, 7.5, 100.0, 1400.0]
    t1, d1 = mtie(x, rate=2.0, taus=taus)
    t2, d2, _, _ = allantools.mtie(x, rate=2.0, taus=taus)
    assert np.array_equal(t1, t2) and np.array_equal(d1, d2)


def test_mtie_of_a_ramp_is_its_rise():
    x = np.arange(100, dtype=float) * 3.0
    t, d = mtie(x, taus=[1, 10, 50])
    assert list(d) == [3.0, 30.0, 150.0]


def test_summary_units():
    rng = np.random.default_rng(3)
    off_ns = 1e6 + np.cumsum(rng.normal(0, 100.0, 4000))      # random-walk phase, ns
    s = summary(off_ns, interval_s=1.0)
    t, d = mtie(off_ns)
    assert s["mtie_ns"]["value"] == list(d)
    _, tdev = deviation("tdev", (off_ns - off_ns[0]) * 1e-9)
    assert np.allclose(s["tdev_ns"]["value"], tdev * 1e9)
    # a random walk of 100 ns steps: TIE rms at 1 s is about 100 ns
    assert 80 < s["tie_rms_ns"]["value"][0] < 120


def test_offset_series_and_resample():
    t0 = 1_800_000_000 * 10**9
    s = t0 + np.arange(0, 10 * 10**9, 10**9) + np.array([0, 3, 1, 7, 2, 9, 4, 4, 0, 5]) * 10**7
    e = s + 1_000_000
    v = s + 500_000 + 2_500_000_000                # a 1 ns clock 2.5 s ahead, sampled mid-bracket
    t, off = offset_series(s, e, v, 1)
    assert np.array_equal(t, s + 500_000)
    assert np.allclose(off, 2_500_000_000.5)
    g, x = resample(t, np.arange(10.0), 0.5)
    assert g[0] == t[0] and np.all(np.diff(g) == 500_000_000) and g[-1] <= t[-1]
    assert np.all(np.diff(x) > 0) and x[0] == 0.0


def test_summary_of_a_short_series_is_quiet(capsys):
    for n in range(0, 6):
        s = summary(np.arange(n) * 2.0, interval_s=1.0)
        assert s["points"] == n
    assert capsys.readouterr().out == ""
