"""`rackclock`: the command line. Each subcommand is a module of bench/commands/ (found by
listing the package: bench/commands/__init__.py); this only dispatches to the one named, so a
command's module, and what it imports, loads only when that command runs."""
from __future__ import annotations

import importlib
import sys

from bench import logsetup
from bench.commands import FIRST, OneLineParser, commands, names
from bench.errors import RackclockError


def _delegate(name: str, argv: list[str]) -> int:
    """Run command `name`'s `main(argv)`. A file the command cannot read or may not write
    (bench.saferead, bench.safeio, a run folder's document) is one line naming it and the fault,
    exit status 2."""
    try:
        return int(importlib.import_module(f"bench.commands.{name}").main(argv) or 0)
    except RackclockError as exc:
        if not one_line(exc):
            raise
        print(f"rackclock {name}: {exc}", file=sys.stderr)
        return 2


def one_line(exc: BaseException) -> bool:
    """A file's fault: what a command says in one line (never a traceback)."""
    from bench.safeio import UnsafeFolder
    from bench.saferead import FileFault
    if isinstance(exc, (FileFault, UnsafeFolder)):
        return True
    rundata = sys.modules.get("bench.model.rundata")
    return rundata is not None and isinstance(exc, rundata.RunFolderError)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:                                   # --log-level / -v: what of the log reaches stderr
        argv, level = logsetup.take_log_options(argv)
    except logsetup.LogLevelError as exc:
        print(f"rackclock: {exc}", file=sys.stderr)
        return 2
    logsetup.configure(level)
    if not argv:
        return _delegate(FIRST, [])
    if argv[0] in names():                 # listed, not read: a command's start stays light
        return _delegate(argv[0], argv[1:])
    ap = OneLineParser(
        prog="rackclock", description="timing bench for AI racks: provable clock bounds per plane",
        epilog=f"logging (any subcommand): {logsetup.HELP}")
    sub = ap.add_subparsers(dest="cmd")
    for name, text in commands().items():
        sub.add_parser(name, help=f"{text} (rackclock {name} --help)", add_help=False)
    ap.parse_args(argv)       # --help (exit 0), or an unknown command (exit 2, one line)
    return _delegate(FIRST, [])            # nothing but `--`: the default command


if __name__ == "__main__":
    sys.exit(main())
