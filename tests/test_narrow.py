"""bench/model/narrow.py: a timeline's columns kept narrow read back exactly what was put in,
in their own type, whole, by slice, by index array, mask or single row, after a permutation;
each column kept in the narrowest form that holds it."""
from __future__ import annotations

import numpy as np

from bench.model.narrow import Columns


def test_columns_read_back_what_was_put_in_each_in_its_narrowest_form():
    rng = np.random.default_rng(7)
    n = 1000
    lo = 1_796_000_000 * 10**9 + np.sort(rng.integers(0, 600 * 10**9, n))
    cols = {
        "lo": lo,                                                   # spans 600 s: as it is
        "hi": lo + rng.integers(10**9, 2 * 10**9, n),               # lo + < 2^32: uint32
        "stamp": lo + 12 * 10**9 + rng.integers(0, 10**8, n),       # lo + base + uint32
        "far": np.where(rng.random(n) < 0.5, lo, -lo),              # differences too wide
        "res": np.full(n, 10**6, np.int64),                         # one value: no memory
        "clock": rng.integers(-1, 3, n).astype(np.int32),           # uint8 from -1
        "idx": rng.permutation(n).astype(np.int32),                 # uint16
        "has": rng.random(n) < 0.5,                                 # bool: as it is
    }
    c = Columns(n)
    c.put("lo", lo)
    for k in ("hi", "stamp", "far"):
        # in three parts, as a table of three sources gives them
        c.encode(k, np.split(cols[k], [300, 301]), np.int64, "lo")
    for k in ("res", "clock", "idx", "has"):
        c.put(k, cols[k])
    kept = {k: c._enc[k] for k in c}
    assert kept["res"][0] == "const" and kept["lo"][0] == "plain" and kept["has"][0] == "plain"
    assert kept["far"][0] == "plain" and kept["far"][1].dtype == np.int64
    assert kept["hi"][:3] == ("delta", np.dtype(np.int64), "lo")
    assert kept["hi"][4].dtype == np.uint32 and kept["stamp"][4].dtype == np.uint32
    assert kept["clock"][4].dtype == np.uint8 and kept["idx"][4].dtype == np.uint16
    assert c.nbytes() < sum(a.nbytes for a in cols.values()) * 0.6
    perm = rng.permutation(n)
    keys = [slice(None), slice(17, 530), np.array([5, 0, 999, 5]), cols["has"], 3, -1]
    for step in ("as put", "permuted"):
        for k, want in cols.items():
            assert c[k].dtype == want.dtype and np.array_equal(c[k], want), (step, k)
            for key in keys:
                assert np.array_equal(c.part(k, key), want[key]), (step, k, key)
        c.take(perm)
        cols = {k: v[perm] for k, v in cols.items()}


def test_columns_of_no_rows():
    c = Columns(0)
    c.encode("lo", [], np.int64)
    c.encode("hi", [np.zeros(0, np.int64)], np.int64, "lo")
    assert c["lo"].dtype == np.int64 and len(c["lo"]) == len(c["hi"]) == 0


def test_a_logged_latency_in_float_ns_widens_the_lines_outward():
    """--widen-latency: a device's latency bound (lo, hi) as the summary's Bound holds it
    (float ns) moves its stamped lines to the event's instant, rounded outward (before: numpy
    refused a float subtracted in place from the int64 columns)."""
    import numpy as np

    from bench.model.timeline_table import BASES, _widen

    c = {"dev": np.array([0, 1, 0]), "basis": np.zeros(3, np.int8),
         "lo": np.array([1_000, 1_000, 5_000], np.int64),
         "hi": np.array([2_000, 2_000, 6_000], np.int64),
         "clock": np.zeros(3, np.int32), "has_stamp": np.ones(3, bool),
         "res": np.ones(3, np.int64)}
    _widen(c, [("bmc-1", "bmc"), ("pdu-1", "pdu")], {"bmc-1": (100.4, 300.6)})
    assert c["lo"].tolist() == [1_000 - 301, 1_000, 5_000 - 301]
    assert c["hi"].tolist() == [2_000 - 100, 2_000, 6_000 - 100]
    assert c["basis"].tolist() == [BASES.index("event"), 0, BASES.index("event")]
