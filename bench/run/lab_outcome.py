"""What a lab call returns when its device failed, and the lab's count of those failures.

A device failure in a lab call (unreachable, timeout, refused, a driver without the capability,
a wait that reached its deadline) is an outcome for that device, not an exception that ends the
experiment: the call returns a `Failed`, which is falsy, so a procedure writes
`r = lab.read_clock(dev)` then `if not r: ...`. The failure is recorded as the probing loop
records one (a row in samples/DEVICE.csv, a line in events.csv), logged, and counted: when the
lab closes, each device with failures gets a measurement `lab.device_errors` (a count, limit 0,
so it fails the run's verdict) unless the experiment declared them expected.

`Lab.on_error` is the experiment's choice:
  "record"  (default) the call returns a Failed; the failure counts against the verdict
  "expect"  the same, but the failure is reported, not judged (e.g. a power cycle's outage)
  "raise"   the call raises DeviceError (LabTimeout for a wait): the experiment stops there
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

ON_ERROR = ("record", "expect", "raise")


@dataclass(frozen=True)
class Failed:
    """A lab call's outcome when its device failed: falsy; what failed and why."""
    device: str
    step: str                # open | read | stimulus | event | identify | wait
    kind: str                # timeout | unreachable | auth | protocol | refused | ...
    message: str

    def __bool__(self) -> Literal[False]:
        return False

    def __str__(self) -> str:
        return f"{self.device}: {self.step}: {self.kind}: {self.message}"


@dataclass
class DeviceFailures:
    """One device's failed lab calls: counted by kind, judged or expected, the last one."""
    judged: Counter = field(default_factory=Counter)
    expected: Counter = field(default_factory=Counter)
    last: str = ""

    def add(self, failed: Failed, expected: bool) -> None:
        (self.expected if expected else self.judged)[failed.kind] += 1
        self.last = str(failed)

    def measurement(self) -> dict:
        """The keyword arguments of `Lab.measure` for this device's count."""
        n, m = sum(self.judged.values()), sum(self.expected.values())
        return {"value": n, "unit": "count", "limit": (0, 0) if n else None,
                "basis": "exact", "judge": True, "expected": m,
                "by_kind": dict(self.judged + self.expected),
                "doc": f"lab calls that failed on this device ({m} of them expected by the "
                       f"experiment; last: {self.last})"}
