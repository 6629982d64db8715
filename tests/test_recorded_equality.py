"""`rackclock summarize` and `rackclock report` on recorded run folders give byte for byte the
outputs stored beside them (tests/data/recorded/<run>.golden/), images and the folder's path
aside: refactoring the run, model and output code must not change what a user reads.

The recorded folder is a real 15 s run of six simulated devices of four planes, with stimuli, an
incident cascade, a step (bmc-3: a break; a drift beyond the prior until the beyond-prior test
took the reads after the break too), an agent reboot (pdu-1: timeouts, a reconnect, a reboot
break) and a counter wrap (pdu-2); tests/data/recorded/README.md says how it was made. What is
normalised: tests/data/regen_recorded.py.
"""
from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("regen_recorded", HERE / "data" / "regen_recorded.py")
regen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regen)

REGEN = "tests/data/regen_recorded.py"


def _first_difference(name: str, want: bytes, got: bytes) -> str:
    a = want.decode("utf-8", "replace").splitlines()
    b = got.decode("utf-8", "replace").splitlines()
    diff = list(difflib.unified_diff(a, b, f"golden/{name}", f"now/{name}", n=1, lineterm=""))
    return "\n".join(line[:200] for line in diff[:12])


@pytest.mark.parametrize("case", list(regen.CASES))
@pytest.mark.parametrize("run", regen.recorded_runs(), ids=lambda p: p.name)
def test_outputs_are_byte_identical(run, case, tmp_path):
    golden = regen.golden_dir(run, case)
    assert golden.is_dir(), f"no golden outputs in {golden}: run {REGEN}"
    got = regen.case_outputs(run, case, tmp_path)
    names = sorted(p.name for p in golden.iterdir())
    assert sorted(got) == names, f"outputs {sorted(got)} but golden files {names}"
    differ = [n for n in names if (golden / n).read_bytes() != got[n]]
    shown = "\n".join(_first_difference(n, (golden / n).read_bytes(), got[n]) for n in differ[:3])
    assert not differ, (
        f"{case}: {', '.join(differ)} differ from {golden.relative_to(HERE.parent)} (the outputs "
        f"are in {tmp_path / run.name}):\n{shown}\nIf the change is meant to change these "
        f"outputs, run {REGEN} and say so in the commit.")


def test_the_killed_case_is_marked_killed_and_the_recorded_folder_untouched(tmp_path):
    """The killed case exercises summarize's own path (status, truth copied up), and a run of
    the test writes only into its copy."""
    run = regen.recorded_runs()[0]
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    got = regen.case_outputs(run, "killed", tmp_path)
    assert b'"status": "killed"' in got["manifest.json"]
    assert (tmp_path / run.name / "truth.json").exists()
    assert not (tmp_path / run.name / ".reserve").exists()
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
