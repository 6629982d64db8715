"""The bench's own log lines: module loggers (`logging.getLogger(__name__)`) in bench/,
drivers/ and experiments/ (an experiment's own lines); the command line decides what reaches
the terminal (bench/logsetup.py) and every run also writes them, at INFO and above, to its
folder's `bench.log`. No credential reaches a log:
`Redact` replaces URL userinfo and the value of every credential variable (a name like
*PASSWORD*, *TOKEN*, *COMMUNITY*..., or one the run's inventory names in a `*_env` key) by ***.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.config.inventory import CREDENTIAL
from bench.model.provenance import REDACTED, redact_text

BENCH_LOGGERS = ("bench", "drivers", "experiments")
RUN_LOG = "bench.log"
_OPEN: list[RunLog] = []          # run logs open in this process: the levels go back after the last
_OPEN_LOCK = threading.Lock()
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def _env_names(value: Any) -> Iterator[str]:
    """Values of every `*_env` key in a manifest-like value (names of variables)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and k.endswith("_env") and isinstance(v, str):
                yield v
            else:
                yield from _env_names(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _env_names(v)


def secrets(manifest: dict[str, Any] | None = None) -> set[str]:
    names = {k for k in os.environ if CREDENTIAL.search(k)} | set(_env_names(manifest or {}))
    return {v for n in names if len(v := os.environ.get(n, "")) >= 4}


class Redact(logging.Filter):
    """Credentials out of a record's message and traceback (the record is changed in place, so
    every handler after this one sees it redacted too)."""

    def __init__(self, manifest: Callable[[], dict[str, Any]] = dict):
        super().__init__()
        self.manifest = manifest

    def redacted(self, text: str) -> str:
        text = redact_text(text)
        for s in sorted(secrets(self.manifest()), key=len, reverse=True):
            text = text.replace(s, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.redacted(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redacted(record.exc_text)
        return True


class _FileHandler(logging.FileHandler):
    def _open(self):  # type: ignore[no-untyped-def]
        from bench import safeio
        return safeio.append_text(self.baseFilename, self.encoding or "utf-8")

    def handleError(self, record: logging.LogRecord) -> None:
        pass                # a full disk is the store's to report (DiskFull), once


class RunLog:
    """`bench.log` of one run folder: INFO and above of the bench's, drivers' and experiments'
    loggers, whatever the terminal shows; closed (and the loggers' levels restored) with the run."""
    _levels: dict[str, int]     # the loggers' levels before the first open run log


    def __init__(self, path: Path, manifest: Callable[[], dict[str, Any]] = dict):
        self.handler = _FileHandler(path, delay=True, encoding="utf-8")
        self.handler.setLevel(logging.INFO)
        self.handler.setFormatter(logging.Formatter(FORMAT))
        self.handler.addFilter(Redact(manifest))
        with _OPEN_LOCK:
            if not _OPEN:
                RunLog._levels = {n: logging.getLogger(n).level for n in BENCH_LOGGERS}
            _OPEN.append(self)
            for name in BENCH_LOGGERS:
                lg = logging.getLogger(name)
                if lg.getEffectiveLevel() > logging.INFO:
                    lg.setLevel(logging.INFO)
                lg.addHandler(self.handler)

    def close(self) -> None:
        with _OPEN_LOCK:
            if self not in _OPEN:
                return
            _OPEN.remove(self)
            for name in BENCH_LOGGERS:
                logging.getLogger(name).removeHandler(self.handler)
                if not _OPEN:
                    logging.getLogger(name).setLevel(RunLog._levels[name])
        self.handler.close()
