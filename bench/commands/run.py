"""`rackclock run [EXPERIMENT]`: run an experiment (bench/run/experiment.py), the default command;
its exit status is the run's closing verdict by the one exit table (bench/model/outcomes.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.commands import OneLineParser
from bench.model.outcomes import ALLOW_UNDECIDED_HELP, exit_table_text

HELP = "run an experiment (default: clock_offset on the simulated rack)"


def _run(a) -> int:
    from bench.config.inventory import InventoryError
    from bench.config.rackfile import parse_allowance
    from bench.config.racklock import RackBusy
    from bench.run.experiment import run_experiment
    from bench.safeio import UnsafeFolder

    try:
        overrides = _overrides(a)
        until = _until(a, overrides)
        if a.decide:
            overrides.update(_planned(a, overrides))
        allowance = parse_allowance(a.reference_allowance)
        if a.rack is None and a.arm:
            print("--arm has no effect on the simulated rack (its stimuli are always sent)",
                  file=sys.stderr)
        path = run_experiment(a.experiment, a.rack, a.out, overrides, armed=a.arm,
                              allowance_ns=allowance, quiet=a.quiet, processes=a.processes,
                              fit_rates=a.fit_rates, calibration=a.calibration, wide=a.wide,
                              given_as={"duration_s": "--duration" if a.duration else
                                        "--until-decided"} if a.duration or until else None,
                              until=until, offset_figures=a.offset_figures)
    except (InventoryError, RackBusy, UnsafeFolder) as exc:
        print(f"rackclock run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rackclock run: stopped before measuring began", file=sys.stderr)
        return 1
    import atexit
    import gc

    from bench.model.rundata import load_run
    atexit.unregister(gc.freeze)     # the run's heap is left to the exit: the interpreter's last
    atexit.register(gc.freeze)       # collection walked it for ~2 s at load 17 (issue 46 item 1)
    return run_exit_status(load_run(path), a.allow_undecided)


def _overrides(a) -> dict[str, str]:
    """The experiment's parameters given: --param KEY=VALUE, and --duration."""
    from bench.config.inventory import InventoryError
    from bench.config.rackfile import check_duration
    bad = [p for p in a.param if "=" not in p]
    if bad:
        raise InventoryError(f"--param {bad[0]!r}: expected KEY=VALUE")
    overrides = dict(p.split("=", 1) for p in a.param)
    if a.duration is not None:
        try:
            duration = float(a.duration)
        except ValueError:
            raise InventoryError(f"--duration {a.duration!r} is not a number of seconds") \
                from None
        overrides["duration_s"] = str(check_duration(duration))
    return overrides


def _max_duration(a, default: float) -> float:
    from bench.config.inventory import InventoryError
    from bench.config.rackfile import check_duration
    if a.max_duration is None:
        return default
    try:
        seconds = check_duration(float(a.max_duration))
    except ValueError:
        raise InventoryError(f"--max-duration {a.max_duration!r} is not a number of seconds") \
            from None
    return default if seconds is None else seconds


def _until(a, overrides: dict[str, str]):
    """--until-decided: the watch that stops the probing once the named clocks' drifts are
    decided (bench.run.until_decided); the run's duration is the ceiling (--max-duration, else
    UNTIL_CEILING_S; --duration, when given, is the ceiling)."""
    from bench.config.inventory import InventoryError
    if a.until_decided is None:
        if a.decided_ppm is not None:
            raise InventoryError("--decided-ppm is an option of --until-decided")
        return None
    from bench.run.until_decided import UntilDecided
    if a.decide:
        raise InventoryError("--until-decided and --decide: one of them")
    ppm = _decided_ppm(a.decided_ppm)
    if a.duration is None:
        overrides["duration_s"] = str(_max_duration(a, UNTIL_CEILING_S))
    names = tuple(x.strip() for x in a.until_decided.split(",") if x.strip())
    if names:
        _known_devices(a, names)
    return UntilDecided(names, ppm)


def _decided_ppm(text: str | None) -> float | None:
    from bench.config.inventory import InventoryError
    if text is None:
        return None
    try:
        ppm = float(text)
    except ValueError:
        ppm = -1.0
    if not 0 < ppm < 1e6:
        raise InventoryError(f"--decided-ppm {text!r}: a width in ppm above 0")
    return ppm


def _known_devices(a, names: tuple[str, ...]) -> None:
    """Every DEVICE or DEVICE.CLOCK of --until-decided names a device of the rack."""
    from bench.config.inventory import InventoryError, load_rack
    from bench.sim import DEFAULT_RACK
    devices = {d.name for d in load_rack(a.rack or DEFAULT_RACK).devices}
    bad = [n for n in names if n.partition(".")[0] not in devices]
    if bad:
        raise InventoryError(f"--until-decided {bad[0]!r}: no such device in the rack "
                             f"(DEVICE or DEVICE.CLOCK; devices: {', '.join(sorted(devices))})")


UNTIL_CEILING_S = 1800.0


def _measures(text: str, decidable: tuple[str, ...]) -> tuple[str, ...]:
    """--decide's measures, each one the plan can decide."""
    from bench.config.inventory import InventoryError
    decide = tuple(x.strip() for x in text.split(",") if x.strip())
    if not decide or any(x not in decidable for x in decide):
        raise InventoryError(f"--decide {text!r}: measures to decide are "
                             f"{', '.join(decidable)} (comma-separated)")
    return decide


def _poll_s(overrides: dict[str, str]) -> float:
    from bench.config.inventory import InventoryError
    try:
        return float(overrides.get("watch_poll_s", 0.1))
    except ValueError:
        raise InventoryError(f"--param watch_poll_s={overrides['watch_poll_s']!r}: "
                             "a number of seconds") from None


def _planned(a, overrides: dict[str, str]) -> dict[str, str]:
    """--decide: the regression run's plan (bench.compare.plan), printed before the run starts;
    the duration and stimulus interval it sets, unless given."""
    from bench.compare.plan import DECIDABLE, plan_run
    from bench.compare.tolerances import ToleranceError
    from bench.compare.verdicts import load_tolerances
    from bench.config.inventory import InventoryError, load_rack
    from bench.model.rundata import load_run
    from bench.sim import DEFAULT_RACK

    decide = _measures(a.decide, DECIDABLE)
    try:
        tol = load_tolerances(a.tolerances)
        base = load_run(a.baseline) if a.baseline else None
    except (FileNotFoundError, ToleranceError) as exc:
        raise InventoryError(str(exc)) from None
    poll_s = _poll_s(overrides)
    plan = plan_run(load_rack(a.rack or DEFAULT_RACK), tol, decide, base,
                    _max_duration(a, 7200.0), poll_s=poll_s)
    print("\n".join(plan.lines()), flush=True)
    out = {"duration_s": str(plan.duration_s)} if a.duration is None else {}
    if plan.stimulus_every_s and "stimulus_every_s" not in overrides:
        out["stimulus_every_s"] = str(plan.stimulus_every_s)
    return out


def run_exit_status(run, allow_undecided: bool = False) -> int:
    """The run's closing verdict by the one exit table (bench.model.outcomes): 1 when the run did
    not complete, a device gave no usable read or the verdict is FAIL; 3 when it is UNDECIDED or
    no clock was measured (every clock stuck or unread), 0 with --allow-undecided; else 0."""
    from bench.model.outcomes import exit_code
    from bench.model.run_statuses import RunStatus
    from bench.model.verdict import run_outcome

    if run.manifest.status != RunStatus.COMPLETED:
        return 1
    if run.manifest.raw.get("rackless"):     # bench.run.rackless: the experiment's own verdict
        return exit_code("PASS" if run.manifest.raw.get("decided") is not False else "UNDECIDED",
                         allow_undecided)
    r = run_outcome(run)
    for name, why in r.unusable.items():
        print(f"{name}: no usable read ({why})", file=sys.stderr)
    return exit_code(r.word, allow_undecided)


def _until_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--max-duration", default=None, metavar="S",
                   help="with --decide: the longest run affordable, seconds (default 7200); "
                        "with --until-decided: the ceiling (default 1800)")
    r.add_argument("--until-decided", nargs="?", const="", default=None,
                   metavar="DEVICE.CLOCK,...",
                   help="measure until these clocks' drifts are decided (a device: its every "
                        "clock; default: every clock), or --max-duration; says which were and "
                        "when")
    r.add_argument("--decided-ppm", default=None, metavar="PPM",
                   help="with --until-decided: a drift is decided at this width (default: a "
                        "tenth of its prior's, 120 ppm under ±600 ppm)")


def _experiments_epilog() -> str:
    from bench.model.vocabulary import GLOSSARY
    from bench.run.catalog import summary_lines
    return ("experiments (parameters: rackclock experiments [NAME]):\n"
            + "\n".join(summary_lines()) + "\n\nwords of the output:\n"
            + "\n".join(f"  {w}: {m}" for w, m in GLOSSARY.items()))


def parser() -> OneLineParser:
    r = OneLineParser(prog="rackclock run", description=HELP,
                      formatter_class=argparse.RawDescriptionHelpFormatter,
                      epilog=_experiments_epilog() + "\n\n" + exit_table_text())
    r.add_argument("experiment", nargs="?", default="clock_offset",
                   help="an experiment's name (below) or the path of an experiment file")
    r.add_argument("--rack", type=Path, default=None,
                   help="rack file of a real rack (default: start the simulated rack)")
    r.add_argument("--duration", default=None, help="seconds (default: experiment's)")
    r.add_argument("--out", type=Path, default=Path("results"), help="folder for run folders")
    r.add_argument("--arm", action="store_true",
                   help="send stimuli to a non-simulated rack (without it they are only printed)")
    r.add_argument("--reference-allowance", default=None,
                   help="bound on the reference's own error when its discipline cannot be read, "
                        "e.g. 1ms")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="experiment parameter (repeatable)")
    r.add_argument("--quiet", action="store_true", help="no progress display or table")
    r.add_argument("--allow-undecided", action="store_true", help=ALLOW_UNDECIDED_HELP)
    r.add_argument("--decide", metavar="MEASURES", default=None,
                   help="plan the run's length and stimuli so these measures (latency, drift; "
                        "comma-separated) are decidable at their tolerances; says the plan first")
    r.add_argument("--baseline", type=Path, default=None,
                   help="with --decide: plan from this run's own bounds (e.g. before an update)")
    r.add_argument("--tolerances", type=Path, default=None,
                   help="with --decide: tolerance file (as compare)")
    _until_options(r)
    r.add_argument("--wide", action="store_true",
                   help="every column and note (default: fit the terminal; 120 in a log)")
    r.add_argument("--processes", type=int, default=None,
                   help="worker processes probing the devices (default: one per core from 32 "
                        "devices, else one)")
    r.add_argument("--offset-figures", action="store_true",
                   help="draw every clock's offset figure into RUN/plots/ whatever the rack's "
                        "size (default: up to 40 clocks; beyond, `rackclock report RUN "
                        "--offset-figures` draws them)")
    r.add_argument("--fit-rates", action="store_true",
                   help="a rack beyond the bench's capacity runs at rates scaled down to fit "
                        "(default: it is refused with the numbers)")
    r.add_argument("--calibration", type=Path, default=None,
                   help="cost-per-read file (default: bench/run/exchange_cost.json; "
                        "benchmarks/scale.py --calibrate writes one)")
    return r


def main(argv: list[str] | None = None) -> int:
    return _run(parser().parse_args(argv))
