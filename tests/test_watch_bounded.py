"""The watch's per-device state stays bounded however long it runs (issue 33: memory flat)."""
from __future__ import annotations

import threading

from bench.config.inventory import DeviceConfig
from bench.run.runner import DeviceWorker
from bench.watch.supervisor import TRAFFIC_MINUTES, Probed, Supervisor, watch_plan

NS_PER_MIN = 60 * 10**9


def test_trim_keeps_the_last_minutes_of_the_runners_per_minute_traffic():
    """The runner adds a traffic row a minute for a run's manifest (a Redfish driver counts every
    request through `on_traffic`); a watch never ends, so its fitter's trim keeps the last
    TRAFFIC_MINUTES rows, the totals untouched. Before the trim existed the rows grew a minute at
    a time without end."""
    now = [0]
    cfg = DeviceConfig("bmc-1", "bmc", "redfish_bmc", "https://127.0.0.1:1")
    w = DeviceWorker(cfg, lambda: now[0], None, watch_plan(), False, threading.Event())
    sup = Supervisor(lambda: now[0], None, watch_plan())
    sup.probed[cfg.name] = Probed(cfg, w, threading.Thread(target=lambda: None), threading.Event())
    minutes = 3 * TRAFFIC_MINUTES + 7
    for m in range(minutes):          # what the driver's on_traffic calls, a minute apart
        now[0] = m * NS_PER_MIN
        w._count("requests")
        w._count("requests")
        if m % 10 == 0:
            sup.trim()                # the fitter trims every pass
    sup.trim()
    rows = w.status.traffic["per_minute"]
    assert len(rows) == TRAFFIC_MINUTES
    assert [r["minute"] for r in rows] == list(range(minutes - TRAFFIC_MINUTES, minutes))
    assert all(r["requests"] == 2 for r in rows)
    assert w.status.traffic["requests"] == 2 * minutes


def test_the_runners_read_ring_is_the_list_it_replaces():
    """The schedule's reads per clock (bench/run/readring.py) do what the list of tuples did
    under the runner's own use (append, trim the oldest whole cycles, index, slice, iterate),
    in an int64 ring written whole at the start: its memory does not grow as reads come."""
    import random

    from bench.run.readring import ReadRing
    from bench.run.runner import READS_KEPT
    rng = random.Random(41)
    ring, ref = ReadRing(READS_KEPT + 1), []
    held = ring._a
    for i in range(3 * READS_KEPT):
        r = (i * 10**9, i * 10**9 + rng.randint(1, 10**7), rng.randint(-2**62, 2**62))
        ring.append(r)
        ref.append(r)
        if len(ref) > READS_KEPT:
            del ref[:READS_KEPT // 2 // 4 * 4]
            del ring[:READS_KEPT // 2 // 4 * 4]
        if i % 97 == 0 or i > 3 * READS_KEPT - 5:
            assert len(ring) == len(ref) and ring[0] == ref[0] and ring[-1] == ref[-1]
            assert ring[-400:] == ref[-400:] and list(ring)[-3:] == ref[-3:]
    assert ring._a is held and held.nbytes == (READS_KEPT + 1) * 24


def test_a_clocks_window_is_written_whole_at_the_start():
    """A clock's window (bench/watch/estimator.py) holds its latest WINDOW reads in a ring
    allocated when the clock is defined: filling it (50 minutes at 0.2 Hz) grows nothing."""
    from bench.watch.estimator import ClockMeta, ClockWindow
    w = ClockWindow(ClockMeta("datetime", 1_000_000), size=50)
    ring, reads = w.ring, []
    for i in range(170):
        r = (i * 5 * 10**9, i * 5 * 10**9 + 3_000_000, i * 5 * 10**9 + 7 * 10**6)
        w.add(*r)
        reads.append(r)
        assert w.reads == reads[-50:] and len(w) == min(i + 1, 50)
    s, e, v = w.arrays()
    assert list(s) == [r[0] for r in reads[-50:]] and w.ring is ring and w.copy().reads == w.reads


def test_a_days_reference_health_is_tallied_not_listed(tmp_path):
    """A watch's day keeps its latest reference snapshots only (17,280 a day at 5 s were a list
    growing all day); the day's health, tallied as they come, is what the whole list gave."""
    from bench.reference.clock import Health, VirtualReference, worse_grade
    from bench.reference.monitor import HealthMonitor

    class Scripted(VirtualReference):
        def __init__(self):
            super().__init__()
            self.k = 0

        def health(self):
            self.k += 1
            k = self.k
            return Health("virtual", k * 10**9, verified=k % 7 != 3,
                          grade=("ok", "warn", "ok", "fail", "unverified")[k % 5],
                          uncertainty_ns=(k * 37) % 101, basis=("virtual", "allowance")[k > 20],
                          detail={"abs_offset_ns": (k * 13) % 29 if k % 4 else None,
                                  "mean_path_delay_ns": (k * 7) % 11},
                          problems=(f"p{k % 3}",) if k % 6 == 0 else ())

    whole = HealthMonitor(Scripted(), tmp_path / "a.csv")
    kept = HealthMonitor(Scripted(), tmp_path / "b.csv", keep=3)
    for _ in range(40):
        whole.sample()
        kept.sample()
    assert len(whole.samples) == 40 and len(kept.samples) == 3
    got = kept.run_health()
    hs = list(whole.samples)             # what the list of every snapshot says
    grade = "ok"
    for h in hs:
        grade = worse_grade(grade, h.grade)
    offs = [h.detail["abs_offset_ns"] for h in hs if h.detail["abs_offset_ns"] is not None]
    bad = [h for h in hs if not h.verified]
    assert (got.grade, got.uncertainty_ns, got.verified, got.basis, got.checked_ns) == \
        (grade, max(h.uncertainty_ns for h in hs), False, "allowance+virtual", 40 * 10**9)
    assert got.problems == tuple(sorted({p for h in hs for p in h.problems}))
    assert {k: got.detail[k] for k in ("abs_offset_ns", "snapshots", "unverified_snapshots",
                                       "first_ns", "last_ns", "max_mean_path_delay_ns")} == {
        "abs_offset_ns": max(offs), "snapshots": 40, "unverified_snapshots": len(bad),
        "first_ns": 10**9, "last_ns": 40 * 10**9,
        "max_mean_path_delay_ns": max(h.detail["mean_path_delay_ns"] for h in hs)}
    assert f"first at {bad[0].checked_ns} ns" in got.note and kept.worst() == (grade, max(offs))


def test_a_clocks_live_fit_holds_no_more_once_its_window_is_full():
    """A watch's memory grows in a fresh life until its slowest clocks' windows are full (issue
    41's soak: nine clocks at 0.4 Hz fill 600 reads at minute 25): the live fit a clock keeps
    (ClockState.fit: its segments' reads, envelope and caches, for the mapping service) grows
    with the reads in its window, about 0.16 KiB a read. Once the window is full it holds no
    more, however many reads come: what a fit keeps is bounded by the window, not by the life."""
    import gc
    import tracemalloc

    from bench.watch.estimator import WINDOW, ClockMeta, ClockWindow
    w = ClockWindow(ClockMeta("datetime", 1_000_000_000))
    step = 2_500_000_000                                 # 0.4 Hz, the polite Redfish rate
    t0 = 1_796_000_000 * 10**9

    def read(i: int) -> tuple[int, int, int]:
        s = t0 + i * step + (i * 7919 % 1000) * 1000
        return s, s + 2_000_000 + (i * 104729 % 997) * 1000, (s + 3_000 + i * 7_500) // 10**9 * 10**9

    added = [0]

    def kept(n_reads: int) -> int:
        """The memory a fit of the window keeps, after `n_reads` reads in all."""
        for i in range(added[0], n_reads):
            w.add(*read(i))
        added[0] = n_reads
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            fit = w.fit()
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - base if fit is not None else -1
        finally:
            tracemalloc.stop()

    warm = ClockWindow(w.meta)                           # a first fit's imports and caches
    for i in range(20):
        warm.add(*read(i))
    warm.fit()
    filling = [kept(n) for n in (WINDOW // 4, WINDOW // 2, WINDOW)]
    full = [kept(WINDOW + k) for k in (WINDOW, 2 * WINDOW)]
    assert filling[0] < filling[1] < filling[2]          # grows as the window fills
    assert all(f <= 1.1 * filling[2] for f in full), (filling, full)
    assert filling[2] < 256 * 1024                       # a full window's fit: about 96 KiB
