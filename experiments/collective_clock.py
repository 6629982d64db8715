"""Collective clock: does a worse wall clock slow a data-parallel training step? (rack-less)

Runs a small data-parallel training loop (a few-layer MLP on synthetic data, fixed seeds) across
`workers` processes on this host, gradients all-reduced through torch.distributed (gloo on CPU;
NCCL where CUDA GPUs are, the same code: backend=auto). Each worker's wall clock only
(CLOCK_REALTIME; never the monotonic clock, never the host's clock) is perturbed per arm by
libfaketime: every rank 1 s ahead, ranks ±5 ms or ±1 s apart, a 1 s step mid-run, ranks drifting
±500 ppm, libfaketime at +0 (its own cost); the control is unperturbed (no libfaketime at all).
Arms are interleaved: every repeat runs each arm once, in an order rotated per repeat, so the
machine's drift cancels in the paired ratio arm/baseline of the same repeat (the baseline: the
control, or faketime_zero to leave libfaketime's own cost out).

Per arm: step time (median, p99, the distribution), all-reduce time and throughput, each change
against the baseline as a distribution-free interval of the paired ratios (the sign test's
order statistics; five repeats give [min, max] at 93.75 %), and the wall-clock reads the process
made inside the all-reduce per step (a preloaded counter of clock_gettime(CLOCK_REALTIME),
gettimeofday and time; experiments/_clockcount.c), beside its monotonic reads. The verdict:
"step time changed by [lo, hi] %" where the interval excludes 0; "unchanged" with the smallest
change the runs could have shown where it contains 0 within ±within_pct; else UNDECIDED
(exit status 3). Needs torch (`pip install 'rackclock[training]'`), libfaketime (Debian
`libfaketime`) and a C compiler; refuses in one line without them. docs/EXPERIMENTS.md says what
it shows and what it cannot.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import safeio

RACKLESS = True          # bench/run/rackless.py: measures this host, no rack
HERE = Path(__file__).resolve().parent
SHIM_SOURCE = HERE / "_clockcount.c"
FAKETIME_PLACES = ("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
                   "/usr/lib/faketime", "/usr/local/lib/faketime", "/usr/lib64/faketime")
COLUMNS = ("step_ns", "allreduce_ns", "rt_clock_gettime", "gettimeofday", "time", "monotonic",
           "offset_ns")

# arm -> (what it does, the libfaketime spec of rank r (None: not preloaded), a mid-run step)
ARMS: dict[str, tuple[str, Any, bool]] = {
    "control": ("unperturbed (no libfaketime)", lambda r: None, False),
    "offset_1s": ("every rank's wall clock +1 s", lambda r: "+1", False),
    "disagree_ms": ("ranks ±5 ms apart (even +5 ms, odd -5 ms)",
                    lambda r: "+0.005" if r % 2 == 0 else "-0.005", False),
    "disagree_1s": ("ranks ±1 s apart (even +1 s, odd -1 s)",
                    lambda r: "+1" if r % 2 == 0 else "-1", False),
    "step_1s": ("every rank's wall clock steps +1 s mid-run", lambda r: "+0", True),
    "faketime_zero": ("libfaketime preloaded at +0 (its own cost, no perturbation)",
                      lambda r: "+0", False),
    "drift_500ppm": ("ranks drift ±500 ppm (even fast, odd slow)",
                     lambda r: "+0 x1.0005" if r % 2 == 0 else "+0 x0.9995", False),
}
HEADLINE = "disagree_1s"          # the verdict's arm: "under a ±1 s rank offset"


@dataclass(frozen=True)
class Params:
    workers: int = 2            # ranks (processes) on this host
    repeats: int = 5            # each arm once per repeat, interleaved; 5: [min, max] at 93.75 %
    steps: int = 400            # measured steps per run (after the warm-up)
    warmup: int = 50
    arms: str = "control,disagree_ms,disagree_1s,step_1s,drift_500ppm"   # of ARMS; control first
    width: int = 256            # the MLP's hidden width
    layers: int = 3
    batch: int = 64             # samples per rank per step
    seed: int = 1
    backend: str = "auto"       # gloo, nccl, or auto: nccl where torch sees CUDA GPUs, else gloo
    baseline: str = "control"   # changes against this arm; faketime_zero: libfaketime's cost left out
    within_pct: float = 10.0    # "unchanged" only when both ends lie within ±this
    confidence: float = 0.9     # UNDECIDED below this coverage (too few repeats)
    timeout_s: float = 300.0    # one run's workers must finish within this


def libfaketime() -> Path | None:
    for folder in FAKETIME_PLACES:
        p = Path(folder) / "libfaketime.so.1"
        if p.is_file():
            return p
    return None


def arm_names(params: Params) -> list[str]:
    return [a.strip() for a in params.arms.split(",") if a.strip()]


def refusal(params: Params) -> str | None:
    """What this host lacks for the experiment, in one line (None: nothing)."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install 'rackclock[training]')"
    if libfaketime() is None:
        return "libfaketime is not installed (apt-get install libfaketime)"
    if shutil.which("cc") is None:
        return "no C compiler (cc) to build the clock-read counter"
    arms = arm_names(params)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        return f"unknown arm {unknown[0]!r} (arms: {', '.join(ARMS)})"
    if not arms or arms[0] != "control":
        return "the arms must start with control (every change is against it)"
    if params.baseline not in arms:
        return f"the baseline {params.baseline!r} is not among the arms"
    if params.workers < 2 or params.repeats < 1 or params.steps < 1:
        return "needs workers >= 2, repeats >= 1 and steps >= 1"
    if params.backend not in ("auto", "gloo", "nccl"):
        return f"backend {params.backend!r}: gloo, nccl or auto"
    if params.backend == "nccl" and backend_for(Params(backend="auto")) != "nccl":
        return "backend nccl: torch sees no CUDA GPU here (backend=gloo or auto)"
    return None


def build_shim(folder: Path) -> Path:
    """experiments/_clockcount.c compiled with the system's cc into `folder`."""
    out = folder / "clockcount.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(out), str(SHIM_SOURCE), "-ldl"],
                   check=True, capture_output=True, text=True)
    return out


def backend_for(params: Params) -> str:
    if params.backend != "auto":
        return params.backend
    import torch
    return "nccl" if torch.cuda.is_available() else "gloo"


def worker_env(arm: str, rank: int, shim: Path, faketime: Path, tmp: Path) -> dict[str, str]:
    """The environment of one rank under `arm`: the counter preloaded, libfaketime after it with
    this rank's spec (the monotonic clock left alone), or not at all for the control."""
    env = dict(os.environ, CLOCKCOUNT_LIB=str(shim), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    spec = ARMS[arm][1](rank)
    if spec is None:
        env["LD_PRELOAD"] = str(shim)
        return env
    env.update(LD_PRELOAD=f"{shim}:{faketime}", FAKETIME_DONT_FAKE_MONOTONIC="1",
               FAKETIME_DISABLE_SHM="1")
    if ARMS[arm][2]:          # the step: a spec file rewritten mid-run, re-read each second
        f = tmp / f"faketime-rank{rank}"
        safeio.write_text(f, spec + "\n")     # libfaketime's input in a private temporary folder
        env.update(FAKETIME_TIMESTAMP_FILE=str(f), FAKETIME_CACHE_DURATION="0")
    else:
        env["FAKETIME"] = spec
    return env


def host_offset_ns() -> int:
    """The host's CLOCK_REALTIME minus CLOCK_MONOTONIC (a worker's minus this: its offset)."""
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return time.clock_gettime_ns(time.CLOCK_REALTIME) - mono


def _spec(params: Params, arm: str, rank: int, port: int, backend: str, tmp: Path) -> dict:
    return {"rank": rank, "world": params.workers, "port": port, "steps": params.steps,
            "warmup": params.warmup, "seed": params.seed, "width": params.width,
            "layers": params.layers, "batch": params.batch, "backend": backend,
            "step_file": str(tmp / f"faketime-rank{rank}") if ARMS[arm][2] else "",
            "step_at": 0, "step_to": "+1"}


def run_once(params: Params, arm: str, shim: Path, faketime: Path, backend: str) -> list[dict]:
    """One run of `arm`: every rank's result (bench's worker JSON), or RuntimeError with the
    first failing rank's last lines."""
    from bench.ports import free_port
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="collective_clock-") as t:
        tmp = Path(t)
        procs = [subprocess.Popen(
            [sys.executable, "-m", "experiments._collective_worker",
             json.dumps(_spec(params, arm, r, port, backend, tmp))],
            env=worker_env(arm, r, shim, faketime, tmp), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=str(HERE.parent))
            for r in range(params.workers)]
        outs = wait_all(procs, time.monotonic() + params.timeout_s, arm)
    failed = [(rank, rc, err) for rank, (rc, out, err) in enumerate(outs)
              if rc != 0 or not out.strip()]
    if failed:       # a rank that failed by itself before one stopped for it
        rank, rc, err = min(failed, key=lambda f: f[1] < 0)
        tail = " | ".join(err.strip().splitlines()[-3:])
        raise RuntimeError(f"arm {arm}: rank {rank} exited {rc}: {tail}")
    return [json.loads(out.strip().splitlines()[-1]) for _, out, _ in outs]


def wait_all(procs: list[subprocess.Popen], deadline: float,
             arm: str) -> list[tuple[int, str, str]]:
    """Every worker's (exit status, stdout, stderr), each drained by a thread; a rank that fails
    ends the others at once (they would wait for it until the group's timeout), and so does the
    deadline (RuntimeError)."""
    outs: list[tuple[int, str, str]] = [(-1, "", "")] * len(procs)

    def drain(i: int) -> None:
        out, err = procs[i].communicate()
        outs[i] = (procs[i].returncode, out, err)
    threads = [threading.Thread(target=drain, args=(i,), daemon=True) for i in range(len(procs))]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            if time.monotonic() > deadline:
                raise RuntimeError(f"arm {arm}: the workers did not finish in time (timeout_s)")
            if any(p.poll() not in (None, 0) for p in procs):
                break                         # one failed: the others are stopped below
            threads[0].join(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for t in threads:
            t.join()
    return outs


def schedule(arms: list[str], repeats: int) -> list[tuple[int, str]]:
    """(repeat, arm) in running order: every arm once per repeat, the order rotated by one each
    repeat (no arm always first, none always after the same one)."""
    return [(r, arms[(i + r) % len(arms)]) for r in range(repeats) for i in range(len(arms))]


def _median(xs: list[float]) -> float:
    from bench.analysis.step_change import quantile
    return quantile(xs, 0.5)


def _stepped_at(off: list[int], start: dict[str, int], host_off_ns: int) -> int | None:
    """The measured step at which the wall clock jumped by more than 0.1 s: -1 when it had
    jumped already in the warm-up (against the clocks read before it), None when it never did."""
    if abs(off[0] - (start["wall_ns"] - start["mono_ns"] - host_off_ns)) > 100_000_000:
        return -1
    return next((i for i in range(1, len(off)) if abs(off[i] - off[i - 1]) > 100_000_000), None)


def run_figures(results: list[dict], host_off_ns: int, batch: int) -> dict[str, Any]:
    """One run's figures: per step the slowest rank's step and all-reduce (a step ends when the
    last rank's does), reads per all-reduce averaged over ranks, each rank's applied offset."""
    from bench.analysis.step_change import quantile
    rows = [r["rows"] for r in results]
    n, world = min(len(x) for x in rows), len(results)
    step = [max(x[i][0] for x in rows) for i in range(n)]
    reduce_ = [max(x[i][1] for x in rows) for i in range(n)]
    wall = sum(sum(row[2] + row[3] + row[4] for row in x[:n]) for x in rows) / (n * world)
    mono = sum(sum(row[5] for row in x[:n]) for x in rows) / (n * world)
    ranks = []
    for r in results:
        off = [row[6] - host_off_ns for row in r["rows"][:n]]
        c0, c1 = r["clocks"][0], r["clocks"][-1]
        span = c1["mono_ns"] - c0["mono_ns"]
        drift = ((c1["wall_ns"] - c1["mono_ns"]) - (c0["wall_ns"] - c0["mono_ns"])) / span * 1e6
        ranks.append({"rank": r["rank"], "offset_first_ns": off[0], "offset_last_ns": off[-1],
                      "rate_ppm": round(drift, 1), "stepped_at": _stepped_at(off, c0, host_off_ns)})
    return {"step_ns": step, "median_ns": _median([float(s) for s in step]),
            "p99_ns": quantile([float(s) for s in step], 0.99),
            "allreduce_ns": _median([float(a) for a in reduce_]),
            "throughput": world * batch * n / (sum(step) / 1e9),
            "wall_reads": wall, "mono_reads": mono, "ranks": ranks,
            "backend": results[0]["backend"], "torch": results[0]["torch"]}


def measure(bench, params: Params) -> dict[str, list[dict]]:
    """Every (repeat, arm) run in the interleaved order: arm -> its runs' figures by repeat."""
    faketime = libfaketime()
    assert faketime is not None
    backend = backend_for(params)
    arms = arm_names(params)
    by_arm: dict[str, list[dict]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory(prefix="clockcount-") as t:
        shim = build_shim(Path(t))
        order = schedule(arms, params.repeats)
        for i, (rep, arm) in enumerate(order):
            host_off = host_offset_ns()
            t0 = time.monotonic()
            fig = run_figures(run_once(params, arm, shim, faketime, backend), host_off,
                              params.batch)
            by_arm[arm].append({"repeat": rep, **fig})
            bench.say(f"  [{i + 1}/{len(order)}] repeat {rep + 1} {arm:<13} step median "
                      f"{fig['median_ns'] / 1e3:8.1f} µs  wall reads/all-reduce "
                      f"{fig['wall_reads']:.2f}  ({time.monotonic() - t0:.1f} s)")
    for runs in by_arm.values():
        runs.sort(key=lambda x: x["repeat"])
    return by_arm


def run(bench, params: Params) -> dict:
    from experiments._collective_report import analyse, write_report
    bench.say(f"collective_clock: {params.workers} workers, arms {params.arms}, "
              f"{params.repeats} repeats interleaved, {params.steps} steps each")
    by_arm = measure(bench, params)
    result = analyse(by_arm, params, {a: ARMS[a][0] for a in by_arm}, HEADLINE)
    lines = write_report(bench.store, by_arm, result, params)
    for line in lines:
        bench.say(line)
    bench.decided = result["verdict"]["word"] != "UNDECIDED"
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
