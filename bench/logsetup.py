"""What of the bench's log reaches the terminal: the command line's `--log-level LEVEL` or `-v`
(INFO; `-vv`: DEBUG), default WARNING, to stderr with credentials redacted. Library code only
logs (bench/model/runlog.py); a run also keeps INFO and above in its folder's bench.log.
"""
from __future__ import annotations

import logging
import sys

from bench.errors import RackclockError

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
HELP = ("--log-level LEVEL (DEBUG, INFO, WARNING, ERROR; default WARNING) or -v / -vv: "
        "what of the log reaches stderr")


class LogLevelError(RackclockError, ValueError):
    pass


def take_log_options(argv: list[str]) -> tuple[list[str], int]:
    """argv without the logging options, and the level they ask for. Accepted anywhere on the
    command line, so every subcommand has them."""
    level, rest, it = logging.WARNING, [], iter(argv)
    for arg in it:
        if arg in ("-v", "-vv", "--verbose"):
            level = logging.DEBUG if arg == "-vv" else min(level, logging.INFO)
        elif arg == "--log-level" or arg.startswith("--log-level="):
            value = arg.partition("=")[2] if "=" in arg else next(it, "")
            if value.upper() not in LEVELS:
                raise LogLevelError(f"--log-level {value!r}: expected one of {', '.join(LEVELS)}")
            level = getattr(logging, value.upper())
        elif arg == "--":
            rest += [arg, *it]
        else:
            rest.append(arg)
    return rest, level


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (as logging's own last-resort handler)."""

    _rackclock = True           # marks the handler configure() set, to replace it

    def __init__(self, level: int):
        logging.Handler.__init__(self, level)

    @property
    def stream(self):
        return sys.stderr


class _Redact(logging.Filter):
    """bench.model.runlog.Redact, imported at the first record that reaches the handler: a
    command's --help logs nothing, and skips that import (the inventory's, provenance's)."""

    def __init__(self) -> None:
        super().__init__()
        self._redact: logging.Filter | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self._redact is None:
            from bench.model.runlog import Redact
            self._redact = Redact()
        return self._redact.filter(record)


def configure(level: int = logging.WARNING) -> logging.Handler:
    """One stderr handler on the root logger (replacing one set before by this function)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_rackclock", False)]:
        root.removeHandler(h)
    handler = _Stderr(level)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_Redact())
    root.addHandler(handler)
    if root.level > level or root.level == logging.NOTSET:
        root.setLevel(level)
    return handler
