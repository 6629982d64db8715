"""The command line's values of `rackclock run` and `rackclock check`, checked before anything
starts: durations, the reference allowance, the output folder, experiment parameters. The rack
file's devices are checked against their drivers by bench/config/loader.py (`load_checked`).
Each problem is an `InventoryError` whose text is one line saying what is accepted; the commands
print it and exit 2.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench.config.inventory import InventoryError, Key, RackConfig, did_you_mean

T = TypeVar("T")

DURATION_KEY = Key("float", 0.5, 7 * 86400.0, unit="s")       # --duration
ALLOWANCE_KEY = Key("float", 0.0, 60.0, unit="s")             # --reference-allowance


def reference_options(rack: RackConfig) -> dict[str, Any]:
    """The keyword arguments of the reference's set-up that the rack file gives (`ptp_uds`,
    `ptp_domain`): the same for `check` and `run` (bench.reference.monitor.RunReference.open)."""
    uds = rack.options.get("ptp_uds", "auto")
    return {"ptp_uds": None if uds == "none" else uds,
            "domain": int(rack.options.get("ptp_domain", 0))}


# -- the command line ---------------------------------------------------------------------------
def _checked(key: Key, value: float, option: str) -> float:
    try:
        key.check(value)              # the value, when accepted
    except InventoryError as exc:
        raise InventoryError(f"{option} {exc.problem}") from None
    return value


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
    from bench import safeio

    try:
        with safeio.Folder.open(out, create=True) as d:     # UnsafeFolder: another user's
            d.check_writable()
    except OSError as exc:
        raise InventoryError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


def _cast(cast: Callable[[str], T], v: str, what: str) -> T:
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
