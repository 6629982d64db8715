"""`rackclock limits`: the rack file's [limits] judged against a run's bounds (bench.model.limits). The
command's arguments; the library is imported once they are parsed (bench/cli.py finds this module only
when the command runs)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import safeio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock limits",
                                 description="judge the rack file's limits against a run's bounds")
    ap.add_argument("run", type=Path, help="run folder")
    ap.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a limit is undecided")
    ap.add_argument("--span", metavar="FROM:TO", default=None,
                    help="judge offsets over this span, seconds from the run's start (e.g. 0:60), "
                         "instead of each segment's calibrated span (first to last read); "
                         "beyond the reads a bound is extrapolated and said so")
    ap.add_argument("--wide", action="store_true", help="as wide as the table is, every why")
    a = ap.parse_args(argv)
    # the library after the arguments: `rackclock limits --help` stays quick
    from bench.model.limits import LimitError, check_run, junit, parse_span, text_table
    from bench.model.rundata import load_run
    from bench.model.texttable import WIDTH

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
    print(text_table(checks, None if a.wide else WIDTH)
          or "no limits in this run's rack file ([limits] table)")
    if a.junit:
        safeio.write_text(a.junit, junit(checks))
    if any(c.verdict == "fail" for c in checks):
        return 1
    return 3 if a.strict and any(c.verdict == "undecided" for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
