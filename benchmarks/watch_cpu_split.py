"""Where the watch's CPU goes, per sample row, as days accumulate: `rackclock watch` run in this
process on the default simulated rack, its threads' CPU (from /proc/self/task) grouped as the
probing loops, the driver pool, the fitter (the main thread) and the rest, with the rows written,
the fits and their CPU counted; every `--every-s` a line of CPU per 1000 rows by group and the
number of day folders. Work per row that grows with the days written (or with time) shows as a
column that rises down the table.

    .venv/bin/python benchmarks/watch_cpu_split.py --minutes 25 --roll-every 60s --rate 2

Not a timed test: the machine is shared, so read a column's trend against the load printed
beside it.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TICK = os.sysconf("SC_CLK_TCK")
COUNTS: Counter = Counter()
GROUPS = ("probe", "driver", "fitter", "other")


def instrument() -> None:
    """Count the rows the watch writes and its fits (with their thread CPU)."""
    from bench.watch import rolling, state
    write, refit = rolling.Tap.write, state.WatchState.refit

    def counted_write(self, *a, **k):
        COUNTS["rows"] += 1
        return write(self, *a, **k)

    def counted_refit(self, *a, **k):
        t = time.thread_time()
        try:
            return refit(self, *a, **k)
        finally:
            COUNTS["fits"] += 1
            COUNTS["fit_cpu_s"] += time.thread_time() - t
    rolling.Tap.write, state.WatchState.refit = counted_write, counted_refit


def group(name: str) -> str:
    if name.startswith("watch-") and name not in ("watch-http", "watch-close-day"):
        return "probe"
    if name.startswith("driver"):
        return "driver"
    return "fitter" if name == "MainThread" else "other"


def cpu_by_group() -> Counter:
    """CPU seconds of the live threads by group; "other" also takes what ended threads used."""
    out: Counter = Counter()
    for th in threading.enumerate():
        try:
            with open(f"/proc/self/task/{th.native_id}/stat") as f:
                p = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[group(th.name)] += (int(p[11]) + int(p[12])) / TICK
    total = sum(os.times()[:2])
    out["other"] += total - sum(out.values())
    return out


def sample(out: Path, every_s: float, stop: threading.Event) -> None:
    prev = (Counter(COUNTS), cpu_by_group())
    print(f"{'s':>6} {'days':>5} {'rows/s':>7} " + " ".join(f"{g:>7}" for g in GROUPS)
          + f" {'total':>7} {'fits':>5} {'ms/fit':>7} {'load':>5}   (CPU ms per 1000 rows)")
    t0 = time.monotonic()
    while not stop.wait(every_s):
        now = (Counter(COUNTS), cpu_by_group())
        rows = now[0]["rows"] - prev[0]["rows"]
        fits = now[0]["fits"] - prev[0]["fits"]
        if rows > 0:
            cpu = {g: (now[1][g] - prev[1][g]) * 1e6 / rows for g in GROUPS}
            fit_ms = (now[0]["fit_cpu_s"] - prev[0]["fit_cpu_s"]) * 1e3 / max(1, fits)
            days = len(list(out.glob("*-watch*")))
            print(f"{time.monotonic() - t0:6.0f} {days:5d} {rows / every_s:7.1f} "
                  + " ".join(f"{cpu[g]:7.0f}" for g in GROUPS)
                  + f" {sum(cpu.values()):7.0f} {fits:5d} {fit_ms:7.1f} "
                  f"{os.getloadavg()[0]:5.1f}", flush=True)
        prev = now


def stop_after(seconds: float) -> None:
    """SIGTERM to this process `seconds` after the watch wrote its first row: its signal handlers
    are in place by then (a SIGTERM before them, on a slow start, killed the process, exit -15)."""
    while not COUNTS["rows"]:
        time.sleep(0.1)
    time.sleep(seconds)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=25.0)
    ap.add_argument("--roll-every", default="60s")
    ap.add_argument("--fit-every", default="10s")
    ap.add_argument("--rate", default="2")
    ap.add_argument("--every-s", type=float, default=120.0)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    import tempfile

    from bench.cli import main as rackclock
    out = a.out or Path(tempfile.mkdtemp(prefix="watch-cpu-"))
    instrument()
    stop = threading.Event()
    threading.Thread(target=sample, args=(out, a.every_s, stop), daemon=True).start()
    threading.Thread(target=stop_after, args=(a.minutes * 60,), daemon=True).start()
    code = rackclock(["--log-level", "error", "watch", "--out", str(out), "--listen",
                      "127.0.0.1:0", "--roll-every", a.roll_every, "--fit-every", a.fit_every,
                      "--rate", a.rate])
    stop.set()
    return code


if __name__ == "__main__":
    sys.exit(main())
