"""Benchmarks that cannot rot (issue 46 item 7): every script under benchmarks/ runs here as a real
subprocess at its smallest size (seconds), exits 0 and prints its figure line, which is parsed
(a number, not just "no crash"). A new benchmarks/*.py (or benchmarks/fuzz/*.py) without an entry
in SMOKES, or in HELPERS with the reason it is not a script, fails
test_every_benchmark_has_a_smoke_run.

The smoke runs measure nothing: the figures are not compared against anything but their shape,
and the timeout is a hang guard, not a margin (benchmarks/README.md holds the measured figures and
says how each benchmark is smoke-tested). Each run gets its own TMPDIR under pytest's tmp_path,
so the folders benchmarks leave behind go with it."""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
RECORDED = "tests/data/recorded/20261201T161000Z-clock_offset"
HANG_S = 600          # a hang guard: a smoke run takes seconds
N = r"([-+]?\d+(?:\.\d+)?)"     # one figure


@dataclass(frozen=True)
class Smoke:
    """`script` (under benchmarks/) run with `args`; `figure`: a regex (multiline) with one or
    more groups, each a number, that stdout must match; `setup_only`: why the run cannot reach
    the benchmark's own figures in seconds (its set-up path and output are smoked)."""
    script: str
    args: tuple[str, ...]
    figure: str
    setup_only: str = ""
    own_tmp: bool = True     # False: Ray's sockets want the short default TMPDIR
    variant: str = ""        # a second run of one script: its distinguishing flag
    needs: str = ""          # a system tool (skipped with the reason where it is missing)

    @property
    def id(self) -> str:
        return f"{self.script} {self.variant}" if self.variant else self.script


SMOKES = [
    Smoke("adversarial.py", ("--devices-per-case", "1"),
          rf"^\| ntpd_slew \| (\d+) \| {N} \| {N} \|"),
    Smoke("after_run.py", ("--duration", "3", "--repeats", "1"),
          rf"^after probing: closing printed {N} s, exit {N} s \(median of 1\)$"),
    Smoke("burst_runs.py", ("--duration", "2", "--pairs", "1", "--devices", "bmc-1,pdu-2"),
          rf"^pdu-2/sysuptime\s+{N} \(1 repeat\)\s+{N} \(1 repeat\)$"),
    Smoke("cli_help.py", ("--repeats", "1"), rf"^\| `rackclock --help` \| {N} \| {N} \| {N} \|$"),
    Smoke("corruption_matrix.py", ("--commands", "limits", "--faults", "truncated"),
          rf"^limits\s+{N}\s+{N}\s+{N}\s+7\s+(\d+)\s+(\d+)\s+0\s"),
    Smoke("estimator_mc.py", ("--devices", "20", "--workers", "1"),
          rf"^median_off_width_over_min_bracket: {N}$"),
    Smoke("false_alarms.py", ("--pairs", "1", "--duration", "3", "--devices", "bmc-1,pdu-2"),
          r"^REGRESSED pairs: (\d+) of 1 \(3 s runs, regression\)$"),
    Smoke("fleet.py", ("--duration", "2", "--repeats", "1", "--racks", "1"),
          rf"^  ratio fleet / one rack: {N} end to end, {N} without Ray's start", own_tmp=False),
    Smoke("fleet_vs_xargs.py", ("--racks", "1", "--duration", "2", "--repeats", "1"),
          rf"^  ratio fleet / xargs: wall {N}, peak memory {N}$", own_tmp=False),
    Smoke("fuzz_logs.py", ("--examples", "2", "--seed", "1"),
          r"^(\d+) examples in \d+ s; 0 properties failed$"),
    Smoke("hostile_devices.py", ("--duration", "3", "--only", "clean"),
          rf"^clean\s+(\d+)\s+{N} (?:ns|µs|ms|s)\s"),
    Smoke("idle_burst.py", ("--pairs", "2", "--idle", "0.01", "--repeats", "1"),
          rf"^bmc-1\s+after idle (\d+) \(1 repeat\) µs, right after (\d+) \(1 repeat\) µs, "
          rf"ratio {N}"),
    Smoke("modbus_bracket.py", ("--reads", "5", "--warmup", "1", "--blocks", "1", "--repeats", "1"),
          rf"^tcp\s+driver\s+(\d+) \(1 repeat\)\s+× driver {N}"),
    Smoke("probe_mc.py", ("--devices", "2"), rf"^edge_width_ms_after_30_median: {N}$"),
    Smoke("rack_width.py", ("--folders", RECORDED),
          rf"^ratio to baseline: no claim {N}, as run {N}$"),
    Smoke("read_cost.py", ("--plane", "bmc", "--devices", "1", "--seconds", "2"),
          rf"^bmc: 1 devices, (\d+) reads .*CPU per read bench {N} ms, simulator {N} ms"),
    Smoke("redfish_bracket.py", ("--reads", "5", "--warmup", "1", "--blocks", "1"),
          r"^aio\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+5/5$"),
    Smoke("redfish_events.py", ("--duration", "7", "--every", "1"),   # first event at 5 s
          rf"^ratio of the 'seen by the bench after' widths, polling / subscription \(push\): {N}x$"),
    Smoke("report_speed.py", (RECORDED, "--repeats", "1"),
          rf"^  rackclock report \(new process, workers\)\s+wall {N} .*\n(?:.*\n)*"
          rf"^  matplotlib's savefig of those figures\s+wall {N} "),
    Smoke("run_all.py", ("--devices", "20", "--workers", "1", "--points", "1000,2000",
                         "--probe-devices", "2"),
          rf"^  median_offset_width_over_min_bracket: {N}$(?:.*\n)*^  mtie: .*'ours_s': '{N} "),
    Smoke("scale.py", ("--sizes", "8", "--duration", "3"),
          rf"^\| bmc \| 4 \| {N} / {N} \(2\) \|"),
    Smoke("segment_speed.py", ("--reads", "2000", "--every", "100"),
          r"^offset_width_clean_ns: (\d+)$"),
    Smoke("snmp_engine_cost.py", ("--devices", "2", "--duration", "0.5", "--repeats", "1"),
          r"^  shared engine: (\d+) reads, bracket p50 / p90 (\d+) / (\d+) µs"),
    Smoke("snmp_pdu_bracket.py", ("--reads", "5"),
          r"^pdu-v2c\s+sysuptime\s+(\d+) /\s+(\d+)\s+(\d+) /\s+(\d+)$"),
    Smoke("snmp_pdu_bracket.py", ("--snmpd", "--reads", "5"),
          r"^snmpd\s+sysuptime\s+(\d+) /\s+(\d+)\s+(\d+) /\s+(\d+)$", variant="--snmpd",
          needs="snmpd"),
    Smoke("snmp_read_cost.py", ("--devices", "1", "--duration", "1", "--repeats", "1",
                                "--runs", "driver"),
          rf"^\| driver \| after \(this tree\) \| {N} \| {N} \| {N} \|"),
    Smoke("snmpd_hrsystemdate.py", ("--runs", "1", "--duration", "3"),
          rf"^  lag 10\.0 ms: \S+\s+width\s+{N} ms", needs="snmpd"),
    Smoke("snmpd_hrsystemdate.py", ("--virtual", "--seeds", "2"),
          rf"^aimed with the declared 100 ms tick: width median {N} ms", variant="--virtual"),
    Smoke("stability_speed.py", ("--points", "1000,2000", "--repeats", "1"),
          rf"^mtie \{{'points': 2000, .*'ours_s': '{N} .*'ratio': '{N} "),
    Smoke("step_detection.py", ("--seeds", "1"), rf"^\| \+100 ms \| 1/1 \| {N} \|"),
    Smoke("unseen_calibration.py", ("--trials", "2", "--ticks", "0.01", "--rates", "2",
                                    "--durations", "3", "--workers", "1"),
          rf"^\| 0\.01 s \| 2 \| 3 \| [^|]+ \| {N} \|"),
    Smoke("step_detection_e2e.py", ("--runs", "1", "--devices", "1", "--duration", "3"),
          r"^1 runs of (\d+) BMCs, (\d+) s each(?:.*\n)*^\| \+10 ms \| (\d+)/(\d+) \|",
          setup_only="the first step fires ~18 s into a run and is scored 15 s after it "
                     "(a run of >= 35 s): the run, the rack of stepped BMCs and the table"),
    Smoke("timeline_logs.py", ("--lines", "1000"),
          rf"^rackclock timeline: {N} s wall, {N} s CPU(?:.*\n)*"
          r"^ratio: .*lines checked against the truth 1,000, intervals missing their instant 0$"),
    Smoke("timeline_scale.py", ("--lines", "2000", "--devices", "2", "--slice", "200"),
          rf"^map: {N} s; order: {N} s; .*intervals missing their instant: 0;"),
    Smoke("trend_speed.py", (RECORDED, "--runs", "3", "--repeats", "1"),
          rf"^  rackclock trend \(3 runs\)\s+wall\s+{N} s .*CPU\s+{N} s(?:.*\n)*"
          rf"^  rackclock compare \(2 runs\)\s+wall\s+{N} s"),
    Smoke("until_decided.py", ("--devices", "pdu-2", "--clocks", "pdu-2.sysuptime",
                               "--decided-ppm", "1500", "--max-duration", "30", "--predict", "3"),
          rf"^probing ran {N} s \(all decided; ceiling 30 s\): (\d+) of 1 decided$"),
    Smoke("watch_cpu_split.py", ("--minutes", "0.06", "--every-s", "2"),
          rf"^\s+\d+\s+1\s+{N}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s"),
    Smoke("watch_idle_conns.py", ("--conns", "10", "--before-s", "1", "--flood-s", "1",
                                  "--settle-s", "1"),
          rf'^ "flood": {{\n  "scrapes": (\d+),\n  "failed": (\d+),\n  "median_ms": {N},'),
    Smoke("watch_map_speed.py", ("--n", "100", "--repeat", "1", "--duration", "4"),
          rf"^live fit: 100 stamps parsed and mapped: median {N} ms(?:.*\n)*"
          rf"^POST /v1/map of 100 stamps, round trip .*: median {N} ms"),
    Smoke("watch_restart_soak.py", ("--minutes", "0.1", "--cycles", "1", "--scrape-s", "1",
                                    "--warmup-min", "0", "--devices", "bmc-2,pdu-2"),
          rf'^ "scrapes_missing_a_device": (\d+),(?:.*\n)*^   "first_metrics_s": {N},'),
    Smoke("watch_start.py", ("--starts", "2", "--life-s", "1", "--devices", "pdu-2"),
          rf'^{{"starts_after_kill": (\d+), "first_metrics_s_after_kill": \[{N}\]'),
    Smoke("watch_soak.py", ("--minutes", "0.1", "--every-s", "2"),
          rf"^\s+{N}\s+{N} MiB\s+{N} MiB\s+{N}\s(?:.*\n)*"
          r'.*"segments_checked": (\d+), "truth_missed": 0,'),
    Smoke("fuzz/parsers.py", ("--examples", "5"),
          r"^test_redfish_datetime_parser_raises_only_value_error\s+(\d+) examples in .*: ok$"),
    Smoke("fuzz/rackfile.py", ("--examples", "5"), r"^generated\s+(\d+) examples in .*; ok$"),
    Smoke("fuzz/soundness.py", ("--devices", "20", "--workers", "1"),
          rf"^\| step \| (\d+) \| {N} \| {N} \|"),
    Smoke("fuzz/soundness.py", ("--devices", "22", "--workers", "1", "--claim-free-running"),
          rf"^\| admitted \| (\d+) \| {N} \| (?:{N}|—) \| {N} \| {N} \|$",
          variant="--claim-free-running"),
]

# modules under benchmarks/ that are not scripts: each is run by the scripts that import it
HELPERS = {
    "spread.py": "the spread and scratch folder every figure uses (imported by the scripts)",
    "fuzz/__init__.py": "the package marker",
    "fuzz/baseline_estimate.py": "the frozen pre-issue-11 estimator, run by fuzz/soundness.py",
    "fuzz/baseline_segment.py": "the frozen pre-issue-11 segmentation, run by fuzz/soundness.py",
}


def benchmark_files() -> set[str]:
    return {p.relative_to(BENCH).as_posix() for pat in ("*.py", "fuzz/*.py") for p in BENCH.glob(pat)}


def test_every_benchmark_has_a_smoke_run():
    smoked = {s.script for s in SMOKES}
    missing = benchmark_files() - smoked - set(HELPERS)
    assert not missing, f"benchmarks with no smoke run (add one to SMOKES): {sorted(missing)}"
    gone = (smoked | set(HELPERS)) - benchmark_files()
    assert not gone, f"smoke entries for benchmarks that no longer exist: {sorted(gone)}"


def _env(tmp_path: Path, own_tmp: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_"))}    # the child is not this pytest's worker
    env["PYTHONPATH"] = str(ROOT)
    if own_tmp:
        env["TMPDIR"] = str(tmp_path)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("smoke", SMOKES, ids=lambda s: s.id)
def test_benchmark_smoke(smoke, tmp_path):
    """The benchmark at its smallest size exits 0 and prints its figures, each a number."""
    if smoke.needs and shutil.which(smoke.needs) is None:
        pytest.skip(f"{smoke.needs} not installed")
    cp = subprocess.run([sys.executable, str(BENCH / smoke.script), *smoke.args], cwd=ROOT,
                        env=_env(tmp_path, smoke.own_tmp), capture_output=True, text=True,
                        timeout=HANG_S)
    tail = f"\n--- stdout\n{cp.stdout[-3000:]}\n--- stderr\n{cp.stderr[-3000:]}"
    assert cp.returncode == 0, f"{smoke.script} exited {cp.returncode}{tail}"
    m = re.search(smoke.figure, cp.stdout, re.M)
    assert m, f"{smoke.script}: no figure line /{smoke.figure}/{tail}"
    figures = [float(g) for g in m.groups()]
    assert figures and all(math.isfinite(x) for x in figures), (figures, tail)
