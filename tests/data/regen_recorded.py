"""The outputs of `rackclock summarize` and `rackclock report` on the recorded run folders
(tests/data/recorded/<run>/), normalised, and their golden copies (<run>.golden/<case>/).

    .venv/bin/python tests/data/regen_recorded.py     # rewrite every golden file

Run it only for a change that is meant to change these outputs, and say so in the commit;
tests/test_recorded_equality.py requires them byte for byte.

Cases: `completed` (the folder as recorded: summarize, then report) and `killed` (the same folder
as a SIGKILL leaves it: manifest `running` with a dead pid, the reserve still there, no summary,
bounds or end, the truth still in sim/; summarize marks it `killed` and copies the truth up; no
report, to keep the test quick).

Normalised, and nothing else: the run folder's path in the commands' output lines (`<RUN>`), and
each embedded image's bytes in report.html (`data:image/png;base64,<image>`): PNG bytes change
with the matplotlib, freetype and zlib versions. Which figure files the report wrote is kept
(`plots.txt`, names only).
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECORDED = HERE / "recorded"
CASES = {"completed": True, "killed": False}          # case: whether the report is drawn too
DEAD_PID = 2**31 - 1                   # above any pid_max: never a live process
IMAGE = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")
SUMMARIZED = ("summary.json", "bounds.csv", "stability.csv", "manifest.json", "truth.json",
              "summarize.txt")
REPORTED = ("report.html", "report.txt", "plots.txt")


def recorded_runs() -> list[Path]:
    return sorted(p for p in RECORDED.iterdir() if p.is_dir() and not p.name.endswith(".golden"))


def golden_dir(run: Path, case: str) -> Path:
    return run.parent / f"{run.name}.golden" / case


def as_killed(run: Path) -> None:
    """The folder as a run killed mid-way leaves it (its process gone)."""
    m = json.loads((run / "manifest.json").read_text())
    for key in ("ended_ns", "duration_s", "error", "calibration", "probed_until_ns"):
        m.pop(key, None)
    m.update(status="running", pid=DEAD_PID)
    (run / "manifest.json").write_text(json.dumps(m, indent=1))
    for name in ("summary.json", "bounds.csv"):
        (run / name).unlink(missing_ok=True)
    (run / "truth.json").replace(run / "sim" / "truth.json")    # the simulator's, left behind
    (run / ".reserve").write_bytes(b"")


def _command(main, argv: list[str], run: Path) -> bytes:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(argv)
    return f"exit {status}\n{out.getvalue()}".replace(str(run), "<RUN>").encode()


def outputs(run: Path, drawn: bool = True) -> dict[str, bytes]:
    """Run summarize (and report when `drawn`) on `run`, a copy: both write into it; the
    normalised outputs, named as in SUMMARIZED and REPORTED."""
    from bench.commands import report, summarize

    got = {"summarize.txt": _command(summarize.main, [str(run)], run)}
    for name in SUMMARIZED[:-1]:
        got[name] = (run / name).read_bytes()
    if not drawn:
        return got
    got["report.txt"] = _command(report.main, [str(run)], run)
    html = (run / "report.html").read_text(encoding="utf-8")
    got["report.html"] = IMAGE.sub("data:image/png;base64,<image>", html).encode()
    got["plots.txt"] = "".join(f"{p.name}\n" for p in sorted((run / "plots").iterdir())).encode()
    return got


def case_outputs(run: Path, case: str, work: Path) -> dict[str, bytes]:
    """The outputs of `case` on a fresh copy of the recorded folder `run` in `work`."""
    copy = work / run.name
    shutil.copytree(run, copy)
    if case == "killed":
        as_killed(copy)
    return outputs(copy, CASES[case])


def main() -> int:
    import tempfile

    sys.path.insert(0, str(ROOT))
    for run in recorded_runs():
        for case in CASES:
            with tempfile.TemporaryDirectory() as tmp:
                got = case_outputs(run, case, Path(tmp))
            dest = golden_dir(run, case)
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for name, data in got.items():
                (dest / name).write_bytes(data)
            print(f"{dest.relative_to(ROOT)}: {len(got)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
