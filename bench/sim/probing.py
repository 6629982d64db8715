"""Reads of a clock model taken as the runner takes them, in virtual time (no sockets): the
soundness fuzz and the estimator tests drive the real probe schedule with it.

Three probes of four of a coarse clock are aimed at the predicted tick edge
(bench/probe_schedule.next_probe_ns), the fourth is an exploration read uniform over the tick
phase (probe_schedule.explore_instant_ns), one probe per slot of the plan's grid
(probe_schedule.grid_slot), as bench/run/runner.py does; brackets are loopback-like
(0.3–1 ms) or sideband-like (20–40 ms), the device samples anywhere in its bracket, a few reads are
lost, none is answered while the device reboots.
"""
from __future__ import annotations

import numpy as np

from bench.analysis.probe_schedule import (
    AIM_REACH,
    ProvenTick,
    aim_from_ns,
    explore_instant_ns,
    grid_slot,
    next_probe_ns,
    paired_slots,
)
from bench.sim.clock_model import ClockModel

NS = 1_000_000_000
EXPLORE_EVERY = 4
DITHER = 0.5


def bracket_ns(rng: np.random.Generator, sideband: bool) -> int:
    if sideband:
        return int(rng.uniform(20e6, 40e6) + rng.exponential(3e6))
    return int(rng.uniform(0.3e6, 1e6) + rng.exponential(0.2e6))


def _aimed(S: list[int], E: list[int], V: list[int], q: int, now: int, centre: int,
           period: float, aim_state: dict, t: int) -> int:
    """The instant the schedule aims this read at (as the runner does), else `t`."""
    br = int(np.median(np.array(E[-20:]) - np.array(S[-20:])))
    try:
        a = next_probe_ns(S, E, V, q, aim_from_ns(now, centre, q, period), br, 0,
                          state=aim_state, paired=paired_slots(q, period))
        return a if now <= a < centre + AIM_REACH * period else t
    except Exception:           # the runner journals it and reads at the dithered time
        return t


def _instant(coarse: bool, now: int, u: float, q: int, centre: int, period: float) -> int:
    """Where the read goes before any aim: a coarse clock's exploring instant, else dithered in
    its slot (`u`: the one uniform draw either takes)."""
    if coarse:
        return max(now, explore_instant_ns(u, q, centre, period, DITHER))
    return max(now, int(centre + (u - 0.5) * DITHER * period))


def _corruption(q: int, rng: np.random.Generator) -> int:
    """A corrupted answer's error: whole ticks, far off (at least 2 s or 20 ticks)."""
    off = max(2 * NS, 20 * q) * float(rng.uniform(1, 5)) * float(rng.choice([-1, 1]))
    return int(off) // q * q


def _first_bad_read(rng: np.random.Generator, n: int, bad: int) -> int:
    """The index of the first corrupted answer (a random read from the tenth on); -1: none."""
    return int(rng.integers(10, max(11, n - 10))) if bad else -1


def _corrupted(i: int, bad_at: int, bad: int) -> bool:
    """Whether answer `i` is one of the `bad` consecutive corrupted answers from `bad_at`."""
    return bad_at >= 0 and bad_at <= i < bad_at + bad


def _aims_at_ticks(q: int, counter: bool, reads: int) -> bool:
    """Whether the runner aims its reads at tick edges: a coarse clock (a tick of 1 ms or
    more), not a counter, after the first four reads."""
    return q >= 1_000_000 and not counter and reads >= 4


def _lag_ns(rng: np.random.Generator, lag_s: float) -> int:
    """How far the device's value lags its own clock this read: U(0.5, 1)·lag."""
    return int(rng.uniform(0.5, 1.0) * lag_s * NS) if lag_s else 0


def read_like_runner(m: ClockModel, n: int, rate_hz: float, declared_ns: int,
                     rng: np.random.Generator, *, sideband: bool = False, lag_s: float = 0.0,
                     bad: int = 0, lost: float = 0.03, t0_ns: int | None = None,
                     aim_declared: bool = False):
    """n answered reads: (s, e, v, sample instants, indices of corrupted reads).

    `lag_s`: the device's value lags its own clock by a varying U(0.5, 1)·lag (libc time() on
    the kernel's coarse clock); `bad`: that many consecutive answers, from a random read on, are
    corrupted by whole ticks, far off (at least 2 s or 20 ticks); `aim_declared`: aim and explore
    with the declared tick, as the runner did before issue 29 (benchmarks/snmpd_hrsystemdate.py)."""
    p = m.p
    period = NS / rate_hz
    S: list[int] = []
    E: list[int] = []
    V: list[int] = []
    A: list[int] = []
    corrupted: list[int] = []
    now = m.t0_ns if t0_ns is None else int(t0_ns)
    k = 0
    origin, slot = now + int(period // 2), -1        # slot 0 spans the first period
    bad_at = _first_bad_read(rng, n, bad)
    aim_state: dict = {}                # the schedule's per-clock state, as the runner keeps it
    tick = ProvenTick(declared_ns)
    reads: list[tuple[int, int, int]] = []
    while len(S) < n:
        slot, centre = grid_slot(origin, slot, period, now)
        q = tick.declared_ns if aim_declared else tick.update(reads)   # as the runner aims
        coarse = _aims_at_ticks(q, p.counter, len(S))
        aim = coarse and k % EXPLORE_EVERY
        k += coarse
        t = _instant(coarse, now, rng.random(), q, centre, period)
        if aim:
            t = _aimed(S, E, V, q, now, centre, period, aim_state, t)
        b = bracket_ns(rng, sideband)
        sample = t + int(rng.uniform() * b)
        now = t + b
        if m.down(sample) or rng.uniform() < lost:
            continue
        v = m.read_ns(sample - _lag_ns(rng, lag_s))
        if _corrupted(len(S), bad_at, bad):
            v += _corruption(p.resolution_ns, rng)
            corrupted.append(len(S))
        S.append(t)
        E.append(now)
        V.append(v)
        reads.append((t, now, v))
        A.append(sample)
    return (*(np.array(x, dtype=np.int64) for x in (S, E, V, A)), corrupted)
