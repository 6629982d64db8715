"""A bound that holds now: the offset bound the watch serves for the current instant (the bound
at the last read widened by the model's rate bound, /v1/now and rackclock_clock_offset_now_*)
holds the simulator's truth at every scrape of a short run, a wall clock and a wrapping counter
alike; a counter's window that slides past its wrap keeps its offset on the same turn."""
from __future__ import annotations

import json
import os
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from racks import sim_rack_text
from watch_helpers import get_json, start_watch, state, stop_watch, until

from bench.model.summary import _truth_offset_at
from bench.watch.estimator import ClockMeta, ClockWindow, bound_now, current_bounds

CLOCKS = [("bmc-2", "datetime"), ("cdu-1", "rtc"), ("pdu-2", "sysuptime")]


LONG_MIN = float(os.environ.get("RACKCLOCK_WATCH_LONG_MIN", "30"))


def _now(url: str, d: str, c: str) -> dict | None:
    a = get_json(f"{url}/v1/now?" + urllib.parse.urlencode({"device": d, "clock": c}))
    return a if a and "lo_ns" in a else None


def _series(url: str) -> tuple[int, int, dict] | None:
    """(reference ns before, after, {(device, clock): (now_lo_s, now_hi_s)}) of one /metrics."""
    t0 = time.time_ns()
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as r:
            text = r.read().decode()
    except OSError:
        return None
    t1 = time.time_ns()
    got: dict = {}
    for side, labels, v in re.findall(r"^rackclock_clock_offset_now_(lo|hi)_seconds\{([^}]*)\} "
                                      r"(\S+)$", text, re.M):
        lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        got.setdefault((lab["device"], lab["clock"]), {})[side] = float(v)
    return t0, t1, {k: (v["lo"], v["hi"]) for k, v in got.items() if len(v) == 2}


def _bound_now_run(tmp_path: Path, scrapes: int, every_s: float, min_s: float = 0.0,
                   log: Path | None = None):
    """The watch on bmc-2, cdu-1, pdu-2 at 2 Hz; rounds of /v1/now for each clock and one
    /metrics, `every_s` apart, at least `scrapes` of them and for at least `min_s`; (the /v1/now
    answers, the /metrics series, truth.json's devices)."""
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(sorted({d for d, _ in CLOCKS})))
    out = tmp_path / "out"
    proc = start_watch(out, "--rack", str(rack), "--rate", "2", "--fit-every", "1s", log=log)
    got: list[dict] = []
    series: list[tuple[int, int, dict]] = []
    try:
        url = until(lambda: (s := state(out)) and s.get("url"), 90, "watch.json", proc)
        for d, c in CLOCKS:
            until(lambda d=d, c=c: _now(url, d, c), 120, f"a bound now of {d} {c}", proc)
        t_end = time.monotonic() + min_s
        while len(series) < scrapes or time.monotonic() < t_end:
            for d, c in CLOCKS:
                a = _now(url, d, c)
                assert a is not None and a["lo_ns"] <= a["hi_ns"]
                got.append(a)
            m = _series(url)
            assert m is not None and {k for k in m[2]} >= set(CLOCKS), m
            series.append(m)
            assert proc.poll() is None
            time.sleep(every_s)
    finally:
        text = stop_watch(proc)
    assert proc.returncode == 0, text
    truth = {}
    for day in state(out)["closed"]:
        truth.update(json.loads((Path(day) / "truth.json").read_text())["devices"])
    return got, series, truth


def _check(got: list[dict], series: list, truth: dict) -> None:
    mods = {"sysuptime": 2**32 * 10**7}
    for a in got:
        tc = truth[a["device"]]["clocks"][a["clock"]]
        x = _truth_offset_at(tc, a["at_ns"])
        m = mods.get(a["clock"], 0)
        if m:                           # the truth on the bound's turn
            x -= round((x - (a["lo_ns"] + a["hi_ns"]) / 2) / m) * m
        assert a["lo_ns"] <= x <= a["hi_ns"], (a, x)
        assert a["at_ns"] >= a["epoch_ns"]
    assert {a["device"] for a in got if a["counter"]} == {"pdu-2"}
    for t0, t1, b in series:            # the series, scraped between t0 and t1 (wall clocks)
        for (d, c), (lo, hi) in b.items():
            if c in mods:
                continue
            tc = truth[d]["clocks"][c]
            x0, x1 = (_truth_offset_at(tc, t) / 1e9 for t in (t0, t1))
            assert lo <= max(x0, x1) and min(x0, x1) <= hi, (d, c, lo, hi, x0, x1)


@pytest.mark.slow
def test_bound_now_holds_the_truth_at_every_scrape(tmp_path):
    _check(*_bound_now_run(tmp_path, 40, 0.4))           # 40 scrapes of each clock


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RACKCLOCK_WATCH_LONG") != "1",
                    reason="a 30 min run: set RACKCLOCK_WATCH_LONG=1")
def test_bound_now_holds_the_truth_at_every_scrape_of_a_long_run(tmp_path):
    """Issue 41: every scrape of a 30-minute run (RACKCLOCK_WATCH_LONG_MIN to change it), each
    clock's /v1/now and the /metrics series about every 5 s, as Prometheus would."""
    got, series, truth = _bound_now_run(tmp_path, 2, 5.0, LONG_MIN * 60, tmp_path / "watch.log")
    _check(got, series, truth)


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


def test_the_bound_now_grows_at_the_rate_the_clock_was_fitted_under():
    """A 1 s wall clock read every 5 s (the watch's polite Redfish rate) is pinned too loosely
    for its reads to check 600 ppm, so it is fitted under a disciplined clock's 2,500 ppm; an
    NTP client may then slew it at 2,000 ppm after its last read, inside that model, and the
    bound now must hold it (before: it grew at the inventory's 600 ppm and missed)."""
    q, off = 10**9, 12_345_678_901
    rng = np.random.default_rng(1)
    w = ClockWindow(ClockMeta("bmc.datetime", q))
    t0 = 1_800_000_000 * 10**9
    for k in range(120):
        s = t0 + k * 5 * 10**9 + int(rng.integers(0, q))
        w.add(s, s + 2 * 10**6, (s + 10**6 + off) // q * q)
    fit = w.fit()
    assert fit is not None and fit.drift_prior_ppm > 600 and fit.rate_assumed
    b = current_bounds(fit, 600.0)
    assert b is not None and b["rate_ppm"] == fit.drift_prior_ppm
    for age_s in (10, 60, 600, 3600):
        lo, hi = bound_now(b, int(b["at_ns"]) + age_s * 10**9)
        for rate_ppm in (2000.0, -2000.0):
            truth = off + rate_ppm * 1e-6 * age_s * 1e9
            assert lo <= truth <= hi, (age_s, rate_ppm, lo, truth, hi)
