"""(Re)build summary.json of any run folder (the command: `rackclock summarize RUN`,
bench/commands/summarize.py) from its samples, a run
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
from pathlib import Path

from bench import safeio, saferead
from bench.model.run_statuses import RunStatus
from bench.model.store import RESERVE, DiskFull, stamped, write_json


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


REBUILT = "summary.rebuilt.json"


class SummaryNotWritten(DiskFull):
    """The summary was made but could not be written (`.summary` holds it)."""

    def __init__(self, summary: dict, exc: OSError, path: Path):
        super().__init__(exc.errno, f"cannot write in {path}: {exc.strerror or exc}; the summary "
                                    f"above is not saved (free space, then summarize again)")
        self.summary = summary


def _ended(path: Path, manifest) -> RunStatus | None:
    """How a run whose manifest says `running` ended, if its process is gone (else None)."""
    if manifest.status != RunStatus.RUNNING or _alive(manifest.pid):
        return None
    return RunStatus.KILLED if (path / RESERVE).exists() else RunStatus.DISK_FULL


def _copy_truth(path: Path) -> None:
    """The simulator's truth (RUN/sim/truth.json) beside the manifest, where it is not yet."""
    left = path / "sim" / "truth.json"
    if not (path / "truth.json").exists() and left.exists():
        safeio.write_bytes(path / "truth.json",
                           saferead.read_bytes(left, saferead.CAPS["truth.json"]))


def _old_summary(path: Path) -> tuple[dict | None, str]:
    """The summary.json there is (None: none, or unreadable) and, if unreadable, why."""
    if not (path / "summary.json").exists() and not (path / "summary.json").is_symlink():
        return None, ""
    try:
        return saferead.load_object(path / "summary.json"), ""
    except saferead.FileFault as exc:
        return None, str(exc)


def completeness(summary) -> tuple[int, int]:
    """(devices with clock reads, clock reads) of a summary: what a rebuild must not lose."""
    from bench.model.documents import Summary
    devices = Summary.of(summary or {}).devices.values()
    reads = [sum(c.reads for c in d.clocks.values()) for d in devices]
    return sum(1 for r in reads if r > 0), sum(reads)


def _swap(path: Path, summary: dict, old: dict | None) -> str:
    """Write the rebuilt summary beside the old (REBUILT) and put it in its place only when it
    is at least as complete; "" when it was, else why not."""
    from bench.model.bounds_csv import write_bounds_csv
    from bench.model.stability_export import write_stability_csv
    with safeio.Folder.open(path) as d:
        d.write_json(REBUILT, stamped(summary))
        new, was = completeness(summary), completeness(old)
        if old is not None and (new[0] < was[0] or new[1] < was[1]):
            return (f"it holds more ({was[0]} devices with {was[1]} clock reads) than the "
                    f"rebuild from the samples ({new[0]} with {new[1]})")
        try:
            d.rename(REBUILT, "summary.json")
        except IsADirectoryError:
            return "it is a folder"
    write_bounds_csv(path, summary)
    write_stability_csv(path, summary)
    return ""


def _mark_ended(path: Path, manifest: dict, ended: RunStatus | None) -> OSError | None:
    """The truth copied beside the run and, for a run that ended unseen, its manifest marked
    (killed, or disk_full with why); the OSError that stopped either, to raise once the summary
    is made."""
    if ended is not None:
        manifest["status"] = ended
        if ended == RunStatus.DISK_FULL and not manifest.get("error"):
            manifest["error"] = (f"cannot write in {path}: the disk filled (the run's reserve "
                                 f"is used)")
    try:
        _copy_truth(path)
        if ended is not None:
            write_json(path / "manifest.json", manifest)
    except OSError as exc:
        return exc
    return None


def rebuild(path: Path, phase: bool = True) -> tuple[dict, str]:
    """Build RUN/summary.json anew from the samples; a run whose manifest says `running` but
    whose process is gone is marked `killed` or `disk_full` (its samples so far are all kept).
    Returns the summary and "" when it replaced summary.json, else why not: a rebuild less complete than the
    summary there (fewer devices or reads) stays beside it as summary.rebuilt.json. An
    unreadable summary.json (truncated, garbage) is rebuilt from the samples.
    SummaryNotWritten when the disk is full: nothing half-written is left."""
    # the summary's machinery here, not at the top: `rackclock summarize --help` imports no numpy
    from bench.model.documents import Manifest
    from bench.model.rundata import read_json
    from bench.model.summary import summarize_run

    path = Path(path)
    manifest = dict(read_json(path / "manifest.json"))   # as it was, keys this bench lacks too
    man = Manifest.of(manifest)
    old, why = _old_summary(path)
    ended = _ended(path, man)
    if man.status != RunStatus.RUNNING or ended is not None:
        with safeio.Folder.open(path) as d:
            d.unlink(RESERVE)                  # the run is over: room for what follows
    failed = _mark_ended(path, manifest, ended)
    t = path / "truth.json" if (path / "truth.json").exists() else path / "sim" / "truth.json"
    truth = saferead.load_object(t) if t.exists() else None
    summary = summarize_run(path, manifest, truth, uncertainty_ns=man.uncertainty_ns(),
                            phase=phase)
    summary["rebuilt"] = True
    if why:
        summary["rebuilt_because"] = why
    try:
        if failed is not None:
            raise failed
        return summary, _swap(path, summary, old)
    except OSError as exc:
        raise SummaryNotWritten(summary, exc, path) from None


def rebuild_summary(path: Path) -> dict:
    """rebuild(), the summary only."""
    return rebuild(path)[0]
