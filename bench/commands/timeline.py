"""`rackclock timeline RUN [DEVICE[:CLOCK]=LOG[,key=value...] ...]`: one timeline in reference
time from a run's device events, stimuli and clock breaks, and any log files of the rack's planes.

Each log is read in its format (given with `format=NAME`, or detected and said how surely; see
bench/logs/), each stamp mapped through the segment of its device clock that was in force
(bench/analysis/timeline_map.py), calibrated by this run and any `--calibration RUN`. Every mapped line
keeps its raw timestamp beside its interval and names its calibration; every line that did not
parse is counted and listed with its number. A log is a regular file, read in blocks of whole lines
(lines over --line-limit bytes are counted and skipped); a log that cannot be read, or a bad
option, is one error line for that log and the others go on (exit status 2).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from bench.logs.lognames import FORMATS, LINE_LIMIT

HELP = "one cross-plane timeline of a run, with device log files"

FILES = ("json", "csv", "otel", "html")             # bench.output.timeline_write.FILES
DEFAULT_FORMATS = ("json", "csv", "html")

KEYS = {
    "format": "the log's format (" + ", ".join(FORMATS) + "); default: detected, and said how "
              "surely",
    "tz": "IANA zone of the log's zone-less stamps, e.g. Europe/Berlin (default: --tz, else the "
          "device's log_timezone / timezone / sel_timezone in the rack file; none: zone-less "
          "stamps are refused, never read as UTC)",
    "year": "year of year-less stamps (rfc3164, dmesg -T); default: the run's",
    "order": "id | file | none: the log's own order, used to decide which clock segment a "
             "stamp belongs to (default: id where lines carry one, else file)",
    "boot": "dmesg: the boot instant in the host's wall time (its stamps count from boot)",
    "stamp": "wall | monotonic: which clock journald and snmptrapd stamps are on (default: "
             "snmptrapd the agent's sysUpTime varbind where a trap has one, else the receive "
             "time); relay: syslog lines re-stamped by a relay (with receiver=)",
    "field": "the stamp field: Kubernetes eventTime (the reporting component's clock) | "
             "creationTimestamp (the API server's) | firstTimestamp | lastTimestamp; Redfish "
             "Created | EventTimestamp (default: from each line; docs/TIMELINE.md)",
    "receiver": "DEVICE[:CLOCK] of the run whose clock stamped received lines (snmptrapd's "
                "host, a syslog relay)",
    "presync_before": "a wall stamp before this date (e.g. the firmware image date) was written "
                      "before the clock was set: placed by order, not by its stamp",
}


def key_help() -> str:
    import textwrap
    return "per-log keys (DEVICE[:CLOCK]=LOG,key=value,...):\n" + "\n".join(
        textwrap.fill(f"{k:<15} {v}", 100, initial_indent="  ", subsequent_indent=" " * 18)
        for k, v in KEYS.items())


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackclock timeline", description=__doc__.split("\n\n")[0],
                                 epilog=key_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="the run folder whose calibration maps the stamps")
    ap.add_argument("logs", nargs="*", metavar="DEVICE[:CLOCK]=LOG[,key=value]",
                    help="a log file of a device (the keys: below)")
    ap.add_argument("--calibration", type=Path, action="append", default=[], metavar="RUN",
                    help="another run folder calibrating the same devices (repeatable)")
    ap.add_argument("--format", default=None, choices=FORMATS,
                    help="default log format (per log: format=...; default: detected)")
    ap.add_argument("--tz", default=None, help="default zone of zone-less stamps (per log: tz=...; "
                    "default: the device's zone in the rack file, else they are refused)")
    ap.add_argument("--first", action="store_true",
                    help="answer which plane broke first among the lines in the window (your "
                         "log lines; the run's events without any), with the proof, the naive "
                         "merge's answer and the story; printed first, in timeline.json and "
                         "timeline.html")
    ap.add_argument("--window", default=None, metavar="FROM..TO",
                    help="the lines --first looks at: run seconds or ISO 8601 times with their "
                         "offset; an end may be left out (default: all)")
    ap.add_argument("--widen-latency", action="store_true",
                    help="bound event instants, not stamps, with the run's measured log latency")
    ap.add_argument("--rows", type=int, default=200,
                    help="rows printed (all are written to timeline.json/.csv; default 200)")
    ap.add_argument("--wide", action="store_true",
                    help="every column of the table (default: fit the terminal; 120 in a log)")
    ap.add_argument("--line-limit", type=int, default=LINE_LIMIT, metavar="BYTES",
                    help=f"longest log line read; longer ones are counted and skipped "
                         f"(default {LINE_LIMIT})")
    ap.add_argument("--formats", default=",".join(DEFAULT_FORMATS), metavar="LIST",
                    help="files written into the run folder, comma-separated from "
                         f"{', '.join(FILES)} (timeline.otel.json: OpenTelemetry log records for "
                         f"a collector; default {','.join(DEFAULT_FORMATS)})")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    a = ap.parse_args(argv)
    formats = _formats(ap, a)
    # the timeline machinery after the arguments: `rackclock timeline --help` imports no numpy.
    # Arrow's text columns from the system allocator, which gives freed chunks back (mimalloc,
    # Arrow's default here, kept ~40 MiB more at the peak of writing a million rows)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from bench.model.narrow import one_arena
    one_arena()      # before the threads that write the files side by side
    built = _build(a)
    if isinstance(built, str):
        print(f"rackclock timeline: {built}", file=sys.stderr)
        return 2
    run, tl = built
    refused = [rep for rep in tl.reports if "error" in rep]
    for rep in refused:
        print(f"rackclock timeline: {rep['error']}", file=sys.stderr)
    t0 = _start_ns(run, tl)
    first = _first(tl, t0, a.window) if a.first or a.window else None
    if isinstance(first, str):
        print(f"rackclock timeline: {first}", file=sys.stderr)
        return 2
    _show(a, run, tl, t0, formats, first)
    return 2 if refused else 0


def _start_ns(run: Any, tl: Any) -> int:
    """The instant times are shown from: the run's start, else the first entry's earliest."""
    return int(run.manifest.started_ns or (int(tl.c["lo"][0]) if len(tl) else 0))


def _formats(ap: Any, a: Any) -> set[str]:
    """The --formats asked for (and --line-limit checked); a bad one exits 2 in one line."""
    formats = {f.strip() for f in a.formats.split(",") if f.strip()}
    if not formats or formats - set(FILES):
        ap.error(f"--formats: a comma-separated list of {', '.join(FILES)} (got {a.formats!r})")
    if a.line_limit < 80:
        ap.error("--line-limit: at least 80 bytes")
    return formats


def _build(a: Any) -> tuple[Any, Any] | str:
    """(run, timeline) of the arguments, or the one line saying why not."""
    from bench.logs.logfile import LogError
    from bench.model.rundata import RunFolderError, load_run
    from bench.model.timeline_build import build

    try:
        run = load_run(a.run)
        others = [load_run(p) for p in a.calibration]
    except (FileNotFoundError, NotADirectoryError, RunFolderError) as exc:
        return str(exc)
    defaults = {k: v for k, v in (("format", a.format), ("tz", a.tz)) if v}
    try:
        return run, build(run, a.logs, a.widen_latency, others, defaults, a.line_limit)
    except LogError as exc:
        return str(exc)


def _show(a: Any, run: Any, tl: Any, t0: int, formats: set[str], first: Any) -> None:
    """The table on the terminal, then the files written."""
    from bench.model.texttable import terminal_width
    from bench.output.timeline_page import run_span
    from bench.output.timeline_write import table_lines, write_outputs

    for line in table_lines(tl, t0, a.rows, None if a.wide else terminal_width()):
        print(line)
    paths = write_outputs(run.path, tl, t0, formats, first, run_span(run))
    print("written: " + ", ".join(str(p) for p in paths))


def _first(tl: Any, t0: int, window: str | None) -> dict[str, Any] | str:
    """The --first answer, printed now (verdict first); a bad --window: its error."""
    from bench.analysis.first_break import first_planes
    from bench.logs.logfile import LogError
    from bench.model.timeline_window import parse_window, window_lines
    from bench.output.first_break_view import answer_lines
    try:
        lo, hi = parse_window(window, t0)
    except LogError as exc:
        return str(exc)
    ans = first_planes(window_lines(tl, lo, hi))
    ans["window"] = window or ""
    for line in answer_lines(ans, t0, window or ""):
        print(line)
    return ans


if __name__ == "__main__":
    sys.exit(main())
