"""The estimator's fast paths give what the slow ones give: the envelope in plain Python lists
equals numpy's bit for bit, the polygon over the lines that can matter within the prior has the
same extremes, the side vertices cached per read set change no published bound, and the probe
schedule's per-clock state aims the reads where a fresh segmentation would."""
import numpy as np
import pytest

from bench.analysis import estimate as est
from bench.analysis import polygon as poly
from bench.analysis import proven_segment as ps
from bench.analysis.probe_schedule import next_probe_ns
from bench.sim.clock_model import ClockModel, ClockParams
from bench.sim.probing import read_like_runner

NS = 1_000_000_000
T0 = 1_800_000_000 * NS


def _reads(seed, q_s=1.0, n=60, rate=2.0, **kw):
    p = ClockParams(offset_s=0.3 + 0.07 * seed, drift_ppm=-30.0 + 9 * seed, resolution_s=q_s, **kw)
    m = ClockModel(p, T0, seed)
    s, e, v, at, _ = read_like_runner(m, n, rate, round(q_s * NS), np.random.default_rng(seed))
    return s, e, v, m


def test_envelope_in_lists_is_numpys_bit_for_bit():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 10, 60, 300):
        m = np.round(rng.normal(size=n), 2)          # rounded: equal slopes occur
        c = rng.normal(size=n) * 1e6
        M, C, X = poly._max_envelope(m, c)
        Ml, Cl, Xl = poly._envelope_lists(m.tolist(), c.tolist())
        assert M.tolist() == Ml and C.tolist() == Cl and X.tolist() == Xl


@pytest.mark.parametrize("q_s", [1.0, 0.01, 1e-6])
def test_polygon_from_the_lines_within_the_prior_has_the_same_extremes(q_s):
    s, e, v, _ = _reads(3, q_s)
    rng = np.random.default_rng(1)
    for _ in range(150):
        i = int(rng.integers(0, len(s) - 1))
        j = int(rng.integers(i + 1, len(s) + 1))
        t0 = int(rng.integers(int(s[0]), int(e[-1])))
        for w in (0.0, 3.0):
            win = poly._Window(s[i:j], e[i:j], v[i:j], round(q_s * NS), t0, w, 600.0)
            fast = win.vertices()
            keep, poly.LIST_ENVELOPE_MAX = poly.LIST_ENVELOPE_MAX, -1     # numpy, all lines
            try:
                slow = win.vertices()
            finally:
                poly.LIST_ENVELOPE_MAX = keep
            assert (fast is None) == (slow is None)
            if fast is not None:
                gf, hf = win.chains(fast)
                gs, hs = win.chains(slow)
                assert (fast[0], fast[-1], gf.min(), hf.max()) == (slow[0], slow[-1], gs.min(),
                                                                   hs.max())


def test_cached_side_vertices_change_no_bound():
    s, e, v, _ = _reads(2, 1.0, steps=((15.0, 0.02),))
    fit = est.fit_clock(s, e, v, NS)
    for sg in fit.segments:
        for t in np.linspace(sg.start_ns, sg.end_ns, 23).astype(np.int64):
            cached = ps._halves(*sg._reads, sg.resolution_ns, int(t), 0.0, sg._prior, sg._cache)
            fresh = ps._halves(*sg._reads, sg.resolution_ns, int(t), 0.0, sg._prior)
            assert cached == fresh


@pytest.mark.parametrize("seed", range(4))
def test_the_schedule_state_aims_where_a_fresh_segmentation_does(seed):
    """Reads of a 1 s clock with a step: with and without the per-clock state, the same instants
    (the state only spares the segmentation search while one line still fits)."""
    p = ClockParams(offset_s=0.41 + 0.1 * seed, drift_ppm=12.0, resolution_s=1.0,
                    steps=((20.0, -0.3),))
    got = []
    for use_state in (True, False):
        m = ClockModel(p, T0, seed)
        rng = np.random.default_rng(seed)
        S, E, V, now, state = [], [], [], T0, {}
        for _ in range(70):
            t = next_probe_ns(S, E, V, NS, now, 1_000_000, 250_000_000,
                              state=state if use_state else None)
            b = 800_000 + int(rng.exponential(300_000))
            S.append(t)
            E.append(t + b)
            V.append(m.read_ns(t + int(rng.uniform() * b)))
            now = t + b
        got.append(S)
    assert got[0] == got[1]
