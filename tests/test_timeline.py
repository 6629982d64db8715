"""The cross-plane timeline: proven order only where intervals (or one clock's own stamps) prove it."""
import json
from datetime import UTC

import numpy as np
import pytest

from bench.analysis.timeline_order import Entry, before, order, widen
from bench.commands.timeline import main
from bench.model.logformats import Context, parse_log
from bench.model.store import RunStore
from bench.sim.clock_model import ClockModel, ClockParams

T0 = 1_795_000_000_000_000_000
MS = 1_000_000


def test_disjoint_is_ordered_overlap_is_not():
    a = Entry("pdu-1", "pdu", "outlet off", T0, T0 + 5 * MS)
    b = Entry("bmc-1", "bmc", "power lost", T0 + 6 * MS, T0 + 9 * MS)
    c = Entry("cdu-1", "cooling", "flow alarm", T0 + 8 * MS, T0 + 20 * MS)
    rows = order([c, b, a])
    assert [r["entry"].label for r in rows] == ["outlet off", "power lost", "flow alarm"]
    assert rows[0]["unordered_with"] == [] and rows[0]["block"] == 0
    assert rows[1]["unordered_with"] == [2] and rows[2]["unordered_with"] == [1]
    assert rows[1]["block"] == rows[2]["block"] == 1
    assert [r["unordered_count"] for r in rows] == [0, 1, 1]


def mixed_entries(n: int, seed: int, span_s: int, obs_ms: int) -> list[Entry]:
    """Stamps of three 1 s clocks (each mapped: the tick's interval, offset per clock) and
    observed events of random widths, over `span_s` seconds."""
    rng = np.random.default_rng(seed)
    ents = []
    for i in range(n):
        if i % 2:
            st = int(rng.integers(0, span_s)) * 10**9
            lo = T0 + st + (i % 3) * 300 * MS
            ents.append(Entry(f"dev-{i % 3}", "p", str(i), lo, lo + 10**9 + 5 * MS, "stamp",
                              f"dev-{i % 3}/clock/0", st, 10**9))
        else:
            lo = T0 + int(rng.uniform(0, span_s * 1000)) * MS
            ents.append(Entry("obs", "p", str(i), lo, lo + int(rng.uniform(1, obs_ms)) * MS,
                              "observed"))
    return ents


def test_the_array_order_counts_exactly_what_the_pairwise_rule_says():
    ents = mixed_entries(300, 2, 20, 2000)
    rows = order(ents)
    for r in rows:
        assert r["unordered_count"] == len(r["unordered_with"])
        for j in r["unordered_with"]:
            a, b = r["entry"], rows[j]["entry"]
            assert not before(a, b) and not before(b, a)
    capped = order(ents, max_pairs=10)
    assert [r["unordered_count"] for r in capped] == [r["unordered_count"] for r in rows]
    assert all(len(r["unordered_with"]) <= 12 for r in capped)


def test_one_clock_orders_its_own_stamps_even_when_intervals_overlap():
    a = Entry("bmc-1", "bmc", "a", T0, T0 + 1000 * MS, "stamp", "bmc-1/datetime/0", 10**9, 10**9)
    b = Entry("bmc-1", "bmc", "b", T0 + 500 * MS, T0 + 1500 * MS, "stamp", "bmc-1/datetime/0",
              2 * 10**9, 10**9)
    same = Entry("bmc-1", "bmc", "c", T0 + 500 * MS, T0 + 1500 * MS, "stamp", "bmc-1/datetime/0",
                 2 * 10**9, 10**9)
    other_segment = Entry("bmc-1", "bmc", "d", T0 + 500 * MS, T0 + 1500 * MS, "stamp",
                          "bmc-1/datetime/1", 2 * 10**9, 10**9)
    assert before(a, b) and not before(b, a)
    assert not before(b, same) and not before(same, b)          # same tick: unordered
    assert not before(a, other_segment)                         # across a break: no claim


def test_widen_turns_a_stamp_into_the_event_instant():
    st = Entry("bmc-1", "bmc", "x", T0, T0 + 10 * MS, "stamp", "k", 1, 1)
    ev = widen(st, 50 * MS, 250 * MS)
    assert (ev.lo_ns, ev.hi_ns, ev.basis) == (T0 - 250 * MS, T0 - 40 * MS, "event")


@pytest.mark.parametrize("line, fmt, value, res", [
    ("2026-11-29T17:08:40.5 fan fault", "iso8601", 1795972120_500_000_000, 100 * MS),
    ("2026-11-29T18:08:40+01:00 x", "iso8601", 1795972120_000_000_000, 1000 * MS),
    ("2026-11-29 17:08:40.123Z y", "iso8601", 1795972120_123_000_000, MS),
    ("[12345.678] link down", "dmesg", 12345_678_000_000, MS),
])
def test_parse_stamp(line, fmt, value, res):
    log = parse_log(line, "auto", Context(zone="UTC"))
    assert log.format == fmt and not log.unparsed
    (st,) = log.stamps
    assert (st.value_ns, st.resolution_ns) == (value, res)


def test_timeline_command_maps_a_log_line_onto_the_truth(tmp_path, capsys):
    """A run folder made from a clock model in virtual time: the log line's interval must hold
    the reference instant at which the model's clock showed that stamp."""
    model = ClockModel(ClockParams(offset_s=12.3456, drift_ppm=20, resolution_s=1.0), T0, seed=1)
    store = RunStore(tmp_path, "run")
    w = store.samples("bmc-1")
    rng = np.random.default_rng(3)
    t = T0
    for _ in range(200):
        t += int(rng.uniform(0.2, 0.8) * 1e9)
        s, e = t, t + int(rng.uniform(0.5, 3) * MS)
        v = model.read_ns(int(rng.integers(s, e + 1)))
        w.write("read", "datetime", s, e, v, 10**9, "user", "ok", "")
    w.close()
    store.write_manifest({"started_ns": T0, "devices": {"bmc-1": {
        "plane": "bmc", "clocks": [{"name": "datetime", "resolution_ns": 10**9}]}}})
    store.close()
    t_event = T0 + 60 * 10**9 + 123 * MS
    stamp = model.read_ns(t_event)
    from datetime import datetime
    iso = datetime.fromtimestamp(stamp // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    log = tmp_path / "bmc.log"
    log.write_text(f"{iso} thermal trip\nno stamp here\n")
    assert main([str(tmp_path / "run"), f"bmc-1:datetime={log}"]) == 0
    out = json.loads((tmp_path / "run" / "timeline.json").read_text())["entries"]
    (line,) = [x for x in out if "thermal trip" in x["label"]]
    assert line["lo_ns"] <= t_event <= line["hi_ns"]
    assert line["hi_ns"] - line["lo_ns"] < 1.1e9          # one tick of 1 s, mapped
    assert "thermal trip" in capsys.readouterr().out


def test_nearest_unordered_lists_hold_only_unordered_entries_and_all_of_them_up_to_12():
    from bench.analysis.timeline_order import nearest_unordered, order_arrays
    ents = mixed_entries(400, 7, 40, 3000)
    rows = order(ents)                  # every list complete: 400 entries, few pairs
    keys = {}
    clock = [keys.setdefault(e.clock_key, len(keys)) if e.clock_key else -1 for e in ents]
    stamp = [e.stamp_ns or 0 for e in ents]
    perm, _, count = order_arrays([e.lo_ns for e in ents], [e.hi_ns for e in ents], clock,
                                  stamp, [e.resolution_ns for e in ents])
    pick = lambda xs: np.asarray(xs)[perm]          # noqa: E731
    near = nearest_unordered(pick([e.lo_ns for e in ents]), pick([e.hi_ns for e in ents]),
                             pick(clock), pick(stamp), pick([e.resolution_ns for e in ents]),
                             count)
    assert [r["unordered_count"] for r in rows] == count.tolist()
    assert any(c > 12 for c in count) and any(0 < c <= 12 for c in count)
    for r, got in zip(rows, near):
        got = sorted(int(x) for x in got if x >= 0)
        assert set(got) <= set(r["unordered_with"])
        if r["unordered_count"] <= 12:
            assert got == r["unordered_with"]
        else:
            assert len(got) == 12
