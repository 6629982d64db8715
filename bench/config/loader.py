"""The one way `rackclock run`, `check` and `watch` read a rack file: every device's keys checked
against what its driver declares (`Driver.OPTIONS`, `Driver.SCHEMES`, `CREDENTIALS`, its stimuli)
and a simulated device's [sim] table against what its emulator and the clock model declare
(bench/sim/simtable.py) before anything starts (no run folder, no simulator, no device
contacted). Each problem is an
`InventoryError` whose text is one line naming the file, the device, the key and what is
accepted; the commands print it and exit 2. Paths in a rack file are relative to its folder.
Above the drivers and beside the simulator, whose declarations it reads (tests/test_layers.py:
the loader's layer).
"""
from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import drivers
from bench.config.inventory import (
    DEVICE_KEYS,
    DeviceConfig,
    InventoryError,
    Key,
    RackConfig,
    did_you_mean,
    load_rack,
    short,
)
from drivers.base import SET_CLOCK, SET_NTP, ClockSetter, DeviceError, NtpClient, StimulusTarget

REFERENCE_SPEC = re.compile(r"realtime|phc:/dev/ptp\d{1,3}")     # virtual: simulations only


def _is_chardev(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


@functools.cache
def known_drivers() -> tuple[str, ...]:
    here = Path(drivers.__file__).resolve().parent
    return tuple(sorted(p.stem for p in here.glob("*.py")
                        if not p.stem.startswith("_") and "\nDRIVER = " in p.read_text()))


def _driver_class(d: DeviceConfig):
    if d.driver not in known_drivers():
        raise InventoryError(f"no driver {d.driver!r}{did_you_mean(d.driver, known_drivers())}",
                             device=d.name, key="driver")
    return drivers.driver_class(d.driver)


def _resolve(key: Key, value: Any, base: Path) -> Any:
    """A path-valued key, made absolute relative to the rack file's folder."""
    if key.kind == "path" or (key.file_suffix and str(value).endswith(key.file_suffix)):
        p = Path(os.path.expanduser(str(value)))
        return str(p if p.is_absolute() else (base / p).resolve())
    return value


def _openable(d: DeviceConfig, specs: dict[str, Key], lab: bool) -> None:
    """What would fail at open, checked now: a key's file exists and reads (lab racks: the
    simulator supplies its own), a device path on this host is a character device (any rack),
    and its content passes the driver's check."""
    for k, v in d.options.items():
        spec = specs.get(k)
        if spec is None or not spec.exists:
            continue
        problem = None
        if spec.exists == "chardev":
            if urlsplit(d.address).scheme.lower() == "local" and not _is_chardev(v):
                problem = f"{v!r} is not a character device on this host"
        elif lab:
            problem = _file_problem(v, spec)
        if problem:
            raise InventoryError(problem, device=d.name, key=k)


def _file_problem(v: Any, spec: Key) -> str | None:
    """Why the file a key names cannot serve: missing, unreadable, or its content refused."""
    if not os.path.isfile(v) or not os.access(v, os.R_OK):
        return f"{v!r}: no readable file there"
    problem = spec.content(v) if spec.content else None
    return f"{v!r}: {problem}" if problem else None


def _credentials(d: DeviceConfig, drv) -> None:
    """Lab racks: the credential keys the driver needs are given (each group of
    `drv.CREDENTIALS`: one of its keys at least), and every variable named is set."""
    given = {k: v for k, v in (("username", d.username), ("password_env", d.password_env),
                               *d.options.items()) if v}
    _required_credentials(d, drv, given)
    for k, var in given.items():
        if k.endswith("_env") and isinstance(var, str) and var not in os.environ:
            raise InventoryError(f"the environment variable {var} is not set", device=d.name,
                                 key=k)


def _required_credentials(d: DeviceConfig, drv: Any, given: dict[str, Any]) -> None:
    """Each group of `drv.CREDENTIALS` has one of its keys given (none with auth = "none")."""
    if d.options.get("auth") == "none":
        return
    for group in getattr(drv, "CREDENTIALS", ()):
        if not any(k in given for k in group):
            raise InventoryError(f"missing: driver {d.driver} needs {' or '.join(group)}",
                                 device=d.name, key=group[0])


def check_device(d: DeviceConfig, base: Path, lab: bool = False) -> DeviceConfig:
    """The device with its driver's keys checked and its paths resolved; `lab`: a rack this run
    does not simulate (a served one included), whose files and credential variables are
    checked too."""
    cls = _driver_class(d)
    options = {k: _checked_option(d, cls, k, v, base) for k, v in d.options.items()}
    _check_address(d, cls, options)
    d = replace(d, options=MappingProxyType(options))
    _openable(d, {**DEVICE_KEYS, **cls.OPTIONS}, lab)
    drv, known = _driver_stimuli(d, cls)
    if lab:
        _credentials(d, drv)
    for entry in d.stimuli:
        name = entry.partition(":")[0]
        if name not in known:
            raise InventoryError(f"{entry!r}: driver {d.driver} has no stimulus {name!r} "
                                 f"(it has: {', '.join(known) or 'none'})", device=d.name,
                                 key="stimuli")
    return d


def _check_address(d: DeviceConfig, cls: Any, options: dict[str, Any]) -> None:
    """The address's scheme is one the driver speaks, and the driver takes the address."""
    scheme = urlsplit(d.address).scheme.lower()
    if cls.SCHEMES and scheme not in cls.SCHEMES:
        raise InventoryError(f"{d.address!r}: driver {d.driver} speaks "
                             + ", ".join(f"{s}://" for s in cls.SCHEMES if s), device=d.name,
                             key="address")
    problem = getattr(cls, "address_problem", lambda *_: None)(scheme, options)
    if problem:
        raise InventoryError(f"{d.address!r}: {problem}", device=d.name, key="address")


def _checked_option(d: DeviceConfig, cls: Any, k: str, v: Any, base: Path) -> Any:
    """One driver key's value checked against the driver's declaration, paths resolved."""
    spec = cls.OPTIONS.get(k) or DEVICE_KEYS.get(k)     # the fit's keys stay in options
    if spec is None:
        raise InventoryError(f"unknown key for driver {d.driver}"
                             f"{did_you_mean(k, [*cls.OPTIONS, *DEVICE_KEYS])}",
                             device=d.name, key=k)
    try:
        spec.check(v)
    except InventoryError as exc:
        raise InventoryError(exc.problem, device=d.name, key=k) from None
    return _resolve(spec, v, base)


def _driver_stimuli(d: DeviceConfig, cls: Any) -> tuple[Any, list[str]]:
    """The driver made (unarmed, never opened) and the stimulus kinds it offers."""

    try:
        drv = cls(d, lambda: 0, armed=False)
        known = list(drv.stimuli()) if isinstance(drv, StimulusTarget) else []
        known += [k for k, can in ((SET_CLOCK, isinstance(drv, ClockSetter)),
                                   (SET_NTP, isinstance(drv, NtpClient))) if can]
    except DeviceError as exc:
        raise InventoryError(exc.message, device=d.name) from None
    except (ValueError, TypeError) as exc:
        raise InventoryError(f"{type(exc).__name__}: {exc}", device=d.name) from None
    return drv, known


def load_checked(path: str | Path, need_devices: bool = True) -> RackConfig:
    """Read and check a rack file: every device's keys against its driver, paths resolved.
    `need_devices=False` (check): a rack of no devices checks the reference alone."""
    rack = load_rack(path)
    try:
        _check_reference(rack.reference)
        if need_devices and not rack.devices:
            raise InventoryError("no devices: a rack file needs at least one [devices.NAME] table")
        base = Path(rack.source or path).parent
        lab = not rack.simulated          # a served rack (`rackclock sim`) is hardware to us
        devices = tuple(check_device(d, base, lab) for d in rack.devices)
        if any(d.sim is not None for d in devices):
            from bench.sim.simtable import check_rack_sims
            check_rack_sims(devices)
    except InventoryError as exc:
        raise exc.located(str(path)) from None
    uds = rack.options.get("ptp_uds")
    options = dict(rack.options)
    if uds not in (None, "auto", "none"):
        options["ptp_uds"] = str(Path(rack.source or path).parent / os.path.expanduser(uds))
    return replace(rack, devices=devices, options=MappingProxyType(options))


def _check_reference(reference: str) -> None:
    """[rack] reference: realtime, or phc:/dev/ptpN naming a PTP clock of this host."""
    if not REFERENCE_SPEC.fullmatch(reference):
        raise InventoryError(f"[rack] {short(reference)} is not accepted (one of "
                             f"realtime, phc:/dev/ptpN)", key="reference")
    if reference.startswith("phc:") and not _is_chardev(reference[4:]):
        raise InventoryError(f"[rack] {reference!r}: {reference[4:]} is not a "
                             f"PTP hardware clock on this host", key="reference")
