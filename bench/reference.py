"""The reference clock: integer-nanosecond UTC time, and what is known of its discipline.

Every bracket the bench records is two reads of this clock. `Reference.now_ns` is the hot path;
keep it a bare clock call.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Health:
    """What is known about the reference's discipline at one instant.

    `verified` is true only when a discipline source (linuxptp) was read and graded;
    `uncertainty_ns` is the bound on the reference's own error that the bench adds to every bracket.
    """

    source: str                      # "realtime", "phc:/dev/ptp0", "virtual"
    checked_ns: int                  # reference time of this snapshot
    verified: bool = False
    grade: str = "unverified"        # ok | warn | fail | unverified
    uncertainty_ns: int = 0
    detail: dict = field(default_factory=dict)
    note: str = "no discipline source was checked (linuxptp health not read)"

    def as_dict(self) -> dict:
        return asdict(self)


class Reference:
    """CLOCK_REALTIME as the reference (disciplined by phc2sys on a lab rack)."""

    source = "realtime"

    def __init__(self, allowance_ns: int = 0):
        self.allowance_ns = int(allowance_ns)

    @staticmethod
    def now_ns() -> int:
        return time.clock_gettime_ns(time.CLOCK_REALTIME)

    def resolution_ns(self) -> int:
        return max(1, int(round(time.clock_getres(time.CLOCK_REALTIME) * 1e9)))

    def health(self) -> Health:
        return Health(source=self.source, checked_ns=self.now_ns(), uncertainty_ns=self.allowance_ns)


def open_reference(spec: str = "realtime", allowance_ns: int = 0) -> Reference:
    """Reference named by the rack file's `reference` key."""
    if spec == "realtime":
        return Reference(allowance_ns)
    raise ValueError(f"reference {spec!r} is not supported (known: realtime)")
