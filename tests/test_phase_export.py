"""RUN/phase/ (issue 45 item 1): each clock's phase data from a real run of the simulated rack,
a CSV (t_s, te_ns, lo_ns, hi_ns, kind) and a two-column phase file that allantools loads and
whose ADEV matches rackclock's own (bench.analysis.stability.summary of the same series)."""
from __future__ import annotations

import csv

import allantools
import numpy as np
import pytest
from racks import sim_rack_text

from bench import saferead
from bench.model.phase_export import COLUMNS, FOLDER, bounds_at, file_names, phase_of, stability
from bench.model.rundata import load_run
from bench.model.summary import device_meta, device_summary
from bench.run.experiment import run_experiment

DEVICES = ["bmc-1", "pdu-2"]          # a 1 s DateTime and a wrapping counter


@pytest.fixture(scope="module")
def phase_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("phase")
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(DEVICES))
    path = run_experiment("clock_offset", rack, tmp / "runs", {"duration_s": "20"}, quiet=True)
    return load_run(path)


def _clocks(run):
    return [(d.name, c.name) for d, c in run.summary.clocks() if c.segments]


def _refit(run, device):
    """rackclock's own fit of one device, and its phase data, from the run folder's samples."""
    man = saferead.load_object(run.path / "manifest.json")
    smp = run.samples(device)
    meta = device_meta(man, device)
    ds = device_summary(device, smp, meta, run.summary.reference_uncertainty_ns)
    return ds, smp, meta, int(man["started_ns"])


def _phase(run, device, clock):
    ds, smp, meta, t0 = _refit(run, device)
    cm = {c["name"]: c for c in meta.get("clocks", [])}.get(clock, {})
    s, e, v, q, _ = smp.clock_reads(clock, cm)
    c = ds.clocks[clock]
    return phase_of(s, e, v, float(c.resolution_ns)), c, t0


def test_every_clock_has_its_csv_and_phase_file(phase_run):
    clocks = _clocks(phase_run)
    assert {d for d, _ in clocks} == set(DEVICES)
    for device, clock in clocks:
        csv_name, txt_name = file_names(device, clock)
        with open(phase_run.path / FOLDER / csv_name, newline="") as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0]) == COLUMNS
        kinds = {r["kind"] for r in rows}
        assert kinds == {"read", "grid"}
        t = [float(r["t_s"]) for r in rows]
        assert t == sorted(t) and 0 <= t[0] < t[-1] < 60
        bounded = [r for r in rows if r["lo_ns"]]
        assert len(bounded) > len(rows) // 2
        assert all(int(r["lo_ns"]) <= int(r["hi_ns"]) for r in bounded)
        ph = np.loadtxt(phase_run.path / FOLDER / txt_name)
        assert ph.shape[1] == 2 and ph[0, 1] == 0.0
        grid = [r for r in rows if r["kind"] == "grid"]
        assert len(grid) == len(ph)
        assert np.allclose(np.diff(ph[:, 0]), ph[1, 0] - ph[0, 0], atol=1e-9)


def test_bounds_are_the_segments_offset_at(phase_run):
    device, clock = _clocks(phase_run)[0]
    p, c, _ = _phase(phase_run, device, clock)
    lo, hi, has = bounds_at(p.read_t_ns, c.segments)
    assert has.sum() > len(has) // 2
    seg = c.segments[0]
    for i in np.flatnonzero(has)[:: max(1, int(has.sum()) // 20)]:
        b = next(sg for sg in c.segments if sg.start_ns <= p.read_t_ns[i] <= sg.end_ns)\
            .offset_at(int(p.read_t_ns[i]))
        assert (lo[i], hi[i]) == (b.lo, b.hi)
    assert seg.offset_at(seg.epoch_ns).lo == bounds_at(np.array([seg.epoch_ns]), [seg])[0][0]


@pytest.mark.parametrize("which", [0, -1])
def test_allantools_loads_the_phase_file_and_matches_rackclocks_adev(phase_run, which):
    device, clock = _clocks(phase_run)[which]
    p, _, _ = _phase(phase_run, device, clock)
    ours = stability(p)                     # rackclock's own ADEV/OADEV of this clock
    assert ours["oadev"]["tau_s"], "too short a run for any tau"
    data = np.loadtxt(phase_run.path / FOLDER / file_names(device, clock)[1])
    rate = 1.0 / float(np.round(data[1, 0] - data[0, 0], 9))
    assert rate == pytest.approx(1.0 / p.interval_s, rel=1e-12)
    for name in ("oadev", "adev"):
        t, d, _, _ = getattr(allantools, name)(data[:, 1], rate=rate, data_type="phase",
                                               taus=ours[name]["tau_s"])
        assert np.allclose(t, ours[name]["tau_s"], rtol=1e-12)
        assert np.allclose(d, ours[name]["value"], rtol=1e-12, atol=0), (device, clock, name)


# -- stability as data: summary.json clocks.<c>.stability and RUN/stability.csv ----------------

def _stab_segments(run):
    for d, c in run.summary.clocks():
        for s in (c.stability or {}).get("segments", ()):
            yield d.name, c, s


def _with_deviations(run, device, c, s):
    """The segment's record as a fine clock's would be: the deviations the summary leaves out
    for a coarse tick, computed on the same grid (the maths is checked on real data)."""
    from dataclasses import replace

    from bench.model.stability_export import segment_stability
    p, fit, _ = _phase(run, device, c.name)
    return segment_stability(replace(p, coarse=False), fit.segments[s["segment"]],
                             s["segment"], c.counter)


def test_every_phased_clock_has_its_stability_and_csv_rows(phase_run):
    from bench.model.stability_export import COLUMNS as SCOLS
    from bench.model.stability_export import FILE
    segs = list(_stab_segments(phase_run))
    assert {(d, c.name) for d, c, _ in segs} == set(_clocks(phase_run))
    with open(phase_run.path / FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == SCOLS
    for device, c, s in segs:
        assert s["bound_status"] in ("proven", "assumed", "undecided")
        mine = [r for r in rows if (r["device"], r["clock"], r["segment"])
                == (device, c.name, str(s["segment"]))]
        assert "mtie_ns" in {r["statistic"] for r in mine}
        mt = s["mtie_ns"]       # an estimate is never outside the interval proven for it
        assert all(lo <= v <= hi for v, lo, hi in zip(mt["value"], mt["lo"], mt["hi"])), mt
        te = s.get("max_te_ns")
        assert te is None or te["lo"] <= te["value"] <= te["hi"], te
        if "deviations" in s:         # a coarse tick (both clocks here): its quantisation only
            assert s["deviations"].startswith("not given: the clock's tick is coarser")
            assert "adev" not in s and "adev" not in {r["statistic"] for r in mine}
            continue
        assert s["adev"]["tau_s"][:2] == [1.0, 2.0]          # a 20 s run: 1, 2 and 5 s
        assert {r["statistic"] for r in mine} >= {"adev", "oadev", "mdev", "tdev_ns"}
        assert len([r for r in mine if r["statistic"] == "adev"]) == len(s["adev"]["tau_s"])


@pytest.mark.parametrize("which", [0, -1])
def test_allantools_on_the_phase_file_matches_the_summarys_stability(phase_run, which):
    """The segment's rows of the phase file, loaded and given to allantools, give the
    summary's ADEV/OADEV/MDEV/TDEV at its taus to 1e-9; each 1-sigma interval holds them."""
    device, c, s = list(_stab_segments(phase_run))[which]
    s = _with_deviations(phase_run, device, c, s)
    data = np.loadtxt(phase_run.path / FOLDER / file_names(device, c.name)[1])
    x = data[s["grid_from"]:s["grid_from"] + s["points"], 1]
    rate = 1.0 / float(np.round(data[1, 0] - data[0, 0], 9))
    for key, name, k in (("adev", "adev", 1), ("oadev", "oadev", 1), ("mdev", "mdev", 1),
                         ("tdev_ns", "tdev", 1e9)):
        d = s[key]
        _, ref, _, _ = getattr(allantools, name)(x, rate=rate, data_type="phase",
                                                 taus=d["tau_s"])
        assert np.allclose(np.asarray(d["value"]) / k, ref, rtol=1e-9, atol=0), (device, key)
        for v, lo, hi in zip(d["value"], d["ci_lo"], d["ci_hi"]):
            assert lo is not None and lo <= v <= hi and (lo < v < hi or v == 0)


def _truth_at(run, device, clock, t_ns):
    from bench.model.summary import _exact_at
    tc = run.truth.raw["devices"][device]["clocks"][clock]
    assert tc.get("exact"), "the simulator writes its exact model"
    return np.array([_exact_at(tc, int(t))[0] for t in t_ns], dtype=np.int64)


def test_inherited_bounds_hold_the_simulators_true_phase(phase_run):
    """The simulator's exact offset at the grid instants: inside the band there, its ADEV,
    OADEV, MDEV and TDEV within `bound` of the estimates, its MTIE and max |TE| inside their
    intervals."""
    from bench.analysis import stability_ci as sc
    checked = 0
    for device, c, s in _stab_segments(phase_run):
        if c.counter:
            continue
        p, fit, _ = _phase(phase_run, device, c.name)
        s = _with_deviations(phase_run, device, c, s)
        i0, n = s["grid_from"], s["points"]
        t = p.grid_t_ns[i0:i0 + n]
        true = _truth_at(phase_run, device, c.name, t)
        sg = fit.segments[s["segment"]]
        from bench.model.stability_export import proven_band
        lo, hi, ok = proven_band(sg, t)
        assert ok.all() and np.all((lo <= true) & (true <= hi))
        x = ((true - true[0]) * 1e-9).astype(np.float64)
        for key, name, k in (("adev", "adev", 1), ("oadev", "oadev", 1), ("mdev", "mdev", 1),
                             ("tdev_ns", "tdev", 1e9)):
            d = s[key]
            m = np.round(np.asarray(d["tau_s"]) / p.interval_s).astype(np.int64)
            tv = sc.deviation(name, x, m, p.interval_s) * k
            gap = np.abs(tv - np.asarray(d["value"]))
            assert np.all(gap <= np.asarray(d["bound"]) * (1 + 1e-9)), (device, key)
        tr = (true - true[0]).astype(np.float64)
        mt = s["mtie_ns"]
        m = np.round(np.asarray(mt["tau_s"]) / p.interval_s).astype(np.int64)
        true_mtie = sc.mtie_bounds(tr, tr, tr, m)[0]
        assert np.all((np.asarray(mt["lo"]) <= true_mtie + 1e-3)
                      & (true_mtie <= np.asarray(mt["hi"]) + 1e-3)), device
        te = s["max_te_ns"]
        assert te["lo"] <= float(np.max(np.abs(true))) <= te["hi"]
        checked += 1
    assert checked


def test_the_bound_at_many_instants_is_the_bound_at_each():
    """TwoSided.at_many (the stability's band) rounds outward exactly as TwoSided.at does, and
    says where a side has no read, at 3,000 instants in and around 200 reads."""
    from bench.analysis.envelope import TwoSided, build
    rng = np.random.default_rng(2)
    s = np.sort(rng.integers(0, 60 * 10**9, 200)).astype(np.int64) + 1_800_000_000 * 10**9
    two = TwoSided(build(s, s + 700_000, s + 3_350_000, 1000, 600.0))
    t = np.sort(rng.integers(int(s[0]) - 10**9, int(s[-1]) + 10**9, 3000)).astype(np.int64)
    lo, hi, ok = two.at_many(t)
    assert 0 < ok.sum() < len(t)
    for k in range(len(t)):
        assert two.at(int(t[k])) == ((int(lo[k]), int(hi[k])) if ok[k] else None), k


def test_the_runs_summary_is_the_one_summarize_run_makes_of_its_folder(phase_run):
    """The summary a run writes (its fits shared out over worker processes from 8 devices,
    bench/run/after.py; tests/test_after_pool.py checks that path) is the one summarize_run
    makes from the same folder, record for record, and every clock with segments has its
    offset figure."""
    from bench.model.summary import summarize_run
    man = saferead.load_object(phase_run.path / "manifest.json")
    truth = saferead.load_object(phase_run.path / "truth.json")
    again = summarize_run(phase_run.path, man, truth,
                          uncertainty_ns=phase_run.summary.reference_uncertainty_ns)
    written = saferead.load_object(phase_run.path / "summary.json")
    assert again["devices"] == written["devices"]
    assert list(again["devices"]) == list(written["devices"])
    for device, clock in _clocks(phase_run):
        assert (phase_run.path / "plots" / f"offset_{device}_{clock}.png").stat().st_size > 0
