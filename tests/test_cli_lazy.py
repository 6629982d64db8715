"""The command line loads only the command it runs: `rackclock --help` and each command's
`--help` import none of the heavy libraries or the experiment machinery (asserted on sys.modules
in a fresh interpreter, not on time; the times are in benchmarks/README.md).

HEAVY_HELP lists the commands whose --help still imports its library (their module builds the
parser after importing it); an entry no longer needed fails, so the list only shrinks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.commands import names

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "matplotlib", "experiments", "bench.run.experiment", "bench.run.lab",
         "bench.run.runner", "drivers", "aiohttp", "kubernetes", "pysnmp", "pymodbus", "redfish",
         "ray")
# command -> why its --help is still heavy (issue 32: to move into a command module)
HEAVY_HELP: dict[str, str] = {}
PROBE = """
import contextlib, io, json, sys
from bench import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(sys.argv[1:])
    except SystemExit:
        pass
heavy = %r
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)))
"""


def heavy_imports(*args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules (HEAVY, or a module of one of them) `rackclock ARGS` imports."""
    p = subprocess.run([sys.executable, "-c", PROBE % (heavy,), *args], capture_output=True,
                       text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_the_top_level_help_loads_no_command():
    assert heavy_imports("--help") == []


@pytest.mark.parametrize("command", names())
def test_a_commands_help_loads_only_its_parser(command):
    found = heavy_imports(command, "--help")
    if command in HEAVY_HELP:
        assert found, f"{command} --help is light now: remove it from HEAVY_HELP"
    else:
        assert found == [], f"{command} --help imports {found}"


def test_a_help_imports_the_credentials_filter_only_to_log():
    """bench/logsetup.py imports bench.model.runlog's Redact (the inventory, provenance) at the
    first record the terminal's handler gets; a --help logs none (tests/test_logging.py: what is
    logged is still redacted)."""
    assert heavy_imports("report", "--help", heavy=("bench.model.runlog",)) == []
    probe = ("import logging, sys\nfrom bench import logsetup\nlogsetup.configure()\n"
             "before = 'bench.model.runlog' in sys.modules\nlogging.getLogger('x').warning('w')\n"
             "print(before, 'bench.model.runlog' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.stdout.split() == ["False", "True"] and "WARNING x: w" in p.stderr, p.stderr


def test_the_probe_sees_a_heavy_import():
    """Not vacuous: running a command (not its help) imports its library."""
    assert "numpy" in heavy_imports("compare", "/nonexistent-a", "/nonexistent-b")
