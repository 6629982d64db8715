"""A bound that holds now: the offset bound the watch serves for the current instant (the bound
at the last read widened by the model's rate bound, /v1/now and rackclock_clock_offset_now_*)
holds the simulator's truth at every scrape of a short run, a wall clock and a wrapping counter
alike; a counter's window that slides past its wrap keeps its offset on the same turn."""
from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from racks import sim_rack_text
from watch_helpers import get_json, start_watch, state, stop_watch, until

from bench.model.summary import _truth_offset_at
from bench.watch.estimator import ClockMeta, ClockWindow, bound_now, current_bounds

CLOCKS = [("bmc-2", "datetime"), ("cdu-1", "rtc"), ("pdu-2", "sysuptime")]


@pytest.mark.slow
def test_bound_now_holds_the_truth_at_every_scrape(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(sorted({d for d, _ in CLOCKS})))
    out = tmp_path / "out"
    proc = start_watch(out, "--rack", str(rack), "--rate", "2", "--fit-every", "1s")
    got: list[dict] = []
    try:
        url = until(lambda: (s := state(out)) and s.get("url"), 90, "watch.json", proc)

        def now(d, c):
            a = get_json(f"{url}/v1/now?" + urllib.parse.urlencode({"device": d, "clock": c}))
            return a if a and "lo_ns" in a else None
        for d, c in CLOCKS:
            until(lambda d=d, c=c: now(d, c), 120, f"a bound now of {d} {c}", proc)
        while len(got) < 3 * 40:           # 40 scrapes of each clock, a few seconds apart
            for d, c in CLOCKS:
                a = now(d, c)
                assert a is not None and a["lo_ns"] <= a["hi_ns"]
                got.append(a)
            assert proc.poll() is None
            time.sleep(0.4)
    finally:
        text = stop_watch(proc)
    assert proc.returncode == 0, text
    st = state(out)
    truth = json.loads((Path(st["closed"][-1]) / "truth.json").read_text())
    mods = {"sysuptime": 2**32 * 10**7}
    for a in got:
        tc = truth["devices"][a["device"]]["clocks"][a["clock"]]
        x = _truth_offset_at(tc, a["at_ns"])
        m = mods.get(a["clock"], 0)
        if m:                           # the truth on the bound's turn
            x -= round((x - (a["lo_ns"] + a["hi_ns"]) / 2) / m) * m
        assert a["lo_ns"] <= x <= a["hi_ns"], (a, x)
        assert a["at_ns"] >= a["epoch_ns"]
    assert {a["device"] for a in got if a["counter"]} == {"pdu-2"}


def test_a_counter_window_sliding_past_its_wrap_keeps_its_turn():
    """A counter of 10 ms ticks wrapping at 2^16 ticks (655.36 s), read every 5 s in a window
    of 40 reads: once the reads before the wrap have left the window, the offset stays where it
    was (before: it jumped by the modulus)."""
    q, mod = 10**7, 2**16 * 10**7
    w = ClockWindow(ClockMeta("uptime", q, True, mod), size=40)
    t0, zero = 1_800_000_000 * 10**9, 1_800_000_000 * 10**9 - 600 * 10**9   # 55 s to the wrap
    offsets = []
    for k in range(120):
        s = t0 + k * 5 * 10**9
        e = s + 2 * 10**6
        v = ((s + 10**6 - zero) // q * q) % mod
        w.add(s, e, v)
        if k >= 2:
            b = current_bounds(w.copy().fit(), 600.0)
            offsets.append((b["offset_lo_ns"] + b["offset_hi_ns"]) / 2)
            lo, hi = bound_now(b, e + 3 * 10**9)
            assert lo <= -zero <= hi         # the counter minus reference: minus its zero
    assert np.ptp(offsets) < 0.1 * 10**9, np.ptp(offsets)      # not a modulus (655 s) apart
