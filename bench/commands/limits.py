"""`rackclock limits`: the rack file's [limits] judged against a run's bounds (bench.model.limit_checks). The
command's arguments; the library is imported once they are parsed (bench/cli.py finds this module only
when the command runs)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import safeio
from bench.model.outcomes import ALLOW_UNDECIDED_HELP, exit_table_text

HELP = "judge the rack file's [limits] against a run's bounds (pass/fail/undecided)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock limits",
                                 description="judge the rack file's limits against a run's bounds",
                                 epilog=exit_table_text(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="run folder")
    ap.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
    ap.add_argument("--allow-undecided", action="store_true", help=ALLOW_UNDECIDED_HELP)
    ap.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)  # now the default
    ap.add_argument("--span", metavar="FROM:TO", default=None,
                    help="judge offsets over this span, seconds from the run's start (e.g. 0:60), "
                         "instead of each segment's calibrated span (first to last read); "
                         "beyond the reads a bound is extrapolated and said so")
    ap.add_argument("--wide", action="store_true", help="as wide as the table is, every why")
    a = ap.parse_args(argv)
    # the library after the arguments: `rackclock limits --help` stays quick
    from bench.model.limit_checks import LimitError, check_run, junit, parse_span, text_table
    from bench.model.rundata import load_run
    from bench.model.texttable import terminal_width

    try:
        run = load_run(a.run)
        span = parse_span(a.span, run.manifest)
    except FileNotFoundError as exc:
        print(f"rackclock limits: {exc}", file=sys.stderr)
        return 2
    except LimitError as exc:
        print(f"rackclock limits: {exc}", file=sys.stderr)
        return 2
    checks = check_run(run.summary, run.manifest, span, run)
    print(text_table(checks, None if a.wide else terminal_width())
          or "no limits in this run's rack file ([limits] table)")
    print(limits_verdict_line(run, checks))
    if a.junit:
        safeio.write_text(a.junit, junit(checks))
    return limits_exit(run, checks, a.allow_undecided)


def limits_outcome(run, checks) -> str:
    """By the one table (bench.model.outcomes): a failed limit REGRESSED (exit 1); an undecided
    one, or a run with no clock measured (none fitted: every clock stuck or unread), UNDECIDED
    (exit 3); else PASS."""
    from bench.model.outcomes import measured_clocks, outcome
    failed = any(c.verdict == "fail" for c in checks)
    undecided = any(c.verdict == "undecided" for c in checks)
    return outcome(failed, undecided, measured_clocks(run.summary) > 0)


def limits_exit(run, checks, allow_undecided: bool = False) -> int:
    from bench.model.outcomes import exit_code
    return exit_code(limits_outcome(run, checks), allow_undecided)


def limits_verdict_line(run, checks) -> str:
    """The outcome in one line, its word first (FAIL, UNDECIDED or PASS), as compare's."""
    from bench.model.outcomes import FAIL, PASS, REGRESSED, UNDECIDED
    word = limits_outcome(run, checks)
    n = {v: sum(c.verdict == v for c in checks) for v in ("fail", "undecided")}
    if word == REGRESSED:
        return f"{FAIL}: {n['fail']} limit(s) proven exceeded"
    if word == UNDECIDED and n["undecided"]:
        return (f"{UNDECIDED}: nothing failed, but {n['undecided']} limit(s) cannot be decided "
                f"(the bound straddles the limit): not a pass")
    if word == UNDECIDED:
        return (f"{UNDECIDED}: nothing was judged (no clock measured: every clock stuck or "
                f"unread): not a pass")
    return f"{PASS}: every limit is proven met" if checks else f"{PASS}: no limit to judge"


if __name__ == "__main__":
    sys.exit(main())
