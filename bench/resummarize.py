"""`rackclock summarize RUN`: (re)build summary.json of any run folder from its samples, a run
that was killed included. Every row is written as taken and each device's identity and clocks
go into the manifest when the device opens, so a folder left by SIGKILL holds all a summary
needs; the simulator (which dies with the bench) leaves its truth in RUN/sim/truth.json.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from bench.model.bounds_csv import write_bounds_csv
from bench.model.rundata import load_run
from bench.model.statuses import RunStatus
from bench.model.store import SCHEMA, write_json
from bench.model.summary import summarize_run


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


def rebuild_summary(path: Path) -> dict:
    """Write RUN/summary.json anew; a run whose manifest says `running` but whose process is
    gone is marked `killed` (its samples so far are all kept)."""
    path = Path(path)
    left = path / "sim" / "truth.json"
    if not (path / "truth.json").exists() and left.exists():
        shutil.copyfile(left, path / "truth.json")
    run = load_run(path)
    manifest = dict(run.manifest.raw)          # written back as it was, keys this bench
    if run.manifest.status == RunStatus.RUNNING and not _alive(run.manifest.pid):   # lacks too
        manifest["status"] = RunStatus.KILLED
        write_json(path / "manifest.json", manifest)
    summary = summarize_run(path, manifest, run.truth.raw if run.truth else None,
                            uncertainty_ns=run.manifest.uncertainty_ns())
    summary["rebuilt"] = True
    write_json(path / "summary.json", {"schema": SCHEMA, **summary})
    write_bounds_csv(path, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    from bench.cli import OneLineParser

    ap = OneLineParser(prog="rackclock summarize",
                       description="(re)build summary.json of a run folder, a killed run included")
    ap.add_argument("run", type=Path, help="run folder")
    ap.add_argument("--quiet", action="store_true", help="no table")
    a = ap.parse_args(argv)
    if not (a.run / "manifest.json").exists():
        print(f"rackclock summarize: {a.run}: not a run folder (no manifest.json)", file=sys.stderr)
        return 2
    summary = rebuild_summary(a.run)
    if not a.quiet:
        from bench.output.closing import reference_line
        from bench.output.terminal import table

        print(reference_line(load_run(a.run).manifest))
        print(table(summary))
    print(f"summary: {a.run / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
