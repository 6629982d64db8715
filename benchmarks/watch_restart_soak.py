"""Soak of `rackclock watch` with restart cycles (issue 41): the default rack served by
`rackclock sim` in a process of its own (its clocks go on across the watch's restarts), watched
as a lab rack for --minutes, stopped --cycles times (SIGTERM and SIGKILL in turn) and started
again. Scraped every --scrape-s:

- every device of the rack file has its series (up, reads, read age) at every scrape;
- the time from each start to the first /metrics answer, and to its saying it started
  (`rackclock_watch_starting 0`: the devices read back from the day folders and probed);
- the watch's resident memory: its slope after --warmup-min in each life (KiB/min, a
  least-squares line), and the last life's; across the whole soak after the first warm-up (all
  lives' samples over soak time; those past each life's warm-up), and RSS at equal ages of
  each life with the slope of its mean from life to life;
- break alerts said (journal) against the distinct breaks they name, over all days;
- disk per device-day: the day folders' bytes over devices and days watched.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/watch_restart_soak.py --minutes 60 --cycles 6
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from watch_idle_conns import default_devices, serve  # noqa: E402
from watch_soak import usage  # noqa: E402


def metrics(url: str) -> str | None:
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            return r.read().decode()
    except OSError:
        return None


def missing(text: str, devices: list[str]) -> list[str]:
    """Declared devices without their up, reads and read-age series in this scrape."""
    have = {n: set(re.findall(rf'^rackclock_{n}\{{device="([^"]+)"', text, re.M))
            for n in ("device_up", "device_reads_total", "device_last_read_age_seconds")}
    return [d for d in devices if not all(d in h for h in have.values())]


def start(rack: Path, out: Path, a) -> tuple[subprocess.Popen, str, float, float | None]:
    """A watch started; (process, its url, seconds to its first /metrics answer, seconds until
    it says it started: `rackclock_watch_starting 0`, the devices read back and probed)."""
    t0 = time.monotonic()
    (out / "watch.json").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--rack", str(rack),
                             "--out", str(out), "--listen", "127.0.0.1:0", "--fit-every",
                             a.fit_every, "--reference-allowance", "1ms",
                             *(["--rate", a.rate] if a.rate else [])], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    while time.monotonic() - t0 < 600:
        try:
            url = json.loads((out / "watch.json").read_text())["url"]
            text = metrics(url)
        except (OSError, ValueError, KeyError):
            text = None
        if text is not None:
            first = first or time.monotonic() - t0
            if re.search(r"^rackclock_watch_starting 0", text, re.M):
                return proc, url, first, time.monotonic() - t0
        assert proc.poll() is None, "the watch ended at its start"
        time.sleep(0.1)
    assert first is not None, "no /metrics answer in 600 s"
    return proc, url, first, None


def slope_kib_min(pts: list[tuple[float, float]], warm_s: float) -> float | None:
    p = [(t, r) for t, r in pts if t >= warm_s]
    if len(p) < 10:
        return None
    t, r = np.array(p).T
    return float(np.polyfit(t / 60.0, r * 1024.0, 1)[0])


def across_soak(lives_rss: list[list[tuple[float, float, float]]], warm_s: float) -> dict:
    """The resident memory's growth across the whole soak after the first warm-up, from every
    life's (age, soak time, MiB) samples: the least-squares slope over soak time of all samples
    past the first warm-up, and of those past each life's own warm-up; and RSS at equal ages of
    each life (each whole minute past the warm-up that every life reached), with the slope of
    their mean per life over the life's start time (growth carried from life to life)."""
    def fit(p: list[tuple[float, float]]) -> float | None:
        if len(p) < 10:
            return None
        t, r = np.array(p).T
        return round(float(np.polyfit(t / 60.0, r * 1024.0, 1)[0]), 1)
    every = [(g, r) for life in lives_rss for _, g, r in life if g >= warm_s]
    warm = [(g, r) for life in lives_rss for a, g, r in life if a >= warm_s]
    shortest = min(life[-1][0] for life in lives_rss)
    ages = [float(m * 60) for m in range(int(np.ceil(warm_s / 60)), int(shortest // 60) + 1)]

    def at(life: list[tuple[float, float, float]], age: float) -> float:
        return min(life, key=lambda x: abs(x[0] - age))[2]
    table = {f"{int(a // 60)} min": [round(at(life, a), 1) for life in lives_rss] for a in ages}
    starts = [life[0][1] - life[0][0] for life in lives_rss]
    means = [float(np.mean([at(life, a) for a in ages])) for life in lives_rss] if ages else []
    equal = (round(float(np.polyfit(np.array(starts) / 60.0, np.array(means) * 1024.0, 1)[0]), 1)
             if len(means) >= 3 else None)
    return {"rss_slope_soak_after_first_warmup_kib_min": fit(every),
            "rss_slope_soak_each_life_warm_kib_min": fit(warm),
            "rss_mib_at_equal_ages": table,
            "rss_slope_equal_ages_across_lives_kib_min": equal}


def alerts(out: Path) -> tuple[int, int]:
    """(break alerts said, distinct breaks they name) over every day folder."""
    from bench.model.rundata import load_run
    said = [(e.device, e.message.split(":")[0], e.message.split(" between ")[-1])
            for d in sorted(out.glob("*-watch*")) if d.is_dir() and (d / "events.csv").exists()
            for e in load_run(d).events() if e.kind == "alert_break"]
    return len(said), len({(d, c) for d, c, _ in said})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--cycles", type=int, default=6)
    ap.add_argument("--scrape-s", type=float, default=5.0)
    ap.add_argument("--warmup-min", type=float, default=3.0)
    ap.add_argument("--last-min", type=float, default=None,
                    help="the last life's minutes (default: --minutes shared evenly); the "
                         "other lives share the rest")
    ap.add_argument("--fit-every", default="30s")
    ap.add_argument("--rate", default=None)
    ap.add_argument("--samples", default=None, help="a file to write every life's RSS samples "
                    "to (JSON: [age s, soak s, MiB] per sample)")
    ap.add_argument("--devices", default=None, help="comma-separated devices of the default "
                    "rack (default: all)")
    a = ap.parse_args()
    names = default_devices(a.devices)
    tmp = Path(tempfile.mkdtemp(prefix="watch-restart-soak-"))
    sim, rack = serve(tmp, names)
    from bench.config.inventory import load_rack
    devices = sorted(d.name for d in load_rack(rack).devices)
    out = tmp / "out"
    out.mkdir()
    last_s = a.last_min * 60 if a.last_min else a.minutes * 60 / (a.cycles + 1)
    life_s = (a.minutes * 60 - last_s) / max(a.cycles, 1)
    lives, scrapes, gaps, lives_rss = [], 0, [], []
    t_start, soak_t0 = time.time(), time.monotonic()
    try:
        for k in range(a.cycles + 1):
            proc, url, first, started = start(rack, out, a)
            rss, t0, life_rss = [], time.monotonic(), []
            lives_rss.append(life_rss)
            while time.monotonic() - t0 < (last_s if k == a.cycles else life_s):
                text = metrics(url)
                scrapes += 1
                if text is None or missing(text, devices):
                    gaps.append((k, round(time.monotonic() - t0, 1),
                                 "no answer" if text is None else missing(text, devices)))
                rss.append((time.monotonic() - t0, usage(proc.pid)[0]))
                life_rss.append((rss[-1][0], time.monotonic() - soak_t0, rss[-1][1]))
                time.sleep(a.scrape_s)
            sig = signal.SIGKILL if k % 2 == 0 else signal.SIGTERM
            if k == a.cycles:
                sig = signal.SIGTERM
            proc.send_signal(sig)
            proc.wait(900)
            lives.append({"minutes": round((time.monotonic() - t0) / 60, 1),
                          "first_metrics_s": round(first, 2),
                          "started_s": started and round(started, 2), "stopped_by": sig.name,
                          "rss_last_mib": round(rss[-1][1], 1),
                          "rss_slope_kib_min": (lambda x: x and round(x, 1))(
                              slope_kib_min(rss, a.warmup_min * 60)),
                          "rss_slope_second_half_kib_min": (lambda x: x and round(x, 1))(
                              slope_kib_min(rss, rss[-1][0] / 2)),
                          "rss_mib_each_minute": [round(r, 1) for t, r in rss
                                                  if int(t // 60) != int((t - a.scrape_s) // 60)]})
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(60)
    days_watched = (time.time() - t_start) / 86400
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    said, distinct = alerts(out)
    row = {"minutes": a.minutes, "cycles": a.cycles, "devices": len(devices),
           "scrapes": scrapes, "scrapes_missing_a_device": len(gaps), "gaps": gaps[:10],
           "lives": lives, **across_soak(lives_rss, a.warmup_min * 60),
           "break_alerts_said": said, "distinct_clocks_with_break_alerts": distinct,
           "disk_bytes": size,
           "disk_per_device_day_mib": round(size / len(devices) / days_watched / 2**20, 1),
           "load": [round(x, 1) for x in os.getloadavg()], "out": str(out)}
    if a.samples:
        Path(a.samples).write_text(json.dumps([[[round(x, 2) for x in p] for p in life]
                                               for life in lives_rss]))
    print(json.dumps(row, indent=1), flush=True)
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
