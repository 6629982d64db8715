"""A cross-plane incident with known true instants, played by the simulated rack.

`STEPS` is the cascade: a CDU pump trips, the coolant alarm follows, the GPU baseboard's
telemetry shows a GPU throttled for its thermal limit (a ThrottleCauses metric in a metric report,
stamped by the baseboard controller's clock), a BMC logs a thermal event,
the host's power is capped, a PDU outlet's power drops, an optic loses light, the scheduler marks
the node not ready. Each step names the plane and default-rack device that plays it, the stimulus
that makes the emulator play it (the emulators' own event machinery: each stamps its log in its
own clock, with its own logging latency and resolution, and records the true instant in
truth.json), and the truth event kind that gives the true instant.

A plane joins the cascade by its devices: a step whose `device` is "" is played by the first
device of its plane that allows its stimulus. The scheduler plane (Kubernetes) is that hook: when
its driver and emulator offer a `node_not_ready` stimulus and record a `node_not_ready` truth
event, the last step is played; until then it is skipped and said so.

The same cascade runs in virtual time without sockets (`virtual_rack`, `play`) so that the
estimator, the mapping and the scoring are measured over many cascades in seconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.model.summary import ClockResult
from bench.sim.clock_model import ClockModel, ClockParams

NS = 1_000_000_000
MS = 1_000_000


@dataclass(frozen=True)
class Step:
    name: str
    plane: str
    device: str                  # default-rack device; "" = the first of its plane allowing it
    stimulus: str                # NAME[:TARGET] as the inventory allows it
    truth_kind: str              # the emulator's truth event giving the true instant
    truth_detail: tuple = ()     # (key, value) pairs the truth event must carry
    match: str = ""              # text identifying the device's log entry for it (optional)


STEPS = (
    Step("CDU pump trip", "cooling", "cdu-2", "test_alarm", "test_alarm"),
    Step("coolant temperature alarm", "cooling", "cdu-1", "test_alarm", "test_alarm"),
    Step("GPU thermal throttle", "gpu", "hmc-1", "test_event", "thermal_throttle", (),
         "ThrottleCauses ThermalLimit"),
    Step("BMC thermal event", "bmc", "bmc-2", "test_event", "test_event"),
    Step("host power capped", "bmc", "bmc-1", "test_event", "test_event"),
    Step("PDU outlet power drop", "pdu", "pdu-2", "outlet_off:5", "outlet_off",
         (("outlet", 5),)),
    Step("optic LOS", "optic", "optic-1", "tx_disable:1", "rx_los", (("port", 2),), "RxLOS"),
    Step("node NotReady", "scheduler", "", "node_not_ready", "node_not_ready"),
)
# the alternative first cause: the Redfish CDU's pump fault (its test event carries DMTF's
# Environmental PumpFailed; bench/sim/redfish_equipment_emu.py records `pump_fault`), in place of
# the Modbus CDU's pump trip (experiments/incident.py `first_cause = "redfish"`)
REDFISH_FIRST = Step("CDU pump fault (Redfish)", "cooling", "cdu-rf-1", "test_event", "pump_fault")
FIRST_CAUSES = ("modbus", "redfish")


def steps_for(first_cause: str = "modbus") -> tuple[Step, ...]:
    """The cascade with its first cause played by the Modbus CDU (STEPS) or the Redfish CDU."""
    if first_cause not in FIRST_CAUSES:
        raise ValueError(f"first_cause {first_cause!r}: one of {', '.join(FIRST_CAUSES)}")
    return STEPS if first_cause == "modbus" else (REDFISH_FIRST, *STEPS[1:])


# gaps between consecutive steps, s: tens of ms to seconds
GAPS_S = (0.03, 4.0, 0.4, 1.5, 0.08, 0.9, 0.2)     # coolant -> GPU throttle: seconds


def resolve(rack, steps=STEPS, gaps_s=GAPS_S, start_s: float = 25.5) -> tuple[list[dict], list[str]]:
    """The steps this rack can play, as [{step fields, device, at_s}], and why others are not."""
    out, skipped = [], []
    at = start_s
    for k, st in enumerate(steps):
        if k:
            at += gaps_s[(k - 1) % len(gaps_s)]
        name, _, target = st.stimulus.partition(":")
        devs = [d for d in rack.devices if (d.name == st.device if st.device else d.plane == st.plane)
                and d.allows(name, target or None)]
        if not devs:
            skipped.append(f"{st.name}: no {st.plane} device of this rack allows "
                           f"{st.stimulus!r}" + (f" ({st.device})" if st.device else ""))
            continue
        out.append({"name": st.name, "plane": st.plane, "device": devs[0].name,
                    "stimulus": st.stimulus, "truth_kind": st.truth_kind,
                    "truth_detail": dict(st.truth_detail), "match": st.match, "at_s": round(at, 6)})
    return out, skipped


# -- virtual time ----------------------------------------------------------------------------

def calibrate(model: ClockModel, t0: int, seconds: float = 60.0, rate_hz: float = 4.0,
              seed: int = 0, name: str = "clock") -> ClockResult:
    """Bracketed reads of a clock model in virtual time (brackets 0.5-3 ms, random instants),
    fitted by the estimator as a run's summary does."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate_hz)
    s = np.sort(t0 + rng.integers(0, int(seconds * NS), n))
    e = s + rng.integers(500_000, 3_000_000, n)
    at = s + (rng.random(n) * (e - s)).astype(np.int64)
    up = np.array([not model.down(int(t)) for t in at], dtype=bool)   # a rebooting device is mute
    s, e, at = s[up], e[up], at[up]
    v = np.array([model.read_ns(int(t)) for t in at], dtype=np.int64)
    q = model.p.resolution_ns
    fit = fit_clock(s, e, v, q)
    return ClockResult(name, {"counter": model.p.counter, "resolution_ns": q}, q, len(s), fit)


@dataclass(frozen=True)
class PlaneClock:
    """One device of the virtual rack: its clock and its declared logging latency."""
    device: str
    plane: str
    model: ClockModel
    latency_s: tuple             # the device's true log latency range, also declared
    fit: ClockResult | None = field(default=None, compare=False)


# per step of STEPS (the scheduler included): resolution of its log stamps, latency range
VIRTUAL = (("cdu-2", "cooling", 1.0, (0.5, 1.5)), ("cdu-1", "cooling", 1.0, (0.2, 0.6)),
           ("hmc-1", "gpu", 0.001, (0.0, 1.0)),
           ("bmc-2", "bmc", 1.0, (0.4, 1.2)), ("bmc-1", "bmc", 1.0, (0.05, 0.25)),
           ("pdu-2", "pdu", 0.01, (0.02, 0.2)), ("optic-1", "optic", 0.001, (0.001, 0.01)),
           ("k8s", "scheduler", 1.0, (0.5, 2.0)))


def virtual_rack(rng: np.random.Generator, t0: int, seconds: float = 60.0) -> list[PlaneClock]:
    """A rack drawn at random: each clock NTP-disciplined (offset of a few ms) or free running
    (offset 10 ms to 60 s either way, tens of ppm), calibrated over `seconds` from t0."""
    out = []
    for _k, (dev, plane, res, lat) in enumerate(VIRTUAL):
        if rng.random() < 0.5:
            off, drift = rng.normal(0, 0.003), rng.normal(0, 0.5)
        else:
            off = math.copysign(10 ** rng.uniform(-2, math.log10(60)), rng.random() - 0.5)
            drift = rng.uniform(-50, 50)
        m = ClockModel(ClockParams(offset_s=off, drift_ppm=drift, resolution_s=res,
                                   log_latency_s=lat), t0, seed=int(rng.integers(2**31)))
        fit = calibrate(m, t0, seconds, seed=int(rng.integers(2**31)), name=dev)
        out.append(PlaneClock(dev, plane, m, lat, fit))
    return out


def play(rack: list[PlaneClock], t_start: int, gaps_ns) -> list[dict]:
    """One cascade in virtual time: per step its true instant and the device's log stamp (the
    clock read at event + latency, floored to the clock's resolution)."""
    out = []
    t = t_start
    for k, pc in enumerate(rack):
        if k:
            t += int(gaps_ns[k - 1])
        stamp_at = t + pc.model.log_latency_ns()
        out.append({"device": pc.device, "plane": pc.plane, "true_ns": t, "stamped_at_ns": stamp_at,
                    "stamp_ns": pc.model.read_ns(stamp_at),
                    "resolution_ns": pc.model.p.resolution_ns})
    return out
