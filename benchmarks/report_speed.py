"""How fast `rackclock report` is, beside matplotlib's own time to save the same figures.

    .venv/bin/python benchmarks/report_speed.py RUN          # a run folder (the default run's)
    .venv/bin/python benchmarks/report_speed.py --make       # make a default run first (~1.5 min)

Each repeat reports a fresh copy of RUN (no plots/ from before):
  - `rackclock report COPY` as a user types it (a new process, the figures drawn by its worker
    processes): wall time, and the CPU time of it and its workers;
  - the same report in one process with every `Figure.savefig` timed: the report's own time
    beside matplotlib's time to draw and save those figures, the floor the figure count sets.
Printed: median [min-max] over the repeats, the figure count and the HTML size. Extra options:
`--repeats N`, `--formats png,svg,pdf`, `--details`, `--source DIR` (another checkout's bench/,
e.g. `git archive e26a9e8 | tar -x -C DIR`: the report before issue 30, same venv).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _fresh(run: Path, into: Path) -> Path:
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(run, into, ignore=shutil.ignore_patterns("plots", "report.html",
                                                             "report_*.png", "limits.xml"))
    return into


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


SOURCE = ROOT


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(SOURCE)}


def as_user(run: Path, formats: str, details: bool, one: bool = False) -> dict:
    """`rackclock report` in a new process: wall and CPU seconds, figures, HTML bytes. `one`:
    with --processes 1 (every figure in that process)."""
    cmd = [PY, "-m", "bench.cli", "report", str(run), "--formats", formats]
    cmd += ["--details"] if details else []
    cmd += ["--processes", "1"] if one else []
    c0, t0 = _cpu_children(), time.perf_counter()
    p = subprocess.run(cmd, cwd=SOURCE, capture_output=True, text=True, env=_env())
    wall, cpu = time.perf_counter() - t0, _cpu_children() - c0
    if p.returncode:
        raise SystemExit(f"report failed: {p.stderr[-2000:]}")
    pngs = list((run / "plots").glob("*.png"))
    return {"wall": wall, "cpu": cpu, "figures": len(pngs),
            "files": len(list((run / "plots").iterdir())),
            "html": (run / "report.html").stat().st_size}


def inner(run: Path, formats: str, details: bool) -> dict:
    """The report in this process (one process), with matplotlib's savefig timed."""
    from matplotlib.figure import Figure

    from bench.output.report_html import build_report
    spent = [0.0, 0.0]
    save = Figure.savefig

    def timed(self, *a, **kw):
        t, c = time.perf_counter(), time.process_time()
        try:
            return save(self, *a, **kw)
        finally:
            spent[0] += time.perf_counter() - t
            spent[1] += time.process_time() - c

    Figure.savefig = timed
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        build_report(run, formats=tuple(formats.split(",")), details=details, processes=1)
    except TypeError:                  # a report from before issue 30: all figures, one process
        build_report(run, formats=tuple(formats.split(",")))
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
            "savefig": spent[0], "savefig_cpu": spent[1]}


def _serial(run: Path, formats: str, details: bool) -> dict:
    cmd = [PY, str(Path(__file__).resolve()), "--inner", str(run), "--formats", formats,
           "--source", str(SOURCE)]
    cmd += ["--details"] if details else []
    p = subprocess.run(cmd, cwd=SOURCE, capture_output=True, text=True, env=_env())
    if p.returncode:
        raise SystemExit(f"inner report failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def make_run(out: Path) -> Path:
    p = subprocess.run([PY, "-m", "bench.cli", "run", "--quiet", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    folders = sorted(out.glob("*-clock_offset"))
    if not folders:
        raise SystemExit(f"the default run made no folder: {p.stderr[-2000:]}")
    return folders[-1]


def _med(xs) -> str:
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", nargs="?", type=Path, help="a run folder (not changed)")
    ap.add_argument("--make", action="store_true", help="make a default run first")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--formats", default="png")
    ap.add_argument("--details", action="store_true")
    ap.add_argument("--source", type=Path, default=ROOT, help="checkout whose bench/ reports")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    global SOURCE
    SOURCE = a.source.resolve()
    if a.inner:
        sys.path.insert(0, str(SOURCE))
        print(json.dumps(inner(a.run, a.formats, a.details)))
        return 0
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="report-speed-") as tmp:
        tmp = Path(tmp)
        run = make_run(tmp / "runs") if a.make else a.run
        if run is None:
            ap.error("give a run folder or --make")
        users, ones, serial = [], [], []
        old = a.source.resolve() != ROOT     # a report from before issue 30 has no --processes
        for _ in range(a.repeats):
            users.append(as_user(_fresh(run, tmp / "copy"), a.formats, a.details))
            if not old:
                ones.append(as_user(_fresh(run, tmp / "copy"), a.formats, a.details, one=True))
            serial.append(_serial(_fresh(run, tmp / "copy"), a.formats, a.details))
    u, s = users[-1], serial
    print(f"bench/ from {SOURCE}; load average {load0:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"run {run.name}: {u['figures']} figures, {u['files']} files "
          f"(formats {a.formats}{', details' if a.details else ''}), "
          f"HTML {u['html'] / 1e6:.2f} MB; {a.repeats} repeats, median [min-max] s")
    print(f"  rackclock report (new process, workers)  wall {_med([x['wall'] for x in users])}"
          f"  cpu {_med([x['cpu'] for x in users])}")
    if ones:
        print(f"  rackclock report --processes 1           wall {_med([x['wall'] for x in ones])}"
              f"  cpu {_med([x['cpu'] for x in ones])}")
    print(f"  the same in one process, after imports   wall {_med([x['wall'] for x in s])}"
          f"  cpu {_med([x['cpu'] for x in s])}")
    print(f"  matplotlib's savefig of those figures    wall {_med([x['savefig'] for x in s])}"
          f"  cpu {_med([x['savefig_cpu'] for x in s])}")
    print(f"  one-process report / savefig: wall {_med([x['wall'] / x['savefig'] for x in s])}x,"
          f" cpu {_med([x['cpu'] / x['savefig_cpu'] for x in s])}x;  rackclock report / savefig:"
          f" wall {_med([x['wall'] / y['savefig'] for x, y in zip(users, s)])}x, cpu "
          f"{_med([x['cpu'] / y['savefig_cpu'] for x, y in zip(users, s)])}x")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
