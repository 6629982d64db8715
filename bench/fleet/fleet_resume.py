"""`rackclock fleet resume FLEET`: finish a fleet that did not complete, in its own folder.

Every rack whose run completed (bench.fleet.fleet_verdict.RAN) is kept as it is. A rack whose run
folder has reads but no summary.json (its worker, node or driver died) and whose reads reach
ENOUGH of its asked duration is summarised from its samples as `rackclock summarize` does
(bench.resummarize: the run marked `killed`, its summary rebuilt) and judged as a run that
probed its course: status `summarised`. Every other rack (refused, failed, crashed, lost,
interrupted, unplaceable, abandoned while submitted or running) runs again, its earlier record
kept in `earlier_attempts`. Then one verdict over the old racks and the new (fleet.json
`resumes` says what each resume did). A fleet whose command is still alive is not resumed.
"""
from __future__ import annotations

import os
import sys
import time
import tomllib
from pathlib import Path

from bench import saferead
from bench.fleet.config import FleetConfig, FleetError, RackEntry, fleet_from_dict
from bench.fleet.fleet_verdict import RAN, run_verdict
from bench.fleet.gather import load_fleet_manifest, rack_dir, write_fleet_manifest

ENOUGH = 0.9        # a partial run whose reads cover this share of its duration is summarised
KEPT = ("attempts", "earlier_attempts")     # a rack's keys that stay when it runs again


def fleet_of(fleet_dir: Path, manifest: dict) -> FleetConfig:
    """The fleet file as the fleet ran it (FLEET/fleet.toml), its relative rack paths taken
    against the folder they were taken against then."""
    base = manifest.get("fleet_base") or str(Path(manifest.get("fleet_file") or
                                                  "fleet.toml").resolve().parent)
    try:
        text = saferead.read_text(fleet_dir / "fleet.toml")
        return fleet_from_dict(tomllib.loads(text), Path(base), manifest.get("fleet_file", ""))
    except (OSError, saferead.FileFault, tomllib.TOMLDecodeError) as exc:
        raise FleetError(f"{fleet_dir}/fleet.toml: {exc}") from None


def last_run(fleet_dir: Path, name: str, rec: dict) -> Path | None:
    """The rack's latest run folder in the fleet folder (None: none there)."""
    if rec.get("run_folder") and (fleet_dir / rec["run_folder"] / "manifest.json").exists():
        return fleet_dir / rec["run_folder"]
    runs = sorted(rack_dir(fleet_dir, name).glob("*/manifest.json"))
    return runs[-1].parent if runs else None


def reads_until_ns(run_dir: Path) -> int | None:
    """The end of the run's last clock read (samples' e_ns), from each sample file's tail."""
    last = None
    for f in (run_dir / "samples").glob("*.csv"):
        for line in reversed(saferead.tail_text(f, 4096).splitlines()):
            cells = line.split(",")
            if len(cells) > 4 and cells[1] == "read" and cells[4].isdigit():
                last = max(last or 0, int(cells[4]))
                break
    return last


def probed_enough(run_dir: Path) -> tuple[float, float] | None:
    """(seconds its reads cover, seconds asked) of a run folder without summary.json whose
    reads reach ENOUGH of its asked duration; else None."""
    if (run_dir / "summary.json").exists():
        return None
    try:
        m = saferead.load_object(run_dir / "manifest.json")
    except (OSError, saferead.FileFault):
        return None
    asked = (m.get("parameters") or {}).get("duration_s")
    end, start = reads_until_ns(run_dir), m.get("started_ns")
    if not isinstance(asked, (int, float)) or not isinstance(start, int) or end is None:
        return None
    probed = (end - start) / 1e9
    return (round(probed, 3), float(asked)) if probed >= ENOUGH * asked else None


def summarise(fleet_dir: Path, rec: dict, run_dir: Path, probed: float, asked: float) -> bool:
    """The partial run summarised and judged into `rec`; False when that failed."""
    from bench.resummarize import SummaryNotWritten, rebuild
    try:
        rebuild(run_dir)
        verdict, reason = run_verdict(run_dir, probed=True)
    except (SummaryNotWritten, OSError, ValueError, saferead.FileFault):
        return False
    rec.update(status="summarised", summarised_from=rec.get("status"), error=None,
               run_folder=str(run_dir.relative_to(fleet_dir)), probed_s=probed,
               verdict=verdict, reason=f"summarised by fleet resume (reads over {probed:.1f} "
                                       f"of {asked:g} s): {reason}")
    return True


def again(rec: dict, entry: RackEntry) -> None:
    """The rack's record made ready to run again: what it did so far into earlier_attempts."""
    public = entry.public()
    earlier = {k: v for k, v in rec.items() if k not in public and k not in KEPT}
    if earlier.get("status") not in (None, "pending"):
        rec.setdefault("earlier_attempts", []).append(earlier)
    for k in earlier:
        del rec[k]
    rec.update(public, status="pending")


def plan(fleet_dir: Path) -> tuple[FleetConfig, dict, list[str], list[str]]:
    """(the fleet, its manifest with each rack to rerun `pending` and each partial run
    summarised, the racks to rerun, the racks summarised). FleetError when the fleet's command
    is still alive."""
    from bench.fleet.fleet_report import abandoned, driver_gone
    manifest = load_fleet_manifest(fleet_dir)
    if manifest.get("status") in ("starting", "running"):
        if not driver_gone(manifest):
            raise FleetError(f"{fleet_dir}: its fleet command (pid {manifest.get('pid')} on "
                             f"{(manifest.get('host') or {}).get('hostname')}) may still be "
                             f"running; stop it first")
        manifest = abandoned(fleet_dir, manifest)
    fleet = fleet_of(fleet_dir, manifest)
    rerun, summarised = [], []
    for r in fleet.racks:
        rec = manifest["racks"].setdefault(r.name, {**r.public(), "status": "pending"})
        if rec.get("status") in RAN:
            continue
        run_dir = last_run(fleet_dir, r.name, rec)
        enough = probed_enough(run_dir) if run_dir is not None else None
        if run_dir is not None and enough and summarise(fleet_dir, rec, run_dir, *enough):
            summarised.append(r.name)
        else:
            again(rec, r)
            rerun.append(r.name)
    return fleet, manifest, rerun, summarised


def resume_fleet(fleet_dir: Path, address: str | None = None, num_cpus: int | None = None,
                 quiet: bool = False) -> tuple[Path, list[str], list[str]]:
    """Resume the fleet in `fleet_dir`; (its folder, racks rerun, racks summarised)."""
    from bench.fleet.engine import conclude, drive
    fleet_dir = Path(fleet_dir).resolve()
    fleet, manifest, rerun, summarised = plan(fleet_dir)
    manifest.setdefault("resumes", []).append({
        "started_ns": time.time_ns(), "pid": os.getpid(), "argv": sys.argv,
        "status_before": manifest.get("status"), "ray_before": manifest.get("ray"),
        "rerun": rerun, "summarised": summarised})
    if not rerun:
        conclude(manifest, "completed")
        write_fleet_manifest(fleet_dir, manifest)
        return fleet_dir, rerun, summarised
    todo = FleetConfig(fleet.name, tuple(r for r in fleet.racks if r.name in rerun),
                       fleet.source, fleet.base)
    drive(todo, lambda: (fleet_dir, manifest), address, num_cpus, quiet)
    return fleet_dir, rerun, summarised
