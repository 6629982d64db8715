"""`rackclock trend`: measures of three or more runs side by side, with a figure
(bench.output.trend_view). The command's arguments; the library is imported once they are
parsed (bench/cli.py finds this module only when the command runs)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench import safeio
from bench.model.outcomes import ALLOW_UNDECIDED_HELP, exit_table_text

HELP = "measures of three or more runs side by side, with a figure"

BESIDE = object()    # --figure given alone: trend.png beside the runs (a str const would be typed)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackclock trend",
                                 description="measures of more than two runs side by side, in "
                                             "time order, with a figure",
                                 epilog=exit_table_text(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="run folders (three or more)")
    ap.add_argument("--tolerances", type=Path, default=None, help="tolerance file (as compare)")
    ap.add_argument("--figure", type=Path, nargs="?", const=BESIDE, default=None,
                    metavar="FILE",
                    help="draw the figure (.png, .svg or .pdf; given alone: trend.png in the "
                         "newest run's folder); without it none is drawn, which keeps trend "
                         "quick (drawing takes seconds)")
    ap.add_argument("--max-panels", type=int, default=24,
                    help="panels in the figure (default 24; regressions first; the rest are "
                         "said, never dropped silently)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write JSON")
    ap.add_argument("--junit", type=Path, metavar="FILE",
                    help="also write JUnit XML (one testcase per device and measure)")
    ap.add_argument("--baseline", type=Path, default=None, metavar="RUN",
                    help="judge the last run against this one of the runs (default: the runs "
                         "since the previous firmware change, else the first)")
    ap.add_argument("--all", action="store_true", help="show measures that are not judged")
    ap.add_argument("--allow-undecided", action="store_true", help=ALLOW_UNDECIDED_HELP)
    ap.add_argument("--as-given", action="store_true",
                    help="keep the runs in the order given (default: by start time)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    # the library after the arguments: `rackclock trend --help` stays quick
    from bench.compare.eras import identity_changes, reference_runs
    from bench.compare.tolerances import ToleranceError
    from bench.compare.verdicts import load_tolerances
    from bench.model.outcomes import exit_code
    from bench.model.rundata import load_run
    from bench.output.trend_view import _started, text, trend_outcome, trends

    if len(a.runs) < 3:
        print("rackclock trend: give three or more runs (two: rackclock compare)",
              file=sys.stderr)
        return 2
    try:
        tol = load_tolerances(a.tolerances)
        runs = [load_run(p) for p in a.runs]
        runs = runs if a.as_given else sorted(runs, key=_started)
    except (FileNotFoundError, ToleranceError) as exc:
        print(f"rackclock trend: {exc}", file=sys.stderr)
        return 2
    paths = [r.path.resolve() for r in runs]
    if a.baseline is not None and a.baseline.resolve() not in paths[:-1]:
        print(f"rackclock trend: --baseline {a.baseline} is not one of the runs before the last",
              file=sys.stderr)
        return 2
    changes = identity_changes(runs)
    ref = reference_runs(runs, changes, None if a.baseline is None
                         else paths.index(a.baseline.resolve()))
    ts = trends(runs, tol, ref)
    print(text(runs, ts, a.all, changes, ref))
    if a.figure is not None:          # figures on request (issue 46: trend ≤ 3 s on 10 runs)
        _figure(a, runs, ts, changes)
    _write_files(a, runs, ts, changes, ref)
    return exit_code(trend_outcome(ts), a.allow_undecided)


def _write_files(a, runs, ts, changes, ref) -> None:
    """--json and --junit, where asked."""
    from bench.output.trend_view import as_dict, junit
    if a.json:
        safeio.write_text(a.json, json.dumps(as_dict(runs, ts, changes, ref), indent=1) + "\n")
    if a.junit:
        safeio.write_text(a.junit, junit(runs, ts, changes, ref))


def _figure(a, runs, ts, changes) -> None:
    """The figure, where asked (default: trend.png beside the newest run), and what it left out."""
    from bench.output import figures
    from bench.output.trend_view import figure, panels
    fig = figure(runs, ts, max_panels=max(1, a.max_panels), changes=changes)
    out = runs[-1].path / "trend.png" if a.figure is BESIDE else a.figure
    saved, _ = figures.save(fig, out.parent, out.stem, (out.suffix[1:] or "png",))
    n = len(panels(ts))
    left = f" ({min(n, a.max_panels)} of {n} measures; --max-panels {n} draws all)" \
        if n > a.max_panels else ""
    print(f"figure: {saved[0]}{left}")


if __name__ == "__main__":
    sys.exit(main())
