"""The rack file (`rack.toml`) as plain configuration records: no I/O beyond parsing the file.

Credentials appear here only as environment-variable *names*; `DeviceConfig.secret()` reads the
value when a driver needs it, and nothing in this module ever stores it.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

KNOWN_KEYS = {"plane", "driver", "address", "username", "password_env", "rate_hz", "stimuli", "sim"}


class InventoryError(ValueError):
    """The rack file is malformed."""


def _frozen(d: Mapping | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class DeviceConfig:
    name: str
    plane: str
    driver: str
    address: str
    username: str | None = None
    password_env: str | None = None
    rate_hz: float = 1.0
    stimuli: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))   # the driver's own keys
    sim: Mapping[str, Any] | None = None                                       # simulated racks only

    def allows(self, stimulus: str, target: str | int | None = None) -> bool:
        """A stimulus is allowed only if listed: `NAME` (no target) or `NAME:TARGET`."""
        key = stimulus if target is None else f"{stimulus}:{target}"
        return key in self.stimuli

    def secret(self) -> str | None:
        """The password from the environment variable the inventory names (None if unset)."""
        return os.environ.get(self.password_env) if self.password_env else None

    def public(self) -> dict:
        """The entry as it may be written into results: names of variables, never their values."""
        d = {"plane": self.plane, "driver": self.driver, "address": self.address,
             "rate_hz": self.rate_hz, "stimuli": list(self.stimuli)}
        if self.username:
            d["username"] = self.username
        if self.password_env:
            d["password_env"] = self.password_env
        d.update({k: v for k, v in self.options.items() if "password" not in k and "secret" not in k})
        if self.sim is not None:
            d["sim"] = dict(self.sim)
        return d


@dataclass(frozen=True)
class RackConfig:
    name: str
    reference: str = "realtime"
    simulated: bool = False
    devices: tuple[DeviceConfig, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))   # [rack] keys beyond these
    source: str | None = None
    limits: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))    # [limits] (bench.limits)

    def device(self, name: str) -> DeviceConfig:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(name)

    def public(self) -> dict:
        return {"name": self.name, "reference": self.reference, "simulated": self.simulated,
                **{k: v for k, v in self.options.items()},
                "devices": {d.name: d.public() for d in self.devices},
                **({"limits": dict(self.limits)} if self.limits else {})}


def device_from_table(name: str, t: Mapping[str, Any]) -> DeviceConfig:
    for key in ("plane", "driver", "address"):
        if key not in t:
            raise InventoryError(f"device {name!r}: missing key {key!r}")
    if "password" in t:
        raise InventoryError(f"device {name!r}: inline 'password' is refused; name an environment "
                             f"variable with 'password_env'")
    stimuli = t.get("stimuli", [])
    if not isinstance(stimuli, list) or not all(isinstance(s, str) for s in stimuli):
        raise InventoryError(f"device {name!r}: 'stimuli' must be a list of strings")
    rate = float(t.get("rate_hz", 1.0))
    if not rate > 0:
        raise InventoryError(f"device {name!r}: rate_hz must be positive")
    return DeviceConfig(
        name=name, plane=str(t["plane"]), driver=str(t["driver"]), address=str(t["address"]),
        username=t.get("username"), password_env=t.get("password_env"), rate_hz=rate,
        stimuli=tuple(stimuli),
        options=_frozen({k: v for k, v in t.items() if k not in KNOWN_KEYS}),
        sim=_frozen(t["sim"]) if "sim" in t else None,
    )


def rack_from_dict(data: Mapping[str, Any], source: str | None = None) -> RackConfig:
    rack = dict(data.get("rack", {}))
    devices = data.get("devices", {})
    if not isinstance(devices, Mapping):
        raise InventoryError("[devices] must be a table of device tables")
    return RackConfig(
        name=str(rack.pop("name", "rack")), reference=str(rack.pop("reference", "realtime")),
        simulated=bool(rack.pop("simulated", False)),
        devices=tuple(device_from_table(n, t) for n, t in devices.items()),
        options=_frozen(rack), source=source, limits=_limits(data.get("limits")),
    )


# -- [limits] (issue 19): judged by bench.limits; kept apart from the device keys above ----------
def _limits(table: Mapping[str, Any] | None) -> Mapping[str, Any]:
    from bench.limits import LimitError, limits_from_dict
    try:
        return _frozen(limits_from_dict(table))
    except LimitError as exc:
        raise InventoryError(str(exc)) from None


def load_rack(path: str | Path) -> RackConfig:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"{path}: {exc}") from exc
    return rack_from_dict(data, source=str(path))
