"""The whole corruption matrix of issue 42 (every run-folder file x every fault x every command,
tests/corruption.py), run once by one worker process, each case in a child of its own: per
command the seconds of its slowest corrupted case beside its own time on the good folder (the
ratio), how many cases gave a result (exit 0, 1, or 3 UNDECIDED) or a one-line refusal, and the
largest peak memory of one case (the child's own maximum resident set).

    PYTHONPATH=. .venv/bin/python benchmarks/corruption_matrix.py [--commands report,trend] [--faults empty]

The test (tests/test_corruption.py) asserts the outcomes and the memory; this prints the times.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from corruption import COMMANDS, FAULTS, FILES, RECORDED, corrupt  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--faults", default=",".join(FAULTS))
    a = ap.parse_args()
    cmds, faults = a.commands.split(","), a.faults.split(",")
    if set(cmds) - set(COMMANDS) or set(faults) - set(FAULTS):
        ap.error(f"--commands: of {','.join(COMMANDS)}; --faults: of {','.join(FAULTS)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for good in ("good1", "good2"):
            shutil.copytree(RECORDED, work / good)
        cases = []
        for cmd in cmds:
            cases.append({"id": f"{cmd}-good", "cmd": cmd, "file": "-", "fault": "none"})
            shutil.copytree(RECORDED, work / f"{cmd}-good" / "run")
            for f in FILES:
                for fault in faults:
                    cid = f"{cmd}-{f.replace('/', '_')}-{fault}"
                    shutil.copytree(RECORDED, work / cid / "run")
                    corrupt(work / cid / "run" / f, fault)
                    cases.append({"id": cid, "cmd": cmd, "file": f, "fault": fault})
        (work / "cases.json").write_text(json.dumps(cases))
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
        out = subprocess.run([sys.executable, str(HERE.parent / "tests" / "corruption.py"),
                              str(work), str(work / "cases.json")], capture_output=True,
                             text=True, env=env, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    print(f"{'command':10} {'good s':>7} {'worst s':>8} {'ratio':>6} {'cases':>6} {'ok':>4} "
          f"{'refused':>8} {'traceback':>10}  worst case")
    for cmd in cmds:
        mine = [r for r in rows if r["cmd"] == cmd]
        good = next(r for r in mine if r["fault"] == "none")
        bad = [r for r in mine if r["fault"] != "none"]
        worst = max(bad, key=lambda r: r["seconds"])
        print(f"{cmd:10} {good['seconds']:7.2f} {worst['seconds']:8.2f} "
              f"{worst['seconds'] / max(good['seconds'], 0.01):6.2f} {len(bad):6} "
              f"{sum(r['rc'] in (0, 1, 3) for r in bad):4} {sum(r['rc'] == 2 for r in bad):8} "
              f"{sum(r['traceback'] for r in bad):10}  {worst['file']} {worst['fault']}")
    top = max(rows, key=lambda r: r["peak_mb"])
    print(f"largest peak memory of one case: {top['peak_mb']} MB ({top['cmd']} {top['file']} "
          f"{top['fault']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
