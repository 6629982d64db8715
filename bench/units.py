"""Formatting and parsing of times with their units (every figure the bench prints has one)."""
from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

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


def _unit_of(a: float) -> tuple[float, str]:
    return next(((sc, u) for sc, u in _UNITS if a >= sc), (1.0, "ns"))


def directed(x: float, scale: float, dec: int, up: bool) -> str:
    """x / scale rounded down (`up`: up) at `dec` decimals, exactly (in decimal, never through a
    float that could land on the inner side): the one rounding every printed bound goes through."""
    if not math.isfinite(x):
        return str(float(x))                 # 'inf', '-inf', 'nan': said as they are
    with localcontext() as ctx:
        ctx.prec = 80
        v = Decimal(x) / Decimal(scale)
        q = v.quantize(Decimal(1).scaleb(-dec), rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return f"{abs(q) if q.is_zero() else q:f}"


def _trim(t: str) -> str:
    """'2.00' -> '2', '7.50' -> '7.5' (the same value, its trailing zeros dropped)."""
    return t.rstrip("0").rstrip(".") if "." in t else t


def _digits_dec(v: float, digits: int) -> int:
    """Decimals that show `digits` significant digits of v (never fewer than its integer part)."""
    if v == 0 or not math.isfinite(v):
        return 0
    return max(0, digits - (math.floor(math.log10(abs(v))) + 1))


def fmt_end_ns(x: float | None, up: bool, digits: int = 3) -> str:
    """One end of an interval in its own unit, `digits` significant digits, rounded outward
    (a lower end down, an upper end up): -7.553 ms -> '-7.56 ms' (lower), 276.1 ms -> '277 ms'
    (upper). Also a width or a half-width that must not be understated (`up`)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    scale, unit = _unit_of(abs(x))
    return f"{_trim(directed(x, scale, _digits_dec(x / scale, digits), up))} {unit}"


def fmt_ns_up(x: float | None, digits: int = 3) -> str:
    """A width, a half-width or a size a claim rests on, rounded up: never understated."""
    return fmt_end_ns(x, True, digits)


def fmt_bounds_ns(lo: float | None, hi: float | None, digits: int = 3) -> str:
    """[lo, hi] with a unit per end, rounded outward: '[-7.56 ms, 277 ms]'."""
    return f"[{fmt_end_ns(lo, False, digits)}, {fmt_end_ns(hi, True, digits)}]"


def fmt_interval_ns(lo: float, hi: float) -> str:
    """[lo, hi] in one unit, with enough decimals that the width shows, rounded outward (lo down,
    hi up at the printed precision): '[-41.2701, -41.2672] s'."""
    scale, unit = _unit_of(max(abs(lo), abs(hi)))
    width = (hi - lo) / scale
    dec = 0 if not 0 < width < math.inf else max(0, min(9, math.ceil(-math.log10(width)) + 1))
    return f"[{directed(lo, scale, dec, False)}, {directed(hi, scale, dec, True)}] {unit}"


def ppm_interval(lo: float, hi: float) -> str:
    """[lo, hi] ppm without the unit, lo rounded down and hi up to a digit a tenth of the width
    fine (at least 3 significant digits)."""
    w = hi - lo
    dec = 0 if not 0 < w < math.inf else max(0, min(6, 1 - math.floor(math.log10(w))))
    a = max(abs(lo), abs(hi))
    if 0 < a < math.inf:
        dec = max(dec, 2 - math.floor(math.log10(a)))
    return f"[{directed(lo, 1, dec, False)}, {directed(hi, 1, dec, True)}]"


def fmt_end(x: float | None, unit: str, up: bool, digits: int = 3) -> str:
    """One end of an interval in any unit, rounded outward: ns in its own time unit, ppm and
    the rest to `digits` significant digits (6 for bare counts, as '%g')."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if unit == "ns":
        return fmt_end_ns(x, up, digits)
    d = digits if unit == "ppm" else max(digits, 6)
    return f"{_trim(directed(x, 1, _digits_dec(x, d), up))} {unit}".strip()


def fmt_bounds(lo: float | None, hi: float | None, unit: str, digits: int = 3) -> str:
    """[lo, hi] in `unit`, rounded outward: a time ('ns') and ppm with a unit per end, any other
    unit once after the bracket."""
    if unit in ("ns", "ppm"):
        return f"[{fmt_end(lo, unit, False, digits)}, {fmt_end(hi, unit, True, digits)}]"
    return f"[{fmt_end(lo, '', False, digits)}, {fmt_end(hi, '', True, digits)}] {unit}".strip()


def fmt_instant_pm(lo_ns: int, hi_ns: int) -> str:
    """An instant known to lie in [lo_ns, hi_ns] (ns since the Unix epoch) as a UTC time of
    day and a half-width that covers the interval from the printed centre: the centre to a
    digit a tenth of the half-width fine (ms at least), the half-width rounded up:
    '2026-12-01 12:44:23.077Z ±6.05 µs'."""
    lo_ns, hi_ns = math.floor(lo_ns), math.ceil(hi_ns)
    half = (hi_ns - lo_ns) / 2
    d = 3 if half <= 0 else max(3, min(9, math.ceil(-math.log10(half / 1e10))))
    q = 10 ** (9 - d)
    c = (lo_ns + hi_ns) // 2
    c = (c + q // 2) // q * q
    sec, frac = divmod(c, 1_000_000_000)
    from datetime import UTC, datetime
    try:
        text = datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):      # beyond the calendar: the interval itself
        return f"{fmt_interval_ns(lo_ns, hi_ns)} since the Unix epoch"
    return f"{text}.{frac // q:0{d}d}Z ±{fmt_ns_up(max(c - lo_ns, hi_ns - c))}"


def scaled_out(x: float, factor: Fraction, up: bool) -> float:
    """x * factor as the nearest float on the outer side of the exact product (a bound
    exported as a float: ns to s is inexact, and the nearest float can fall inside)."""
    exact = Fraction(x) * factor
    f = float(exact)
    if up and Fraction(f) < exact:
        return math.nextafter(f, math.inf)
    if not up and Fraction(f) > exact:
        return math.nextafter(f, -math.inf)
    return f


PER_S = Fraction(1, 1_000_000_000)      # ns -> s
PER_PPM = Fraction(1, 1_000_000)        # ppm -> a ratio


def point_within(x: float, lo: float, hi: float) -> float:
    """x rounded to a digit a tenth of [lo, hi]'s width: a point printed or plotted no finer than
    its bound (-0.0904 in [-600, 600] is 0; 12.34 in [12.1, 12.6] is 12.34 to 0.01)."""
    w = hi - lo
    if not 0 < w < math.inf or not math.isfinite(x):
        return x
    q = 10.0 ** math.floor(math.log10(w / 10))
    return round(x / q) * q + 0.0


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
