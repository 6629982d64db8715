"""`rackclock summarize RUN`: (re)build summary.json of any run folder from its samples, a run
that was killed included. Every row is written as taken and each device's identity and clocks
go into the manifest when the device opens, so a folder left by SIGKILL holds all a summary
needs; the simulator (which dies with the bench) leaves its truth in RUN/sim/truth.json.

A `running` manifest whose process is gone is marked `killed`, or `disk_full` when the run's
`.reserve` is gone: the store frees it only when a write fails, or after writing the final
status, so a run that stopped at a full disk tells itself apart (a copy of the folder too). The
reserve is removed here either way. On a full disk the summary is still printed, and the one
line says it could not be written (exit 1).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from bench import safeio, saferead
from bench.model.statuses import RunStatus
from bench.model.store import RESERVE, SCHEMA, DiskFull, write_json


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


class SummaryNotWritten(DiskFull):
    """The summary was made but could not be written (`.summary` holds it)."""

    def __init__(self, summary: dict, exc: OSError, path: Path):
        super().__init__(exc.errno, f"cannot write in {path}: {exc.strerror or exc}; the summary "
                                    f"above is not saved (free space, then summarize again)")
        self.summary = summary


def _ended(path: Path, run) -> RunStatus | None:
    """How a run whose manifest says `running` ended, if its process is gone (else None)."""
    if run.manifest.status != RunStatus.RUNNING or _alive(run.manifest.pid):
        return None
    return RunStatus.KILLED if (path / RESERVE).exists() else RunStatus.DISK_FULL


def _copy_truth(path: Path) -> None:
    """The simulator's truth (RUN/sim/truth.json) beside the manifest, where it is not yet."""
    left = path / "sim" / "truth.json"
    if not (path / "truth.json").exists() and left.exists():
        safeio.write_bytes(path / "truth.json", saferead.read_bytes(left, saferead.CAPS["truth.json"]))


def rebuild_summary(path: Path) -> dict:
    """Write RUN/summary.json anew; a run whose manifest says `running` but whose process is
    gone is marked `killed` or `disk_full` (its samples so far are all kept). SummaryNotWritten
    when the disk is full: nothing half-written is left."""
    # the summary's machinery here, not at the top: `rackclock summarize --help` imports no numpy
    from bench.model.bounds_csv import write_bounds_csv
    from bench.model.rundata import load_run
    from bench.model.summary import summarize_run

    path = Path(path)
    run = load_run(path)
    manifest = dict(run.manifest.raw)          # written back as it was, keys this bench lacks too
    ended = _ended(path, run)
    if run.manifest.status != RunStatus.RUNNING or ended is not None:
        (path / RESERVE).unlink(missing_ok=True)      # the run is over: room for what follows
    if ended is not None:
        manifest["status"] = ended
        if ended == RunStatus.DISK_FULL and not manifest.get("error"):
            manifest["error"] = (f"cannot write in {path}: the disk filled (the run's reserve "
                                 f"is used)")
    failed: OSError | None
    try:
        _copy_truth(path)
        if ended is not None:
            write_json(path / "manifest.json", manifest)
    except OSError as exc:
        failed = exc
    else:
        failed = None
    left = path / "sim" / "truth.json"
    truth = run.truth.raw if run.truth else (
        saferead.load_object(left, saferead.CAPS["truth.json"]) if left.exists() else None)
    summary = summarize_run(path, manifest, truth, uncertainty_ns=run.manifest.uncertainty_ns())
    summary["rebuilt"] = True
    try:
        if failed is not None:
            raise failed
        write_json(path / "summary.json", {"schema": SCHEMA, **summary})
        write_bounds_csv(path, summary)
    except OSError as exc:
        raise SummaryNotWritten(summary, exc, path) from None
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
    try:
        summary, error = rebuild_summary(a.run), None
    except SummaryNotWritten as exc:
        summary, error = exc.summary, exc
    if not a.quiet:
        from bench.model.rundata import load_run
        from bench.output.closing import reference_line
        from bench.output.terminal import table

        print(reference_line(load_run(a.run).manifest))
        print(table(summary))
    if error is not None:
        print(f"rackclock summarize: disk full: {error.strerror}", file=sys.stderr)
        return 1
    print(f"summary: {a.run / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
