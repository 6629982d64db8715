"""The latency's stamp mapping on clocks fitted in virtual time (no emulator): a break between the
entry's stamp and the fetch that listed it. The stamp is mapped through every segment that can
have been in force between the request and the answer (bench/model/stamps.py, the timeline's
bench/analysis/timeline_map.py), never only the one in force at the fetch."""
from __future__ import annotations

import numpy as np

from bench.analysis.timeline_map import calibrations, map_stamps
from bench.model.rundata import load_samples
from bench.model.store import RunStore
from bench.model.summary import fit_clocks, latencies
from bench.sim.cascade import calibrate
from bench.sim.clock_model import ClockModel, ClockParams

T0 = 1_795_000_000_000_000_000
NS = 1_000_000_000
MS = 1_000_000


def rebooting_counter() -> ClockModel:
    """sysUpTime-like: 10 ms ticks, up 14 days, restarts from zero 30 s in (down 2 s)."""
    return ClockModel(ClockParams(counter=True, uptime_s=1234567.0, drift_ppm=23,
                                  resolution_s=0.01, reboots=(30.0,), reboot_down_s=2.0), T0,
                      seed=1)


def test_a_stamp_before_a_reboot_fetched_after_it_maps_through_its_own_segment():
    m = rebooting_counter()
    res = calibrate(m, T0, 60, seed=3, name="sysuptime")
    assert len(res.fit.segments) == 2
    cals = calibrations([("run", res, {})])
    request, stamped, answer = T0 + 29_000 * MS, T0 + 29_400 * MS, T0 + 40 * NS
    v, q = m.read_ns(stamped), 10 * MS
    # the segment in force at the answer puts the stamp 14 days away: the old mapping's fault
    lo1, hi1 = res.fit.segments[1].to_reference(v, q)
    assert hi1 < request or lo1 > answer
    mp = map_stamps(cals, [v], q, wall=False, not_before_ns=request, not_after_ns=answer,
                    proven=True, clip=True)
    assert mp.calibration_of(0) == "run:sysuptime#0" and mp.status_of(0) != "unplaceable"
    assert request <= mp.lo_ns[0] <= stamped <= mp.hi_ns[0] <= answer
    # a stamp no segment in force then can have shown (a day-old uptime) is placed nowhere
    old = map_stamps(cals, [v - 86400 * NS], q, wall=False, not_before_ns=request,
                     not_after_ns=answer, proven=True, clip=True)
    assert old.status_of(0) == "unplaceable" and old.calibration_of(0) == "none"


def test_a_stamp_the_clock_showed_twice_gets_the_union_of_both_segments_in_the_window():
    """A 1 s wall clock set back 750 ms: a stamp in the time it showed twice, requested before
    the step and fetched after it, may be of either segment: the union of both, each cut to its
    break window and to [request, answer], holds the instant."""
    m = ClockModel(ClockParams(offset_s=1.8, drift_ppm=-12, resolution_s=1.0,
                               steps=((30.0, -0.75),)), T0, seed=5)
    res = calibrate(m, T0, 60, seed=3, name="datetime")
    assert len(res.fit.segments) == 2
    brk = res.fit.breaks[0]
    cals = calibrations([("run", res, {})])
    found = 0
    for stamped in range(T0 + 28 * NS, T0 + 32 * NS, 50 * MS):
        request, answer = stamped - 300 * MS, stamped + 5 * NS
        mp = map_stamps(cals, [m.read_ns(stamped)], NS, not_before_ns=request,
                        not_after_ns=answer, proven=True, clip=True)
        assert mp.status_of(0) != "unplaceable"
        assert request <= mp.lo_ns[0] <= stamped <= mp.hi_ns[0] <= answer
        if mp.status_of(0) != "ambiguous":           # one segment: the one of the stamp's side
            assert mp.calibration[0] == (0 if stamped <= brk.after_ns else 1) or \
                brk.after_ns < stamped <= brk.before_ns
        found += mp.status_of(0) == "ambiguous"
    assert found          # some stamps really were of either segment


def write_run(tmp_path, m: ClockModel, stimuli: list[tuple[int, int, int]]):
    """A run folder of one device: clock reads every 0.2-0.5 s where the device is up, and per
    stimulus (request sent, entry stamped, fetch that listed it) its stimulus and event rows in
    the order the bench writes them."""
    store = RunStore(tmp_path, "run")
    w = store.samples("pdu-1")
    rng = np.random.default_rng(4)
    rows = []
    t = T0
    while t < T0 + 60 * NS:
        t += int(rng.uniform(0.2, 0.5) * NS)
        if not m.down(t):
            rows.append((t, "read", "sysuptime", t, t + MS, m.read_ns(t + MS // 2), ""))
    for k, (req, stamped, fetch) in enumerate(stimuli):
        rows.append((req, "stimulus", "outlet_off:5", req, req + 2 * MS, None, ""))
        rows.append((fetch, "event", "sysuptime", fetch, fetch + 3 * MS, m.read_ns(stamped),
                     f"log:{k + 1} outlet 5 off"))
    for _, kind, clock, s, e, v, raw in sorted(rows, key=lambda r: r[0]):
        w.write(kind, clock, s, e, v, 10 * MS if v is not None else None, "user", "ok", raw)
    w.close()
    meta = {"plane": "pdu", "clocks": [{"name": "sysuptime", "resolution_ns": 10 * MS,
                                         "counter": True}]}
    store.write_manifest({"started_ns": T0, "run_id": "run", "devices": {"pdu-1": meta}})
    store.close()
    return load_samples(tmp_path / "run" / "samples" / "pdu-1.csv"), meta


def test_latencies_across_a_reboot_are_bounded_and_an_impossible_stamp_says_why(tmp_path):
    """Stimuli before, across and after the reboot at 30 s; the crossing entry is stamped at
    29.6 s and fetched at 36 s, after reads of the new boot. The fourth entry's stamp is a
    day-old uptime: no segment places it in [request, answer]; said, not bounded."""
    m = rebooting_counter()
    stim = [(T0 + 10 * NS, T0 + 10_150 * MS, T0 + 10_400 * MS),
            (T0 + 29_500 * MS, T0 + 29_600 * MS, T0 + 36 * NS),
            (T0 + 45 * NS, T0 + 45_080 * MS, T0 + 45_300 * MS)]
    smp, meta = write_run(tmp_path, m, stim)
    results = fit_clocks(smp, meta)
    assert len(results["sysuptime"].fit.segments) == 2
    assert results["sysuptime"].fit.segments[1].start_ns < T0 + 36 * NS   # read before the fetch
    lat = latencies(smp, results, meta)["outlet_off:5"]
    assert lat["sent"] == 3 and lat["logged_ns"]["n"] == 3
    for e, (req, stamped, _) in zip(lat["events"], stim):
        b = e["logged_ns"]
        # the device received it in [s, e] of its bracket: any such instant to the stamp
        assert b["lo"] <= stamped - (req + 2 * MS) and stamped - req <= b["hi"], e
    assert [e["logged_via"].split(" via ")[-1][:16] for e in lat["events"]] == \
        ["run:sysuptime#0", "run:sysuptime#0", "run:sysuptime#1"]


def test_an_entry_no_segment_in_force_can_have_stamped_is_unbounded_with_a_reason(tmp_path):
    m = rebooting_counter()
    req = T0 + 45 * NS
    smp, meta = write_run(tmp_path, m, [(req, req + 80 * MS, req + 300 * MS)])
    # the entry's stamp: what the old boot showed at 10 s, i.e. before the request
    i = int(smp.select("event")[0])
    smp.value_ns[i] = m.read_ns(T0 + 10 * NS)
    [e] = latencies(smp, fit_clocks(smp, meta), meta)["outlet_off:5"]["events"]
    assert "logged_ns" not in e and "observed_ns" in e
    assert e["logged_unbounded"].startswith("the stamp maps outside [request, answer]")
    assert "run:sysuptime#1" in e["logged_unbounded"]
