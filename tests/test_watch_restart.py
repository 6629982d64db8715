"""Restarts that lose nothing and invent nothing: a watch of a served rack (its clocks go on
across the watch's restarts) stopped by SIGTERM and by SIGKILL and started again keeps every
device measured, does not raise again a break it said before, and does not widen a band (the
resumed window holds every read of the one before). A second watch on the same --out is refused
in one line."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request

import pytest
from racks import served_rack
from watch_helpers import ROOT, start_watch, state, stop_watch, until

from bench.model.rundata import load_run
from bench.sim.faults import send_fault

pytestmark = pytest.mark.slow
DEVICES = ["bmc-2", "cdu-1"]


@pytest.fixture
def served(tmp_path, monkeypatch):
    with served_rack(tmp_path, monkeypatch, DEVICES) as out:
        yield out


def scrape(url: str) -> dict[tuple[str, str], float] | None:
    """{(metric name, labels text): value} of the watch's /metrics, or None (not answering)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    got = {}
    for line in text.splitlines():
        m = re.match(r"(rackclock_\w+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            got[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return got


def one(got: dict, name: str, device: str, clock: str | None = None) -> float | None:
    for (n, lab), v in got.items():
        if n == name and f'device="{device}"' in lab and (clock is None or
                                                          f'clock="{clock}"' in lab):
            return v
    return None


def breaks(got: dict, device: str) -> float:
    return sum(v for (n, lab), v in got.items() if n == "rackclock_clock_breaks_total"
               and f'device="{device}"' in lab)


def widths(got: dict) -> dict[str, float]:
    return {d: one(got, "rackclock_clock_offset_hi_seconds", d) -
            one(got, "rackclock_clock_offset_lo_seconds", d) for d in DEVICES}


def fitted(url: str, reads: dict[str, float]) -> dict | None:
    """A scrape where every device is up and each clock's fit counts more reads than `reads`."""
    got = scrape(url)
    if not got or any(one(got, "rackclock_device_up", d) != 1.0 or
                      one(got, "rackclock_clock_offset_lo_seconds", d) is None or
                      (one(got, "rackclock_clock_reads_total", d) or 0) <= reads.get(d, 0)
                      for d in DEVICES):
        return None
    return got


def test_restart_cycles_lose_nothing_and_raise_no_old_break(served, tmp_path):
    rack = tmp_path / "watched.toml"
    rack.write_text((served / "rack.toml").read_text())
    out = tmp_path / "out"
    args = ("--rack", str(rack), "--reference-allowance", "1ms", "--rate", "2",
            "--fit-every", "1s")
    proc = start_watch(out, *args)
    url = until(lambda: (s := state(out)) and s.get("url"), 90, "watch.json", proc)
    until(lambda: fitted(url, {d: 8 for d in DEVICES}), 120, "fits of every device", proc)
    # a second watch on the same --out: refused at once, in one line
    r = subprocess.run([sys.executable, "-m", "bench.cli", "watch", "--out", str(out),
                        "--listen", "127.0.0.1:0", *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "is watched by another watch" in r.stderr and f"pid {proc.pid}" in r.stderr
    send_fault(served, "bmc-2", "step", size_s=2.0)
    got = until(lambda: (g := scrape(url)) and breaks(g, "bmc-2") and g, 120,
                "the step's break", proc)
    until(lambda: fitted(url, {"bmc-2": one(got, "rackclock_clock_reads_total", "bmc-2") + 8}),
          120, "reads after the step", proc)
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGKILL):
        before = fitted(url, {})
        assert before is not None
        if sig == signal.SIGKILL:
            proc.kill()
            proc.wait(30)
        else:
            assert proc.returncode is None
            stop_watch(proc, sig)
            assert proc.returncode == 0
        old_url = url
        proc = start_watch(out, *args)
        url = until(lambda o=old_url: (s := state(out)) and s.get("url") != o and s.get("url"), 90,
                    "the new watch.json", proc)
        # /metrics answers from the start's first moment (watch.json names the url as it
        # serves; how soon: benchmarks/watch_restart_soak.py), every device has its series at
        # once, the start said until the devices are read back; then a fit with reads of its own
        first = until(lambda u=url: scrape(u), 60, "the first scrape", proc)
        assert all(one(first, "rackclock_device_last_read_age_seconds", d) is not None
                   for d in DEVICES)
        assert first.get(("rackclock_watch_starting", "")) in (0.0, 1.0), first
        taken = {d: one(before, "rackclock_clock_reads_total", d) for d in DEVICES}
        after = until(lambda u=url: fitted(u, {}), 120, "fits after the restart", proc)
        assert after[("rackclock_watch_starting", "")] == 0.0
        for d in DEVICES:         # the resumed window holds every read the last one had
            assert one(after, "rackclock_clock_reads_total", d) >= min(taken[d], 600), d
        w0, w1 = widths(before), widths(after)
        assert all(w1[d] <= w0[d] * 1.05 + 1e-6 for d in DEVICES), (sig, w0, w1)
        assert breaks(after, "bmc-2") == breaks(before, "bmc-2") == 1   # the old break not again
    text = stop_watch(proc)
    assert proc.returncode == 0, text
    days = sorted(p for p in out.iterdir() if "-watch" in p.name)
    alerts = [e for d in days for e in load_run(d).events() if e.kind == "alert_break"]
    assert len(alerts) == 1, alerts                # said once, whatever the restarts
    assert [load_run(d).manifest.status for d in days].count("killed") == 2
    # a killed day summarised as a closed one: no phase files (tens of MB a day, the soak saw)
    assert not [d for d in days if (d / "phase").exists()], days
