"""manifest.json as records: the devices (`DeviceEntry`, their `Identity` and clocks), the
reference's health, calibrations, the inventory, and the `Manifest` itself (how records are
read: bench/model/field_readers.py)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.model.field_readers import (
    _d,
    _dict_or_none,
    _float,
    _int,
    _l,
    _RawMapping,
    _rest,
    _s,
)
from bench.model.run_statuses import (
    RunStatus,
    parse,
)


@dataclass(frozen=True)
class Identity:
    """Who the device says it is: what a driver returns (drivers.base.Driver.identity) and what
    the manifest and summary hold (`devices.<d>.identity`). `extra` is the driver's own; by
    convention its key `no_clock` lists parts of the device that keep no clock at all (reported
    as such in the summary)."""
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Identity:
        x = _d(x)
        return cls(_s(x.get("vendor")), _s(x.get("model")),
                   _s(x.get("serial")), _s(x.get("firmware")),
                   dict(_d(x.get("extra"))), dict(x))

    def to_dict(self) -> dict[str, Any]:
        """The manifest's form: `extra` only when the driver gave any (read: as read)."""
        if self.raw:
            return dict(self.raw)
        return {"vendor": self.vendor, "model": self.model, "serial": self.serial,
                "firmware": self.firmware, **({"extra": dict(self.extra)} if self.extra else {})}

    def __bool__(self) -> bool:
        """Read: the document had an identity; made by a driver: it says anything."""
        return bool(self.raw) or any((self.vendor, self.model, self.serial, self.firmware,
                                      self.extra))


@dataclass(frozen=True)
class ReferenceHealth:
    """A reference health snapshot (manifest `reference`, `reference_end`), or the whole run's
    (`reference_run`, and the summary's `reference`)."""
    source: str = ""
    basis: str = ""
    verified: bool = False
    grade: str = ""
    uncertainty_ns: int = 0
    detail: dict[str, Any] = field(default_factory=dict)      # the source's own figures
    note: str = ""
    problems: tuple[Any, ...] = ()
    checked_ns: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> ReferenceHealth | None:
        if not isinstance(x, Mapping) or not x:
            return None
        return cls(_s(x.get("source")), _s(x.get("basis")), bool(x.get("verified")),
                   _s(x.get("grade")), _int(x.get("uncertainty_ns")),
                   dict(_d(x.get("detail"))), _s(x.get("note")),
                   tuple(_l(x.get("problems"))), _int(x.get("checked_ns"), None), dict(x))


# -- manifest.json ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ClockInfo:
    """A clock as its device declared it (manifest `devices.<d>.clocks[]`)."""
    name: str
    resolution_ns: int | None = None
    counter: bool = False
    modulus_ns: int | None = None
    lag_ns: int = 0                   # the reading may lag the clock by this much (declared)
    free_running: str = ""            # the device's word that nothing disciplines it (its source)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> ClockInfo:
        x = _d(x)
        return cls(_s(x.get("name")), _int(x.get("resolution_ns"), None),
                   bool(x.get("counter")), _int(x.get("modulus_ns"), None),
                   _int(x.get("lag_ns")), _s(x.get("free_running")), dict(x))


@dataclass(frozen=True)
class DeviceEntry:
    """manifest `devices.<name>`: what the run knew of a device."""
    name: str
    plane: str = ""
    driver: str = ""
    identity: Identity = field(default_factory=Identity)
    clocks: tuple[ClockInfo, ...] = ()
    state: str = ""
    error: str = ""
    reads: int = 0                  # clock reads taken (the runner's count)
    probes: int = 0                 # probes planned and started
    late_probes: int = 0            # probes started >= 10 ms after their planned instant
    late_max_ns: int = 0            # the latest start after plan (ns)
    aims_yielded: int = 0           # aimed probes read at an exploration instant (no room)
    traffic: dict[str, Any] | None = None     # requests, logins, throttled, reconnects, per minute
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, x: object) -> DeviceEntry:
        x = _d(x)
        return cls(name, _s(x.get("plane")), _s(x.get("driver")),
                   Identity.of(x.get("identity")),
                   tuple(ClockInfo.of(c) for c in _l(x.get("clocks"))),
                   _s(x.get("state")), _s(x.get("error")),
                   _int(x.get("reads")), _int(x.get("probes")), _int(x.get("late_probes")),
                   _int(x.get("late_max_ns")), _int(x.get("aims_yielded")),
                   _dict_or_none(x.get("traffic")), dict(x))

    def clock(self, name: str) -> ClockInfo | None:
        return next((c for c in self.clocks if c.name == name), None)


@dataclass(frozen=True)
class Calibration:
    """manifest `calibration.<device>.<clock>`: how narrow a clock's offset got during the run
    and when (written by bench.output.live.LiveBounds.record)."""
    calibrated_after_s: float | None = None
    width_then_ns: float | None = None
    last_width_ns: float | None = None
    min_bracket_ns: float | None = None
    last_status: str = ""
    criterion: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Calibration:
        x = _d(x)
        return cls(_float(x.get("calibrated_after_s"), None), _float(x.get("width_then_ns"), None),
                   _float(x.get("last_width_ns"), None), _float(x.get("min_bracket_ns"), None),
                   _s(x.get("last_status")), _s(x.get("criterion")), dict(x))

    def to_dict(self) -> dict[str, Any]:
        return {"calibrated_after_s": self.calibrated_after_s,
                "width_then_ns": self.width_then_ns, "last_width_ns": self.last_width_ns,
                "min_bracket_ns": self.min_bracket_ns, "last_status": self.last_status,
                "criterion": self.criterion}


@dataclass(frozen=True)
class Inventory:
    """manifest `inventory`: the rack without secrets (bench.config.inventory.RackConfig.public).
    `devices` and `limits` are the rack file's own tables (config, not results)."""
    name: str = ""
    reference: str = ""
    simulated: bool = False
    devices: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)     # the [rack] table's other keys (seed, ...)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, x: object) -> Inventory:
        x = _d(x)
        return cls(_s(x.get("name")), _s(x.get("reference")),
                   bool(x.get("simulated")),
                   {k: dict(_d(v)) for k, v in _d(x.get("devices")).items()},
                   dict(_d(x.get("limits"))), _rest(cls, x), dict(x))

    def device(self, name: str) -> dict[str, Any]:
        return self.devices.get(name) or {}

    def drift_prior_ppm(self, device: str) -> float:
        """The device's drift prior (ppm), or the estimator's default."""
        return float(self.device(device).get("drift_prior_ppm", DEFAULT_DRIFT_PRIOR_PPM))

    def wander_ppm(self, device: str) -> float:
        return float(self.device(device).get("wander_ppm", 0.0))


@dataclass(frozen=True, eq=False)
class Manifest(_RawMapping):
    """manifest.json."""
    schema: int = 0
    run_id: str = ""
    experiment: str = ""
    experiment_file: str = ""
    status: RunStatus | str = ""
    error: str | None = None
    stopped_by: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    git: dict[str, Any] = field(default_factory=dict)
    host: Any = None
    argv: tuple[str, ...] = ()
    armed: bool = False
    simulated: bool = False
    rack_file: str = ""
    inventory: Inventory = field(default_factory=Inventory)
    reference: ReferenceHealth | None = None
    reference_run: ReferenceHealth | None = None
    reference_end: ReferenceHealth | None = None
    devices: dict[str, DeviceEntry] = field(default_factory=dict)
    probe_plan: dict[str, Any] = field(default_factory=dict)
    admission: dict[str, Any] = field(default_factory=dict)  # capacity against need (run/admission.py)
    runner: dict[str, Any] = field(default_factory=dict)     # processes and devices per process
    calibration: dict[str, dict[str, Calibration]] = field(default_factory=dict)
    started_ns: int | None = None
    probed_until_ns: int | None = None
    ended_ns: int | None = None
    duration_s: float | None = None
    pid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys this model does not type: an
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)  # experiment's own (`incident`),
    # a newer bench's
    schema_version: str = ""      # MAJOR.MINOR (bench/model/file_schemas.py); "" before it was written
    csv_schema_versions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, x: object) -> Manifest:
        if isinstance(x, Manifest):
            return x
        x = _d(x)
        return cls(
            _int(x.get("schema")), _s(x.get("run_id")), _s(x.get("experiment")),
            _s(x.get("experiment_file")), parse(RunStatus, _s(x.get("status"))),
            None if x.get("error") is None else str(x["error"]), _s(x.get("stopped_by")),
            dict(_d(x.get("parameters"))), dict(_d(x.get("versions"))), dict(_d(x.get("git"))),
            x.get("host"), tuple(_l(x.get("argv"))), bool(x.get("armed")),
            bool(x.get("simulated")), _s(x.get("rack_file")),
            Inventory.of(x.get("inventory")), ReferenceHealth.of(x.get("reference")),
            ReferenceHealth.of(x.get("reference_run")), ReferenceHealth.of(x.get("reference_end")),
            {n: DeviceEntry.of(n, d) for n, d in _d(x.get("devices")).items()},
            dict(_d(x.get("probe_plan"))),
            dict(_d(x.get("admission"))), dict(_d(x.get("runner"))),
            {dev: {c: Calibration.of(v) for c, v in _d(cl).items()}
             for dev, cl in _d(x.get("calibration")).items()},
            _int(x.get("started_ns"), None), _int(x.get("probed_until_ns"), None),
            _int(x.get("ended_ns"), None), _float(x.get("duration_s"), None),
            _int(x.get("pid"), None), _rest(cls, x), x, _s(x.get("schema_version")),
            {str(k): str(v) for k, v in _d(x.get("csv_schema_versions")).items()})

    def device(self, name: str) -> DeviceEntry:
        return self.devices.get(name) or DeviceEntry(name)

    def calibration_of(self, device: str, clock: str) -> Calibration | None:
        return self.calibration.get(device, {}).get(clock)

    def uncertainty_ns(self) -> int:
        """The reference uncertainty to add to every bracket (ns): the largest of the start
        snapshot, the run's series and the stop snapshot, as far as the manifest holds them."""
        return max(h.uncertainty_ns if h else 0 for h in
                   (self.reference, self.reference_run, self.reference_end))
