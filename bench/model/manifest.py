"""manifest.json as the bench writes it: typed records, each serialised by `to_dict()` in the key
order the file has always had and read back by `from_dict()`. The run's store merges them into
the manifest and writes it atomically (bench/model/store.py); the whole document as read is
bench.model.manifest_records.Manifest.

The manifest grows as the run goes: `RunStart` (provenance, the rack, the reference, status
running), each device's `DeviceProbed` after a probing loop, `RunEnd` however the run ended;
a run that ended before its experiment started writes `RunEndedEarly` alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

JSON = dict[str, Any]            # a JSON object whose shape the writer does not own


def _obj(x: object) -> JSON:
    return dict(x) if isinstance(x, dict) else {}


def _str(x: object) -> str:
    return x if isinstance(x, str) else ""


def _int(x: object) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else 0


@dataclass(frozen=True)
class DeviceStart:
    """A device's entry as the run starts: its plane and driver, or (a device the simulator
    could not start) an empty plane and why."""
    plane: str
    driver: str = ""
    error: str | None = None

    def to_dict(self) -> JSON:
        if self.error is not None:
            return {"plane": self.plane, "error": self.error}
        return {"plane": self.plane, "driver": self.driver}

    @classmethod
    def from_dict(cls, d: object) -> DeviceStart:
        x = _obj(d)
        error = x.get("error")
        return cls(_str(x.get("plane")), _str(x.get("driver")),
                   error if isinstance(error, str) else None)


@dataclass(frozen=True)
class RunStart:
    """The manifest as the experiment starts (fields in the file's key order, after `schema`)."""
    experiment: str
    run_id: str
    parameters: JSON
    experiment_file: str
    versions: JSON
    git: JSON
    host: JSON
    argv: list[str]
    armed: bool
    simulated: bool
    rack_file: str
    reference: JSON
    inventory: JSON
    devices: dict[str, DeviceStart]
    started_ns: int
    status: str
    pid: int
    admission: JSON

    def to_dict(self) -> JSON:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["devices"] = {n: d.to_dict() for n, d in self.devices.items()}
        return out

    @classmethod
    def from_dict(cls, d: object) -> RunStart:
        x = _obj(d)
        argv = x.get("argv")
        return cls(
            _str(x.get("experiment")), _str(x.get("run_id")), _obj(x.get("parameters")),
            _str(x.get("experiment_file")), _obj(x.get("versions")), _obj(x.get("git")),
            _obj(x.get("host")), [str(a) for a in argv] if isinstance(argv, list) else [],
            x.get("armed") is True, x.get("simulated") is True, _str(x.get("rack_file")),
            _obj(x.get("reference")), _obj(x.get("inventory")),
            {str(n): DeviceStart.from_dict(e) for n, e in _obj(x.get("devices")).items()},
            _int(x.get("started_ns")), _str(x.get("status")), _int(x.get("pid")),
            _obj(x.get("admission")))


@dataclass(frozen=True)
class DeviceProbed:
    """A device's fields after a probing loop (bench.run.runner.DeviceStatus.record); `traffic`
    only from a driver that counts what it sends."""
    identity: JSON
    clocks: list[JSON]
    state: str
    plane: str
    reads: int
    probes: int
    late_probes: int
    late_max_ns: int
    aims_yielded: int
    traffic: JSON = field(default_factory=dict)

    def to_dict(self) -> JSON:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not self.traffic:
            del out["traffic"]
        return out

    @classmethod
    def from_dict(cls, d: object) -> DeviceProbed:
        x = _obj(d)
        clocks = x.get("clocks")
        return cls(_obj(x.get("identity")),
                   [_obj(c) for c in clocks] if isinstance(clocks, list) else [],
                   _str(x.get("state")), _str(x.get("plane")), _int(x.get("reads")),
                   _int(x.get("probes")), _int(x.get("late_probes")), _int(x.get("late_max_ns")),
                   _int(x.get("aims_yielded")), _obj(x.get("traffic")))


@dataclass(frozen=True)
class RunEnd:
    """How the run ended; `stopped_by` only when a signal stopped it."""
    status: str
    error: str | None
    ended_ns: int
    duration_s: float
    stopped_by: str = ""

    def to_dict(self) -> JSON:
        out: JSON = {"status": self.status, "error": self.error, "ended_ns": self.ended_ns,
                     "duration_s": self.duration_s}
        if self.stopped_by:
            out["stopped_by"] = self.stopped_by
        return out

    @classmethod
    def from_dict(cls, d: object) -> RunEnd:
        x = _obj(d)
        error, took = x.get("error"), x.get("duration_s")
        return cls(_str(x.get("status")), error if isinstance(error, str) else None,
                   _int(x.get("ended_ns")),
                   float(took) if isinstance(took, (int, float)) else 0.0, _str(x.get("stopped_by")))


@dataclass(frozen=True)
class RunEndedEarly:
    """A run that ended before its experiment started (disk full, the simulator did not start,
    refused): the whole manifest. `extra` and `inventory` only for a refusal."""
    experiment: str
    run_id: str
    status: str
    error: str | None
    extra: JSON = field(default_factory=dict)       # what the refusal rests on (`admission`)
    inventory: JSON | None = None

    def to_dict(self) -> JSON:
        out: JSON = {"experiment": self.experiment, "run_id": self.run_id, "status": self.status,
                     "error": self.error, **self.extra}
        if self.inventory is not None:
            out["inventory"] = self.inventory
        return out

    @classmethod
    def from_dict(cls, d: object) -> RunEndedEarly:
        x = _obj(d)
        known = {"schema", "schema_version", "csv_schema_versions", "experiment", "run_id", "status",
                 "error", "inventory"}
        inventory, error = x.get("inventory"), x.get("error")
        return cls(_str(x.get("experiment")), _str(x.get("run_id")), _str(x.get("status")),
                   error if isinstance(error, str) else None, {k: v for k, v in x.items() if k not in known},
                   dict(inventory) if isinstance(inventory, dict) else None)
