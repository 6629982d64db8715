"""bench/run/after.py's worker pool: results in order, and a worker that dies costs nothing but
time (this process does what is left, with the same results). Real spawned processes."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from bench.run.after import AfterPool


def double_unless_in_a_worker(x: int) -> int:
    """Ends the worker process that runs it; in the parent it doubles."""
    if multiprocessing.parent_process() is not None and x == 3:
        os._exit(1)
    return 2 * x


def test_a_dead_worker_leaves_the_rest_to_this_process():
    pool = AfterPool(1)
    try:
        assert list(pool.map(double_unless_in_a_worker, [(k,) for k in range(6)])) == \
            [0, 2, 4, 6, 8, 10]
        # the pool is gone after the loss: everything from now on is done here, the same
        assert list(pool.map(double_unless_in_a_worker, [(5,), (1,)])) == [10, 2]
        assert pool.figures(".", ["x"]) is None
    finally:
        pool.close()


def test_the_workers_summary_and_figures_are_the_one_process_ones(tmp_path):
    """The recorded run folder (six devices, a step, a reboot, a wrap) summarised and drawn by
    two workers: the same records in the same order, and the same figure files byte for byte,
    as one process makes them."""
    import shutil

    from bench import saferead
    from bench.model.rundata import load_run
    from bench.model.summary import summarize_run
    from bench.output.plots import offset_plots

    src = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"
    path = tmp_path / src.name
    shutil.copytree(src, path)
    man = saferead.load_object(path / "manifest.json")
    truth = saferead.load_object(path / "truth.json")
    one = summarize_run(path, man, truth)
    pool = AfterPool(2)
    try:
        two = summarize_run(path, man, truth, map_devices=pool.map)
        assert list(two["devices"]) == list(one["devices"]) and two == one
        run = load_run(path)
        drawn = pool.figures(path, run.summary.devices)
        assert drawn is not None
        files = drawn.result()
    finally:
        pool.close()
    assert files and all(p.parent == path / "plots" for p in files)
    again = offset_plots(run, out_dir=tmp_path / "one")
    assert [p.name for p in again] == [p.name for p in files]
    assert all(p.read_bytes() == (tmp_path / "one" / p.name).read_bytes() for p in files)


def test_a_killed_run_leaves_no_worker_behind(tmp_path):
    """SIGKILL of the process that started the workers (no cleanup runs): they end too."""
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parent.parent
    code = ("import os, sys, time\n"
            "from bench.run.after import AfterPool\n"
            "pool = AfterPool(2)\n"
            "list(pool.map(os.getpid, [(), ()]))\n"
            "print(' '.join(str(p.pid) for p in pool._ex._processes.values()), flush=True)\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2 and all(Path(f"/proc/{p}").exists() for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    """A process that exists and is no zombie (an ended child of pytest's is reaped by init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_workers_warning_reaches_the_runs_log(tmp_path):
    """A bench logger's warning in a spawned worker lands in the run's bench.log (and the
    parent's handlers), not only on the worker's stderr."""
    import logging

    from bench.model.runlog import RunLog

    run_log = RunLog(tmp_path / "bench.log")
    pool = AfterPool(1)
    try:
        warn = logging.getLogger("bench.model.summary").warning
        assert list(pool.map(warn, [("clock %s: seen in worker %s", "bmc-1.redfish", "w")])) \
            == [None]
    finally:
        pool.close()
        run_log.close()
    text = (tmp_path / "bench.log").read_text()
    assert "bench.model.summary WARNING clock bmc-1.redfish: seen in worker w" in text, text
