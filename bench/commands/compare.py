"""`rackclock compare BASELINE CANDIDATE`: two runs side by side, a verdict per measure
(bench.compare.verdicts), as a terminal table and optionally Markdown, JSON and JUnit XML."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import safeio
from bench.model.outcomes import ALLOW_UNDECIDED_HELP, exit_table_text

HELP = "compare two runs (e.g. before and after a firmware update)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="rackclock compare",
        description="compare two runs (e.g. before and after a firmware update); exit 1 when a "
                    "measure regressed beyond its tolerance, 3 when one is undecided",
        epilog=exit_table_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("baseline", type=Path, help="run folder of the baseline")
    ap.add_argument("candidate", type=Path, help="run folder of the candidate")
    ap.add_argument("--tolerances", type=Path, default=None,
                    help="tolerance file (default: bench/compare/tolerances.toml)")
    ap.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown report")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write JSON")
    ap.add_argument("--junit", type=Path, metavar="FILE",
                    help="also write JUnit XML (one testcase per device and measure)")
    ap.add_argument("--allow-undecided", action="store_true", help=ALLOW_UNDECIDED_HELP)
    ap.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)  # now the default
    ap.add_argument("--all", action="store_true",
                    help="terminal table: show every measure (default: hide 'not compared' rows)")
    ap.add_argument("--wide", action="store_true",
                    help="every column, as wide as it is (default: fit the terminal; 120 in a log)")
    a = ap.parse_args(argv)
    # the library after the arguments: `rackclock compare --help` imports no numpy
    from bench.compare import output as out
    from bench.compare.tolerances import ToleranceError
    from bench.compare.verdicts import compare_runs, load_tolerances
    from bench.model.rundata import load_run
    from bench.model.texttable import terminal_width

    try:
        tol = load_tolerances(a.tolerances)
        cmp = compare_runs(load_run(a.baseline), load_run(a.candidate), tol)
    except (FileNotFoundError, ToleranceError) as exc:
        print(f"rackclock compare: {exc}", file=sys.stderr)
        return 2
    print(out.terminal(cmp, show_all=a.all, width=None if a.wide else terminal_width()))
    if a.markdown:
        safeio.write_text(a.markdown, out.markdown(cmp))
    if a.json:
        safeio.write_text(a.json, out.to_json(cmp))
    if a.junit:
        safeio.write_text(a.junit, out.junit(cmp))
    return cmp.exit_status(a.allow_undecided)


if __name__ == "__main__":
    sys.exit(main())
