"""Issue 42's corruption matrix: each file of a run folder x each way a crash, a full disk or a
careless copy leaves it x each command that reads run folders gives a result or one line naming
the file and its fault (exit 2), never a traceback, never more than 300 MB, and never writes a
good file over with a worse one (tests/corruption.py has the faults and the worker). A result is
an exit status of the one table (bench.model.outcomes): 0, 1, or 3 with its UNDECIDED line.

One recorded run (tests/data/recorded) is copied once; each case is a hard-linked copy of it
with one file corrupted (the corruption replaces the link, so the copies share only files no
command may write in place). Two workers run the cases side by side, each case in a child of its
own, so that its peak memory is the command's own (not the worker's high-water mark). report and
trend draw figures for seconds whenever they succeed: by default they meet every fault of the
three documents they must read and, for the files they read past, one fault each (the readers
there are the ones the other commands take through every fault); RACKCLOCK_FULL_MATRIX=1 runs
every command through every file and fault. Seconds per case are reported, not asserted (house
rule: no timed tests; benchmarks/README.md has the measured figures).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corruption import COMMANDS, FAULTS, FILES, RECORDED, corrupt  # noqa: E402

PEAK_MB = 300
FAST = ("summarize", "limits", "compare", "timeline")
DOCUMENTS = ("manifest.json", "summary.json", "truth.json")
SLOW_SAMPLES = [("report", "samples/bmc-1.csv", "nul_tail"), ("trend", "events.csv", "garbage"),
                ("report", "incident.json", "sparse_1g"), ("trend", "reference.csv", "fifo"),
                ("trend", "samples/bmc-1.csv", "dev_zero")]
# what each command may write in the run folder it is given
OUTPUTS = {"summarize": {"summary.json", "summary.rebuilt.json", "bounds.csv", "stability.csv",
                         "phase"},
           "limits": set(), "compare": set(), "timeline": {"timeline.json"},
           "trend": {"trend.png"}, "report": {"report.html", "limits.xml", "plots"}}


def cases() -> list[dict]:
    out = []
    full = os.environ.get("RACKCLOCK_FULL_MATRIX") == "1"
    for f in FILES:
        for fault in FAULTS:
            for cmd in COMMANDS:
                slow = cmd in ("report", "trend")
                if (not slow or full or (f in DOCUMENTS and fault != "wrong_types")
                        or (cmd, f, fault) in SLOW_SAMPLES
                        or (cmd, f, fault) in (("report", "manifest.json", "wrong_types"),
                                               ("trend", "summary.json", "wrong_types"))):
                    out.append({"id": f"{cmd}-{f.replace('/', '_')}-{fault}", "cmd": cmd,
                                "file": f, "fault": fault})
    return out


def _link_copy(master: Path, dest: Path) -> None:
    shutil.copytree(master, dest, copy_function=os.link)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[dict]:
    work = tmp_path_factory.mktemp("corruption")
    master = work / "master"
    shutil.copytree(RECORDED, master)
    for good in ("good1", "good2"):
        shutil.copytree(RECORDED, work / good)
    todo = cases()
    for case in todo:
        run = work / case["id"] / "run"
        _link_copy(master, run)
        corrupt(run / case["file"], case["fault"])
    halves = [[c for c in todo if c["cmd"] in FAST], [c for c in todo if c["cmd"] not in FAST]]
    procs = []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for k, half in enumerate(halves):
        (work / f"cases{k}.json").write_text(json.dumps(half))
        procs.append(subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("corruption.py")), str(work),
             str(work / f"cases{k}.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env))
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, f"a worker died ({p.returncode}):\n{stderr[-3000:]}"
        out += [json.loads(line) for line in stdout.splitlines()]
    assert len(out) == len(todo)
    for r in out:
        r["run"] = str(work / r["id"] / "run")
    return out


def _show(r: dict) -> str:
    return (f"{r['cmd']} {r['file']} {r['fault']}: exit {r['rc']}, {r['seconds']} s, "
            f"{r['peak_mb']} MB, last line {r['last'][:200]!r}, verdict {r['verdict'][:100]!r}")


def _is_result(r: dict) -> bool:
    """A result by the one exit table (bench.model.outcomes): 0 PASS, 1 FAIL/REGRESSED, or 3
    UNDECIDED said in a verdict line (a corrupted but readable folder may well decide nothing);
    2 is a refusal, judged by its line."""
    return r["rc"] in (0, 1) or r["rc"] == 3 and r["verdict"].startswith("UNDECIDED")


def _is_refusal(r: dict) -> bool:
    return r["rc"] == 2 and r["last"].startswith(f"rackclock {r['cmd']}: ") \
        and Path(r["file"]).name in r["last"]


def test_every_case_is_a_result_or_one_line_naming_the_file(results):
    bad = [_show(r) for r in results
           if r["traceback"] or not (_is_result(r) or _is_refusal(r))]
    assert not bad, "\n".join(bad)


def test_no_case_takes_more_than_its_memory(results):
    bad = [_show(r) for r in results if r["peak_mb"] > PEAK_MB]
    assert not bad, "\n".join(bad)


def test_a_file_that_cannot_be_what_it_should_is_refused_naming_its_fault(results):
    """The documents every command must read: a symlink, FIFO, folder, over-cap file, NaN or
    nesting is refused (exit 2) with its fault in words, not read."""
    words = {"folder": "a folder", "dev_zero": "a symlink", "fifo": "a FIFO",
             "sparse_1g": "cap", "deep": "nested deeper", "nan": "1e999"}
    bad = [_show(r) for r in results if r["file"] in ("manifest.json",) and r["fault"] in words
           and (r["rc"] != 2 or words[r["fault"]] not in r["last"])]
    assert not bad, "\n".join(bad)


def _completeness(path: Path) -> tuple[int, int]:
    from bench import saferead
    from bench.resummarize import completeness
    return completeness(saferead.load_object(path))


def test_no_good_file_is_overwritten_by_a_worse_one(results):
    good = _completeness(RECORDED / "summary.json")
    bad = []
    for r in results:
        allowed = OUTPUTS[r["cmd"]]
        for name in r["changed"]:
            top = name.split("/", 1)[0]
            if top not in allowed or name.endswith(".part"):
                bad.append(f"{_show(r)}: changed {name}")
        if "summary.json" in r["changed"]:
            new = Path(r["run"]) / "summary.json"
            if r["file"] != "summary.json" and _completeness(new) < good:
                bad.append(f"{_show(r)}: summary.json replaced by a less complete one")
    assert not bad, "\n".join(bad)


def test_summarize_keeps_a_device_with_a_nul_tail_and_rebuilds_a_truncated_summary(results):
    by = {(r["cmd"], r["file"], r["fault"]): r for r in results}
    nul = by["summarize", "samples/bmc-1.csv", "nul_tail"]
    assert nul["rc"] == 0, _show(nul)
    from bench import saferead
    s = saferead.load_object(Path(nul["run"]) / "summary.json")
    bmc = s["devices"]["bmc-1"]
    assert bmc["bad_rows"] == 1 and sum(c["reads"] for c in bmc["clocks"].values()) > 0
    assert _completeness(Path(nul["run"]) / "summary.json") == \
        _completeness(RECORDED / "summary.json")
    cut = by["summarize", "summary.json", "truncated"]
    assert cut["rc"] == 0 and "summary.json: not JSON" in cut["last"], _show(cut)
    assert _completeness(Path(cut["run"]) / "summary.json") == \
        _completeness(RECORDED / "summary.json")
    worse = by["summarize", "samples/bmc-1.csv", "truncated"]
    assert worse["rc"] == 1 and "kept" in worse["last"], _show(worse)
    assert (Path(worse["run"]) / "summary.rebuilt.json").exists()
