"""The rack file (`rack.toml`) as plain configuration records: no I/O beyond parsing the file.

Credentials appear here only as environment-variable *names*; `DeviceConfig.secret()` reads the
value when a driver needs it, and nothing in this module ever stores it.
"""
from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

# the rack file's vocabulary, declared in bench.config.keys
from bench.config.keys import ENV_NAME as ENV_NAME
from bench.config.keys import SAFE_NAME as SAFE_NAME
from bench.config.keys import InventoryError as InventoryError
from bench.config.keys import Key as Key
from bench.config.keys import did_you_mean as did_you_mean
from bench.config.keys import short as short

KNOWN_KEYS = {"plane", "driver", "address", "username", "password_env", "rate_hz", "stimuli", "sim"}
MAX_RACK_BYTES = 8 << 20          # a rack of 300 devices is about 100 KiB


DEVICE_KEYS = {
    "plane": Key("str"), "driver": Key("str"), "address": Key("str"), "username": Key("str"),
    "password_env": Key("env"),
    "rate_hz": Key("float", 0.01, 20.0, unit="Hz"),
    "stimuli": Key("list[str]"), "sim": Key("table"),
    # the fit's assumptions about this device's oscillator (bench/model/summary.py)
    "drift_prior_ppm": Key("float", 0.001, 10_000.0, unit="ppm"),
    "wander_ppm": Key("float", 0.0, 1_000.0, unit="ppm per sqrt(hour)"),
    "tick_lag_ms": Key("float", 0.0, 10_000.0, unit="ms"),
    # the zone of this device's zone-less log stamps (`rackclock timeline`; bench/model/timeline_build)
    "log_timezone": Key("zone"),
}
RACK_KEYS = {
    "name": Key("str"), "reference": Key("str"), "simulated": Key("bool"),
    "seed": Key("int", 0, 2**63 - 1), "ptp_uds": Key("str"), "ptp_domain": Key("int", 0, 255),
    "served_by": Key("str"), "site": Key("str"), "description": Key("str"),
}
CREDENTIAL = re.compile(r"password|passwd|passphrase|(^|_)pass($|_)|secret|token|community|"
                        r"(^|_)key$|privacy|auth_?key|credential|cookie", re.IGNORECASE)


def _frozen(d: Mapping[str, Any] | None) -> Mapping[str, Any]:
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

    def public(self) -> dict[str, Any]:
        """The entry as it may be written into results: names of variables, never their values."""
        d = {"plane": self.plane, "driver": self.driver, "address": self.address,
             "rate_hz": self.rate_hz, "stimuli": list(self.stimuli)}
        if self.username:
            d["username"] = self.username
        if self.password_env:
            d["password_env"] = self.password_env
        d.update({k: v for k, v in self.options.items()
                  if k.endswith("_env") or not CREDENTIAL.search(k)})
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
    # [limits] (bench.model.limit_checks)
    limits: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))

    def device(self, name: str) -> DeviceConfig:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(name)

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "reference": self.reference, "simulated": self.simulated,
                **{k: v for k, v in self.options.items()},
                "devices": {d.name: d.public() for d in self.devices},
                **({"limits": dict(self.limits)} if self.limits else {})}


def device_from_table(name: str, t: Mapping[str, Any]) -> DeviceConfig:
    """One device's table, its common keys checked (the driver's own keys are checked by
    bench.config.loader against what the driver declares)."""
    _check_device_shape(name, t)
    for key, value in t.items():
        _check_device_key(name, key, value)
    if re.match(r"[a-z][a-z0-9+.-]*://[^/@:]*:[^/@]*@", str(t["address"]), re.IGNORECASE):
        # a user name alone (ssh://root@host) is no secret; a password in the address is
        raise InventoryError("a password in the address is refused; use 'username' and "
                             "'password_env'", device=name, key="address")
    stimuli = t.get("stimuli", [])
    rate = float(t.get("rate_hz", 1.0))
    return DeviceConfig(
        name=name, plane=str(t["plane"]), driver=str(t["driver"]), address=str(t["address"]),
        username=t.get("username"), password_env=t.get("password_env"), rate_hz=rate,
        stimuli=tuple(stimuli),
        options=_frozen({k: v for k, v in t.items() if k not in KNOWN_KEYS}),
        sim=_frozen(t["sim"]) if "sim" in t else None,
    )


def _check_device_shape(name: str, t: Any) -> None:
    """A safe device name, a table, and the keys every device has."""
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name):
        raise InventoryError("device names are 1-64 characters of letters, digits, '.', '_', '-' "
                             "starting with a letter or digit", device=name)
    if not isinstance(t, Mapping):
        raise InventoryError(f"a device is a table, not {t!r}", device=name)
    for key in ("plane", "driver", "address"):
        if key not in t:
            raise InventoryError("missing (a device names its plane, driver and address)",
                                 device=name, key=key)


def _check_device_key(name: str, key: str, value: Any) -> None:
    """A common key's value, an environment variable's name, or an inline credential refused."""
    if key in DEVICE_KEYS:
        checker = DEVICE_KEYS[key]
    elif CREDENTIAL.search(key) and not key.endswith("_env"):
        raise InventoryError("an inline credential is refused; name an environment variable "
                             f"with '{key}_env'" if key != "password" else
                             "an inline credential is refused; name an environment variable "
                             "with 'password_env'", device=name, key=key)
    elif key.endswith("_env"):
        checker = Key("env")
    else:
        return
    try:
        checker.check(value)
    except InventoryError as exc:
        raise InventoryError(exc.problem, device=name, key=key) from None


def rack_from_dict(data: Mapping[str, Any], source: str | None = None) -> RackConfig:
    try:
        unknown = set(data) - {"rack", "devices", "limits"}
        if unknown:
            k = sorted(unknown)[0]
            raise InventoryError(f"unknown table{did_you_mean(k, ('rack', 'devices', 'limits'))}", key=k)
        rack = data.get("rack", {})
        if not isinstance(rack, Mapping):
            raise InventoryError("[rack] must be a table", key="rack")
        rack = dict(rack)
        for key, value in rack.items():
            if key not in RACK_KEYS:
                raise InventoryError(f"unknown [rack] key{did_you_mean(key, RACK_KEYS)}", key=key)
            try:
                RACK_KEYS[key].check(value)
            except InventoryError as exc:
                raise InventoryError(f"[rack] {exc.problem}", key=key) from None
        devices = data.get("devices", {})
        if not isinstance(devices, Mapping):
            raise InventoryError("[devices] must be a table of device tables", key="devices")
        return RackConfig(
            name=str(rack.pop("name", "rack")), reference=str(rack.pop("reference", "realtime")),
            simulated=bool(rack.pop("simulated", False)),
            devices=tuple(device_from_table(n, t) for n, t in devices.items()),
            options=_frozen(rack), source=source, limits=_limits(data.get("limits")),
        )
    except InventoryError as exc:
        raise exc.located(source) from None
    except RecursionError:
        raise InventoryError("nested too deeply", file=source) from None


# -- [limits] (issue 19): judged by bench.model.limit_checks; kept apart from the device keys above ----------
def _limits(table: Mapping[str, Any] | None) -> Mapping[str, Any]:
    from bench.model.limit_checks import LimitError, limits_from_dict
    try:
        return _frozen(limits_from_dict(table))
    except LimitError as exc:
        raise InventoryError(str(exc)) from None


def _read_text(path: Path) -> str:
    """The rack file's text: a regular file (not a FIFO or a device, which would block or never
    end) of at most MAX_RACK_BYTES."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InventoryError("not a regular file", file=str(path))
        data = f.read(MAX_RACK_BYTES + 1)
    if len(data) > MAX_RACK_BYTES:
        raise InventoryError(f"larger than {MAX_RACK_BYTES >> 20} MiB: not a rack file",
                             file=str(path))
    return data.decode()


def load_rack(path: str | Path) -> RackConfig:
    """Parse a rack file; every problem is an InventoryError of one line naming the file.
    `source` is the file's absolute path (paths in it are relative to its folder)."""
    path = Path(path)
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"not valid TOML: {exc}", file=str(path)) from None
    except RecursionError:
        raise InventoryError("not valid TOML: nested too deeply", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InventoryError(f"not a text file: {exc.reason}", file=str(path)) from None
    except IsADirectoryError:
        raise InventoryError("is a folder, not a rack file", file=str(path)) from None
    except FileNotFoundError:
        raise InventoryError("no such rack file", file=str(path)) from None
    except PermissionError:
        raise InventoryError("cannot read the rack file (permission denied)",
                             file=str(path)) from None
    except OSError as exc:
        raise InventoryError(f"cannot read the rack file: {exc.strerror or exc}",
                             file=str(path)) from None
    try:
        return rack_from_dict(data, source=str(path.resolve()))
    except InventoryError as exc:      # named as the user gave it
        raise InventoryError(exc.problem, file=str(path), device=exc.device, key=exc.key) \
            from None
