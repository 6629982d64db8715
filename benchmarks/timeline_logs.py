"""`rackclock timeline` on a big log, end to end: a run folder made in virtual time (one BMC
clock, 1 s ticks, 20 ppm, read 1,200 times over ten minutes) and an RFC 5424 log of N lines (ms
stamps of that clock at random instants over the run), run as a subprocess; wall time and peak
RSS of the child (resource.getrusage(RUSAGE_CHILDREN) in a fresh wrapper process per command),
outputs included. Side by side: a plain Python loop parsing the same stamps
(datetime.fromisoformat, a list of ints), and polars where it is installed (read_csv,
str.to_datetime; a benchmark floor only, not a dependency: `pip install polars`). The truth is
checked: every mapped line's interval
must hold the instant the clock showed its stamp.

    .venv/bin/python benchmarks/timeline_logs.py [--lines 1000000] [--keep DIR] [--formats LIST]
        [--phases] [--writers]
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sim.clock_model import ClockModel, ClockParams  # noqa: E402
from tests.timeline_stream_case import NS, T0, make_run, write_log  # noqa: E402

MS = 1_000_000
MEASURE = ("import resource, subprocess, sys, time\n"
           "t = time.perf_counter()\n"
           "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "dt = time.perf_counter() - t\n"
           "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(r.returncode, dt, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)\n")
POLARS = ("import sys\nimport polars as pl\n"
          "df = pl.read_csv(sys.argv[1], has_header=False, separator='\\x1f', quote_char=None,\n"
          "                 new_columns=['line'])\n"
          "ns = df.select(pl.col('line').str.split(' ').list.get(1)\n"
          "               .str.to_datetime('%Y-%m-%dT%H:%M:%S%.fZ', time_unit='ns')\n"
          "               .dt.epoch('ns'))\n"
          "print(len(ns))\n")
BASELINE = ("import sys\nfrom datetime import datetime\nout = []\n"
            "for line in open(sys.argv[1], encoding='utf-8'):\n"
            "    d = datetime.fromisoformat(line.split(' ', 2)[1].replace('Z', '+00:00'))\n"
            "    out.append(int(d.timestamp()) * 10**9 + d.microsecond * 1000)\n"
            "print(len(out))\n")


def make_log(path: Path, model: ClockModel, n: int) -> np.ndarray:
    """n RFC 5424 lines, their stamps the clock's reading (to the ms) at sorted random instants;
    the instants returned (the truth)."""
    rng = np.random.default_rng(4)
    truth = np.sort(T0 + rng.integers(10 * NS, 590 * NS, n))
    raw = np.array([model.true_ns(int(t)) for t in truth[:: max(1, n // 2000)]])
    # the model's continuous reading, interpolated (smooth: offset + drift, no steps)
    shown = np.interp(truth, truth[:: max(1, n // 2000)], raw).astype(np.int64) // MS * MS
    write_log(path, shown, "inlet {i} over limit")
    return truth


def _has_polars() -> bool:
    import importlib.util
    return importlib.util.find_spec("polars") is not None


def measure(argv: list[str]) -> tuple[int, float, int, float]:
    """(exit status, wall s, peak RSS bytes, CPU s) of a command, in a fresh wrapper process."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), float(out[1]), int(out[2]) * 1024, float(out[3])


def phases(run: Path, log: Path) -> None:
    """CPU seconds of each step of the command, in this process (a fresh one: --phases), and
    its peak RSS so far after each (set up as the command is: Arrow's system allocator, one
    malloc arena)."""
    import time
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

    from bench import safeio
    from bench.logs.logparse import parse_path
    from bench.model.narrow import one_arena
    from bench.model.rundata import load_run
    from bench.model.timeline_build import build
    one_arena()

    def peak() -> str:      # VmHWM: this process image's own (ru_maxrss keeps the forker's)
        with open("/proc/self/status") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
        return f"{kb / 1024:.0f} MiB"
    t = time.process_time()
    parse_path(log, spill=run).stamps.spill(run)
    t_parse, p_parse = time.process_time() - t, peak()
    t = time.process_time()
    tl = build(load_run(run), [f"bmc-1={log}"])
    t_build, p_build = time.process_time() - t, peak()
    from bench.output.timeline_write import write_files, write_html
    part = {n: safeio.new_part(run, n) for n in ("timeline.json", "timeline.csv",
                                                 "timeline.otel.json", "timeline.html")}
    t = time.process_time()
    write_files(tl, part["timeline.json"], part["timeline.csv"])
    t_write, p_write = time.process_time() - t, peak()
    t = time.process_time()
    write_html(tl, part["timeline.html"], T0)
    t_html, p_html = time.process_time() - t, peak()
    t = time.process_time()
    write_files(tl, None, None, part["timeline.otel.json"])
    t_otel = time.process_time() - t
    for p in part.values():
        p.unlink()
    print(f"CPU by phase: parse {t_parse:.1f} s; parse + calibrate + map + order "
          f"{t_build:.1f} s; timeline.json + .csv {t_write:.1f} s; html {t_html:.1f} s; "
          f"(with --formats ...,otel: timeline.otel.json {t_otel:.1f} s more)")
    print(f"peak RSS of this process after each phase: parse {p_parse}; calibrate + map + order "
          f"{p_build}; timeline.json + .csv {p_write}; html {p_html}")


WRITERS = {"one thread, 8,192 rows a chunk": (0, 8192), "one thread, 4,096": (0, 4096),
           "a thread per file, 4,096": (1, 4096)}     # (timeline_files.LAG, .CHUNK)


def _sample_rss(most: list[float], done: Any, page: float) -> None:
    """The most RSS (MiB) seen every 5 ms into most[0] until `done` is set."""
    while not done.wait(0.005):
        with open("/proc/self/statm") as f:
            most[0] = max(most[0], int(f.read().split()[1]) * page)


def writers(run: Path, log: Path, rounds: int = 4) -> None:
    """timeline.json + .csv of one built timeline written under each WRITERS setting in turn,
    `rounds` times: median wall, CPU and the most RSS while writing (sampled every 5 ms)."""
    import statistics
    import threading
    import time
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

    from bench import safeio
    from bench.model.narrow import give_back, one_arena
    from bench.model.rundata import load_run
    from bench.model.timeline_build import build
    from bench.output import timeline_files
    one_arena()
    tl = build(load_run(run), [f"bmc-1={log}"])
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in WRITERS}
    page = os.sysconf("SC_PAGE_SIZE") / 2**20
    for _ in range(rounds):
        for name, (lag, chunk) in WRITERS.items():
            timeline_files.LAG, timeline_files.CHUNK = lag, chunk
            parts = [safeio.new_part(run, n) for n in ("timeline.json", "timeline.csv")]
            most, done = [0.0], threading.Event()
            th = threading.Thread(target=_sample_rss, args=(most, done, page))
            th.start()
            t, c = time.perf_counter(), time.process_time()
            timeline_files.write_files(tl, *parts)
            got[name].append((time.perf_counter() - t, time.process_time() - c, most[0]))
            done.set()
            th.join()
            for p in parts:
                p.unlink()
            give_back()
    for name, xs in got.items():
        w, c, r = (statistics.median(x[i] for x in xs) for i in range(3))
        print(f"writing timeline.json + .csv, {name}: {w:.2f} s wall, {c:.2f} s CPU, "
              f"{r:.0f} MiB at most (medians of {rounds})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="make the files here and keep them")
    ap.add_argument("--phases", action="store_true",
                    help="also the CPU time of each phase, in this process (parse, map and order, "
                         "write)")
    ap.add_argument("--formats", default=None, metavar="LIST",
                    help="the command's --formats (default: its own, json,csv,html); csv is "
                         "needed for the truth check")
    ap.add_argument("--writers", action="store_true",
                    help="also the writing of timeline.json + .csv alone, in one thread or a "
                         "thread per file, by chunk size (a fresh process, four rounds)")
    ap.add_argument("--phases-of", nargs=2, type=Path, metavar=("RUN", "LOG"),
                    help=argparse.SUPPRESS)     # --phases, in a fresh process
    ap.add_argument("--writers-of", nargs=2, type=Path, metavar=("RUN", "LOG"),
                    help=argparse.SUPPRESS)     # --writers, in a fresh process
    a = ap.parse_args(argv)
    if a.phases_of:
        phases(*a.phases_of)
        return 0
    if a.writers_of:
        writers(*a.writers_of)
        return 0
    folder = a.keep or Path(tempfile.mkdtemp(prefix="rackclock-tl-"))
    folder.mkdir(parents=True, exist_ok=True)
    model = ClockModel(ClockParams(offset_s=12.3456, drift_ppm=20, resolution_s=1.0), T0, seed=1)
    run = make_run(folder, model, 1200, (0.2, 0.8), np.random.default_rng(3))
    log = folder / "bmc.log"
    truth = make_log(log, model, a.lines)
    size = log.stat().st_size
    rc, t_tl, rss_tl, cpu_tl = measure([str(ROOT / ".venv/bin/rackclock"), "timeline", str(run),
                                        f"bmc-1={log}", "--rows", "20",
                                        *(("--formats", a.formats) if a.formats else ())])
    rc_b, t_b, rss_b, cpu_b = measure([sys.executable, "-c", BASELINE, str(log)])
    pol = measure([sys.executable, "-c", POLARS, str(log)]) if _has_polars() else None
    outs = {p.name: p.stat().st_size for p in run.glob("timeline*")}
    missed = checked = 0
    with open(run / "timeline.csv", encoding="utf-8") as f:     # the truth, row by row
        for row in csv.DictReader(f):
            if row["log"]:
                k = int(row["label"].split(":", 1)[1].split(" ", 1)[0]) - 1
                checked += 1
                missed += not int(row["lo_ns"]) <= truth[k] <= int(row["hi_ns"])
    print(f"log: {a.lines:,} RFC 5424 lines, {size / 2**20:.1f} MiB; outputs "
          + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(outs.items())))
    print(f"rackclock timeline: {t_tl:.2f} s wall, {cpu_tl:.2f} s CPU, peak RSS "
          f"{rss_tl / 2**20:.0f} MiB (exit {rc})")
    print(f"plain Python loop (datetime.fromisoformat): {t_b:.2f} s wall, {cpu_b:.2f} s CPU, "
          f"peak RSS {rss_b / 2**20:.0f} MiB (exit {rc_b})")
    if pol is not None:
        print(f"polars (read_csv, split, str.to_datetime): {pol[1]:.2f} s wall, {pol[3]:.2f} s "
              f"CPU, peak RSS {pol[2] / 2**20:.0f} MiB (exit {pol[0]}); rackclock timeline / "
              f"polars: {t_tl / pol[1]:.1f}x the wall time, {cpu_tl / pol[3]:.1f}x the CPU")
    else:
        print("polars: not installed (a benchmark floor only: pip install polars)")
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {f.read().split()[0]} ({os.cpu_count()} CPUs)")
    print(f"ratio: {t_tl / t_b:.1f}x the wall time, {cpu_tl / cpu_b:.1f}x the CPU, "
          f"{rss_tl / rss_b:.1f}x the memory; "
          f"lines checked against the truth {checked:,}, intervals missing their instant {missed}")
    if a.phases:        # in a fresh process: its peak RSS is the command's, not this one's
        subprocess.run([sys.executable, __file__, "--phases-of", str(run), str(log)], check=True)
    if a.writers:
        subprocess.run([sys.executable, __file__, "--writers-of", str(run), str(log)], check=True)
    if a.keep is None:
        shutil.rmtree(folder)
    return 0 if rc == 0 and missed == 0 and checked == a.lines else 1


if __name__ == "__main__":
    sys.exit(main())
