"""Clock models with known ground truth, driven by reference time (real or virtual).

A model is a pure function of the reference instant `t_ns` (integer ns), deterministic from its
seed: the same parameters and seed give the same readings in real and in virtual time.

Wall clock:  D(t) = t + offset + drift*(t - t0) + W(t) + sum(steps before t) + tz_error
Counter:     C(t) = (t - z)*(1 + drift) + W(t) - W(z)        z = last zero (boot or reboot)
W is a frequency random walk ("wander"). The device reports floor(D/q)*q, a counter modulo its wrap.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from bench.config.schema import (
    FLAG,
    TEXT,
    YEARS_100_S,
    Check,
    list_of,
    num,
    record,
    span,
)

NS = 1_000_000_000


# Each parameter of the clock model is declared once, here: its default, the check of its
# rack-file value (bench/config/schema.py; the range keeps the simulator bounded) and, when the
# file's form differs from the model's, how it is converted. params_from_table, the [sim] table's
# keys (bench/sim/simtable.py) and docs/RACKFILE.md all read these fields.
AT_S = num(0.0, 1e8, "s")                # an instant after the run's start (3 years)
PPM = num(-10_000.0, 10_000.0, "ppm")
SIZE_S = num(-YEARS_100_S, YEARS_100_S, "s")


def _floats(x: Any, names: tuple[str, ...]) -> tuple[float, ...]:
    """A record as the file gives it (a table of these names, or a list in this order)."""
    return tuple(float(x[n]) for n in names) if isinstance(x, Mapping) else tuple(map(float, x))


def _record(*names: str) -> Callable[[Any], tuple[float, ...]]:
    return lambda x: _floats(x, names)


def _records(*names: str) -> Callable[[Any], tuple[tuple[float, ...], ...]]:
    return lambda xs: tuple(_floats(x, names) for x in xs)


def _span(x: Any) -> tuple[float, float]:
    return (float(x), float(x)) if isinstance(x, (int, float)) else (float(x[0]), float(x[1]))


def param(default: Any, check: Check, convert: Callable[[Any], Any] | None = None,
          doc: str = "") -> Any:
    """A ClockParams field: its default, the check of its rack-file value, its conversion and
    what it means (docs/RACKFILE.md says it)."""
    return field(default=default, metadata={"check": check, "convert": convert, "doc": doc})


def _rows(names: tuple[str, ...], checks: tuple[Check, ...]) -> Check:
    return list_of(record(names, checks))


DISCIPLINE = ("every_lo_s", "every_hi_s", "corr_lo_ms", "corr_hi_ms", "slew_ppm")


@dataclass(frozen=True)
class ClockParams:
    offset_s: float = param(0.0, SIZE_S,
        doc="wall clock: device minus reference at t0, s")
    drift_ppm: float = param(0.0, PPM,
        doc="constant fractional frequency error, ppm")
    wander_ppm: float = param(0.0, num(0.0, 1000.0, "ppm per sqrt(hour)"),
        doc="frequency random walk: std of its change over one hour, ppm")
    resolution_s: float = param(1.0, num(1e-9, 86400.0, "s"),
        doc="the tick the device really delivers, s")
    counter: bool = param(False, FLAG,
        doc="counts from zero (boot) instead of Unix epoch")
    uptime_s: float = param(0.0, num(0.0, YEARS_100_S, "s"),
        doc="counter: reading at t0, s")
    wrap_ticks: int = param(0, num(0, 2**64, kind="int"),
        doc="counter: wraps modulo this many ticks (0 = never)")
    steps: tuple[tuple[float, float], ...] = param(
        (), _rows(("at_s", "size_s"), (AT_S, SIZE_S)), _records("at_s", "size_s"),
        doc="(at_s after t0, size_s): clock set / stepped")
    reboots: tuple[float, ...] = param((), list_of(AT_S), lambda xs: tuple(map(float, xs)),
        doc="at_s after t0: a counter restarts from zero")
    slews: tuple[tuple[float, float, float], ...] = param(
        (), _rows(("at_s", "duration_s", "rate_ppm"), (AT_S, AT_S, PPM)),
        _records("at_s", "duration_s", "rate_ppm"),
        doc="(at_s, duration_s, rate_ppm): NTP-style")
    freq_steps: tuple[tuple[float, float], ...] = param(
        (), _rows(("at_s", "delta_ppm"), (AT_S, PPM)), _records("at_s", "delta_ppm"),
        doc="(at_s, delta_ppm): the frequency changes")
    blips: tuple[tuple[float, float, float], ...] = param(
        (), _rows(("at_s", "size_s", "back_after_s"), (AT_S, SIZE_S, num(0.0, 1e8, "s"))),
        _records("at_s", "size_s", "back_after_s"),
        doc="(at_s, size_s, back_after_s): a step and its correction (an NTP step, then the re-sync)")
    discipline: tuple[float, ...] = param(
        (), record(DISCIPLINE, (num(1.0, 86400.0, "s"), num(1.0, 86400.0, "s"),
                                num(0.0, 1e6, "ms"), num(0.0, 1e6, "ms"),
                                num(1.0, 10_000.0, "ppm"))), _record(*DISCIPLINE),
        doc="(every_lo_s, every_hi_s, corr_lo_ms, corr_hi_ms, slew_ppm): an NTP client "
            "correcting ±corr every `every` s by slewing (no step)")
    hunting: tuple[float, ...] = param(
        (), record(("ppm", "period_s"), (PPM, num(1.0, 86400.0, "s"))), _record("ppm", "period_s"),
        doc="(ppm, period_s): a PLL hunting, ±ppm alternating")
    tick_lag_ms: tuple[float, ...] = param(
        (), record(("lo", "hi"), (num(0.0, 10_000.0, "ms"), num(0.0, 10_000.0, "ms"))),
        _record("lo", "hi"),
        doc="(lo, hi): the reading lags the clock by a varying lag in [lo, hi] ms, redrawn "
            "each second (libc time() on the kernel's coarse clock)")
    update_s: float = param(0.0, num(0.0, 86400.0, "s"),
        doc="the value updates only every update_s (0: always)")
    frozen_at_s: float | None = param(None, AT_S,
        doc="the clock stops advancing from then on (stuck RTC, a frozen agent counter)")
    horizon_s: float = param(6 * 3600.0, num(0.0, 2 * 86400.0, "s"),
        doc="how far discipline and hunting are generated")
    reboot_down_s: float = param(5.0, num(0.0, 3600.0, "s"),
        doc="the device does not answer this long after a reboot")
    sample_delay_s: float = param(0.0, num(0.0, 10.0, "s"),
        doc="from request arrival to the instant the clock is sampled")
    reply_delay_s: float = param(0.0, num(0.0, 10.0, "s"),
        doc="from the clock's sample to the answer leaving")
    jitter_s: float = param(0.0, num(0.0, 10.0, "s"),
        doc="mean of an exponential extra delay before sampling")
    log_latency_s: tuple[float, float] = param((0.0, 0.0), span(0.0, 3600.0), _span,
        doc="event -> log stamp, uniform in [lo, hi]")
    local_offset_min: int = param(0, num(-1440, 1440, "min", "int"),
        doc="UTC offset the device claims for its local time")
    true_local_offset_min: int | None = param(None, num(-1440, 1440, "min", "int"),
        doc="offset it really applies (None: as claimed)")
    firmware: str = param("1.0.0", TEXT,
        doc="the firmware version it reports; selects [sim.by_firmware.VERSION]")

    @property
    def tz_error_ns(self) -> int:
        if self.true_local_offset_min is None:
            return 0
        return (self.true_local_offset_min - self.local_offset_min) * 60 * NS

    @property
    def resolution_ns(self) -> int:
        return max(1, round(self.resolution_s * NS))


# the rack file's clock keys: name -> its check (a [sim] table, its clocks' and firmwares' own);
# `seed` is the model's (models_for), not a parameter
CLOCK_KEYS: dict[str, Check] = {**{f.name: f.metadata["check"] for f in fields(ClockParams)},
                                "seed": num(0, 2**63 - 1, kind="int")}
CLOCK_DOCS: dict[str, str] = {**{f.name: f.metadata["doc"] for f in fields(ClockParams)},
                              "seed": "the model's random seed (default: from the rack's seed, "
                                      "the device's name and the clock's)"}


def params_from_table(table: Mapping[str, Any]) -> ClockParams:
    """ClockParams from a rack file's `sim` table (unknown keys are the emulator's own), each
    value converted as its field declares.

    `firmware = "X"` selects `by_firmware."X"`, whose keys override the others: a firmware update
    can change the clock's behaviour.
    """
    t = dict(table)
    if table.get("firmware") is not None:
        t.update(table.get("by_firmware", {}).get(str(table["firmware"]), {}))
    return ClockParams(**{f.name: (f.metadata["convert"] or _same)(t[f.name])
                          for f in fields(ClockParams) if f.name in t})


def _same(x: Any) -> Any:
    return x


def seed_for(rack_seed: int, device: str, clock: str = "") -> int:
    return zlib.crc32(f"{rack_seed}/{device}/{clock}".encode())


class ClockModel:
    """One device clock. `t0_ns` is the reference instant the parameters refer to (run start)."""

    WANDER_STEP_NS = NS      # the frequency walk changes once per second
    corrections: tuple = ()  # t_ns -> ns added to a wall reading (a discipline: bench.sim.ntp)
    correction_rates: tuple = ()   # t_ns -> ppm: those corrections' rate (slew), for the truth
    correction_breaks: tuple = ()  # () -> [break dicts]: those corrections' steps, for the truth
    correction_knots: tuple = ()   # () -> [t_ns]: where those corrections change rate or step
    _read_once = False       # read_ns has been called: the counter's boot instant is observed
    _wrap_lead_ns: int | None = None   # wrap_at_first_read: pending until the first reading

    def __init__(self, params: ClockParams, t0_ns: int, seed: int = 0):
        self.p = params
        self.t0_ns = int(t0_ns)
        self.seed = seed
        self.rng = np.random.default_rng(seed)            # for the emulator's delays and latencies
        self._wrng = np.random.default_rng([seed, 1])     # for the wander only
        self._freq = np.zeros(1)                           # fractional frequency at each second
        self._phase = np.zeros(1)                          # integral of it, ns, at each second
        self._sigma = params.wander_ppm * 1e-6 / math.sqrt(3600.0)
        blips = [x for a, s, back in params.blips for x in ((a, s), (a + back, -s))]
        self._steps = sorted((self.t0_ns + round(a * NS), round(s * NS))
                             for a, s in (*params.steps, *blips))
        self._slew_a, self._slew_d, self._slew_r = _slew_arrays(params, seed)
        self._reboots = sorted(self.t0_ns + round(a * NS) for a in params.reboots)
        rate = 1.0 + params.drift_ppm * 1e-6
        self._zero0 = self.t0_ns - round(params.uptime_s * NS / rate)

    # -- wander ------------------------------------------------------------------------------
    def _extend(self, k: int) -> None:
        n = len(self._freq)
        if k < n:
            return
        m = max(k + 1 - n, 4096)
        inc = self._wrng.normal(0.0, self._sigma, m) if self._sigma else np.zeros(m)
        freq = self._freq[-1] + np.cumsum(inc)
        phase = self._phase[-1] + np.cumsum(np.concatenate(([self._freq[-1]], freq[:-1]))) * NS
        self._freq = np.concatenate((self._freq, freq))
        self._phase = np.concatenate((self._phase, phase))

    def wander_ns(self, t_ns: int) -> float:
        """Phase accumulated by the frequency walk since t0 (0 before t0)."""
        dt = t_ns - self.t0_ns
        if dt <= 0 or not self._sigma:
            return 0.0
        k, r = divmod(dt, self.WANDER_STEP_NS)
        self._extend(k + 1)
        return float(self._phase[k] + self._freq[k] * r)

    def wander_freq(self, t_ns: int) -> float:
        dt = t_ns - self.t0_ns
        if dt <= 0 or not self._sigma:
            return 0.0
        k = dt // self.WANDER_STEP_NS
        self._extend(k + 1)
        return float(self._freq[k])

    # -- truth -------------------------------------------------------------------------------
    def zero_ns(self, t_ns: int) -> int:
        """Counter: the reference instant of its last zero (boot or reboot) at or before t."""
        z = self._zero0
        for r in self._reboots:
            if r <= t_ns:
                z = r
        return z

    def down(self, t_ns: int) -> bool:
        """True while the device is rebooting and does not answer."""
        d = round(self.p.reboot_down_s * NS)
        return any(r <= t_ns < r + d for r in self._reboots)

    def true_ns(self, t_ns: int) -> int:
        """The device's reading at reference instant t before quantization and wrap, ns."""
        t_ns = int(t_ns)
        p = self.p
        if p.counter:
            z = self.zero_ns(t_ns)
            return (t_ns - z) + round(p.drift_ppm * 1e-6 * (t_ns - z)
                                      + self.wander_ns(t_ns) - self.wander_ns(z))
        stepped = sum(s for at, s in self._steps if at <= t_ns)
        return (t_ns + round(p.offset_s * NS) + round(p.drift_ppm * 1e-6 * (t_ns - self.t0_ns)
                + self.wander_ns(t_ns) + self.rate_changes_ns(t_ns)) + stepped + p.tz_error_ns
                + sum(c(t_ns) for c in self.corrections))

    def rate_changes_ns(self, t_ns: int) -> float:
        """Phase gained by slews (discipline and hunting included) and frequency steps up to t
        (wall clocks), ns."""
        x = 0.0
        if len(self._slew_a):
            dt = float(t_ns - self.t0_ns)
            x += float(np.sum(self._slew_r * 1e-6 * np.clip(dt - self._slew_a, 0.0, self._slew_d)))
        for at, dppm in self.p.freq_steps:
            x += dppm * 1e-6 * max(t_ns - (self.t0_ns + at * NS), 0.0)
        return x

    def rate_change_ppm(self, t_ns: int) -> float:
        """The frequency added by slews and frequency steps at t, ppm."""
        dt = float(t_ns - self.t0_ns)
        on = (self._slew_a <= dt) & (dt < self._slew_a + self._slew_d)
        r = float(np.sum(self._slew_r[on]))
        return r + sum(d for at, d in self.p.freq_steps if self.t0_ns + at * NS <= t_ns)

    def add_step(self, at_ns: int, size_ns: int) -> None:
        """Step the clock by `size_ns` at reference instant `at_ns` (a clock set while running,
        e.g. an emulator answering a PATCH of its time); it joins `breaks()` and the truth."""
        self._steps = sorted(self._steps + [(int(at_ns), int(size_ns))])

    def add_reboot(self, at_ns: int) -> None:
        """Reboot at reference instant `at_ns` (a fault a test triggers): a counter restarts
        from zero there, the device is down for `reboot_down_s`; it joins `breaks()` and the
        truth."""
        self._reboots = sorted(self._reboots + [int(at_ns)])

    def wrap_at_first_read(self, lead_s: float) -> None:
        """Counter: place its boot so that its first reading falls `lead_s` short of the wrap, so
        a test sees the wrap `lead_s` after a read it makes. Only before the first reading: the
        readings already given fix the boot instant."""
        if not (self.p.counter and self.p.wrap_ticks):
            raise ValueError("only a wrapping counter can be set to wrap")
        if self._read_once:
            raise RuntimeError("the counter has been read already: its wrap instant is fixed")
        self._wrap_lead_ns = round(lead_s * NS)

    def read_ns(self, t_ns: int) -> int:
        """What the device reports: floored to its resolution, wrapped if it is a counter."""
        if self._wrap_lead_ns is not None:
            period = self.p.wrap_ticks * self.p.resolution_ns
            rate = 1.0 + self.p.drift_ppm * 1e-6
            self._zero0 = int(t_ns) - round((period - self._wrap_lead_ns) / rate)
            self._wrap_lead_ns = None
        self._read_once = True
        q = self.p.resolution_ns
        v = (self.true_ns(self.shown_at(int(t_ns))) // q) * q
        if self.p.counter and self.p.wrap_ticks:
            v %= self.p.wrap_ticks * q
        return v

    def shown_at(self, t_ns: int) -> int:
        """The instant whose clock value the device shows at t: its last update (update_s),
        less the tick's lag (tick_lag_ms, redrawn each second from the seed)."""
        p = self.p
        if p.frozen_at_s is not None:
            t_ns = min(t_ns, self.t0_ns + round(p.frozen_at_s * NS))
        if p.update_s > 0:
            u = round(p.update_s * NS)
            t_ns = self.t0_ns + (t_ns - self.t0_ns) // u * u
        if p.tick_lag_ms:     # redrawn each second; the reading never goes back (it stalls)
            sec = (t_ns - self.t0_ns) // NS
            t_ns = max(t_ns - self._lag_ns(sec), self.t0_ns + sec * NS - self._lag_ns(sec - 1))
        return t_ns

    def _lag_ns(self, sec: int) -> int:
        lo, hi = self.p.tick_lag_ms
        frac = zlib.crc32(f"{self.seed}/{sec}".encode()) / 2 ** 32
        return round((lo + (hi - lo) * frac) * 1e6)

    def offset_ns(self, t_ns: int) -> int:
        """Device minus reference at t (for a counter: minus the time since the Unix epoch,
        i.e. about the negative of the boot instant)."""
        return self.true_ns(t_ns) - int(t_ns)

    def drift_ppm(self, t_ns: int) -> float:
        extra = self.rate_change_ppm(t_ns) if not self.p.counter else 0.0
        return (self.p.drift_ppm + self.wander_freq(t_ns) * 1e6 + extra
                + sum(r(t_ns) for r in self.correction_rates))

    def breaks(self) -> list[dict]:
        """The model breaks the estimator must find, with their true instants and sizes."""
        out = [{"t_ns": at, "kind": "step", "size_ns": s} for at, s in self._steps]
        out += [b for fn in self.correction_breaks for b in fn()]
        if self.p.counter:
            out += [{"t_ns": r, "kind": "reboot", "size_ns": None} for r in self._reboots]
            if self.p.wrap_ticks:
                period = self.p.wrap_ticks * self.p.resolution_ns
                rate = 1.0 + self.p.drift_ppm * 1e-6
                z = self._zero0
                # wraps from the run's start to a day after it (enough for any run); wander ignored
                k = int((self.t0_ns - z) * rate // period) + 1
                while (t := z + math.ceil(k * period / rate)) < self.t0_ns + 86400 * NS:
                    out.append({"t_ns": t, "kind": "wrap", "size_ns": -period})
                    k += 1
        return sorted(out, key=lambda b: b["t_ns"])

    # -- the emulator's randomness -------------------------------------------------------------
    def sample_delay_s(self) -> float:
        j = self.rng.exponential(self.p.jitter_s) if self.p.jitter_s > 0 else 0.0
        return self.p.sample_delay_s + j

    def log_latency_ns(self) -> int:
        lo, hi = self.p.log_latency_s
        return round(self.rng.uniform(lo, hi) * NS) if hi > lo else round(lo * NS)

    def knots(self, t_lo: int, t_hi: int) -> list[int]:
        """The instants in [t_lo, t_hi] where the true offset changes rate or steps (both sides
        of a step): between two neighbours it is linear, to the ns its rounding gives."""
        t0, xs = self.t0_ns, {int(t_lo), int(t_hi)}

        def at(x: float) -> None:
            xs.update((math.floor(x), math.ceil(x)))
        if self._sigma:                  # the frequency walk changes once a second
            xs.update(range(t0 + max(0, (t_lo - t0) // NS) * NS, t_hi + 1, NS))
        for a, d in zip(self._slew_a.tolist(), self._slew_d.tolist()):
            if t0 + a <= t_hi:
                at(t0 + a)
                at(t0 + a + d)
        for a, _ in self.p.freq_steps:
            at(t0 + a * NS)
        for t in [a for a, _ in self._steps] + list(self._reboots):
            xs.update((t - 1, t))
        for fn in self.correction_knots:
            xs.update(fn())
        return sorted(x for x in xs if t_lo <= x <= t_hi)

    def truth(self, t_grid_ns) -> dict:
        ts = [int(t) for t in t_grid_ns]
        out = {"t_ns": ts, "offset_ns": [self.offset_ns(t) for t in ts],
               "drift_ppm": [self.drift_ppm(t) for t in ts],
               "resolution_ns": self.p.resolution_ns, "counter": self.p.counter,
               "tz_error_ns": self.p.tz_error_ns, "firmware": self.p.firmware,
               "breaks": self.breaks()}
        return {**out, "exact": exact_truth(self, self.knots(ts[0], ts[-1]) if ts else [])}


MAX_KNOTS = 50_000       # a day of wander is 86,400: the truth then keeps its grid alone


def exact_truth(model, knots: list[int]) -> dict:
    """truth.json's `exact`: the model's own offset at every knot (its rate changes and both
    sides of its steps); linear between neighbours, it is the offset at any instant between
    the first and the last to within a nanosecond (bench.model.summary reads it so). Empty
    beyond MAX_KNOTS (a long watch): the truth file stays small, the check uses the grid."""
    if len(knots) > MAX_KNOTS:
        return {}
    return {"t_ns": knots, "offset_ns": [int(model.offset_ns(t)) for t in knots],
            "basis": "piecewise linear between knots"}


def _slew_arrays(p: ClockParams, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every slew as arrays (start after t0 ns, duration ns, rate ppm): the listed ones, an NTP
    client's corrections (each ±corr slewed at slew_ppm, one every U(every) s) and a PLL's
    hunting (±ppm for half a period each), generated from the seed up to the horizon."""
    rows = [(a * NS, d * NS, r) for a, d, r in p.slews]
    rng = np.random.default_rng([seed, 7])
    if p.discipline:
        e_lo, e_hi, c_lo, c_hi, rate = p.discipline
        t = float(rng.uniform(0, e_hi))
        while t < p.horizon_s:
            corr = float(rng.uniform(c_lo, c_hi)) * 1e-3 * float(rng.choice([-1, 1]))
            rows.append((t * NS, abs(corr) / (rate * 1e-6) * NS, rate if corr > 0 else -rate))
            t += float(rng.uniform(e_lo, e_hi))
    if p.hunting:
        ppm, period = p.hunting
        half = period / 2
        k = int(p.horizon_s // half) + 1
        rows += [(i * half * NS, half * NS, ppm if i % 2 == 0 else -ppm) for i in range(k)]
    if not rows:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    a, d, r = (np.array(x, dtype=np.float64) for x in zip(*rows))
    return a, d, r


def device_models(sim: Mapping[str, Any], default_clocks: tuple[str, ...], t0_ns: int,
                  rack_seed: int, device: str) -> dict[str, ClockModel]:
    """The clock models of one simulated device.

    The `sim` table's own keys describe every clock; `[sim.clocks.NAME]` tables add or override
    per clock. Clocks not named there are `default_clocks`.
    """
    base = {k: v for k, v in sim.items() if k != "clocks"}
    per = sim.get("clocks", {})
    names = list(per) or list(default_clocks)
    models = {}
    for name in names:
        table = {**base, **per.get(name, {})}
        seed = int(table.get("seed", seed_for(rack_seed, device, name)))
        models[name] = ClockModel(params_from_table(table), t0_ns, seed)
    return models
