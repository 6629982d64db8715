"""Mapping device stamps through the right segment: across a step and a reboot, far from the
calibration, pre-sync stamps, and a segment's own status carried to its lines."""
import numpy as np
import pytest

from bench.analysis.timeline_map import (
    STATUS,
    SegmentWindow,
    calibrations,
    map_stamps,
    to_reference_many,
)
from bench.sim.cascade import calibrate
from bench.sim.clock_model import ClockModel, ClockParams

T0 = 1_795_000_000_000_000_000
NS = 1_000_000_000
MS = 1_000_000


def virtual_fit(model: ClockModel, seconds: float = 60.0, seed: int = 3, counter=False,
                name="datetime", t_start=T0):
    """Reads of a clock model in virtual time, fitted as the summary does."""
    res = calibrate(model, t_start, seconds, seed=seed, name=name)
    assert res.meta["counter"] == counter
    return res


def log_of(model: ClockModel, instants):
    return np.array([model.read_ns(t) for t in instants], dtype=np.int64)


def test_vector_mapping_equals_the_segment_s_own():
    m = ClockModel(ClockParams(offset_s=3.2, drift_ppm=40, resolution_s=1.0), T0, seed=2)
    seg = virtual_fit(m).fit.segments[0]
    vals = log_of(m, T0 + np.linspace(-3600, 7200, 50).astype(np.int64) * NS)
    lo, hi = to_reference_many(seg, vals, np.full(50, NS))
    assert [seg.to_reference(int(x), NS) for x in vals] == list(zip(lo.tolist(), hi.tolist()))


@pytest.mark.parametrize("res_s", [1.0, 0.001])
def test_a_step_lines_on_both_sides_land_in_their_segment_or_get_the_flagged_union(res_s):
    m = ClockModel(ClockParams(offset_s=1.8, drift_ppm=-12, resolution_s=res_s,
                               steps=((30.0, -0.75),)), T0, seed=5)
    res = virtual_fit(m)
    assert len(res.fit.segments) == 2
    q = m.p.resolution_ns
    cals = calibrations([("run", res, {})])
    t = T0 + np.arange(5 * NS, 55 * NS, 137 * MS)          # lines every 137 ms across the step
    vals = log_of(m, t)
    by_order = map_stamps(cals, vals, q, order_key=np.arange(len(t)))
    by_value = map_stamps(cals, vals, q)
    for mp in (by_order, by_value):
        assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns)), "every interval holds its instant"
    amb = STATUS.index("ambiguous")
    # by value alone the device times the clock showed twice (750 ms, plus the break's own
    # uncertainty and a tick) are undecidable: flagged, union
    twice = (t > T0 + 27 * NS) & (t < T0 + 33 * NS)
    assert np.any(by_value.status[twice] == amb)
    assert np.all(by_value.status[~twice] != amb)
    flagged = np.flatnonzero(by_value.status == amb)
    assert all(by_value.calibration_of(i) == "run:datetime#0 | run:datetime#1" for i in flagged)
    # the log's own order narrows them: the segment follows the entry ids, and where the stamps
    # go down the clock was set back in between (a 1 s clock may show no drop: still a union)
    decided = by_order.status != amb
    assert np.sum(~decided) <= np.sum(by_value.status == amb)
    if res_s < 0.5:
        assert decided.all()
    seg_of = by_order.calibration
    assert np.all(seg_of[decided & (t < T0 + 30 * NS)] == 0)
    assert np.all(seg_of[decided & (t >= T0 + 30 * NS)] == 1)
    # the line's interval (assumed: no unseen step inside the segment) is a tick and a little;
    # the proven one (one unseen break inside it) a quarter tick and a few ms more
    assert by_order.assumed_lo_ns is not None and by_order.assumed_hi_ns is not None
    assumed = (by_order.assumed_hi_ns - by_order.assumed_lo_ns)[decided]
    assert np.max(assumed) < 1.1 * q + 2 * MS
    assert np.max((by_order.hi_ns - by_order.lo_ns)[decided]) < 1.25 * q + 5 * MS
    assert np.all((by_order.lo_ns <= by_order.assumed_lo_ns)
                  & (by_order.assumed_hi_ns <= by_order.hi_ns))


def test_a_reboot_of_a_counter_lines_before_and_after_land_in_their_boot():
    m = ClockModel(ClockParams(counter=True, uptime_s=1234567.89, drift_ppm=23,
                               resolution_s=0.01, reboots=(42.0,), reboot_down_s=4.0), T0, seed=1)
    res = virtual_fit(m, counter=True, name="sysuptime")
    assert len(res.fit.segments) == 2
    cals = calibrations([("run", res, {})])
    t = np.array([T0 + 10 * NS, T0 + 41 * NS, T0 + 47 * NS, T0 + 58 * NS])
    vals = log_of(m, t)
    # by value alone a small uptime might be this boot or 14 days into the one before
    alone = map_stamps(cals, vals, 10 * MS, wall=False, not_after_ns=T0 + 61 * NS)
    own = [res.fit.segments[k].offset_status for k in (0, 0, 1, 1)]   # a line inherits its segment's
    assert [alone.status_of(i) for i in range(4)] == own[:2] + ["ambiguous", "ambiguous"]
    assert np.all((alone.lo_ns <= t) & (t <= alone.hi_ns))
    mp = map_stamps(cals, vals, 10 * MS, np.arange(4), wall=False, not_after_ns=T0 + 61 * NS)
    assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns))
    assert mp.calibration.tolist() == [0, 0, 1, 1]
    assert [mp.status_of(i) for i in range(4)] == own
    assert np.max(mp.hi_ns - mp.lo_ns) < 50 * MS


def test_a_line_far_from_its_calibration_is_extrapolated_and_says_how_far():
    m = ClockModel(ClockParams(offset_s=-41.27, drift_ppm=38, wander_ppm=0.05,
                               resolution_s=1.0), T0, seed=7)
    res = virtual_fit(m, seconds=600)    # long enough that the segment's own bounds are proven
    assert res.fit.segments[0].offset_status == "proven"
    cals = calibrations([("run", res, {"wander_ppm": 0.1})])
    t = np.array([T0 - 6 * 3600 * NS, T0 + 60 * NS, T0 + 24 * 3600 * NS])
    mp = map_stamps(cals, log_of(m, t), NS, not_after_ns=T0 + 2 * 86400 * NS)
    assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns))
    assert [mp.status_of(i) for i in range(3)] == ["extrapolated", "proven", "extrapolated"]
    assert mp.distance_ns[1] == 0
    assert 5.9 * 3600 * NS < mp.distance_ns[0] < 6.1 * 3600 * NS
    assert abs(mp.distance_ns[2] - (24 * 3600 - 600) * NS) < 0.1 * 3600 * NS   # from the span's end
    w = mp.hi_ns - mp.lo_ns
    assert w[0] > w[1] and w[2] > w[0]             # widened with the distance


def test_two_runs_calibrate_one_timeline_and_a_line_between_them_is_never_cut():
    m = ClockModel(ClockParams(offset_s=2.5, drift_ppm=35, resolution_s=1.0), T0, seed=4)
    a = virtual_fit(m, seconds=60)
    b = virtual_fit(m, seconds=60, seed=9, t_start=T0 + 3600 * NS)
    cals = calibrations([("a", a, {}), ("b", b, {})])
    assert [c.name for c in cals] == ["a:datetime#0", "b:datetime#0"]
    t = np.array([T0 + 30 * NS, T0 + 1800 * NS, T0 + 3630 * NS])
    mp = map_stamps(cals, log_of(m, t), NS, order_key=np.arange(3))
    assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns))
    assert mp.calibration_of(0) == "a:datetime#0" and mp.calibration_of(2) == "b:datetime#0"
    assert mp.status_of(1) == "ambiguous"          # the clock may have been set in between


def test_presync_and_never_shown_stamps_are_recognised_not_placed():
    m = ClockModel(ClockParams(offset_s=0.5, resolution_s=1.0, steps=((30.0, 5.0),)), T0, seed=3)
    res = virtual_fit(m)
    cals = calibrations([("run", res, {})])
    # a time the forward step jumped over, by more than the segment's proven bound at its end
    # allows (a 1 s tick: that bound is 1 s wide, so a stamp 2 s past the step's start could
    # still have been shown before the break was seen, under one unseen break: a candidate)
    skipped = m.read_ns(T0 + 30 * NS - 1) + 3 * NS
    vals = np.array([12 * NS, 1_700_000_000 * NS, skipped])
    mp = map_stamps(cals, vals, NS, presync_before_ns=1_750_000_000 * NS)
    assert [mp.status_of(i) for i in range(3)] == ["presync", "presync", "unplaceable"]


def test_a_segment_s_assumed_status_is_carried_to_its_lines():
    m = ClockModel(ClockParams(offset_s=0.5, resolution_s=1.0), T0, seed=3)
    seg = virtual_fit(m).fit.segments[0]
    cal = SegmentWindow("run:datetime#0", seg, None, None, status="assumed")
    mp = map_stamps([cal], log_of(m, [T0 + 20 * NS]), NS)
    assert mp.status_of(0) == "assumed"


@pytest.mark.parametrize("n", [1, 1000])
def test_mapping_arrays_of_any_length(n):
    m = ClockModel(ClockParams(offset_s=0.5, resolution_s=0.001), T0, seed=3)
    cals = calibrations([("run", virtual_fit(m), {})])
    t = T0 + np.sort(np.random.default_rng(1).integers(0, 60 * NS, n))
    mp = map_stamps(cals, log_of(m, t), MS, order_key=np.arange(n))
    assert len(mp) == n and np.all((mp.lo_ns <= t) & (t <= mp.hi_ns))


def test_run_events_across_a_reboot_each_log_in_its_own_order(tmp_path):
    """A PDU's traps and its event log arrive in one fetch, traps first: each is ordered only
    within itself, so a post-reboot trap listed before a pre-reboot log row is not pulled back
    into the old boot."""
    from bench.model.rundata import load_run
    from bench.model.store import RunStore
    from bench.model.timeline_build import Calibrated, run_entries
    m = ClockModel(ClockParams(counter=True, uptime_s=1234567.0, resolution_s=0.01,
                               reboots=(30.0,), reboot_down_s=2.0), T0, seed=1)
    store = RunStore(tmp_path, "run")
    w = store.samples("pdu-1")
    rng = np.random.default_rng(4)
    t = T0
    while t < T0 + 60 * NS:
        t += int(rng.uniform(0.2, 0.5) * NS)
        if not m.down(t):
            w.write("read", "sysuptime", t, t + MS, m.read_ns(t + MS // 2), 10 * MS, "user", "ok", "")
    before, after = T0 + 28 * NS, T0 + 34 * NS
    fetch = T0 + 36 * NS
    # two rows on each side of the reboot: the drop in stamps is confirmed as a set-back (one
    # row on a side could be a line listed out of order)
    for cursor, at in (("trap:5", after), ("log:3", before - NS), ("log:4", before),
                       ("log:5", after), ("log:6", after + NS)):
        w.write("event", "sysuptime", fetch, fetch + MS, m.read_ns(at), 10 * MS, "user", "ok",
                f"{cursor} outlet {at}")
    w.close()
    store.write_manifest({"started_ns": T0, "run_id": "run", "devices": {"pdu-1": {
        "plane": "pdu", "clocks": [{"name": "sysuptime", "resolution_ns": 10 * MS,
                                    "counter": True}]}}})
    store.close()
    run = load_run(tmp_path / "run")
    ents = [e for e in run_entries(run, Calibrated.of([run]))[0] if e.basis == "stamp"]
    assert len(ents) == 5
    for e in ents:
        true = int(e.label.rsplit(" ", 1)[1])
        assert e.lo_ns <= true <= e.hi_ns, (e.label, e.status, e.calibration)
    status = {e.label.split(" ")[0]: e.status for e in ents}
    # the log's rows are decided by their own order; the lone trap, by value alone, might be
    # this boot or 14 days into the last one: the flagged union
    assert status == {"log:3": "proven", "log:4": "proven", "log:5": "proven",
                      "log:6": "proven", "trap:5": "ambiguous"}


def test_a_line_out_of_order_just_before_a_step_is_not_put_after_it():
    """A bmc-3 excerpt cut just before its -750 ms step, its last line listed late (stamped
    300 ms before the line above it): the drop in stamps is one line, not a set-back the lines
    around confirm, so the line keeps both segments (flagged), never the later one as proven."""
    m = ClockModel(ClockParams(offset_s=1.8, drift_ppm=-12, resolution_s=0.001,
                               steps=((30.0, -0.75),)), T0, seed=5)
    cals = calibrations([("run", virtual_fit(m), {})])
    t = list(T0 + np.arange(20 * NS, 29_900 * MS, 137 * MS))
    t.append(t[-1] - 300 * MS)                       # written late: listed last
    t = np.array(t)
    mp = map_stamps(cals, log_of(m, t), MS, order_key=np.arange(len(t)))
    assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns)), "every interval holds its instant"
    assert mp.status_of(len(t) - 1) == "ambiguous"
    assert mp.calibration_of(len(t) - 1) == "run:datetime#0 | run:datetime#1"
    # the lines whose device time the clock showed only once stay proven
    assert all(mp.status_of(i) == "proven" for i in np.flatnonzero(t < T0 + 28 * NS))
    assert any(n.startswith("1 lines out of order") for n in mp.notes), mp.notes


def test_one_late_line_keeps_the_narrowing_of_the_rest_and_is_counted_alone():
    """A counter rebooted during the log: by value alone each line after the reboot might be
    this boot or 14 days into the last; the file's order decides (the lines before it), and one
    late trap (and, in a second log, three of them) leaves every other line narrowed; the note
    counts exactly the late lines."""
    m = ClockModel(ClockParams(counter=True, uptime_s=1234567.89, drift_ppm=23,
                               resolution_s=0.01, reboots=(20.0,), reboot_down_s=4.0), T0, seed=1)
    cals = calibrations([("run", virtual_fit(m, counter=True, name="sysuptime"), {})])
    t = T0 + np.concatenate((np.arange(10 * NS, 16 * NS, NS),      # 6 traps before the reboot
                             np.arange(30 * NS, 48 * NS, NS)))     # 18 after it
    for late in ([15], [9, 15, 20]):
        order = np.arange(len(t)).astype(float)
        order[late] += 3.5                               # each listed 3 traps late
        mp = map_stamps(cals, log_of(m, t), 10 * MS, wall=False, order_key=order,
                        not_after_ns=T0 + 61 * NS)
        assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns))
        w = mp.hi_ns - mp.lo_ns
        rest = np.setdiff1d(np.arange(len(t)), late)
        assert np.all(w[rest] < 50 * MS), w[rest]
        assert any(n.startswith(f"{len(late)} lines out of order") for n in mp.notes), mp.notes


def test_extrapolation_allows_the_model_rate_and_says_the_run_rate_is_assumed():
    """bmc-1 slews at +500 ppm after the run (inside the 600 ppm model): lines up to an hour
    later hold their instants, because an extrapolated interval allows the model's rate bound
    over the gap; the run's rate continuing is only the assumed interval, and misses here."""
    m = ClockModel(ClockParams(offset_s=0.8, drift_ppm=3, resolution_s=0.001,
                               slews=((620.0, 3000.0, 500.0),)), T0, seed=8)
    res = virtual_fit(m, seconds=600)
    cals = calibrations([("run", res, {})])
    t = T0 + np.array([-1800, -60, 700, 900, 1500, 2400, 3600], dtype=np.int64) * NS
    mp = map_stamps(cals, log_of(m, t), MS, not_after_ns=T0 + 86400 * NS)
    assert np.all((mp.lo_ns <= t) & (t <= mp.hi_ns)), (t - mp.lo_ns, mp.hi_ns - t)
    assert all(mp.status_of(i) == "extrapolated" for i in range(len(t)))
    assert mp.rate_ppm == 600.0
    inside = (mp.assumed_lo_ns >= mp.lo_ns) & (mp.assumed_hi_ns <= mp.hi_ns)
    assert inside.all()
    held = (mp.assumed_lo_ns <= t) & (t <= mp.assumed_hi_ns)
    assert not held[2:].all(), "the run's rate is an assumption the slew breaks"
    assert any("±600 ppm" in n and "assumed" in n for n in mp.notes), mp.notes
    # the model's bound: 600 ppm of the gap each way, no more (plus the edge's own bound)
    gap = np.maximum(t - res.fit.segments[0].end_ns, res.fit.segments[0].start_ns - t)
    assert np.all(mp.hi_ns - mp.lo_ns < 2 * 600e-6 * gap / (1 - 600e-6) + 20 * MS)


# A GPU baseboard controller's DateTime (1 s ticks) read under a loaded host (hmc-1, a run of
# tests/test_redfish_hmc_run.py): reads (start ns from BASE, bracket ns, whole seconds shown).
# The clock stepped -0.8 s at STEP; for 5 s every read after it was consistent with the line
# through the reads before it, so the fit found the break late and its first segment holds an
# unseen step (the model allows one), whose line is off by up to 0.8 s.
HMC_BASE = 1_796_623_716 * NS
HMC_READS = [
    (2259933056, 974555, 4), (2359522620, 950388, 4), (2799722293, 1150567, 5),
    (2803838745, 511454, 5), (3079762691, 1741454, 5), (3083831573, 744586, 5),
    (3582163474, 1397531, 5), (3587789249, 452751, 5), (4515784315, 1153631, 6),
    (4523899735, 578073, 6), (4691745114, 1416204, 6), (4700315493, 1002587, 6),
    (4747688777, 1425507, 6), (4755972308, 727426, 6), (4775585626, 984940, 6),
    (4779811472, 749309, 6), (5734340248, 992702, 7), (5740083538, 829238, 7),
    (5791732652, 1130227, 7), (5795823407, 637882, 7), (6791403162, 1069716, 8),
    (6800173920, 781627, 8), (7796541030, 1276265, 9), (7823557185, 953513, 9),
    (8331736031, 1251277, 9), (8344072590, 756248, 9), (8611727781, 998180, 10),
    (8613279637, 633425, 10), (9495746698, 1116967, 11), (9503947145, 786965, 11),
    (9747801910, 1163627, 11), (9829825511, 1129235, 11), (10464284640, 1626306, 12),
    (10472118039, 874395, 12)]
HMC_STEP = 3084603550
# metric reports: (true instant, ms stamp, when the row was fetched), all from HMC_BASE; both
# true instants are before the step, the first before the first read
HMC_REPORTS = [(1771429030, 4145 * MS, 2063609030), (2771429030, 5145 * MS, 3603548541)]


def _hmc_run(tmp_path):
    from bench.model.rundata import load_run
    from bench.model.store import RunStore
    store = RunStore(tmp_path, "run")
    w = store.samples("hmc-1")
    rows = [(s, ("read", s, b, v * NS, NS, "")) for s, b, v in HMC_READS]
    rows += [(f, ("event", f, MS // 2, st, MS, f"metric/R:{k} R report {k + 1}: 16 values"))
             for k, (_, st, f) in enumerate(HMC_REPORTS)]
    for _, (kind, s, b, v, q, raw) in sorted(rows):
        w.write(kind, "datetime", HMC_BASE + s, HMC_BASE + s + b, HMC_BASE + v, q, "user", "ok",
                raw)
    w.close()
    store.write_manifest({"started_ns": HMC_BASE, "run_id": "run", "devices": {"hmc-1": {
        "plane": "gpu", "clocks": [{"name": "datetime", "resolution_ns": NS}]}}})
    store.close()
    return load_run(tmp_path / "run")


def test_a_segment_with_an_unseen_step_maps_a_stamp_by_its_proven_bound_not_its_line(tmp_path):
    """The line of a segment with an unseen step put report 2 (true instant before the step)
    255 ms late, labelled proven; the proven search stepped past the short stretch of instants
    that bound it and fell back on that line; report 1, before the first read, was extrapolated
    from the line's offset. Each is now mapped by the segment's proven bound (one unseen break
    inside it), and beyond its span from that bound at the model's rate: it holds the truth."""
    from bench.model.timeline_build import Calibrated, run_entries
    run = _hmc_run(tmp_path)
    (c0, *_) = Calibrated.of([run]).clock("hmc-1", "datetime")
    assert c0.segment.start_ns < HMC_BASE + HMC_STEP < c0.segment.end_ns     # the step unseen
    t2, v2, _ = HMC_REPORTS[1]
    lo, hi = c0.segment.to_reference(HMC_BASE + v2, MS)
    assert lo > HMC_BASE + t2                          # its line misses report 2
    iv = c0.segment.proven_to_reference(HMC_BASE + v2, MS)
    assert iv is not None and iv[0] <= HMC_BASE + t2 <= iv[1]
    ents = [e for e in run_entries(run, Calibrated.of([run]))[0] if e.basis == "stamp"]
    assert len(ents) == len(HMC_REPORTS)
    for e, (t, _, _) in zip(sorted(ents, key=lambda e: e.stamp_ns), HMC_REPORTS):
        assert e.lo_ns <= HMC_BASE + t <= e.hi_ns, (e.label, e.status, e.calibration)
    first = min(ents, key=lambda e: e.stamp_ns)
    # before the first read: never proven (extrapolated; assumed since the clock's one seen
    # break is of a size its reads would miss elsewhere, as they missed this step:
    # step_risk._could_hide makes every segment assumed)
    assert first.status in ("extrapolated", "assumed")
    assert all(e.status != "proven" for e in ents)


def test_a_log_file_s_stamps_are_mapped_by_the_proven_bound_not_the_line(tmp_path):
    """The same clock's stamps in a log file given to `rackclock timeline` (read_log): they were
    mapped through the segment's line and labelled proven, and report 2's interval missed its
    true instant by 255 ms. Now the proven bound (vectorised) holds it, and the line's narrower
    interval is kept beside it, labelled assumed (assumed_lo_ns/assumed_hi_ns: no unseen step
    inside the segment)."""
    from datetime import UTC, datetime

    from bench.model.timeline_build import Calibrated, build
    run = _hmc_run(tmp_path)
    path = tmp_path / "hmc.log"
    with open(path, "w") as f:
        for k, (_, st, _) in enumerate(HMC_REPORTS):
            s, ns = divmod(HMC_BASE + st, NS)
            stamp = datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            f.write(f"{stamp}.{ns // MS:03d}Z hmc-1 metric report {k + 1}\n")
    tl = build(run, [f"hmc-1:datetime={path},format=iso8601"])
    assert "error" not in tl.reports[0], tl.reports[0]
    assert tl.reports[0]["mapped"] == len(HMC_REPORTS)
    rows = [r for r in tl.rows(0, len(tl)) if r["log"]]
    assert len(rows) == len(HMC_REPORTS)
    by_report = {int(r["entry"].label.split()[-1]) - 1: r["entry"] for r in rows}
    for k, (t, _, _) in enumerate(HMC_REPORTS):
        e = by_report[k]
        assert e.lo_ns <= HMC_BASE + t <= e.hi_ns, (k, e.status, e.lo_ns - HMC_BASE - t,
                                                     e.hi_ns - HMC_BASE - t)
    # report 2's device time was shown twice (around the -0.8 s step): both segments' proven
    # intervals, joined; the line's (assumed) interval, kept beside it, misses its truth
    assert by_report[1].status in ("proven", "ambiguous")
    assert by_report[0].status in ("extrapolated", "ambiguous")    # before the first read
    i = next(r["index"] for r in tl.rows(0, len(tl)) if r["log"] and r["entry"].label.endswith("2"))
    alo, ahi = int(tl.c["alo"][i]), int(tl.c["ahi"][i])
    assert by_report[1].lo_ns <= alo <= ahi <= by_report[1].hi_ns
    (c0, *_) = Calibrated.of([run]).clock("hmc-1", "datetime")
    lo, _ = c0.segment.to_reference(HMC_BASE + HMC_REPORTS[1][1], MS)
    assert lo > HMC_BASE + HMC_REPORTS[1][0]          # the line through segment 0 misses it
