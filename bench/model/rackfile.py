"""The one way `rackclock run` and `rackclock check` read a rack file and their command line.

Everything is checked before anything starts (no run folder, no simulator, no device contacted):
the rack file's keys against what the bench and each device's driver declare (`Driver.OPTIONS`,
`Driver.SCHEMES`, its stimuli), ranges of rates, durations and timeouts, the command line's
values. Each problem is an `InventoryError` whose text is one line naming the file, the device,
the key and what is accepted; the commands print it and exit 2.
Paths in a rack file are relative to the rack file's folder.
"""
from __future__ import annotations

import functools
import math
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.model.inventory import (DeviceConfig, InventoryError, Key, RackConfig, did_you_mean,
                             load_rack, short, DEVICE_KEYS)

REFERENCE_SPEC = re.compile(r"realtime|phc:/dev/ptp\d{1,3}")     # virtual: simulations only
DURATION_KEY = Key("float", 0.5, 7 * 86400.0, unit="s")       # --duration
ALLOWANCE_KEY = Key("float", 0.0, 60.0, unit="s")             # --reference-allowance


@functools.cache
def known_drivers() -> tuple[str, ...]:
    here = Path(__file__).resolve().parents[2] / "drivers"
    return tuple(sorted(p.stem for p in here.glob("*.py")
                        if not p.stem.startswith("_") and "\nDRIVER = " in p.read_text()))


def _driver_class(d: DeviceConfig):
    import drivers

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


def _is_chardev(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _openable(d: DeviceConfig, specs: dict[str, Key], lab: bool) -> None:
    """What would fail at open, checked now: a key's file exists and reads (lab racks: the
    simulator supplies its own), a device path on this host is a character device (any rack),
    and its content passes the driver's check."""
    for k, v in d.options.items():
        spec = specs.get(k)
        if spec is None or not spec.exists:
            continue
        if spec.exists == "chardev":
            if urlsplit(d.address).scheme.lower() == "local" and not _is_chardev(v):
                raise InventoryError(f"{v!r} is not a character device on this host",
                                     device=d.name, key=k)
        elif lab:
            if not os.path.isfile(v) or not os.access(v, os.R_OK):
                raise InventoryError(f"{v!r}: no readable file there", device=d.name, key=k)
            problem = spec.content(v) if spec.content else None
            if problem:
                raise InventoryError(f"{v!r}: {problem}", device=d.name, key=k)


def _credentials(d: DeviceConfig, drv) -> None:
    """Lab racks: the credential keys the driver needs are given (each group of
    `drv.CREDENTIALS`: one of its keys at least), and every variable named is set."""
    given = {k: v for k, v in (("username", d.username), ("password_env", d.password_env),
                               *d.options.items()) if v}
    for group in getattr(drv, "CREDENTIALS", ()):
        if not any(k in given for k in group):
            raise InventoryError(f"missing: driver {d.driver} needs {' or '.join(group)}",
                                 device=d.name, key=group[0])
    for k, var in given.items():
        if k.endswith("_env") and isinstance(var, str) and var not in os.environ:
            raise InventoryError(f"the environment variable {var} is not set", device=d.name,
                                 key=k)


def check_device(d: DeviceConfig, base: Path, lab: bool = False) -> DeviceConfig:
    """The device with its driver's keys checked and its paths resolved; `lab`: a rack this run
    does not simulate (a served one included), whose files and credential variables are
    checked too."""
    cls = _driver_class(d)
    options = {k: _checked_option(d, cls, k, v, base) for k, v in d.options.items()}
    scheme = urlsplit(d.address).scheme.lower()
    if cls.SCHEMES and scheme not in cls.SCHEMES:
        raise InventoryError(f"{d.address!r}: driver {d.driver} speaks "
                             + ", ".join(f"{s}://" for s in cls.SCHEMES if s), device=d.name,
                             key="address")
    d = replace(d, options=type(d.options)(options))
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
    from drivers.base import SET_CLOCK, SET_NTP, ClockSetter, DeviceError, NtpClient, StimulusTarget

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
        if not REFERENCE_SPEC.fullmatch(rack.reference):
            raise InventoryError(f"[rack] {short(rack.reference)} is not accepted (one of "
                                 f"realtime, phc:/dev/ptpN)", key="reference")
        if rack.reference.startswith("phc:") and not _is_chardev(rack.reference[4:]):
            raise InventoryError(f"[rack] {rack.reference!r}: {rack.reference[4:]} is not a "
                                 f"PTP hardware clock on this host", key="reference")
        if need_devices and not rack.devices:
            raise InventoryError("no devices: a rack file needs at least one [devices.NAME] table")
        base = Path(rack.source).parent
        lab = not rack.simulated          # a served rack (`rackclock sim`) is hardware to us
        devices = tuple(check_device(d, base, lab) for d in rack.devices)
    except InventoryError as exc:
        raise exc.located(str(path)) from None
    uds = rack.options.get("ptp_uds")
    options = dict(rack.options)
    if uds not in (None, "auto", "none"):
        options["ptp_uds"] = str(Path(rack.source).parent / os.path.expanduser(uds))
    return replace(rack, devices=devices, options=type(rack.options)(options))


def reference_options(rack: RackConfig) -> dict:
    """The keyword arguments of the reference's set-up that the rack file gives (`ptp_uds`,
    `ptp_domain`): the same for `check` and `run` (bench.reference.monitor.RunReference.open)."""
    uds = rack.options.get("ptp_uds", "auto")
    return {"ptp_uds": None if uds == "none" else uds,
            "domain": int(rack.options.get("ptp_domain", 0))}


# -- the command line ---------------------------------------------------------------------------
def _checked(key: Key, value: float, option: str) -> float:
    try:
        return key.check(value)
    except InventoryError as exc:
        raise InventoryError(f"{option} {exc.problem}") from None


def check_duration(seconds: float | None) -> float | None:
    return None if seconds is None else _checked(DURATION_KEY, float(seconds), "--duration")


def parse_allowance(text: str | None) -> int | None:
    """--reference-allowance as integer ns."""
    from bench.units import parse_duration_ns

    if text is None:
        return None
    try:
        ns = parse_duration_ns(text)
    except (ValueError, OverflowError) as exc:
        raise InventoryError(f"--reference-allowance: {exc}") from None
    _checked(ALLOWANCE_KEY, ns / 1e9, "--reference-allowance")
    return ns


def check_out(out: Path) -> None:
    """The folder for run folders must be (or be made) a folder a file can be written in."""
    import tempfile

    try:
        Path(out).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise InventoryError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


def _cast(cast, v: str, what: str):
    try:
        return cast(v)
    except ValueError:
        raise ValueError(f"expected {what}, got {v!r}") from None


def check_params(exp: Any, overrides: dict[str, str], given_as: dict[str, str] | None = None
                 ) -> dict[str, Any]:
    """`--param key=value` cast to the experiment's Params field types, ranges checked.
    `given_as`: the option a key came from when not --param (duration_s: "--duration")."""
    from dataclasses import fields

    types = {f.name: str(f.type) for f in fields(exp.Params)}
    kw: dict[str, Any] = {}
    for k, v in overrides.items():
        if k not in types:
            _refuse_param(k, types, given_as)
        try:
            kw[k] = _param_value(types[k], v)
        except ValueError as exc:
            raise InventoryError(f"--param {k}={v}: {exc}") from None
        _check_param_range(k, kw[k])
    return kw


def _refuse_param(k: str, types: dict[str, str], given_as: dict[str, str] | None) -> None:
    opt = (given_as or {}).get(k)
    if opt:
        raise InventoryError(f"{opt}: this experiment takes no {opt.lstrip('-')} "
                             f"(its parameters: {', '.join(types)})")
    raise InventoryError(f"--param {k}: the experiment has no such parameter"
                         f"{did_you_mean(k, types)}")


def _param_value(t: str, v: str) -> Any:
    """A parameter's text cast to its field type `t` (ValueError saying what is expected)."""
    if "bool" in t:
        if v.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise ValueError("expected true or false")
        return v.lower() in ("1", "true", "yes", "on")
    if "float" in t:
        if "None" in t and v.lower() == "none":
            return None
        x = _cast(float, v, "a number")
        if not math.isfinite(x) or x < 0:
            raise ValueError("expected a finite number, 0 or more")
        return x
    if "int" in t:
        n = _cast(int, v, "a whole number")
        if n < 0:
            raise ValueError("expected an integer, 0 or more")
        return n
    return v


def _check_param_range(k: str, value: Any) -> None:
    if k == "duration_s":
        check_duration(value)
    elif k.endswith("_s") and value is not None:
        _checked(Key("float", 0.01, 86400.0, unit="s"), value, f"--param {k}")
    elif k == "burst":
        _checked(Key("int", 1, 20), value, f"--param {k}")
