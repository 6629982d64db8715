"""One rack's run as a Ray task: `rackclock run` itself (bench.cli.main, the same code path,
arguments from the fleet file), on the node that holds the rack's custom resource.

Where the run folder goes: when the task runs on the node of the `fleet run` command (`folder`),
straight into FLEET/racks/NAME/; elsewhere (`tarball`) into a scratch folder on the bench host,
returned as a .tar.gz through Ray's object store and removed there. `transfer = "auto"` picks by
node; `tarball` forces it (a lab whose bench hosts do not share the fleet folder's disk, and the
tests of that path on one machine).
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

from bench import safeio
from bench.fleet.config import RackEntry

LOG_TAIL = 4000        # characters of the run's own output kept in the result


def tar_folder(path: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(path, arcname=path.name)
    return buf.getvalue()


def judged(run_dir: Path) -> dict:
    """The run's verdict and why, judged here where the whole run folder is."""
    from bench.fleet.fleet_verdict import run_verdict
    try:
        verdict, reason = run_verdict(run_dir)
    except Exception as exc:          # noqa: BLE001 -- an unreadable run is the rack's reason
        return {"verdict": None, "reason": f"not judged: {type(exc).__name__}: {exc}"}
    return {"verdict": verdict, "reason": reason}


def run_rack(entry: RackEntry, rack_dir: str, driver_node: str, node: str) -> dict:
    """Run `entry`'s experiment here; the result the fleet manifest records for the rack.
    `rack_dir` is absolute (resolved on the driver: a worker's own folder is the one `ray start`
    ran in, not the driver's; a relative one is a ValueError). Past that check it never
    raises: whatever happens is the rack's status and error."""
    if not Path(rack_dir).is_absolute():
        raise ValueError(f"the rack's folder must be an absolute path, got {rack_dir!r}")
    transfer = entry.transfer
    if transfer == "auto":
        transfer = "folder" if node == driver_node else "tarball"
    scratch = None
    if transfer == "folder":
        out = safeio.make_folder(rack_dir)
    else:
        # named by rack and fleet (bench.fleet.engine.scratch_of): a partial run left here by a
        # task that died is found by that name in fleet.json
        fleet_id = Path(rack_dir).parents[1].name
        scratch = Path(tempfile.mkdtemp(prefix=f"rackclock-fleet-{entry.name}-{fleet_id}-"))
        out = scratch
    result = {"rack": entry.name, "node_id": node, "host": socket.gethostname(),
              "pid": os.getpid(), "transfer": transfer, "started_ns": time.time_ns()}
    _run_here(entry, out, result)
    _add_run_folder(result, out, transfer)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def _run_here(entry: RackEntry, out: Path, result: dict) -> None:
    """Run the rack's experiment into `out`, its output caught: into `result` its exit status
    (None and the error when it raised), stop time, wall time and the log's tail."""
    log = io.StringIO()
    t0 = time.monotonic()
    try:
        from bench.cli import main as rackclock

        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            code = rackclock(entry.run_argv(str(out)))
        result["exit_status"] = code
    except BaseException as exc:     # noqa: BLE001 -- a rack's crash is its status, not the fleet's
        result["exit_status"] = None
        log.write(traceback.format_exc())
        result["error"] = "".join(traceback.format_exception_only(exc)).strip()
    result["stopped_ns"] = time.time_ns()
    result["wall_s"] = round(time.monotonic() - t0, 3)
    result["log"] = log.getvalue()[-LOG_TAIL:]


def _add_run_folder(result: dict, out: Path, transfer: str) -> None:
    """The run folder the experiment wrote in `out` (the latest), if any: its name, where it
    is, its verdict, and as a tarball unless it stays where it is."""
    folders = sorted(p for p in out.iterdir() if (p / "manifest.json").exists())
    if folders:
        result["run_id"] = folders[-1].name
        result["run_path"] = str(folders[-1].absolute())   # where it was written, on `host`
        result.update(judged(folders[-1]))
        if transfer == "tarball":
            result["tarball"] = tar_folder(folders[-1])
