"""`rackclock summarize RUN`: (re)build summary.json of a run folder, a killed run included
(bench/resummarize.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.commands import OneLineParser
from bench.resummarize import REBUILT, SummaryNotWritten, rebuild

HELP = "(re)build summary.json of a run folder, a killed run included"


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="rackclock summarize",
                       description="(re)build summary.json of a run folder, a killed run included")
    ap.add_argument("run", type=Path, help="run folder")
    ap.add_argument("--quiet", action="store_true", help="no table")
    # the watch's killed days: a summary as a closed day's, without the phase files (tens of MB)
    ap.add_argument("--no-phase", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if not (a.run / "manifest.json").exists():
        print(f"rackclock summarize: {a.run}: not a run folder (no manifest.json)", file=sys.stderr)
        return 2
    try:
        (summary, kept), error = rebuild(a.run, phase=not a.no_phase), None
    except SummaryNotWritten as exc:
        summary, kept, error = exc.summary, "", exc
    if not a.quiet:
        from bench.model.rundata import load_run
        from bench.model.texttable import terminal_width, wrap
        from bench.output.closing import reference_line
        from bench.output.terminal import table

        width = terminal_width()
        print("\n".join(wrap(reference_line(load_run(a.run).manifest), width)))
        print(table(summary, width=width))
    if error is not None:
        print(f"rackclock summarize: disk full: {error.strerror}", file=sys.stderr)
        return 1
    for name, d in summary.get("devices", {}).items():
        if d.get("bad_rows"):
            n = d["bad_rows"]
            print(f"{name}: {n} bad line{'s' if n != 1 else ''} in samples/{name}.csv skipped "
                  f"(cut short, garbage or NUL bytes); its other rows are summarized",
                  file=sys.stderr)
    if summary.get("rebuilt_because"):
        print(f"rebuilt: {summary['rebuilt_because']}", file=sys.stderr)
    if kept:
        print(f"rackclock summarize: {a.run / 'summary.json'} kept ({kept}); the rebuild "
              f"is in {a.run / REBUILT}", file=sys.stderr)
        return 1
    print(f"summary: {a.run / 'summary.json'}")
    return 0
