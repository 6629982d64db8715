"""Tolerances of `rackclock compare` as frozen records, parsed from a TOML table (no I/O here;
the file's format and the default choices are documented in bench/compare/tolerances.toml)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from bench.errors import RackclockError
from bench.units import parse_duration_ns

MEASURES = {"offset": "ns", "drift": "ppm", "jitter": "ns", "bracket": "ns", "resolution": "ns",
            "breaks": "count", "latency": "ns", "errors": "count"}
DIRECTIONS = ("higher_is_worse", "magnitude", "any")   # magnitude: farther from 0 is worse


class ToleranceError(RackclockError, ValueError):
    """The tolerance file is malformed."""


@dataclass(frozen=True)
class Rule:
    judge: bool = True
    tolerance: float = 0.0            # in the measure's unit: ns, ppm or count
    relative: float = 0.0             # fraction of |baseline value|; the larger of the two is used
    direction: str = "higher_is_worse"

    def allowed(self, baseline_point: float) -> float:
        return max(self.tolerance, self.relative * abs(baseline_point))


@dataclass(frozen=True)
class Tolerances:
    measures: Mapping[str, Rule] = field(default_factory=lambda: MappingProxyType({}))
    planes: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(
        default_factory=lambda: MappingProxyType({}))
    devices: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(
        default_factory=lambda: MappingProxyType({}))
    source: str = ""

    def rule(self, measure: str, device: str = "", plane: str = "") -> Rule:
        """`measure` may be specific ("latency.test_event.median"); its family ("latency")
        applies first, then each more specific key ("latency.test_event", then the full name),
        then the plane's and the device's overrides in the same order."""
        parts = measure.split(".")
        keys = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]   # latency, latency.S, ...
        family = keys[0]
        r = self.measures.get(family, Rule())
        for key in keys[1:]:
            r = self.measures.get(key, r)
        for scope in (self.planes.get(plane, {}), self.devices.get(device, {})):
            for key in keys:
                if key in scope:
                    r = _rule(scope[key], family, r, f"{device or plane}.{key}")
        return r


def _number(v, unit: str, where: str) -> float:
    if unit == "ns":
        try:
            return float(parse_duration_ns(v))
        except ValueError as exc:
            raise ToleranceError(f"{where}: {exc}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ToleranceError(f"{where}: expected a number ({unit}), got {v!r}")
    return float(v)


def _rule(t: Mapping[str, Any], family: str, base: Rule, where: str) -> Rule:
    if family not in MEASURES:
        raise ToleranceError(f"{where}: unknown measure {family!r} (known: {', '.join(MEASURES)})")
    if not isinstance(t, Mapping):
        raise ToleranceError(f"{where}: expected a table")
    unit = MEASURES[family]
    changes: dict[str, Any] = {}
    for k, v in t.items():
        if k == "judge":
            changes["judge"] = bool(v)
        elif k in ("tolerance", "tolerance_ppm", "tolerance_ns"):
            changes["tolerance"] = _number(v, unit, f"{where}.{k}")
        elif k == "relative":
            changes["relative"] = _number(v, "count", f"{where}.{k}")
        elif k == "direction":
            if v not in DIRECTIONS:
                raise ToleranceError(f"{where}.direction: {v!r} (known: {', '.join(DIRECTIONS)})")
            changes["direction"] = v
        else:
            raise ToleranceError(f"{where}: unknown key {k!r}")
    return replace(base, **changes)


def tolerances_from_dict(data: Mapping[str, Any], source: str = "") -> Tolerances:
    measures: dict[str, Rule] = {}
    for key, t in (data.get("measures") or {}).items():
        measures[key] = _rule(t, key.split(".", 1)[0], measures.get(key.split(".", 1)[0], Rule()),
                              f"measures.{key}")
    for scope in ("planes", "devices"):
        for name, tables in (data.get(scope) or {}).items():
            for key, t in tables.items():
                _rule(t, key.split(".", 1)[0], Rule(), f"{scope}.{name}.{key}")   # validate now
    unknown = set(data) - {"measures", "planes", "devices"}
    if unknown:
        raise ToleranceError(f"unknown table(s) {sorted(unknown)} (known: measures, planes, devices)")
    return Tolerances(MappingProxyType(measures),
                      MappingProxyType(dict(data.get("planes") or {})),
                      MappingProxyType(dict(data.get("devices") or {})), source)
