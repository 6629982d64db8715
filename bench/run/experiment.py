"""The bench an experiment receives: the rack, the reference, the run folder, the arm switch.

`run_experiment` owns a run's life: it starts the simulated rack when no rack file is given,
records provenance in the manifest before anything is measured, runs the experiment, and always
records how the run ended, whatever happened.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.config.inventory import InventoryError, RackConfig
from bench.config.loader import load_checked
from bench.config.rackfile import check_out, check_params
from bench.config.racklock import rack_lock
from bench.model import provenance
from bench.model.documents import Manifest
from bench.model.manifest import DeviceStart, RunEnd, RunEndedEarly, RunStart
from bench.model.outage import lost_devices, lost_line
from bench.model.run_statuses import RunStatus
from bench.model.rundata import bound_from_manifest, load_run
from bench.model.store import DiskFull, RunStore, new_run_id
from bench.model.summary import summarize_run
from bench.model.texttable import terminal_width, wrap
from bench.output.closing import (  # noqa: F401 (reference_line re-exported)
    closing_text,
    draws_figures,
    figure_clocks,
    reference_line,
)
from bench.output.terminal import Progress
from bench.reference.clock import Health, Reference, ReferenceRefused
from bench.reference.monitor import RunReference
from bench.run import admission
from bench.run.after import MIN_DEVICES, START_AFTER_S, AfterPool, Figures
from bench.run.catalog import load_experiment
from bench.run.probe import run_devices
from bench.run.runner import ProbePlan
from bench.run.signals import interrupt_on_signals
from bench.run.simproc import SimProcess
from bench.run.until_decided import UntilDecided
from bench.sim import DEFAULT_RACK

log = logging.getLogger(__name__)


@dataclass
class Bench:
    rack: RackConfig
    run_reference: RunReference
    store: RunStore
    armed: bool
    sim: SimProcess | None = None
    statuses: list = field(default_factory=list)
    summary: dict | None = None
    quiet: bool = False
    interrupted: bool = False       # the user stopped the probing; what was taken is summarised
    processes: int | None = None    # the runner's worker processes (None: runner.processes_for)
    until: UntilDecided | None = None   # --until-decided: probing stops once these are decided
    after: AfterPool | None = None      # workers for the fits and figures (bench.run.after)
    figures: Figures | None = None      # offset figures being drawn (plot(wait=False))
    offset_figures: bool = False        # --offset-figures: drawn whatever the rack's size

    @property
    def simulated(self) -> bool:
        return self.rack.simulated

    @property
    def reference(self) -> Reference:
        return self.run_reference.reference

    @property
    def health(self) -> Health:
        return self.run_reference.start

    def finish_reference(self) -> None:
        """Stop sampling the reference's health; its whole-run bound goes into the manifest."""
        if "reference_run" not in self.store.manifest:
            self.store.update_manifest(**self.run_reference.finish())

    def probe(self, plan: ProbePlan) -> list:
        """Probe every device of the rack under `plan`; identities go into the manifest."""
        from bench.output.live import LiveBounds

        live = LiveBounds(self.reference.now_ns())
        progress = Progress(plan.duration_s, live=live) if not self.quiet else None

        until = self.until

        def tick(statuses, elapsed_s):
            self._start_after(elapsed_s, plan.duration_s)
            live.update(statuses, elapsed_s)
            if until is not None:
                until.update(statuses, elapsed_s)
            if progress:
                progress(statuses, elapsed_s)

        self.store.update_manifest(probe_plan=asdict(plan), started_ns=self.reference.now_ns())
        t0 = time.monotonic()
        log.info("probing: %d device(s) for %g s", len(self.rack.devices), plan.duration_s)
        try:
            self.statuses, stopped = run_devices(
                list(self.rack.devices), self.reference.now_ns, self.store, plan, self.armed,
                on_tick=tick, seed=int(self.rack.options.get("seed", 0)),
                processes=self.processes, stop=until.stop if until is not None else None)
            self.interrupted |= stopped
        finally:
            if progress:
                progress.close()
            log.info("probing ended after %.2f s", time.monotonic() - t0)
            self.store.update_manifest(calibration=live.record())
            if until is not None:
                self.store.update_manifest(until_decided=until.record(plan.duration_s))
        if self.store.full is not None:
            raise self.store.disk_full()
        before = Manifest.of(self.store.manifest).devices
        self.store.update_devices({st.name: st.record(before.get(st.name)).to_dict()
                                   for st in self.statuses},
                                  probed_until_ns=self.reference.now_ns())
        return self.statuses

    def _start_after(self, elapsed_s: float, duration_s: float) -> None:
        """The after-probing workers started once the probing is under way (its devices opened:
        their imports then do not delay its first probes), so that they are ready when it ends;
        none for a small rack (bench.run.after.MIN_DEVICES)."""
        if self.after is None and len(self.rack.devices) >= MIN_DEVICES and \
                elapsed_s >= min(START_AFTER_S, duration_s / 2):
            self.after = AfterPool.start()

    @property
    def lab(self):
        """The experiment API (bench.run.lab.Lab): select, read, stimulate, set, wait,
        measure."""
        from bench.run.lab import lab_of
        return lab_of(self)

    def stop_sim(self) -> None:
        from bench.run.lab import close_lab
        close_lab(self)           # lab sessions end before the devices do
        if self.sim is not None:
            self.sim.__exit__()
            self.sim.move_truth(self.store.path)
            self.sim = None

    def summarize(self) -> dict:
        """Stop the simulated rack (its truth is written then), fit every clock, write summary."""
        t0 = time.monotonic()
        self.stop_sim()
        self.finish_reference()
        run = load_run(self.store.path)
        truth = run.truth.raw if run.truth is not None else None
        self.summary = summarize_run(self.store.path, self.store.manifest, truth,
                                     uncertainty_ns=bound_from_manifest(self.store.manifest),
                                     phase=True, map_devices=self.after.map if self.after else None)
        self.store.write_summary(self.summary)
        log.info("summary written after %.2f s", time.monotonic() - t0)
        return self.summary

    def plot(self, wait: bool = True) -> list[Path]:
        """The offset figures (plots/), drawn by the workers where there are some; `wait=False`:
        started, and waited for when the run ends (finish_plots), e.g. while the experiment
        scores what else it measured. None beyond bench.output.closing.FIGURES_UP_TO clocks
        unless asked (`offset_figures`): the closing output says how to draw them."""
        from bench.output.plots import offset_plots
        self.finish_plots()
        run = load_run(self.store.path)
        if not draws_figures(figure_clocks(run.summary), self.offset_figures):
            log.info("figures: %d clocks, not drawn (not asked)", figure_clocks(run.summary))
            return []
        self.figures = self.after.figures(run.path, run.summary.devices) if self.after else None
        if self.figures is None:
            return offset_plots(run)
        return self.finish_plots() if wait else []

    def finish_plots(self) -> list[Path]:
        """The figures plot(wait=False) started, waited for ([] when none are pending)."""
        figures, self.figures = self.figures, None
        if figures is None:
            return []
        t0 = time.monotonic()
        out = figures.result()
        log.info("figures: %d drawn, waited %.2f s for them", len(out), time.monotonic() - t0)
        return out

    def close_after(self) -> None:
        """The workers ended, and with them any figure still being drawn (the run ended before
        it waited for them: interrupted, failed)."""
        self.figures = None
        if self.after is not None:
            self.after.close()
            self.after = None


def make_params(exp, overrides: dict[str, str], given_as: dict[str, str] | None = None):
    """The experiment's Params dataclass, with `key=value` overrides cast to the field types
    and checked (InventoryError; `given_as`: the option a key came from, if not --param)."""
    return exp.Params(**check_params(exp, overrides, given_as))


def _ended_disk_full(store: RunStore, name: str, out: Path) -> str:
    """A run folder with less free space than the store's reserve: status disk_full at once;
    its one line to say. No run folder at all where not even the manifest fits
    (InventoryError)."""
    error = store.start_full().strerror
    store.write_manifest(RunEndedEarly(name, store.run_id, RunStatus.DISK_FULL, error).to_dict())
    store.close()
    if not (store.path / "manifest.json").exists():
        import shutil
        shutil.rmtree(store.path, ignore_errors=True)
        raise InventoryError(f"--out {out}: disk full: {error}")
    return f"rackclock run: disk full: {error}"


def _ended_failed(store: RunStore, name: str, lines: list[str]) -> str:
    """A run whose simulated rack did not start: status failed, its last log line as the error;
    its one line to say."""
    error = f"{lines[0].rstrip(':')} ({lines[-1].strip() if len(lines) > 1 else 'no output'}; " \
            f"log: {store.path / 'sim' / 'sim.log'})"
    store.write_manifest(RunEndedEarly(name, store.run_id, RunStatus.FAILED, error).to_dict())
    return f"experiment {name} failed: {error}"


def _lost_status(store: RunStore, devices: int, sim: SimProcess | None) -> tuple[str, str | None]:
    """`completed`, or `devices_lost` with its one line when devices went silent for more than
    bench.model.outage's share of the run (the list goes into the manifest's `devices_lost`)."""
    lost = lost_devices(store.path, store.manifest)
    if not lost:
        return RunStatus.COMPLETED, None
    store.update_manifest(devices_lost=lost)
    died = f"; the simulator ended mid-run (exit status {sim.died})" if sim and sim.died else ""
    return RunStatus.DEVICES_LOST, lost_line(lost, devices) + died


def _prepare(exp, name: str, rack_file: Path | None, overrides: dict[str, str],
             given_as: dict[str, str] | None):
    """The experiment's parameters, its name and the rack, all checked (InventoryError)."""
    params = make_params(exp, overrides, given_as)
    if getattr(exp, "__file__", None) and (name.endswith(".py") or "/" in name):
        name = Path(name).stem       # an experiment file outside the checkout: named by its stem
    rack = load_checked(rack_file or getattr(exp, "RACK", None) or DEFAULT_RACK)  # RACK: an
    # experiment's own simulated rack (e.g. a power topology), when no rack file is given
    return exp, params, name, rack


def _open_store(rack: RackConfig, name: str, out: Path) -> tuple[contextlib.ExitStack, RunStore]:
    """The run folder, and a lab rack held for this session (RackBusy when another holds it;
    released again when the folder cannot be made)."""
    held = contextlib.ExitStack()     # a lab rack: one session at a time (a busy one: RackBusy)
    if not rack.simulated and rack.source:
        held.enter_context(rack_lock(rack.source, wait_s=0, what=f"rackclock run {name}"))
    try:
        check_out(out)
        return held, RunStore(out, new_run_id(name))
    except BaseException:
        held.close()
        raise


def _start_sim(stack: contextlib.ExitStack, store: RunStore, rack: RackConfig,
               name: str) -> tuple[SimProcess | None, str | None]:
    """The simulated rack started for the run, or the run's one line when it did not start."""
    if not rack.source:               # a rack built in code: no file for the emulators to serve
        return None, _refuse(store, name, rack, "a simulated rack is served from its rack file: none")
    try:
        return stack.enter_context(SimProcess(Path(rack.source), store.path / "sim")), None
    except RuntimeError as exc:      # it did not start: a failed run, one line
        return None, _ended_failed(store, name, str(exc).splitlines())


def _refuse(store: RunStore, name: str, rack: RackConfig, error: str, **extra) -> str:
    """A run refused before anything was probed: status refused; its one line to say."""
    store.write_manifest(RunEndedEarly(name, store.run_id, RunStatus.REFUSED, error, extra,
                                       rack.public()).to_dict())
    store.close()
    return f"refused: {error}"


def _ended_early(store: RunStore, line: str) -> Path:
    """A run that ended before the experiment started: its line, then its folder."""
    print(line, file=sys.stderr)
    print(f"run folder: {store.path}")
    return store.path


def _admit(rack: RackConfig, params, calibration: Path | None,
           fit_rates: bool) -> tuple[RackConfig, admission.Admission]:
    """The rack's need against the bench's capacity (bench.run.admission); with `fit_rates`, a
    rack beyond it at rates scaled to fit."""
    adm = admission.assess(rack.devices, int(getattr(params, "burst", ProbePlan.burst)),
                           rack.simulated, calibration=calibration)
    if not adm.fits and fit_rates:
        rack, adm = admission.fit_rates(rack, adm)
    return rack, adm


def _start_manifest(store: RunStore, name: str, exp, params, rack: RackConfig,
                    rack_file: Path | None, armed: bool, rr: RunReference,
                    sim: SimProcess | None, adm: admission.Admission) -> None:
    """The manifest as the experiment starts: provenance, the rack, the reference, status
    running."""
    devices = {d.name: DeviceStart(d.plane, d.driver) for d in rack.devices}
    for n, why in (sim.failed.items() if sim else ()):
        devices[n] = DeviceStart("", error=why)
    store.write_manifest(RunStart(
        name, store.run_id, asdict(params), str(getattr(exp, "__file__", "") or ""),
        provenance.versions(), provenance.git_revision(), provenance.host(), sys.argv, armed,
        rack.simulated, str(rack_file) if rack_file else "default", rr.start.as_dict(),
        rack.public(), devices, rr.reference.now_ns(), RunStatus.RUNNING, os.getpid(),
        adm.as_dict()).to_dict())


def _until_for(until: UntilDecided | None, store: RunStore) -> UntilDecided | None:
    """--until-decided's watch with what its fits need: the run folder (the samples as they are
    written), the manifest as it stands, the reference's bound."""
    if until is None:
        return None
    from dataclasses import replace
    return replace(until, folder=store.path, manifest=lambda: store.manifest,
                   uncertainty_ns=bound_from_manifest(store.manifest))


def _summarize_what_was_taken(bench: Bench) -> None:
    """Stopped after the probing: what was taken is summarised (a failure journalled)."""
    if bench.summary is None:
        try:
            bench.summarize()
        except Exception as exc:
            bench.store.journal("-", "error", "summary", repr(exc))


def _execute(exp, bench: Bench, params, devices: int,
             sim: SimProcess | None) -> tuple[str, str | None]:
    """The experiment run, and summarised whatever it did; how it ended (status, error)."""
    store = bench.store
    try:
        exp.run(bench, params)
        bench.finish_plots()             # figures it left drawing (plot(wait=False))
        if bench.summary is None:        # every run ends summarised, whatever the experiment did
            bench.summarize()
        if bench.interrupted:
            return RunStatus.INTERRUPTED, None
        return _lost_status(store, devices, sim)
    except DiskFull as exc:
        return RunStatus.DISK_FULL, exc.strerror
    except KeyboardInterrupt:
        _summarize_what_was_taken(bench)
        return RunStatus.INTERRUPTED, None
    except Exception as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            store.failed(exc)            # the disk filled while summarising or plotting
            return RunStatus.DISK_FULL, store.disk_full().strerror
        store.journal("-", "error", "experiment", traceback.format_exc())
        return RunStatus.FAILED, "".join(traceback.format_exception_only(exc)).strip()


def _record_end(bench: Bench, status: str, error: str | None, t0: float,
                signals: list) -> None:
    """However the run ended: the simulator stopped, the reference's whole-run bound, the
    status in the manifest, the reserve released."""
    store = bench.store
    bench.stop_sim()
    bench.finish_reference()
    bench.close_after()
    store.update_manifest(**RunEnd(status, error, bench.reference.now_ns(),
                                   round(time.monotonic() - t0, 3),
                                   signals[0] if signals else "").to_dict())
    log.info("run %s %s%s", store.run_id, status, f": {error}" if error else "")
    store.close()


def _say_end(bench: Bench, adm: admission.Admission, name: str, status: str,
             error: str | None, quiet: bool, wide: bool) -> None:
    """The verdict first, then the closing table, late probes, how the run ended, the verdict
    again beside the folder (where a scrolled terminal ends)."""
    store, verdict = bench.store, ""
    if bench.summary and not quiet:
        verdict, closing = _closing(store, adm, wide)
        print(closing)
    late = _late_probes_line(store, wide)
    if late and not quiet:
        print(late)
    failure = _failure_line(name, status, error)
    if failure:
        print(failure, file=sys.stderr)
    if verdict:
        print(verdict)
    print(f"run folder: {store.path}")


def _closing(store: RunStore, adm: admission.Admission, wide: bool) -> tuple[str, str]:
    """(the verdict, the text to print: the verdict, the closing table, and the rates' scaling
    if --fit-rates scaled them)."""
    text, verdict = closing_text(store.path, wide)
    out = f"{verdict}\n\n{text}"
    if adm.fit_factor is not None:
        out += (f"\nrates scaled to {100 * adm.fit_factor:.0f} % of the rack file's by "
                f"--fit-rates ({adm.need_cores:.2f} of {adm.capacity_cores:.2f} cores)")
    return verdict, out


def _late_probes_line(store: RunStore, wide: bool) -> str:
    """The devices with late probes (started >= 10 ms after plan), wrapped; "" for none."""
    late = {n: d for n, d in Manifest.of(store.manifest).devices.items() if d.late_probes}
    if not late:
        return ""
    return "\n".join(wrap("late probes (started >= 10 ms after plan): " + ", ".join(
        f"{n} {d.late_probes}/{d.probes}" for n, d in sorted(late.items())),
        None if wide else terminal_width()))


def _failure_line(name: str, status: str, error: str | None) -> str:
    """How the run failed, for stderr (a full disk, lost devices, the experiment's error);
    "" when it did not."""
    if status == RunStatus.DISK_FULL:
        return f"rackclock run: disk full: {error}"
    if status == RunStatus.DEVICES_LOST:
        return f"rackclock run: devices lost: {error}"
    if error:
        return f"experiment {name} failed: {error}"
    return ""


def _rackless(exp, name: str, rack_file: Path | None, out: Path, overrides: dict[str, str],
              given_as: dict[str, str] | None, quiet: bool) -> Path | None:
    """A rack-less experiment (bench.run.rackless) run to its end; None for any other."""
    from bench.run.rackless import is_rackless, run_rackless
    if not is_rackless(exp):
        return None
    if rack_file is not None:
        raise InventoryError(f"{name} measures this host, not a rack: --rack has no use")
    stem = Path(name).stem if name.endswith(".py") or "/" in name else name
    return run_rackless(exp, stem, make_params(exp, overrides, given_as), out, quiet)


def run_experiment(name: str, rack_file: Path | None, out: Path, params_overrides: dict[str, str],
                   armed: bool = False, allowance_ns: int | None = None,
                   quiet: bool = False, processes: int | None = None, fit_rates: bool = False,
                   calibration: Path | None = None, wide: bool = False,
                   given_as: dict[str, str] | None = None,
                   until: UntilDecided | None = None, offset_figures: bool = False) -> Path:
    """Run one experiment; returns the run folder. Prints the closing table and the folder.
    Every problem of the rack file, the parameters or `out` is an InventoryError raised before
    anything starts (no run folder is made). A rack beyond the bench's capacity at its rates
    (bench.run.admission) is refused (status `refused`, the numbers in the manifest), or run at
    rates scaled to fit with `fit_rates`."""
    exp = load_experiment(name)
    rackless = _rackless(exp, name, rack_file, out, params_overrides, given_as, quiet)
    if rackless is not None:
        return rackless
    exp, params, name, rack = _prepare(exp, name, rack_file, params_overrides, given_as)
    held, store = _open_store(rack, name, out)
    log.info("run %s: experiment %s, rack %s", store.run_id, name, rack.source or "default")
    with contextlib.ExitStack() as stack:
        stack.enter_context(held)
        stack.callback(store.close)          # however the run ends, its reserve goes
        # less free than the reserve: nothing starts
        ended = _ended_disk_full(store, name, out) if store.full is not None else None
        signals = stack.enter_context(interrupt_on_signals())
        sim, rack, ended = _simulated(stack, store, rack, name, ended)
        if ended is not None:
            return _ended_early(store, ended)
        try:
            rr = RunReference.open(rack, allowance_ns, store.path)
        except ReferenceRefused as exc:
            return _ended_early(store, _refuse(store, name, rack, str(exc)))
        rack, adm = _admit(rack, params, calibration, fit_rates)
        if not adm.fits and not fit_rates:
            return _ended_early(store, _refuse(store, name, rack, adm.message(),
                                               admission=adm.as_dict()))
        armed = armed or rack.simulated   # stimuli on the simulated rack are always sent
        _start_manifest(store, name, exp, params, rack, rack_file, armed, rr, sim, adm)
        bench = Bench(rack, rr, store, armed, sim, quiet=quiet, processes=processes,
                      until=_until_for(until, store), offset_figures=offset_figures)
        status, error = _run_to_end(exp, bench, params, len(rack.devices), sim, signals)
    _say_end(bench, adm, name, status, error, quiet, wide)
    return store.path


def _simulated(stack: contextlib.ExitStack, store: RunStore, rack: RackConfig, name: str,
               ended: str | None) -> tuple[SimProcess | None, Any, str | None]:
    """For a simulated rack file (the default, a variant) and a run not ended yet: the
    simulator started, the rack it serves, and the run's one line if it did not start.
    Otherwise (None, the rack, `ended`)."""
    if ended is not None or not rack.simulated:
        return None, rack, ended
    sim, ended = _start_sim(stack, store, rack, name)
    if ended is not None or sim is None:
        return sim, rack, ended
    store.journal("", "info", "priority", f"simulator {sim.priority}")
    return sim, sim.rack, ended


def _run_to_end(exp, bench: Bench, params, devices: int, sim: SimProcess | None,
                signals: list) -> tuple[str, str | None]:
    """The experiment on the bench (_execute), its end recorded however it ends (_record_end);
    (status, error)."""
    t0 = time.monotonic()
    status: str = RunStatus.FAILED
    error: str | None = None
    try:
        status, error = _execute(exp, bench, params, devices, sim)
    except KeyboardInterrupt:        # a second Ctrl-C while summarising what was taken
        status = RunStatus.INTERRUPTED
        raise
    finally:
        _record_end(bench, status, error, t0, signals)
    return status, error
