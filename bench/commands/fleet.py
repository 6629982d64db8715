"""`rackclock fleet run FLEET.toml`, `rackclock fleet resume FLEET_FOLDER` and `rackclock fleet
report FLEET_FOLDER`.

run: every rack of the fleet file (bench.fleet.config) as a Ray task on the host that holds
its resource (bench.fleet.engine), gathered into one fleet folder (bench.fleet.gather).
resume: the racks of a fleet folder that did not complete, rerun or summarised (bench.fleet.fleet_resume).
report: per rack, per plane and firmware, and with --baseline the rollout verdicts
(bench.fleet.fleet_report).
Both exit by the fleet's verdict (bench.fleet.fleet_verdict), in the exit table of `rackclock run`
(bench.model.outcomes): 0 PASS, 1 FAIL (a rack failed or did not complete; report: or a rack
regressed against the baseline), 3 UNDECIDED; 2 on a bad fleet file or address, no Ray, or
bad input.
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from bench.fleet.config import FleetError, fleet_from_dict
from bench.model.outcomes import ALLOW_UNDECIDED_HELP, exit_table_text

HELP = "a fleet of racks on Ray: run each rack on its bench host, report the fleet"

EPILOG = ("The fleet's verdict is the worst of its racks' (a rack whose run did not complete: "
          "FAIL);\n" + exit_table_text())


def load_fleet_file(path: Path):
    try:
        text = path.read_text()
        return fleet_from_dict(tomllib.loads(text), path.resolve().parent, str(path)), text
    except OSError as exc:
        raise FleetError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise FleetError(f"{path}: {exc}") from None


def _run(a) -> int:
    from bench.fleet.engine import run_fleet

    try:
        fleet, text = load_fleet_file(a.fleet_file)
        folder = run_fleet(fleet, text, a.out, address=a.address, num_cpus=a.num_cpus,
                           quiet=a.quiet)
    except FleetError as exc:
        print(f"rackclock fleet run: {exc}", file=sys.stderr)
        return 2
    return _closing(a, folder)


def _closing(a, folder) -> int:
    """The racks' table, the fleet's verdict and its exit status, after a run or a resume."""
    from bench.fleet.fleet_report import load_fleet, rack_lines, report_exit
    from bench.fleet.fleet_verdict import fleet_verdict
    from bench.model.texttable import terminal_width

    fl = load_fleet(folder)
    if not a.quiet:
        print("\n".join(rack_lines(fl, None if a.wide else terminal_width())))
    word, _ = fleet_verdict({fr.name: fr.record for fr in fl.racks})
    print(f"fleet verdict: {word}; fleet folder: {folder}")
    return report_exit(fl, allow_undecided=a.allow_undecided)


def _resume(a) -> int:
    from bench.fleet.fleet_resume import resume_fleet

    try:
        folder, rerun, summarised = resume_fleet(a.fleet, address=a.address,
                                                 num_cpus=a.num_cpus, quiet=a.quiet)
    except (FleetError, FileNotFoundError) as exc:
        print(f"rackclock fleet resume: {exc}", file=sys.stderr)
        return 2
    print(f"resumed: {len(rerun)} rack(s) run again ({', '.join(rerun) or 'none'}), "
          f"{len(summarised)} summarised from their partial runs "
          f"({', '.join(summarised) or 'none'})")
    return _closing(a, folder)


def _report(a) -> int:
    from bench.compare.tolerances import ToleranceError
    from bench.compare.verdicts import load_tolerances
    from bench.fleet import fleet_report as rep
    from bench.model.texttable import terminal_width

    try:
        fleet = rep.load_fleet(a.fleet)
        baseline = rep.load_fleet(a.baseline) if a.baseline else None
        verdicts = rep.rollout_verdicts(fleet, baseline, load_tolerances(a.tolerances)) \
            if baseline else None
    except (FileNotFoundError, ToleranceError) as exc:
        print(f"rackclock fleet report: {exc}", file=sys.stderr)
        return 2
    ds = rep.distributions(fleet)
    print(rep.text(fleet, ds, verdicts, baseline, None if a.wide else terminal_width()))
    if not a.no_html:
        print(f"report: {rep.html(fleet, ds, verdicts, baseline)}")
    if a.json:
        rep.write_json(a.json, rep.as_dict(fleet, ds, verdicts))
    return rep.report_exit(fleet, verdicts, a.allow_undecided)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock fleet",
                                 description="a fleet of racks on Ray: run, resume, report")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every rack of a fleet file, one Ray task per rack",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("fleet_file", type=Path, help="fleet file (TOML; bench/fleet/config.py)")
    r.add_argument("--out", type=Path, default=Path("results"), help="folder for fleet folders")
    s = sub.add_parser("resume", help="rerun or summarise the racks of a fleet folder that did "
                                      "not complete; one verdict over old and new",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("fleet", type=Path, help="fleet folder")
    for x in (r, s):
        x.add_argument("--address", default=None,
                       help="join this Ray cluster (e.g. HEAD:6379; default: start a local "
                            "instance declaring every rack's resource)")
        x.add_argument("--num-cpus", type=int, default=None,
                       help="CPUs of the local instance (default: this machine's); a rack "
                            "takes its fleet-file `cpus`, so at most CPUs/cpus racks run at once")
        x.add_argument("--quiet", action="store_true", help="only the verdict and fleet folder")
    p = sub.add_parser("report", help="per rack, per plane and firmware, rollout verdicts",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    for x in (r, s, p):
        x.add_argument("--allow-undecided", action="store_true", help=ALLOW_UNDECIDED_HELP)
        x.add_argument("--wide", action="store_true",
                       help="every column, as wide as it is (default: fit the terminal, "
                            "COLUMNS or 120)")
    p.add_argument("fleet", type=Path, help="fleet folder")
    p.add_argument("--baseline", type=Path, default=None,
                   help="fleet folder before the rollout: compare each rack's run with it")
    p.add_argument("--tolerances", type=Path, default=None, help="tolerance file (as compare)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write JSON")
    p.add_argument("--no-html", action="store_true", help="do not write FLEET/fleet.html")
    a = ap.parse_args(argv)
    return {"run": _run, "resume": _resume, "report": _report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
