"""truth.json as records (a simulated run's ground truth): each device's clocks and their
breaks."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.model.field_readers import (
    _d,
    _int,
    _l,
    _RawMapping,
)
from bench.model.run_statuses import (
    BreakKind,
    parse,
)


@dataclass(frozen=True)
class TruthBreak:
    kind: BreakKind | str
    t_ns: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class TruthClock:
    """A simulated clock's true offset and drift on a grid of reference instants (no grid for a
    clock whose truth cannot be known; bench.sim.clock_model.ClockModel.truth)."""
    name: str
    t_ns: tuple[int, ...] = ()
    offset_ns: tuple[float, ...] = ()
    drift_ppm: tuple[float, ...] = ()
    resolution_ns: int | None = None
    counter: bool = False
    breaks: tuple[TruthBreak, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> TruthClock:
        x = _d(x)
        return cls(name, tuple(_l(x.get("t_ns"))), tuple(_l(x.get("offset_ns"))),
                   tuple(_l(x.get("drift_ppm"))), _int(x.get("resolution_ns"), None),
                   bool(x.get("counter")),
                   tuple(TruthBreak(parse(BreakKind, str(_d(b).get("kind") or "")),
                                    _int(_d(b).get("t_ns")), dict(_d(b)))
                         for b in _l(x.get("breaks"))), dict(x))


@dataclass(frozen=True)
class TruthDevice:
    name: str
    clocks: dict[str, TruthClock] = field(default_factory=dict)
    events: tuple[dict[str, Any], ...] = ()          # as the emulators recorded them
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, eq=False)
class Truth(_RawMapping):
    """truth.json (simulated racks)."""
    schema: int = 0
    t0_ns: int | None = None
    devices: dict[str, TruthDevice] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, x: object) -> Truth | None:
        if x is None or isinstance(x, Truth):
            return x
        x = _d(x)
        return cls(_int(x.get("schema")), _int(x.get("t0_ns"), None), {
            n: TruthDevice(n, {c: TruthClock.of(c, v) for c, v in _d(_d(d).get("clocks")).items()},
                           tuple(_l(_d(d).get("events"))), dict(_d(d)))
            for n, d in _d(x.get("devices")).items()}, x)

    def clock(self, device: str, clock: str) -> TruthClock | None:
        d = self.devices.get(device)
        return d.clocks.get(clock) if d else None
