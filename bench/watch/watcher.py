"""`rackclock watch`: the rack probed until stopped, each day a run folder, the live bounds as
metrics and as a mapping service (docs/DESIGN.md, "Watching a rack").

The main thread keeps the time: it rolls the day, refits the clocks that took reads (the
alerts follow each fit), follows the reference's health, and on SIGHUP reloads the rack file.
The probing is the runner's (bench/watch/supervisor.py), the serving bench/watch/server.py's.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.config.inventory import InventoryError
from bench.config.loader import load_checked
from bench.config.rackfile import check_out
from bench.config.racklock import RackBusy, rack_lock
from bench.model.run_statuses import RunStatus
from bench.model.store import write_json
from bench.watch.alerts import Alerts
from bench.watch.mapping import Mapper
from bench.watch.metrics import registry
from bench.watch.resume import killed_days, resume, save_breaks, summarize_killed
from bench.watch.retention import KEEP_DAYS, PACK_AFTER_DAYS, tidy
from bench.watch.rolling import Day, RollingStore, day_manifest
from bench.watch.server import Server
from bench.watch.state import WatchState
from bench.watch.supervisor import Supervisor, polite, watch_plan

log = logging.getLogger(__name__)
DAY_S = 86400.0
STATE_FILE = "watch.json"


@dataclass
class Options:
    rack_file: Path | None
    out: Path
    host: str = "127.0.0.1"
    port: int = 9473
    rates: dict = field(default_factory=dict)
    roll_every_s: float | None = None      # None: at UTC midnight
    fit_every_s: float = 30.0
    health_every_s: float = 5.0
    allowance_ns: int | None = None
    argv: list = field(default_factory=list)
    pack_after_days: float = PACK_AFTER_DAYS
    keep_days: float = KEEP_DAYS


def next_roll_ns(now_ns: int, opts: Options, started_ns: int) -> int:
    if opts.roll_every_s:
        step = int(opts.roll_every_s * 1e9)
        return started_ns + ((now_ns - started_ns) // step + 1) * step
    day = int(DAY_S * 1e9)
    return (now_ns // day + 1) * day


def priors_of(rack) -> dict:
    """Per device the inventory's fit settings the summary uses (drift prior, wander, lag)."""
    return {d.name: {k: d.options[k] for k in ("drift_prior_ppm", "wander_ppm", "tick_lag_ms")
                     if k in d.options} for d in rack.devices}


class Serving:
    """The endpoint from the watch's first moment, before anything slow: the rack file's devices
    declared (each has its series at once), /metrics and /healthz answered while the rest
    starts (the drivers checked, the simulator started, the day opened, the devices' reads
    read back from the day folders); `rackclock_watch_starting` says 1 until they are probed.
    A start after kill -9 answered in 11.7-16.7 s at load 20 when all that came first."""

    def __init__(self, opts: Options, rack):
        self.opts = opts
        self.state = WatchState(time.time_ns, priors_of(rack))      # rebased on the reference
        self.state.starting = True
        self.state.states = lambda: dict.fromkeys(self.state.devices, "starting")
        self.state.declare([(d.name, d.plane) for d in rack.devices])
        self.closed: list[Path] = []
        self.mapper = Mapper(self.state, lambda: list(self.closed))
        self.server = Server(registry(self.state), self.mapper, opts.host, opts.port)
        self.server.start()
        self.url = f"http://{opts.host}:{self.server.port}"
        write_json(opts.out / STATE_FILE, {"pid": os.getpid(), "url": self.url, "day": None,
                                           "closed": [], "devices": [], "starting": True})


class Watch:
    def __init__(self, opts: Options, rack, reference, health, sim=None,
                 serving: Serving | None = None):
        self.opts, self.rack, self.reference, self.sim = opts, rack, reference, sim
        serving = serving or Serving(opts, rack)
        self.state = serving.state
        self.state.rebase(reference.now_ns)
        self.state.priors.update(priors_of(rack))
        self.state.set_reference(health)
        self.stop, self.reload = threading.Event(), threading.Event()
        self.stopped_by: str | None = None
        self.closed = serving.closed
        self._state_lock = threading.Lock()
        self._summarizing: threading.Thread | None = None
        self.plan = watch_plan()
        self.devices = [polite(d, opts.rates) for d in rack.devices]
        for name in set(self.state.devices) - {d.name for d in self.devices}:
            self.state.forget(name)        # a simulated rack's served file names the same
        self.state.declare([(d.name, d.plane) for d in self.devices])
        self.mapper, self.server = serving.mapper, serving.server
        try:
            self._open(rack, reference, health)
        except BaseException:
            self.server.stop()
            raise

    def _open(self, rack, reference, health) -> None:
        opts = self.opts
        self.base = day_manifest(rack, self.plan, opts.argv, str(opts.rack_file or "default"),
                                 {"watch": {"roll_every_s": opts.roll_every_s}})
        self.resumed: dict[str, int] = {}
        self.store = RollingStore(self.state, self._new_day)
        self.alerts = Alerts(self.store.journal, rack.limits)
        self.alerts.reference(health)
        self.sup = Supervisor(reference.now_ns, self.store, self.plan,
                              int(rack.options.get("seed", 0)))

    def _new_day(self) -> Day:
        """The next day's folder, its manifest naming the devices probed now."""
        m = json.loads(json.dumps(self.base))
        m["inventory"]["devices"] = {d.name: d.public() for d in self.devices}
        m["devices"] = {d.name: {"plane": d.plane, "driver": d.driver} for d in self.devices}
        m["runner"]["devices"] = len(self.devices)
        m["watch"]["rates_hz"] = {d.name: d.rate_hz for d in self.devices}
        return Day(self.opts.out, self.reference, self.state.reference,
                   {**m, "health_every_s": self.opts.health_every_s})

    def url(self) -> str:
        return f"http://{self.opts.host}:{self.server.port}"

    def write_state(self) -> None:
        """watch.json, rewritten atomically (the main thread and a closing day's thread)."""
        with self._state_lock:
            write_json(self.opts.out / STATE_FILE, {
                "pid": os.getpid(), "url": self.url(), "day": str(self.store.path),
                "closed": [str(p) for p in self.closed], "devices": sorted(self.sup.probed),
                "starting": self.state.starting})

    def resume(self) -> None:
        """The clocks' latest reads from the day folders (before the devices are probed); a
        killed watch's last day summarised by a child meanwhile."""
        rack_file = self.base["rack_file"]
        killed = killed_days(self.opts.out, rack_file)
        self.resumed = resume(self.opts.out, rack_file, self.state,
                              {d.name for d in self.devices})
        if killed:
            self._summarizing = threading.Thread(target=summarize_killed, args=(killed,),
                                                 name="watch-summarize-killed", daemon=True)
            self._summarizing.start()

    def run(self) -> int:
        for d, n in self.resumed.items():
            self.store.journal(d, "info", "resume", f"{n} reads of the current segments "
                                                    f"resumed from the day folders")
        self.sup.apply(self.devices)
        self.state.states = self.sup.states
        self.state.starting = False
        self.write_state()
        log.info("watch: %d devices, serving %s, day %s", len(self.devices), self.url(),
                 self.store.path)
        start = self.reference.now_ns()
        roll_at = next_roll_ns(start, self.opts, start)
        fit_at = 0.0
        try:
            while not self.stop.wait(0.2):
                if self.reload.is_set():
                    self.reload.clear()
                    self._reload()
                if self.reference.now_ns() >= roll_at:
                    roll_at = next_roll_ns(self.reference.now_ns(), self.opts, start)
                    self._roll()
                if time.monotonic() >= fit_at:
                    fit_at = time.monotonic() + self.opts.fit_every_s
                    self._refit()
        finally:
            self._close()
        return 0

    def _refit(self) -> None:
        mon = self.store.day.monitor
        if mon.samples:
            h = mon.samples[-1]
            self.state.set_reference(h)
            self.alerts.reference(h)
        said = False
        for device, clock, c in self.state.due():
            if self.stop.is_set():
                break
            new = self.state.refit(device, clock, c)
            said = said or bool(new)
            self.alerts.breaks(device, clock, new)
            self.alerts.crossed(device, clock, c)
            self.alerts.stuck(device, clock, c)
        if said:                        # a restarted watch does not say these again
            save_breaks(self.opts.out, self.state.breaks_said())
        self.sup.trim()

    def _roll(self) -> None:
        old = self.store.roll()
        self.write_state()
        records = self.sup.records()

        def close():
            self.closed.append(old.close(records, RunStatus.COMPLETED, None))
            self._tidy()
            self.write_state()
            log.info("watch: day %s closed", old.path)
        threading.Thread(target=close, name="watch-close-day", daemon=True).start()

    def _tidy(self) -> None:
        """The closed days packed after a day and removed after --keep-days."""
        packed, gone = tidy(self.opts.out, self.opts.pack_after_days * DAY_S,
                            self.opts.keep_days * DAY_S)
        if gone:
            self.closed[:] = [p for p in self.closed if p not in gone]
        for p in packed + gone:
            log.info("watch: day %s %s", p, "removed" if p in gone else "packed")

    def _reload(self) -> None:
        """SIGHUP: the rack file again; devices added, removed or changed, the others untouched."""
        if self.rack.simulated or self.opts.rack_file is None:    # None: the default, simulated
            self.store.journal("", "warn", "reload", "the simulated rack is served as started: "
                                                     "SIGHUP reloads a lab rack file only")
            return
        try:
            rack = load_checked(self.opts.rack_file)
        except InventoryError as exc:
            self.store.journal("", "error", "reload", f"rack file kept as it was: {exc}")
            log.warning("watch: reload refused: %s", exc)
            return
        self.devices = [polite(d, self.opts.rates) for d in rack.devices]
        self.state.priors.update(priors_of(rack))
        self.alerts.limits = rack.limits
        added, removed = self.sup.apply(self.devices)
        for n in removed:
            if n not in added:
                self.state.forget(n)
        self.state.declare([(d.name, d.plane) for d in self.devices])
        self.store.journal("", "info", "reload", f"added or changed {sorted(added)}, "
                                                 f"removed {sorted(set(removed) - set(added))}")
        self.write_state()

    def _truth(self, path: Path) -> None:
        """The simulator stops (writing its truth) and its truth goes into the last day."""
        self.sim.__exit__()
        self.sim.move_truth(path)

    def _close(self) -> None:
        self.sup.stop_all()
        self.server.stop()
        truth = self._truth if self.sim is not None else None
        for t in threading.enumerate():
            if t.name in ("watch-close-day", "watch-summarize-killed"):
                t.join(600)
        day = self.store.day
        self.closed.append(day.close(self.sup.records() or {}, RunStatus.INTERRUPTED
                                     if self.stopped_by else RunStatus.COMPLETED,
                                     self.stopped_by, truth))
        self.write_state()


@contextlib.contextmanager
def on_signals(w: Watch):
    def stop(signum, frame):
        w.stopped_by = w.stopped_by or signal.Signals(signum).name
        w.stop.set()

    def hup(signum, frame):
        w.reload.set()
    old = {s: signal.signal(s, h) for s, h in ((signal.SIGTERM, stop), (signal.SIGINT, stop),
                                              (signal.SIGHUP, hup))}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def watch(opts: Options, say=lambda text: None) -> int:
    """Run the watch until SIGTERM/SIGINT; InventoryError / ReferenceRefused / RackBusy before
    the devices are probed (the endpoint, serving from the first moment, stops; watch.json is
    removed). `say(text)`: the command's line once the start is accepted (where to scrape)."""
    from bench.config.inventory import load_rack
    from bench.sim import DEFAULT_RACK

    path = Path(opts.rack_file or DEFAULT_RACK)
    declared = load_rack(path)           # the devices' names: served before the drivers load
    raise_file_limit()
    check_out(opts.out)
    with contextlib.ExitStack() as stack:
        hold_out(stack, opts.out)
        serving = Serving(opts, declared)
        stack.callback(serving.server.stop)
        try:
            w = _start(opts, path, serving, stack)
        except BaseException:
            (opts.out / STATE_FILE).unlink(missing_ok=True)    # no url of a watch that is not
            raise
        say(f"rackclock watch: {len(w.devices)} devices; metrics {w.url()}/metrics, "
            f"mapping {w.url()}/v1/map; day folders in {opts.out}")
        w.resume()
        return w.run()


def _start(opts: Options, path: Path, serving: Serving, stack: contextlib.ExitStack) -> Watch:
    """What the start does while it serves: the rack file checked against the drivers (and
    locked), the simulated rack started, the reference made, the day opened."""
    from bench.reference.clock import reference_for_run
    from bench.run.simproc import SimProcess

    rack = load_checked(path)
    if not rack.simulated and rack.source:
        stack.enter_context(rack_lock(rack.source, wait_s=0, what="rackclock watch"))
    sim = None
    if rack.simulated:
        sim_dir = opts.out / "watch-sim"
        shutil.rmtree(sim_dir, ignore_errors=True)     # an earlier watch's files: never waited on
        sim = stack.enter_context(SimProcess(Path(rack.source or path), sim_dir))
        if sim.rack is None:
            raise RuntimeError("the simulated rack started without its rack file")
        rack = sim.rack
    ref, health = reference_for_run(rack.reference, opts.allowance_ns, rack.simulated,
                                    ptp_uds=rack.options.get("ptp_uds", "auto"),
                                    domain=int(rack.options.get("ptp_domain", 0)))
    stack.callback(ref.close)
    w = Watch(opts, rack, ref, health, sim, serving)
    stack.enter_context(on_signals(w))
    return w


def raise_file_limit() -> None:
    """The soft limit on open files up to the hard one: the devices' sockets and the endpoint's
    clients (at most bench/watch/guard.MAX_CONNECTIONS) never meet a 1024 default."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY
                                                        else max(soft, 65536), hard))


def hold_out(stack: contextlib.ExitStack, out: Path) -> None:
    """One watch per --out (its day folders, watch.json and watch-sim are that watch's own): a
    second is refused at once, in one line naming the holder."""
    lock = rack_lock(Path(out).resolve() / STATE_FILE, wait_s=0,
                     what=f"rackclock watch --out {out}")
    try:
        stack.enter_context(lock)
    except RackBusy as exc:
        text = str(exc)
        if "in use by another session (" not in text:
            raise
        holder = text.split("in use by another session (", 1)[1].rsplit("); waited", 1)[0]
        raise RackBusy(f"--out {out} is watched by another watch ({holder})") from None
