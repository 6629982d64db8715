"""summary.json as records: latencies (`Latency`, its events and bound), a device's summary
(`DeviceSummary`: its clocks and latencies) and the `Summary` itself."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.analysis.proven_segment import Bound
from bench.model.clock_records import ClockSummary
from bench.model.field_readers import (
    _d,
    _int,
    _l,
    _RawMapping,
    _s,
    bound,
)
from bench.model.manifest_records import (
    Identity,
    ReferenceHealth,
)
from bench.model.run_statuses import (
    BoundStatus,
    ErrorKind,
    parse,
)


@dataclass(frozen=True)
class LatencyBound(Bound):
    """A latency bound over events: the union of their bounds, the median midpoint, how many."""
    n: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "point": self.point, "n": self.n}


def _lo_hi(b: Bound) -> dict[str, Any]:
    return {"lo": b.lo, "hi": b.hi}


@dataclass(frozen=True)
class LatencyEvent:
    """One stimulus and what the device logged after it (summary `latency.<s>.events[]`)."""
    seq: int = 0
    s_ns: int | None = None
    e_ns: int | None = None
    logged_ns: Bound | None = None
    observed_ns: Bound | None = None
    event: str = ""
    pushed: str = ""
    logged_via: str = ""          # the segment(s) the stamp was mapped through, with the status
    logged_unbounded: str = ""    # why the entry's stamp gives no bound (logged_ns None)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> LatencyEvent:
        x = _d(x)
        return cls(_int(x.get("seq")), _int(x.get("s_ns"), None), _int(x.get("e_ns"), None),
                   bound(x.get("logged_ns")), bound(x.get("observed_ns")),
                   _s(x.get("event")), _s(x.get("pushed")),
                   _s(x.get("logged_via")), _s(x.get("logged_unbounded")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form: an event's bounds as lo and hi only; `event` with the log entry
        (whose stamp gives `logged_ns` or says why not), `pushed` with a pushed event."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"seq": self.seq, "s_ns": self.s_ns, "e_ns": self.e_ns}
        if self.observed_ns is not None:
            out["observed_ns"] = _lo_hi(self.observed_ns)
        if self.logged_ns is not None or self.logged_unbounded:
            out["event"] = self.event
        if self.pushed:
            out["pushed"] = self.pushed
        if self.logged_ns is not None:
            out.update(logged_ns=_lo_hi(self.logged_ns), logged_via=self.logged_via)
        elif self.logged_unbounded:
            out["logged_unbounded"] = self.logged_unbounded
        return out

    @property
    def bound(self) -> Bound | None:
        """The device-stamped bound, else the first fetch's."""
        return self.logged_ns or self.observed_ns

    @property
    def logged_status(self) -> BoundStatus:
        """The status of `logged_ns`: `logged_via`'s first word (older summaries: proven); a
        stamp mapped beyond its calibration's proven span (`extrapolated`) rests on no break
        between the span's edge and it: assumed."""
        word = self.logged_via.split(" ", 1)[0]
        if word == "extrapolated":
            return BoundStatus.ASSUMED
        return BoundStatus(word) if word in set(BoundStatus) else BoundStatus.PROVEN


@dataclass(frozen=True)
class Latency:
    """summary `devices.<d>.latency.<stimulus>`."""
    stimulus: str
    sent: int = 0
    events: tuple[LatencyEvent, ...] = ()
    logged_ns: LatencyBound | None = None
    observed_ns: LatencyBound | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> Latency:
        x = _d(x)
        evs = tuple(LatencyEvent.of(e) for e in _l(x.get("events")))

        def lb(y: object) -> LatencyBound | None:
            b = bound(y)
            return None if b is None else LatencyBound(b.lo, b.hi, b.point, _int(_d(y).get("n")))
        return cls(name, _int(x.get("sent"), len(evs)), evs, lb(x.get("logged_ns")),
                   lb(x.get("observed_ns")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        return {"events": [e.to_dict() for e in self.events],
                **({"logged_ns": self.logged_ns.to_dict()} if self.logged_ns else {}),
                **({"observed_ns": self.observed_ns.to_dict()} if self.observed_ns else {}),
                "sent": self.sent}


@dataclass(frozen=True)
class DeviceSummary:
    """summary `devices.<name>`."""
    name: str
    plane: str = ""
    identity: Identity = field(default_factory=Identity)
    state: str = ""
    errors: dict[str, int] = field(default_factory=dict)      # ErrorKind (or newer) -> count
    first_errors: dict[str, str] = field(default_factory=dict)
    clocks: dict[str, ClockSummary] = field(default_factory=dict)
    latency: dict[str, Latency] = field(default_factory=dict)
    no_clock: tuple[str, ...] = ()
    traps_lost: int | None = None     # traps a later state read showed were lost (PDUs)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> DeviceSummary:
        x = _d(x)
        return cls(name, _s(x.get("plane")), Identity.of(x.get("identity")),
                   _s(x.get("state")),
                   {parse(ErrorKind, k): _int(v) for k, v in _d(x.get("errors")).items()},
                   {parse(ErrorKind, k): str(v) for k, v in _d(x.get("first_errors")).items()},
                   {c: ClockSummary.of(c, v) for c, v in _d(x.get("clocks")).items()},
                   {s: Latency.of(s, v) for s, v in _d(x.get("latency")).items()},
                   tuple(str(p) for p in _l(x.get("no_clock"))),
                   _int(x.get("traps_lost"), None), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The summary's form (a record read from one: as read)."""
        if self.raw:
            return dict(self.raw)
        return {"plane": self.plane, "identity": self.identity.to_dict() if self.identity else {},
                "state": self.state, "errors": dict(self.errors),
                "first_errors": dict(self.first_errors),
                "clocks": {c: x.to_dict() for c, x in self.clocks.items()},
                "latency": {s: x.to_dict() for s, x in self.latency.items()},
                **({"no_clock": list(self.no_clock)} if self.no_clock else {}),
                **({"traps_lost": self.traps_lost} if self.traps_lost is not None else {})}

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def errors_text(self) -> str:
        """'timeout 3, protocol 1' or '0'."""
        return ", ".join(f"{k} {v}" for k, v in self.errors.items()) or "0"

    def fitted_clocks(self) -> list[str]:
        return [c for c, x in self.clocks.items() if x.segments]


@dataclass(frozen=True, eq=False)
class Summary(_RawMapping):
    """summary.json (an empty one when the run wrote none)."""
    schema: int = 0
    rebuilt: bool = False
    reference: ReferenceHealth | None = None
    reference_uncertainty_ns: int = 0
    devices: dict[str, DeviceSummary] = field(default_factory=dict)
    unused_devices: tuple[str, ...] = ()      # devices the experiment never used
    # per device, requests per minute: {"minutes", "total", "by_kind", "reconnects"}
    # (bench.model.traffic.request_rates); absent for folders without counts by kind
    requests_per_min: dict[str, dict[str, Any]] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    schema_version: str = ""      # MAJOR.MINOR (bench/model/file_schemas.py); "" before it was written

    @classmethod
    def of(cls, x: object) -> Summary:
        if isinstance(x, Summary):
            return x
        x = _d(x)
        return cls(_int(x.get("schema")), bool(x.get("rebuilt")),
                   ReferenceHealth.of(x.get("reference")), _int(x.get("reference_uncertainty_ns")),
                   {n: DeviceSummary.of(n, d) for n, d in _d(x.get("devices")).items()},
                   tuple(str(n) for n in _l(x.get("unused_devices"))),
                   {str(n): dict(_d(r)) for n, r in _d(x.get("requests_per_min")).items()}, x,
                   _s(x.get("schema_version")))

    def device(self, name: str) -> DeviceSummary | None:
        return self.devices.get(name)

    def clocks(self) -> Iterator[tuple[DeviceSummary, ClockSummary]]:
        """(device summary, clock summary) of every clock, devices in name order."""
        for name in sorted(self.devices):
            d = self.devices[name]
            for c in d.clocks.values():
                yield d, c
