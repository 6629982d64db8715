"""Soak of `rackclock watch` on the default simulated rack: resident memory and CPU of the watch
process, first ten minutes against the last ten (ratios), and every bound of the days it wrote
checked against the simulator's truth (the last day: the simulator writes its truth when it
stops; earlier days have none).

    .venv/bin/python benchmarks/watch_soak.py --minutes 35 [--roll-every 600s] [--fit-every 10s]
    .venv/bin/python benchmarks/watch_soak.py --minutes 60 --rate 2 --settle-min 20

`--rate HZ` probes every device at HZ (the watch's `--rate`), so the bounded state (a clock's fit
window of 600 reads, the runner's 2000 reads per clock) fills in minutes rather than hours; the
"first" stretch then starts after `--settle-min`, once both are full, and the table compares two
stretches of equal length in which nothing is still filling. Every ten minutes' mean RSS is printed.

CPU per read: the watch's CPU over the good reads it counted itself in the stretch (the sum of its
`rackclock_clock_reads_total`, scraped at each sample), so fewer reads in a stretch do not pass for
more work per read; the machine's load average (1 min) is sampled beside it and its mean per stretch
printed (the machine is shared: a stretch under a different load is not the same experiment).

Prints one table and a JSON line; exits 1 when a bound missed the truth. Figures go into
benchmarks/README.md with the machine's load stated (the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def usage(pid: int) -> tuple[float, float]:
    """(resident MiB, CPU seconds) of the process."""
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    cpu = (int(parts[11]) + int(parts[12])) / TICK
    with open(f"/proc/{pid}/statm") as f:
        rss = int(f.read().split()[1]) * PAGE / 2**20
    return rss, cpu


def reads_counted(out: Path) -> int | None:
    """The good reads the watch counted (its /metrics: the sum of rackclock_clock_reads_total),
    or None before it serves."""
    try:
        url = json.loads((out / "watch.json").read_text())["url"]
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            text = r.read().decode()
    except (OSError, ValueError, KeyError):
        return None
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("rackclock_clock_reads_total{")))


def window(series: list, t0: float, t1: float) -> dict:
    """Over [t0, t1] of the (t, rss, cpu, reads, load) series: mean RSS, CPU rate (cores), the
    watch's reads, CPU per read (ms) and the mean load average."""
    pts = [p for p in series if t0 <= p[0] <= t1]
    pr = [p for p in pts if p[3] is not None]
    if len(pts) < 2:
        return {"rss": float("nan"), "cpu": float("nan"), "reads": None, "ms_per_read": None,
                "load": float("nan")}
    cpu_s = pts[-1][2] - pts[0][2]
    reads = pr[-1][3] - pr[0][3] if len(pr) >= 2 else None
    per = pr[-1][2] - pr[0][2] if len(pr) >= 2 else None
    return {"rss": sum(p[1] for p in pts) / len(pts), "cpu": cpu_s / (pts[-1][0] - pts[0][0]),
            "reads": reads, "ms_per_read": per * 1e3 / reads if reads else None,
            "load": sum(p[4] for p in pts) / len(pts)}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(b / a, 3) if a and b is not None else None


def truth_misses(out: Path) -> tuple[int, int]:
    """(segments checked against truth, segments whose offset bound missed it)."""
    from bench.model.rundata import load_run
    checked = missed = 0
    for day in sorted(out.glob("*-watch*")):
        if not (day / "summary.json").exists():
            continue
        for dev in load_run(day).summary.raw.get("devices", {}).values():
            for clock in dev.get("clocks", {}).values():
                for seg in clock.get("segments", []):
                    t = seg.get("truth")
                    if t is not None and seg.get("offset_status") == "proven":
                        checked += 1
                        missed += not t["offset_in"]
    return checked, missed


def soak(a: argparse.Namespace, out: Path) -> tuple[list, int | None]:
    """Run the watch for a.minutes, sampling it every a.every_s; (series, its exit status)."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--out", str(out),
                             "--listen", "127.0.0.1:0", "--roll-every", a.roll_every,
                             "--fit-every", a.fit_every, *(["--rate", a.rate] if a.rate else [])],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    series: list = []
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < a.minutes * 60 and proc.poll() is None:
            series.append((time.monotonic() - t0, *usage(proc.pid), reads_counted(out),
                           os.getloadavg()[0]))
            time.sleep(a.every_s)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(900)
    return series, proc.returncode


def result(series: list, settle_min: float) -> dict:
    """The table's figures: the first stretch (from settle_min) against the last ten minutes."""
    end = series[-1][0]
    settle = settle_min * 60
    first, last = window(series, settle, settle + 600), window(series, end - 600, end)
    tens = [window(series, t, t + 600) for t in range(0, int(end) - 599, 600)]
    per = (first["ms_per_read"], last["ms_per_read"])
    return {"minutes": round(end / 60, 1), "rss_first_mib": round(first["rss"], 1),
            "rss_last_mib": round(last["rss"], 1), "rss_ratio": ratio(first["rss"], last["rss"]),
            "cpu_first_cores": round(first["cpu"], 4), "cpu_last_cores": round(last["cpu"], 4),
            "cpu_ratio": ratio(first["cpu"], last["cpu"]),
            "reads_first": first["reads"], "reads_last": last["reads"],
            "ms_per_read_first": per[0] and round(per[0], 3),
            "ms_per_read_last": per[1] and round(per[1], 3), "per_read_ratio": ratio(*per),
            "load_first": round(first["load"], 1), "load_last": round(last["load"], 1),
            "rss_by_10min_mib": [round(w["rss"], 1) for w in tens],
            "ms_per_read_by_10min": [w["ms_per_read"] and round(w["ms_per_read"], 3)
                                     for w in tens],
            "load_by_10min": [round(w["load"], 1) for w in tens]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=35.0)
    ap.add_argument("--roll-every", default="600s")
    ap.add_argument("--fit-every", default="10s", help="the watch's --fit-every (its default is "
                    "30 s; the soak refits three times as often)")
    ap.add_argument("--every-s", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--rate", default=None, help="the watch's --rate for every device (Hz)")
    ap.add_argument("--settle-min", type=float, default=0.0,
                    help="the first stretch starts here (minutes): after the bounded state is full")
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="watch-soak-"))
    series, code = soak(a, out)
    checked, missed = truth_misses(out)
    row = {**result(series, a.settle_min), "settle_min": a.settle_min, "rate_hz": a.rate,
           "segments_checked": checked, "truth_missed": missed, "load": os.getloadavg(),
           "out": str(out), "exit": code}
    print(f"{'minutes':>8} {'RSS first':>10} {'RSS last':>10} {'ratio':>6} {'CPU first':>10} "
          f"{'CPU last':>10} {'ratio':>6} {'ms/read':>15} {'ratio':>6} {'load':>11} {'truth':>9}")
    print(f"{row['minutes']:>8} {row['rss_first_mib']:>6} MiB {row['rss_last_mib']:>6} MiB "
          f"{row['rss_ratio']!s:>6} {row['cpu_first_cores']:>10} {row['cpu_last_cores']:>10} "
          f"{row['cpu_ratio']!s:>6} {row['ms_per_read_first']!s:>7}→{row['ms_per_read_last']!s:<7} "
          f"{row['per_read_ratio']!s:>6} {row['load_first']:>5}→{row['load_last']:<5} "
          f"{checked - missed}/{checked} in")
    print(json.dumps(row))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
