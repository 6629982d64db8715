"""Uptime counters: telling a wrap from a reboot, and unwrapping, from bracketed reads alone.

Pure numpy, no I/O. Input is one clock's reads in the order taken (`s_ns` non-decreasing):
each read i says the device sampled its counter at some instant in [s_i, e_i] and the counter
then read `value_ns[i]` (ns since its zero, modulo `modulus_ns`; resolution `resolution_ns`).

Between consecutive reads the counter must have advanced by the reference time elapsed, within
the brackets, the resolution and a rate tolerance (`rate_tol`, fractional; 1e-3 covers any
crystal):

    lo_i = (s_i - e_{i-1}) - rate_tol*|s_i - e_{i-1}| - q
    hi_i = (e_i - s_{i-1}) + rate_tol*|e_i - s_{i-1}| + q

A step dv_i = v_i - v_{i-1} is *consistent with k wraps* when dv_i + k*modulus lies in
[lo_i, hi_i] for exactly one k >= 0 (k = 0: an ordinary step). When no k fits, a counter that
now reads no more than the time elapsed since the previous read (v_i <= hi_i) has *rebooted*
(restarted from zero in between); otherwise it has *jumped* (was set, or the reads are not of
one counter). Both end a segment; a wrap does not. A reboot that happens to land where a wrap
was due (v_{i-1} + elapsed = modulus + v_i) cannot be told from the wrap by reads alone.

A reboot's counter zero R satisfies, for the first read i after it (rate within tolerance):
    R in ( s_i - (v_i + q)/(1 - rate_tol),  e_i - v_i/(1 + rate_tol) ]   and R > s_{i-1}
which `split_reboots` reports as the bounds of the reboot instant.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import F64, I64

DEFAULT_RATE_TOL = 1e-3
REBOOT = -1          # step codes from `step_wraps`
JUMP = -2
AMBIGUOUS = -3


def _arrays(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike) -> tuple[I64, I64, I64]:
    s = np.asarray(s_ns, dtype=np.int64)
    e = np.asarray(e_ns, dtype=np.int64)
    v = np.asarray(value_ns, dtype=np.int64)
    if not (s.shape == e.shape == v.shape) or s.ndim != 1:
        raise ValueError("s_ns, e_ns and value_ns must be 1-d and of one length")
    if np.any(np.diff(s) < 0):
        raise ValueError("reads must be in the order taken (s_ns non-decreasing)")
    if np.any(e < s):
        raise ValueError("a bracket ends before it starts (e_ns < s_ns)")
    return s, e, v


def step_windows(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, resolution_ns: int = 1,
                 rate_tol: float = DEFAULT_RATE_TOL) -> tuple[F64, F64]:
    """(lo, hi): for each step i-1 -> i (length n-1), the range in ns the counter may have
    advanced by, given the brackets, the resolution and the rate tolerance."""
    s = np.asarray(s_ns, dtype=np.int64)
    e = np.asarray(e_ns, dtype=np.int64)
    d_lo = (s[1:] - e[:-1]).astype(np.float64)
    d_hi = (e[1:] - s[:-1]).astype(np.float64)
    lo = d_lo - rate_tol * np.abs(d_lo) - resolution_ns
    hi = d_hi + rate_tol * np.abs(d_hi) + resolution_ns
    return lo, hi


def step_wraps(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, modulus_ns: int = 0,
               resolution_ns: int = 1, rate_tol: float = DEFAULT_RATE_TOL) -> I64:
    """Per step i-1 -> i (length n-1): the number of wraps k >= 0 it took, or REBOOT (no k fits
    and the counter reads at most the time elapsed), JUMP (no k fits otherwise), AMBIGUOUS
    (several k fit: a gap longer than the modulus)."""
    s, e, v = _arrays(s_ns, e_ns, value_ns)
    if len(v) < 2:
        return np.zeros(0, dtype=np.int64)
    lo, hi = step_windows(s, e, resolution_ns, rate_tol)
    dv = np.diff(v).astype(np.float64)
    if modulus_ns > 0:
        m = float(modulus_ns)
        k_lo = np.maximum(np.ceil((lo - dv) / m), 0)
        k_hi = np.floor((hi - dv) / m)
    else:
        k_lo = np.where(dv >= lo, 0.0, 1.0)
        k_hi = np.where(dv <= hi, 0.0, -1.0)
    fits = k_lo <= k_hi
    # no k fits: a restart from zero after the previous read reads at most the time elapsed
    restarted = v[1:] <= hi
    out = np.where(fits, k_lo, np.where(restarted, REBOOT, JUMP)).astype(np.int64)
    out[fits & (k_hi > k_lo)] = AMBIGUOUS
    return out


def unwrap(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, modulus_ns: int,
           resolution_ns: int = 1, rate_tol: float = DEFAULT_RATE_TOL) -> tuple[I64, I64]:
    """(unwrapped_value_ns, wraps): `wraps[i]` counts the wraps since the start of read i's
    segment (it restarts at 0 after a reboot or jump, which `split_reboots` reports), and
    `unwrapped = value + wraps*modulus`."""
    s, e, v = _arrays(s_ns, e_ns, value_ns)
    codes = step_wraps(s, e, v, modulus_ns, resolution_ns, rate_tol)
    wraps = np.zeros(len(v), dtype=np.int64)
    acc = 0
    for i, k in enumerate(codes, start=1):
        acc = 0 if k < 0 and k != AMBIGUOUS else acc + max(int(k), 0)
        wraps[i] = acc
    return v + wraps * np.int64(max(modulus_ns, 0)), wraps


def zero_bounds(s_ns: int, e_ns: int, value_ns: int, resolution_ns: int = 1,
                rate_tol: float = DEFAULT_RATE_TOL) -> tuple[int, int]:
    """Bounds (lo, hi] on the reference instant the counter read zero, from one read of it
    (value taken as ns since that zero, i.e. already unwrapped)."""
    lo = s_ns - (value_ns + resolution_ns) / (1.0 - rate_tol)
    hi = e_ns - value_ns / (1.0 + rate_tol)
    return int(np.floor(lo)), int(np.ceil(hi))


class CounterSegment(TypedDict):
    """One segment of `split_reboots`."""
    start: int
    stop: int
    kind: str
    wraps: int
    zero_lo_ns: int
    zero_hi_ns: int


def split_reboots(s_ns: npt.ArrayLike, e_ns: npt.ArrayLike, value_ns: npt.ArrayLike, modulus_ns: int = 0,
                  resolution_ns: int = 1, rate_tol: float = DEFAULT_RATE_TOL) -> list[CounterSegment]:
    """Segments of one counter's reads between reboots (and jumps), in order. Each is
    `{"start", "stop"}` (read indices, stop exclusive), `"kind"` ("first" | "reboot" | "jump"),
    `"wraps"` (wraps inside it), and `"zero_lo_ns"`, `"zero_hi_ns"`: bounds on the instant the
    counter was zero. For a "reboot" segment that is the reboot instant (also bounded below by
    the previous read's `s_ns`); for the "first" it is the boot instant assuming no wrap before
    the first read; for a "jump", the zero implied by the new readings."""
    s, e, v = _arrays(s_ns, e_ns, value_ns)
    if len(v) == 0:
        return []
    codes = step_wraps(s, e, v, modulus_ns, resolution_ns, rate_tol)
    unwrapped, wraps = unwrap(s, e, v, modulus_ns, resolution_ns, rate_tol)
    cuts = [0] + [i + 1 for i, k in enumerate(codes) if k in (REBOOT, JUMP)] + [len(v)]
    segments: list[CounterSegment] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        lo, hi = zero_bounds(int(s[a]), int(e[a]), int(unwrapped[a]), resolution_ns, rate_tol)
        kind = "first" if a == 0 else ("reboot" if codes[a - 1] == REBOOT else "jump")
        if kind == "reboot":
            lo = max(lo, int(s[a - 1]))
        segments.append({"start": a, "stop": b, "kind": kind, "wraps": int(wraps[b - 1]),
                         "zero_lo_ns": lo, "zero_hi_ns": hi})
    return segments
