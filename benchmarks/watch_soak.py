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


def window(series: list, t0: float, t1: float) -> tuple[float, float]:
    """Mean RSS and CPU rate (cores) over [t0, t1] of the (t, rss, cpu) series."""
    pts = [p for p in series if t0 <= p[0] <= t1]
    if len(pts) < 2:
        return float("nan"), float("nan")
    rss = sum(p[1] for p in pts) / len(pts)
    return rss, (pts[-1][2] - pts[0][2]) / (pts[-1][0] - pts[0][0])


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
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--out", str(out),
                             "--listen", "127.0.0.1:0", "--roll-every", a.roll_every,
                             "--fit-every", a.fit_every, *(["--rate", a.rate] if a.rate else [])],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    series, t0 = [], time.monotonic()
    try:
        while time.monotonic() - t0 < a.minutes * 60 and proc.poll() is None:
            series.append((time.monotonic() - t0, *usage(proc.pid)))
            time.sleep(a.every_s)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(900)
    end = series[-1][0]
    settle = a.settle_min * 60
    first, last = window(series, settle, settle + 600), window(series, end - 600, end)
    tens = [round(window(series, t, t + 600)[0], 1) for t in range(0, int(end) - 599, 600)]
    checked, missed = truth_misses(out)
    row = {"minutes": round(end / 60, 1), "rss_first_mib": round(first[0], 1),
           "rss_last_mib": round(last[0], 1), "rss_ratio": round(last[0] / first[0], 3),
           "cpu_first_cores": round(first[1], 4), "cpu_last_cores": round(last[1], 4),
           "cpu_ratio": round(last[1] / first[1], 3) if first[1] else None,
           "rss_by_10min_mib": tens, "settle_min": a.settle_min, "rate_hz": a.rate,
           "segments_checked": checked, "truth_missed": missed, "load": os.getloadavg(),
           "out": str(out), "exit": proc.returncode}
    print(f"{'minutes':>8} {'RSS first':>10} {'RSS last':>10} {'ratio':>6} {'CPU first':>10} "
          f"{'CPU last':>10} {'ratio':>6} {'truth':>12}")
    print(f"{row['minutes']:>8} {row['rss_first_mib']:>8} MiB {row['rss_last_mib']:>6} MiB "
          f"{row['rss_ratio']:>6} {row['cpu_first_cores']:>10} {row['cpu_last_cores']:>10} "
          f"{row['cpu_ratio']!s:>6} {checked - missed}/{checked} in")
    print(json.dumps(row))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
