"""Formatting and parsing of times with their units (every figure the bench prints has one)."""
from __future__ import annotations

import math
import re

_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]
_PARSE = {"s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1.0, "min": 60e9, "h": 3600e9}


def _g(x: float, digits: int) -> str:
    """`digits` significant digits, never in scientific notation (3641.27 -> '3641')."""
    t = f"{x:.{digits}g}"
    if "e" not in t:
        return t
    import numpy as np
    return np.format_float_positional(float(t), trim="-")


def fmt_ns(x: float | None, digits: int = 3, precision_ns: float | None = None) -> str:
    """12345678 -> '12.3 ms'; picks the unit that keeps the mantissa at or above 1. Never rounds
    away a digit of the integer part (-3641.27 s -> '-3641 s', never '-3640 s'), and with
    `precision_ns` (the figure's bound width or resolution) shows every digit down to it
    (-3641.27 s with 10 ms -> '-3641.27 s')."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    a = float(f"{abs(x):.{digits}g}")      # rounded first: 999.98 ms shows as 1 s
    scale, unit = next(((sc, u) for sc, u in _UNITS if a >= sc), (1.0, "ns"))
    v = x / scale
    d = max(digits, len(str(int(round(abs(v))))))
    if precision_ns and precision_ns > 0 and v:
        need = math.floor(math.log10(abs(v))) - math.floor(math.log10(precision_ns / scale)) + 1
        d = max(d, min(17, need))
    return f"{_g(v, d)} {unit}"


def fmt_interval_ns(lo: float, hi: float) -> str:
    """[lo, hi] in one unit, with enough decimals that the width shows: '[-41.2701, -41.2672] s'."""
    a = max(abs(lo), abs(hi))
    scale, unit = next(((sc, u) for sc, u in _UNITS if a >= sc), (1.0, "ns"))
    width = (hi - lo) / scale
    dec = 0 if width <= 0 else max(0, min(9, math.ceil(-math.log10(width)) + 1))
    return f"[{lo / scale:.{dec}f}, {hi / scale:.{dec}f}] {unit}"


def fmt_ppm(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{_g(x, digits)} ppm"


def parse_duration_ns(text: str | float | int) -> int:
    """'1ms', '250 us', '2.5s', 0.001 (seconds) -> integer ns."""
    if isinstance(text, (int, float)):
        return round(float(text) * 1e9)
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([a-zµ]*)\s*", str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (examples: 1ms, 250us, 2.5s)")
    value, unit = float(m.group(1)), m.group(2) or "s"
    if unit not in _PARSE:
        raise ValueError(f"unknown unit {unit!r} in {text!r} (known: {', '.join(_PARSE)})")
    return round(value * _PARSE[unit])
