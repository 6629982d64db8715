"""Ray for the fleet: an embedded local instance (every rack's resource declared on this machine,
so several simulated racks run side by side) or an existing cluster (`--address`), one task per
rack pinned by its custom resource, and the gathering as each rack ends.

Ray is an optional extra (`pip install 'rackclock[fleet]'`); it is imported only here, on use.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import sys
import time
from pathlib import Path

from tqdm import tqdm

from bench.errors import RackclockError
from bench.fleet.config import FleetConfig, FleetError
from bench.fleet.fleet_verdict import RAN, fleet_verdict, rack_verdict
from bench.fleet.gather import earlier_folders, gather, left_behind, probed_s, rack_dir, write_fleet_manifest
from bench.model import provenance
from bench.model.store import new_run_id
from bench.run.signals import interrupt_on_signals

POLL_S = 1.0
STOP_WAIT_S = 120.0     # after Ctrl-C: how long the racks get to summarise
CONNECT_S = 5.0         # --address: how long the head's port gets to accept a connection
JOIN_RETRIES = 3        # ... and Ray's GCS client its attempts (Ray's default: 20, ~1 s each)
RETRIES_ENV = "RAY_gcs_server_port_wait_time_s"    # Ray 2.60's budget of those attempts
RETRIES = 1             # a rack's task submitted again once when its worker or node died
RAY_GCS_WAIT = "RAY_gcs_rpc_server_reconnect_timeout_s"   # Ray's wait for a lost GCS (60 s),
# after which it ends the driver outright: the fleet declares the head lost at a quarter of it
INFRASTRUCTURE = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError")
ADDRESS = re.compile(r"\[?([A-Za-z0-9._:-]+?)\]?:(\d{1,5})")


def own_token() -> None:
    """The embedded instance's token. Ray 2.60 has no bind address: its GCS and raylet listen on
    every interface whatever the node's IP, so unless RAY_AUTH_MODE says otherwise the instance
    takes a random token of its own and nothing else on the network can run code on it. Ray
    reads the mode when imported: set before that, or not at all."""
    if "ray" not in sys.modules and not os.environ.get("RAY_AUTH_MODE"):
        os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))


def import_ray():
    try:
        import ray
    except ImportError:
        raise FleetError("rackclock fleet needs Ray, an optional extra: "
                         "pip install 'rackclock[fleet]'") from None
    return ray


def check_address(address: str) -> None:
    """HOST:PORT of a Ray head reached within CONNECT_S, else a FleetError in one line (Ray
    itself retries an unreachable address for a minute and more)."""
    m = ADDRESS.fullmatch(address)
    if not m:
        raise FleetError(f"--address {address!r}: expected the Ray head's HOST:PORT "
                         f"(e.g. head.lab:6379)")
    host, port = m.group(1), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=CONNECT_S).close()
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise FleetError(f"--address {address}: no Ray cluster answers there ({why}, within "
                         f"{CONNECT_S:g} s): is `ray start --head --port={port}` running on "
                         f"{host}, and the port open?") from None


def _causes(exc: BaseException) -> str:
    out: list[str] = []
    x: BaseException | None = exc
    while x is not None and len(out) < 5:
        out.append(f"{type(x).__name__}: {x}")
        x = x.__cause__ or x.__context__
    return "\n".join(out)


@contextlib.contextmanager
def _stderr_held():
    """File descriptor 2 (where Ray's C++ core logs) held in a temporary file within the block;
    what it holds then written to stderr, unless the block emptied it."""
    import tempfile
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            text = held.read().decode(errors="replace")
            if text:
                sys.stderr.write(text)


def join_ray(ray, address: str, quiet: dict) -> None:
    """ray.init on an existing cluster, Ray's own connection retries bounded (JOIN_RETRIES);
    a refusal in one line, token authentication explained when it is the cause."""
    check_address(address)
    os.environ.setdefault(RETRIES_ENV, str(JOIN_RETRIES))
    try:
        with _stderr_held() as held:   # Ray's core logs each failed attempt to stderr itself
            try:
                ray.init(address=address, **quiet)
            except BaseException:
                held.truncate(0)        # said in the one line below
                raise
    except Exception as exc:        # Ray's ConnectionError wraps the cause in its traceback text
        text = _causes(exc)
        if "InvalidAuthToken" in text or "AuthenticationError" in text:
            mode = os.environ.get("RAY_AUTH_MODE") or "disabled"
            raise FleetError(f"--address {address}: the Ray cluster refused this driver's "
                             f"authentication (RAY_AUTH_MODE here: {mode}): a cluster started "
                             f"by `ray start --head` on Ray 2.60 requires a token; set "
                             f"RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's (`ray "
                             f"get-auth-token` on the head)") from None
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FleetError(f"--address {address}: cannot join the Ray cluster: {line}") from None
    finally:
        if os.environ.get(RETRIES_ENV) == str(JOIN_RETRIES):
            del os.environ[RETRIES_ENV]


def start_ray(ray, fleet: FleetConfig, address: str | None, num_cpus: int | None) -> dict:
    """Start the embedded instance or join `address`; what the fleet manifest says of it."""
    quiet = {"include_dashboard": False, "log_to_driver": False,
             "configure_logging": True, "logging_level": "warning"}
    if address:
        join_ray(ray, address, quiet)
        mode = "joined"
    else:
        # address="local": a new instance even when RAY_ADDRESS or a running cluster is about
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1,
                 resources=fleet.resources(), **quiet)
        mode = "embedded"
    ctx = ray.get_runtime_context()
    nodes = [{"node_id": n["NodeID"], "host": n.get("NodeManagerHostname") or "?",
              "resources": dict(n.get("Resources") or {})} for n in ray.nodes() if n.get("Alive")]
    return {"version": ray.__version__, "mode": mode, "address": ctx.gcs_address,
            "auth": os.environ.get("RAY_AUTH_MODE") or "disabled",
            "driver_node_id": ctx.get_node_id(), "resources": ray.cluster_resources(),
            "nodes": nodes}


def rack_task(ray):
    # max_retries=0: the driver retries (RETRIES), so that each attempt is recorded; num_cpus
    # per rack in Launcher (the fleet file's `cpus`): a node runs as many racks as its CPUs hold
    @ray.remote(num_cpus=0, max_retries=0)
    def run_rack_task(entry, out: str, driver_node: str) -> dict:
        import ray as ray_here

        from bench.fleet.tasks import run_rack
        return run_rack(entry, out, driver_node, ray_here.get_runtime_context().get_node_id())
    return run_rack_task


def unplaceable(fleet: FleetConfig, cluster: dict, nodes: list[dict] | None = None
                ) -> dict[str, str]:
    """Racks whose resources no node of the cluster declares, or whose node has fewer CPUs than
    the rack asks for (Ray would wait for them forever)."""
    out = {}
    for r in fleet.racks:
        short = [f"{k} (needs {v:g}, cluster has {cluster.get(k, 0):g})" for k, v in r.resources
                 if cluster.get(k, 0) < v]
        if short:
            out[r.name] = ("no node of the Ray cluster declares " + ", ".join(short)
                           + f"; on the bench host that reaches rack {r.name}: ray start "
                           f"--address=HEAD:6379 --resources='{{\"{r.resources[0][0]}\": 1}}'")
            continue
        cpus = [n["resources"].get("CPU", 0) for n in hosts_of(r, nodes or [])]
        if cpus and max(cpus) < r.cpus:
            out[r.name] = (f"the rack asks for {r.cpus:g} CPU (fleet file `cpus`) and the node "
                           f"that declares its resource has {max(cpus):g}")
    return out


def hosts_of(rack, nodes: list[dict]) -> list[dict]:
    """The nodes that declare every custom resource of `rack`."""
    return [n for n in nodes if all(n["resources"].get(k, 0) >= v for k, v in rack.resources)]


def concurrency(fleet: FleetConfig, nodes: list[dict]) -> list[dict]:
    """Per node that can take racks: its CPUs, the racks it can take, and how many of them run
    at once at most (their `cpus` packed smallest first into the node's CPUs)."""
    out = []
    for n in nodes:
        racks = sorted((r for r in fleet.racks if hosts_of(r, [n])), key=lambda r: r.cpus)
        if not racks:
            continue
        cpu, used, k = n["resources"].get("CPU", 0), 0.0, 0
        for r in racks:
            if used + r.cpus > cpu + 1e-9:
                break
            used, k = used + r.cpus, k + 1
        out.append({"node_id": n["node_id"], "host": n["host"], "cpus": cpu,
                    "racks": len(racks), "at_once": k,
                    "rack_cpus": sorted({r.cpus for r in racks})})
    return out


def concurrency_lines(bounds: list[dict]) -> list[str]:
    return [f"  at most {b['at_once']} of {b['racks']} rack(s) at once on {b['host']} "
            f"({b['node_id'][:12]}, CPUs: {b['cpus']:g}; each rack asks for "
            f"{'/'.join(f'{c:g}' for c in b['rack_cpus'])} CPU: fleet file `cpus`)"
            + ("; the others queue" if b['at_once'] < b['racks'] else "") for b in bounds]


def _collect(ray, ref, name: str, fleet_dir: Path, manifest: dict, t0: float, quiet: bool,
             cancelled: bool = False, retry: bool = False) -> bool:
    """Gather one rack's finished (or cancelled) task into the fleet folder and fleet.json.
    True when the task died of the infrastructure (its worker or node) and `retry` (an attempt
    left): recorded among the rack's `earlier_attempts`, for the caller to submit again."""
    rec = manifest["racks"][name]
    try:
        record = gather(fleet_dir, ray.get(ref, timeout=0 if cancelled else None))
    except Exception as exc:        # the task's worker or node died, or it was cancelled
        record = {"status": "interrupted" if cancelled else "crashed",
                  "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        record.update(_partial_run(fleet_dir, name, rec))
        if not cancelled and retry and _infrastructure(ray, exc):
            rec.setdefault("earlier_attempts", []).append(record)
            rec.update(status="retrying", attempts=rec.get("attempts", 1) + 1)
            write_fleet_manifest(fleet_dir, manifest)
            _say(f"  {name}: {record['error']}; attempt {rec['attempts']} submitted", quiet)
            return True
        record["verdict"], record["reason"] = rack_verdict(record)
    rec.update(record)
    write_fleet_manifest(fleet_dir, manifest)
    _say(f"  {name}: {record['status']} after {time.monotonic() - t0:.1f} s"
         + (f" on {record.get('host')}" if record.get("host") else "")
         + (f" -- {record['error']}" if record.get("error") else ""), quiet)
    return False


def _partial_run(fleet_dir: Path, name: str, rec: dict) -> dict:
    """Where a task that died left its partial run: the run folder it wrote in place (not an
    earlier attempt's) with its probing time, else its scratch folder on another node."""
    runs = sorted(p for p in rack_dir(fleet_dir, name).glob("*/manifest.json"))
    if runs and runs[-1].parent.name not in earlier_folders(rec):   # written in place
        return {"run_folder": str(runs[-1].parent.relative_to(fleet_dir)),
                "probed_s": _probed(runs[-1])}
    if rec.get("scratch"):     # on another node: its partial run stays in its scratch
        return {"partial_run": rec["scratch"]}
    return {}


def _infrastructure(ray, exc: BaseException) -> bool:
    """Whether a task's failure is the cluster's (worker, raylet or node died), not the rack's
    (a rack's own failure is a result, never an exception: bench.fleet.tasks.run_rack)."""
    kinds = tuple(getattr(ray.exceptions, n) for n in INFRASTRUCTURE
                  if hasattr(ray.exceptions, n))
    return isinstance(exc, kinds)


def _probed(manifest_path: Path) -> float | None:
    """A partial run's probing time by its own manifest (None: unreadable or never probed)."""
    from bench import saferead
    from bench.model.documents import Manifest
    try:
        return probed_s(Manifest.of(saferead.load_object(manifest_path)))
    except (saferead.FileFault, OSError, ValueError):
        return None


class HeadLost(RackclockError):
    """The Ray head's GCS stopped answering (HeadWatch)."""


class HeadWatch:
    """Whether the cluster's GCS (the head) still accepts connections, tried at most once per
    POLL_S; HeadLost once it has not for `lost_s`. Ray's driver waits RAY_GCS_WAIT (60 s) for a
    lost GCS and then ends the process outright: this ends the fleet first, its state written."""

    def __init__(self, address: str):
        self.lost_s = head_lost_s()
        m = ADDRESS.fullmatch(address or "")
        self.where = (m.group(1), int(m.group(2))) if m else None
        self.address = address
        self.last_ok = self.last_try = time.monotonic()

    def check(self) -> None:
        now = time.monotonic()
        if self.where is None or now - self.last_try < POLL_S:
            return
        self.last_try = now
        try:
            socket.create_connection(self.where, timeout=POLL_S).close()
            self.last_ok = now
        except OSError as exc:
            if now - self.last_ok >= self.lost_s:
                raise HeadLost(f"the Ray head (GCS at {self.address}) has not answered for "
                               f"{now - self.last_ok:.0f} s ({exc.strerror or exc})") from None


def head_lost_s() -> float:
    """How long the GCS may not answer before the fleet declares its head lost: a quarter of
    Ray's own wait (RAY_GCS_WAIT, 60 s by default: 15 s), at least 2 s."""
    try:
        ray_wait = float(os.environ.get(RAY_GCS_WAIT) or 60)
    except ValueError:
        ray_wait = 60.0
    return max(2.0, min(15.0, ray_wait / 4))


def _lose_pending(pending: dict, fleet_dir: Path, manifest: dict, why: str) -> None:
    """The racks still running when the head was lost: abandoned, with what they left."""
    for name in pending.values():
        manifest["racks"][name] = left_behind(fleet_dir, name, manifest["racks"][name],
                                              f"not gathered: {why}")
    pending.clear()


def _say(line: str, quiet: bool) -> None:
    if not quiet:
        tqdm.write(line)          # above the racks' progress bar


def _new_fleet(fleet: FleetConfig, fleet_text: str, out: Path) -> tuple[Path, dict]:
    """The fleet folder with its fleet.toml and first fleet.json; the manifest as written."""
    fleet_dir = out / new_run_id(f"fleet-{fleet.name}")
    from bench import safeio
    with safeio.Folder.open(out, create=True) as top, top.new_sub(fleet_dir.name) as d:
        d.write_text("fleet.toml", fleet_text)
    manifest = {"fleet": fleet.name, "fleet_id": fleet_dir.name, "fleet_file": fleet.source,
                "fleet_base": fleet.base, "status": "starting",
                "versions": {**provenance.versions(), "ray": None},
                "git": provenance.git_revision(), "host": provenance.host(), "argv": sys.argv,
                "pid": os.getpid(), "started_ns": time.time_ns(),
                "racks": {r.name: {**r.public(), "status": "pending"} for r in fleet.racks}}
    write_fleet_manifest(fleet_dir, manifest)
    return fleet_dir, manifest


def scratch_of(fleet_dir: Path, name: str) -> str:
    """Where a rack's task writes its run before sending it (transfer `tarball`; removed there
    once sent): in the bench host's temporary folder, named by rack and fleet (bench.fleet.tasks)."""
    return f"TMPDIR/rackclock-fleet-{name}-{fleet_dir.name}-*"


class Launcher:
    """Submits a rack's task (again, on a retry), pinned by its resources and asking for its
    CPUs; counts each rack's retries (RETRIES per command)."""

    def __init__(self, ray, fleet: FleetConfig, fleet_dir: Path, driver_node: str):
        self.task = rack_task(ray)
        self.entries = {r.name: r for r in fleet.racks}
        self.fleet_dir, self.driver_node = fleet_dir, driver_node
        self.retries: dict[str, int] = {}

    def __call__(self, name: str):
        r = self.entries[name]
        return self.task.options(resources=dict(r.resources), num_cpus=r.cpus,
                                 name=f"rack:{r.name}").remote(
            r, str(rack_dir(self.fleet_dir, r.name)), self.driver_node)

    def retry_left(self, name: str) -> bool:
        self.retries[name] = self.retries.get(name, 0) + 1
        return self.retries[name] <= RETRIES


def _submit(ray, fleet: FleetConfig, fleet_dir: Path, manifest: dict, pending: dict,
            quiet: bool) -> Launcher:
    """Record the racks no node can take as unplaceable; submit a task for each other rack
    still `pending` (into `pending`: task -> rack); say how many run at once where."""
    info = manifest["ray"]
    _say(f"ray {ray.__version__} ({info['mode']}, {info['address']}): "
         f"{len(fleet.racks)} rack(s)", quiet)
    todo = FleetConfig(fleet.name, tuple(r for r in fleet.racks
                                         if manifest["racks"][r.name]["status"] == "pending"))
    info["concurrency"] = concurrency(todo, info.get("nodes", []))
    for line in concurrency_lines(info["concurrency"]):
        _say(line, quiet)
    for name, why in unplaceable(todo, info["resources"], info.get("nodes")).items():
        manifest["racks"][name].update(status="unplaceable", error=why)
        _say(f"  {name}: unplaceable: {why}", quiet)
    launch = Launcher(ray, fleet, fleet_dir, info["driver_node_id"])
    for r in todo.racks:
        rec = manifest["racks"][r.name]
        if rec["status"] != "pending":
            continue
        pending[launch(r.name)] = r.name
        rec.update(status="submitted", attempts=rec.get("attempts", 0) + 1,
                   scratch=scratch_of(fleet_dir, r.name))
    write_fleet_manifest(fleet_dir, manifest)
    return launch


def _wait_all(ray, pending: dict, fleet_dir: Path, manifest: dict, t0: float,
              quiet: bool, launch: Launcher) -> None:
    """Gather each rack as its task ends, under a progress bar of the racks; a rack whose
    task died of the infrastructure submitted again (RETRIES)."""
    with tqdm(total=len(pending), unit="rack", disable=quiet or None,
              bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} racks [{elapsed}] {postfix}"
              ) as bar:
        head = HeadWatch(manifest["ray"]["address"])
        while pending:
            head.check()
            bar.set_postfix_str("running: " + ", ".join(sorted(pending.values())),
                                refresh=False)
            done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            for ref in done:
                name = pending.pop(ref)
                if _collect(ray, ref, name, fleet_dir, manifest, t0, quiet,
                            retry=launch.retry_left(name)):
                    pending[launch(name)] = name
                else:
                    bar.update(1)
            bar.refresh()


def _cancel_all(ray, pending: dict, fleet_dir: Path, manifest: dict, t0: float,
                quiet: bool) -> None:
    """Ctrl-C: every running rack's task cancelled; what returns within STOP_WAIT_S gathered."""
    _say(f"interrupted: Ray is asked to cancel the racks' tasks; what they return within "
         f"{STOP_WAIT_S:g} s is gathered, then Ray stops", quiet)
    for ref in pending:
        ray.cancel(ref)   # a KeyboardInterrupt in the task: `rackclock run`'s own stop
        # (summarised, interrupted); tests/test_fleet.py checks a running rack stops
    if pending:
        ray.wait(list(pending), num_returns=len(pending), timeout=STOP_WAIT_S)
    for ref in list(pending):
        _collect(ray, ref, pending.pop(ref), fleet_dir, manifest, t0, quiet, cancelled=True)


def conclude(manifest: dict, status: str) -> None:
    """The fleet's final status and verdict in its manifest: `completed` only when every rack's
    run completed (else `incomplete`, naming the racks); each rack's verdict and the fleet's."""
    racks = manifest["racks"]
    for rec in racks.values():
        if "verdict" not in rec or rec.get("status") not in RAN:
            rec["verdict"], rec["reason"] = rack_verdict(rec)
    left = sorted(n for n, rec in racks.items() if rec.get("status") not in RAN)
    if status == "completed" and left:
        status = "incomplete"
    manifest.update(status=status, incomplete=left, racks_completed=len(racks) - len(left))
    manifest["verdict"], manifest["reason"] = fleet_verdict(racks)


def run_fleet(fleet: FleetConfig, fleet_text: str, out: Path, address: str | None = None,
              num_cpus: int | None = None, quiet: bool = False) -> Path:
    """Run every rack of `fleet` as a Ray task; returns the fleet folder. One rack failing is
    recorded in fleet.json and the others go on. Ray that cannot be started or joined is a
    FleetError before any fleet folder is made."""
    # absolute on the driver: a rack's task resolves a relative path against its worker's
    # folder, which is the folder `ray start` ran in, even on the driver's own node
    out = Path(out).resolve()
    return drive(fleet, lambda: _new_fleet(fleet, fleet_text, out), address, num_cpus, quiet)


def drive(fleet: FleetConfig, open_fleet, address: str | None, num_cpus: int | None,
          quiet: bool) -> Path:
    """Start or join Ray, then `open_fleet()` (the fleet folder and its manifest, racks to run
    `pending`), run those racks and gather them; the fleet's final state written on every way
    out this process has (a return, an exception, a signal)."""
    if address is None:
        own_token()
    ray = import_ray()
    t0 = time.monotonic()
    try:
        info = start_ray(ray, fleet, address, num_cpus)
    except BaseException:
        _shutdown(ray)
        raise
    info["init_s"] = round(time.monotonic() - t0, 3)
    status = "failed"
    pending: dict = {}
    with contextlib.ExitStack() as stack:
        stack.callback(_shutdown, ray)
        # after ray.init, which sets its own SIGTERM handler (an exit): SIGTERM and SIGHUP
        # stop the fleet as Ctrl-C does, as they stop `rackclock run`
        stack.enter_context(interrupt_on_signals())
        fleet_dir, manifest = open_fleet()
        manifest.update(ray=info, status="running", pid=os.getpid(), host=provenance.host())
        manifest["versions"]["ray"] = ray.__version__
        try:
            launch = _submit(ray, fleet, fleet_dir, manifest, pending, quiet)
            _wait_all(ray, pending, fleet_dir, manifest, t0, quiet, launch)
            status = "completed"
        except KeyboardInterrupt:
            status = "interrupted"
            _cancel_all(ray, pending, fleet_dir, manifest, t0, quiet)
        except HeadLost as exc:
            status, manifest["error"] = "head_lost", str(exc)
            _lose_pending(pending, fleet_dir, manifest, str(exc))
            _say(f"{exc}: the fleet ends here; `rackclock fleet resume {fleet_dir}` reruns "
                 f"what did not complete", quiet)
            stack.pop_all()
            stack.callback(_shutdown, ray, head_lost_s())   # bounded: it may wait for the head
        except BaseException as exc:
            manifest["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            manifest.update(stopped_ns=time.time_ns(),
                            duration_s=round(time.monotonic() - t0, 3))
            conclude(manifest, status)
            write_fleet_manifest(fleet_dir, manifest)
    return fleet_dir


def _shutdown(ray, within: float | None = None) -> None:
    """ray.shutdown(); `within`: given that long in a thread of its own, then left (a lost
    head's cluster may never answer it)."""
    if not ray.is_initialized():
        return
    if within is None:
        ray.shutdown()
        return
    import threading
    t = threading.Thread(target=ray.shutdown, daemon=True, name="ray-shutdown")
    t.start()
    t.join(within)
