"""The fleet folder: the fleet manifest (fleet.json) and one folder per rack holding its run
folder (or, from a remote bench host, the run's tarball and its manifest and summary).

    FLEET/fleet.json                     provenance, Ray cluster, per-rack host, node, status
    FLEET/fleet.toml                     the fleet file as given
    FLEET/racks/NAME/RUN_ID/             the rack's run folder (rackclock report/compare read it)
    FLEET/racks/NAME/RUN_ID.tar.gz       from a remote host: the whole run folder ...
    FLEET/racks/NAME/RUN_ID/{manifest,summary,measurements,truth,incident}.json  ... unpacked
    FLEET/racks/NAME/run.log             the end of the rack's `rackclock run` output, then its
                                         status and verdict
"""
from __future__ import annotations

import tarfile
from pathlib import Path

from bench import safeio, saferead
from bench.fleet.fleet_verdict import rack_verdict
from bench.model.documents import Manifest
from bench.model.run_statuses import RunStatus
from bench.model.rundata import unusable_devices
from bench.model.store import write_json

FLEET_MANIFEST = "fleet.json"
UNPACKED = ("manifest.json", "summary.json", "measurements.json", "truth.json", "incident.json")


def rack_dir(fleet_dir: Path, rack: str) -> Path:
    return fleet_dir / "racks" / rack


def rack_status(result: dict, run_manifest: Manifest | None, unusable: bool = False) -> str:
    """completed | unusable (completed, a device gave no usable read) | refused | failed |
    interrupted | disk_full | crashed (the task itself died) | lost (the task made a run folder
    that did not reach the fleet folder). A completed run's verdict (exit 0 PASS, 1 FAIL,
    3 UNDECIDED) is the rack's verdict (bench.fleet.fleet_verdict), not its status."""
    if result.get("exit_status") is None:
        return "crashed"
    if run_manifest is None:
        if result.get("run_id"):
            return "lost"
        return "refused" if result["exit_status"] == 2 else "failed"
    status = str(run_manifest.status or RunStatus.FAILED)
    if status == RunStatus.COMPLETED and unusable:
        return "unusable"
    return status


def last_error(result: dict, run_manifest: Manifest | None) -> str | None:
    """Why the rack's run failed, in one line: the task's error, a run folder that did not
    arrive, the run's own error, else the last line it logged; None when it did not fail."""
    if result.get("error"):
        return result["error"]
    if run_manifest is None and result.get("run_id"):
        return (f"the run folder {result['run_id']} did not reach the fleet folder: the task "
                f"wrote it at {result.get('run_path') or '?'} on {result.get('host') or '?'}")
    if run_manifest is not None and run_manifest.error:
        return str(run_manifest.error)
    if result.get("exit_status") not in (0, 3):     # 3: UNDECIDED, a verdict and not an error
        return _last_log_line(result)
    return None


def _last_log_line(result: dict) -> str:
    """The last line the task logged (the run folder's name aside), else its exit status."""
    lines = [ln for ln in (result.get("log") or "").splitlines() if ln.strip()
             and not ln.startswith("run folder:")]
    return lines[-1] if lines else f"exit status {result.get('exit_status')}"


def unpack_members(tar_path: Path, into: Path, names=UNPACKED) -> None:
    """Unpack `names` of the run folder in `tar_path` (all when names is None) into `into`."""
    safeio.make_folder(into.parent)
    with tarfile.open(tar_path, "r:gz") as tar:
        members = [m for m in tar.getmembers()
                   if names is None or m.name.split("/", 1)[-1] in names]
        tar.extractall(into.parent, members=members, filter="data")


def ensure_unpacked(run_dir: Path) -> Path:
    """A run folder gathered as a tarball, unpacked in full on first need (samples for compare)."""
    tar_path = run_dir.with_name(run_dir.name + ".tar.gz")
    if tar_path.exists() and not (run_dir / "samples").exists():
        unpack_members(tar_path, run_dir, names=None)
    return run_dir


def gather(fleet_dir: Path, result: dict) -> dict:
    """Write what the task returned into the fleet folder; the rack's record for fleet.json."""
    rd = rack_dir(fleet_dir, result["rack"])
    safeio.make_folder(rd)
    record = {k: result.get(k) for k in ("host", "node_id", "pid", "transfer", "started_ns",
                                         "stopped_ns", "wall_s", "exit_status")}
    run_id = result.get("run_id")
    manifest, unusable = None, False
    if run_id:
        run_dir = rd / run_id
        if result.get("tarball") is not None:
            tar_path = rd / f"{run_id}.tar.gz"
            safeio.write_bytes(tar_path, result["tarball"])
            unpack_members(tar_path, run_dir)
            record["tarball"] = str(tar_path.relative_to(fleet_dir))
        if (run_dir / "manifest.json").exists():
            manifest = Manifest.of(saferead.load_object(run_dir / "manifest.json"))
        unusable = _unusable(run_dir)
        if manifest is not None:
            record["run_folder"] = str(run_dir.relative_to(fleet_dir))
            record["probed_s"] = probed_s(manifest)
        else:
            record["run_path"] = f"{result.get('host')}:{result.get('run_path')}"
    record["status"] = rack_status(result, manifest, unusable)
    record["error"] = last_error(result, manifest) or said_of(record, result)
    record["verdict"], record["reason"] = rack_verdict({**record, **{
        k: result.get(k) for k in ("verdict", "reason")}})
    safeio.write_text(rd / "run.log", (result.get("log") or "") + f"status: {record['status']}"
                      f"\nverdict: {record['verdict']}: {record['reason']}\n")
    return record


def said_of(record: dict, result: dict) -> str | None:
    """What a rack that did not complete says when nothing else did: never an empty error."""
    if record["status"] == "completed":
        return None
    return (f"{record['status']} with exit status {result.get('exit_status')} and no error "
            f"message; the end of its output is in racks/{result['rack']}/run.log")


def probed_s(manifest: Manifest) -> float | None:
    """How long the rack's run probed, by its own manifest (None: probing never started)."""
    if manifest.started_ns is None:
        return None
    end = manifest.probed_until_ns or manifest.ended_ns
    return None if end is None else round((end - manifest.started_ns) / 1e9, 3)


def _unusable(run_dir: Path) -> bool:
    """Whether a device of the rack's run gave no usable clock read (its summary says so)."""
    if not (run_dir / "summary.json").exists():
        return False
    try:
        return bool(unusable_devices(saferead.load_object(run_dir / "summary.json")))
    except (saferead.FileFault, ValueError):
        return True


UNGATHERED = ("pending", "submitted", "retrying")   # a rack's statuses before it is gathered


def earlier_folders(rec: dict) -> set[str]:
    """The run folders of a rack's earlier attempts (a resumed or retried rack's is another)."""
    return {Path(e["run_folder"]).name for e in rec.get("earlier_attempts", [])
            if e.get("run_folder")}


def left_behind(fleet_dir: Path, name: str, rec: dict, why: str) -> dict:
    """A rack the fleet command did not gather (it died, or lost the Ray head): `abandoned`
    because `why`, with the run folder its attempt left in the fleet folder (written in place on
    the driver's node), else where its partial run is on another node (`partial_run`)."""
    left = sorted(p.parent for p in rack_dir(fleet_dir, name).glob("*/manifest.json")
                  if p.parent.name not in earlier_folders(rec))
    rec = {**rec, "status": "abandoned", "error": why}
    if left:
        rec["run_folder"] = str(left[-1].relative_to(fleet_dir))
    elif rec.get("scratch") and rec.get("transfer") != "folder":
        rec["partial_run"] = rec["scratch"]
        rec["error"] += (f"; its partial run, if it ran on another node, is there in "
                         f"{rec['scratch']} (the node declaring "
                         f"{', '.join(rec.get('resources') or {}) or 'its resource'})")
    return rec


def write_fleet_manifest(fleet_dir: Path, manifest: dict) -> None:
    write_json(fleet_dir / FLEET_MANIFEST, manifest)


def load_fleet_manifest(fleet_dir: Path) -> dict:
    p = Path(fleet_dir) / FLEET_MANIFEST
    if not p.exists():
        raise FileNotFoundError(f"{fleet_dir} is not a fleet folder (no {FLEET_MANIFEST})")
    return saferead.load_object(p)
