"""experiments/collective_clock.py: the clock-read counter counts a known number of reads; a
worker's wall clock is offset as its arm asks while its monotonic clock is not; one short run of
the experiment through `rackclock run` (two workers, two arms, one repeat: UNDECIDED, exit 3).

Each part skips with its reason where what it needs is absent (a C compiler; libfaketime, Debian
`libfaketime`; torch, `rackclock[training]`); .ci/run installs all three, so none skips in CI."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from experiments import collective_clock as cc

ROOT = Path(__file__).resolve().parent.parent
need_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
need_faketime = pytest.mark.skipif(cc.libfaketime() is None,
                                   reason="libfaketime not installed (apt-get install libfaketime)")
need_torch = pytest.mark.skipif(find_spec("torch") is None,
                                reason="torch not installed (pip install 'rackclock[training]')")

COUNTED = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
int main(void) {
    void (*get)(long long *) = (void (*)(long long *))dlsym(RTLD_DEFAULT, "clockcount_read");
    long long a[4], b[4];
    struct timespec ts;
    struct timeval tv;
    if (!get) { puts("no counter"); return 1; }
    get(a);
    for (int i = 0; i < 7; i++) clock_gettime(CLOCK_REALTIME, &ts);
    for (int i = 0; i < 3; i++) gettimeofday(&tv, 0);
    for (int i = 0; i < 2; i++) time(0);
    for (int i = 0; i < 5; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);      /* neither wall nor monotonic */
    get(b);
    printf("%lld %lld %lld %lld\n", b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3] - a[3]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    return cc.build_shim(tmp_path_factory.mktemp("shim"))


@need_cc
def test_the_counter_counts_a_known_number_of_reads(shim, tmp_path):
    (tmp_path / "reads.c").write_text(COUNTED)
    subprocess.run(["cc", "-O0", "-o", str(tmp_path / "reads"), str(tmp_path / "reads.c"), "-ldl"],
                   check=True)
    counted = subprocess.run([str(tmp_path / "reads")], env={**os.environ, "LD_PRELOAD": str(shim)},
                             capture_output=True, text=True, check=True)
    assert counted.stdout.split() == ["7", "3", "2", "5"]
    bare = subprocess.run([str(tmp_path / "reads")], capture_output=True, text=True)
    assert bare.returncode == 1 and "no counter" in bare.stdout     # the counts are the shim's


PROBE = ("import json, time; m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC); "
         "w = time.clock_gettime_ns(time.CLOCK_REALTIME); time.sleep(0.01); "
         "m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC); "
         "print(json.dumps({'mono0': m0, 'wall': w, 'mono1': m1}))")


def probe(env: dict[str, str]) -> tuple[int, dict]:
    """The child's clocks, bracketed by this process's monotonic clock, and the host's offset."""
    host = cc.host_offset_ns()
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True)
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    got = json.loads(out.stdout)
    assert before <= got["mono0"] <= got["mono1"] <= after     # monotonic: the host's, unmoved
    return host, got


@need_cc
@need_faketime
@pytest.mark.parametrize("arm,rank,offset_s", [("disagree_1s", 0, 1.0), ("disagree_1s", 1, -1.0),
                                                ("disagree_ms", 1, -0.005), ("control", 0, 0.0)])
def test_the_perturbation_reaches_the_wall_clock_only(shim, tmp_path, arm, rank, offset_s):
    host, got = probe(cc.worker_env(arm, rank, shim, cc.libfaketime(), tmp_path))
    applied = got["wall"] - got["mono0"] - host
    # the host's wall clock may be slewed by a few ppm over the child's life: 1 ms is thousands
    # of times that, and 5x below the smallest offset asked
    assert abs(applied - offset_s * 1e9) < 1e6, applied


def test_the_arms_are_interleaved():
    order = cc.schedule(["control", "a", "b"], 3)
    assert [a for _, a in order] == ["control", "a", "b", "a", "b", "control",
                                     "b", "control", "a"]


def test_a_bad_arm_is_refused_in_one_line_before_any_folder(tmp_path):
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "collective_clock", "--out",
                        str(tmp_path / "runs"), "--param", "arms=control,nosuch"],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "collective_clock refused" in p.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow    # two runs of two torch workers: 15-80 s beside other suites (load 7-12)
@need_cc
@need_faketime
@need_torch
def test_a_short_run_measures_both_arms_and_is_undecided(tmp_path):
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "collective_clock", "--out",
                        str(tmp_path / "runs"), "--param", "arms=control,disagree_1s",
                        "--param", "repeats=1", "--param", "steps=60", "--param", "warmup=5"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 3, p.stdout + p.stderr          # one repeat decides nothing
    assert "UNDECIDED: step time changed by [" in p.stdout and "under a ±1 s rank offset" in p.stdout
    folder = Path(p.stdout.strip().splitlines()[-1].split("run folder: ")[1])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["rackless"] is True and manifest["status"] == "completed"
    assert manifest["decided"] is False
    data = json.loads((folder / "collective_clock.json").read_text())
    arms = {r["arm"]: r for r in data["result"]["arms"]}
    assert set(arms) == {"control", "disagree_1s"} and arms["control"]["steps"] == 60
    # the workers' own clocks: each rank of the arm 1 s off, the opposite way
    offsets = [k["offset_first_ns"] for k in arms["disagree_1s"]["ranks"]]
    assert [round(o / 1e9) for o in offsets] == [1, -1]
    assert [round(k["offset_first_ns"] / 1e9) for k in arms["control"]["ranks"]] == [0, 0]
    assert (folder / "plots" / "step_times.png").stat().st_size > 0


def test_ci_installs_the_pinned_torch_and_libfaketime():
    """.ci/run installs the `training` extra's torch (the same pin: a CPU build, never an
    unpinned CUDA one) and libfaketime, and fails where either is missing afterwards."""
    import tomllib
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["training"]
    assert extra == ["torch==2.13.0"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"'{extra[0]}'" in ci and "import torch" in ci
    assert "libfaketime" in ci.split("PACKAGES=(", 1)[1].split(")", 1)[0]
    assert "faketime/libfaketime.so.1" in ci


def test_a_failing_rank_stops_the_others():
    """A rank that exits non-zero ends the others at once (they would wait for it until the
    process group's timeout): the sleeper is killed, not waited for."""
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for code in ("import time; time.sleep(600)", "import sys; sys.exit('rank down')")]
    outs = cc.wait_all(procs, time.monotonic() + 600, "control")
    assert outs[0][0] < 0 and outs[1][0] == 1 and "rank down" in outs[1][2]
