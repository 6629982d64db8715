"""Run-level statuses as str-valued enums (a member is its string, so JSON and CSV stay the
same): the manifest's `status`, the error kinds of the samples' `status` column and of the
summary's `errors`. The estimator's own (bound status, verdict, break kind, resolution basis)
live beside it in bench/analysis/statuses.py and are re-exported here."""
from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from bench.analysis.statuses import BoundStatus, BreakKind, ResolutionBasis, Verdict, worst

__all__ = ["BoundStatus", "BreakKind", "ErrorKind", "ResolutionBasis", "RowStatus", "RunStatus",
           "Verdict", "parse", "worst"]

E = TypeVar("E", bound=StrEnum)


class RunStatus(StrEnum):
    """manifest.json `status` (bench/run/experiment.py, bench/resummarize.py)."""
    RUNNING = "running"
    COMPLETED = "completed"
    DEVICES_LOST = "devices_lost"   # ran to its end, but devices went silent (`devices_lost`)
    INTERRUPTED = "interrupted"     # Ctrl-C or a stop signal (`stopped_by`)
    FAILED = "failed"               # the experiment raised (`error`)
    DISK_FULL = "disk_full"
    KILLED = "killed"               # `rackclock summarize` found the process gone
    REFUSED = "refused"             # the reference refused to start (no samples)


class ErrorKind(StrEnum):
    """An error class in a sample row's `status` (drivers.base.DeviceError.kind) and the
    summary's per-device `errors`; the last two are the summary's own."""
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    AUTH = "auth"
    PROTOCOL = "protocol"
    MALFORMED = "malformed"
    REFUSED = "refused"
    RESET = "reset"
    ERROR = "error"
    NOT_STARTED = "not_started"     # the device never opened (summary only)
    SUMMARY = "summary"             # its summary failed (summary only)


class RowStatus(StrEnum):
    """A sample row's `status` when it is not an error."""
    OK = "ok"
    UNARMED = "unarmed"             # a stimulus printed, not sent


def parse(enum: type[E], value: str) -> E | str:
    """The member for a known value; an unknown one (a newer bench's) stays the plain string."""
    try:
        return enum(value)
    except ValueError:
        return value
