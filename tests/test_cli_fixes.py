"""Issue 30 item 10, each fixed with a test: one clear line instead of a traceback or a
misleading message, whole help texts, the trend figure's cap said and its file beside the runs,
a measurement without a limit not called a pass, `make run` without the test extra."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.config.inventory import InventoryError
from bench.run.catalog import first_sentence, module_docstring, summary_lines
from bench.run.experiment import load_experiment, make_params
from bench.run.lab import outcome

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV, cwd=ROOT)


def test_experiments_nosuch_is_one_line():
    p = cli("experiments", "nosuch")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == ("rackclock experiments: no experiment 'nosuch' (known: "
                                "clock_offset, collective_clock, incident, log_latency_under_load, "
                                "ntp_convergence, power_cycle, regression, stimulus_latency)")


def test_duration_on_an_experiment_without_one_names_the_option():
    exp = load_experiment("stimulus_latency")
    with pytest.raises(InventoryError) as e:
        make_params(exp, {"duration_s": "30"}, {"duration_s": "--duration"})
    assert str(e.value).startswith("--duration: this experiment takes no duration")
    assert "--param" not in str(e.value)
    p = cli("run", "stimulus_latency", "--duration", "30")
    assert p.returncode == 2 and "--duration: this experiment takes no duration" in p.stderr


def test_a_bad_number_says_what_is_expected():
    exp = load_experiment("stimulus_latency")
    with pytest.raises(InventoryError) as e:
        make_params(exp, {"n": "abc"})
    assert str(e.value) == "--param n=abc: expected a whole number, got 'abc'"
    with pytest.raises(InventoryError, match="expected a number, got 'x'"):
        make_params(exp, {"gap_s": "x"})


def test_a_measurement_without_a_limit_is_not_a_pass():
    assert outcome(1.0, 2.0, None, None) == "no limit"           # was "pass"
    assert outcome(1.0, 2.0, 0.0, 3.0) == "pass"
    assert outcome(1.0, 4.0, 0.0, 3.0) == "undecided"
    assert outcome(4.0, 5.0, 0.0, 3.0) == "fail"


def test_run_help_gives_whole_sentences():
    assert first_sentence("Incident: which plane broke first? A cross-plane cascade") == \
        "Incident: which plane broke first?"
    assert first_sentence("Power cycle: cycle the outlet\nand follow it.\n\nMore.") == \
        "Power cycle: cycle the outlet and follow it."
    lines = summary_lines()
    entries: dict[str, str] = {}
    for x in lines:                  # an entry's first line names it; the rest are indented
        if x[2] != " ":
            name = x.split()[0]
            entries[name] = x.strip()[len(name):].strip()
        else:
            entries[name] += " " + x.strip()
    assert set(entries) >= {"clock_offset", "ntp_convergence", "power_cycle", "incident"}
    for name, text in entries.items():
        assert text.endswith((".", "?")), (name, text)     # never cut mid-sentence
    assert all(len(x) <= 100 for x in lines)


def test_the_help_reads_each_docstring_as_the_parser_does(tmp_path):
    """module_docstring (first tokens, no compile: `rackclock --help` lists the experiments
    quickly) gives ast.get_docstring's text for every module of the tree."""
    files = sorted(ROOT.glob("experiments/*.py")) + sorted(ROOT.glob("bench/**/*.py"))
    for f in files:
        assert module_docstring(f) == (ast.get_docstring(ast.parse(f.read_text())) or ""), f
    odd = {"f.py": 'f"""not {a} docstring"""\n', "b.py": '# c\n\nb"bytes"\n', "n.py": "x = 1\n",
           "e.py": ""}
    for name, text in odd.items():
        (tmp_path / name).write_text(text)
        assert module_docstring(tmp_path / name) == "", name


def test_timeline_help_says_what_each_key_means():
    p = cli("timeline", "--help")
    assert p.returncode == 0
    keys = p.stdout.split("per-log keys", 1)[1]
    for k in ("format", "tz", "year", "order", "boot", "stamp", "presync_before"):
        line = next(x for x in keys.splitlines() if x.strip().startswith(k + " "))
        assert len(line.split(None, 1)[1]) > 20, line


def test_make_run_installs_the_package_without_the_test_extra(tmp_path):
    p = subprocess.run(["make", "-n", "run", f"VENV={tmp_path}/v"], capture_output=True,
                       text=True, cwd=ROOT, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "pip install -q -e ." in p.stdout and "[test]" not in p.stdout
    t = subprocess.run(["make", "-n", "test", f"VENV={tmp_path}/v"], capture_output=True,
                       text=True, cwd=ROOT, timeout=30)
    assert "'.[test]'" in t.stdout
