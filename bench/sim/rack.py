"""The simulated rack in one asyncio loop: one emulator per driver, sharing the reference clock.

Emulator contract: module `bench.sim.<driver>` defines

    async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]

which starts serving every device of that driver on loopback and returns, per device name, the
inventory keys to override in the resolved rack (at least `address`, e.g. with the ephemeral
port). Each emulator samples its clock models through `ctx.models(...)` and records the reference
instant of every sample with `ctx.record_sample`, so a test can check every bracket contains it,
and every event with `ctx.record_event`, for truth.json. Cleanups go to `ctx.add_cleanup`.
"""
from __future__ import annotations

import asyncio
import csv
import json
import shutil
import tempfile
import traceback
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.config.inventory import DeviceConfig, RackConfig
from bench.model.file_schemas import version
from bench.reference.clock import Reference
from bench.sim.clock_model import NS, ClockModel, device_models
from bench.sim.faults import FaultBoard, fault_from_table
from bench.sim.simtable import emulator_module


class SimContext:
    host = "127.0.0.1"

    def __init__(self, rack: RackConfig, out_dir: Path, now_ns: Callable[[], int] = Reference.now_ns,
                 t0_ns: int | None = None):
        self.rack = rack
        self.now_ns = now_ns
        self.t0_ns = int(t0_ns if t0_ns is not None else now_ns())
        self.seed = int(rack.options.get("seed", 1))
        self.out_dir = Path(out_dir)
        from bench import safeio
        safeio.make_folder(self.out_dir)
        self._models: dict[str, dict[str, ClockModel]] = {}
        self.events: dict[str, list[dict]] = defaultdict(list)
        self._cleanups: list[Callable[[], Awaitable[None] | None]] = []
        self._samples_file = safeio.append_text(self.out_dir / "sim_samples.csv")
        self._samples = csv.writer(self._samples_file)
        self.faults = FaultBoard(self.now_ns, lambda device: self._models.get(device, {}))
        self.workdir = Path(tempfile.mkdtemp(prefix="rackclock-sim-"))   # removed by close()
        if self._samples_file.tell() == 0:
            self._samples.writerow(["device", "clock", "t_ns", "value_ns"])

    def models(self, device: DeviceConfig, default_clocks: tuple[str, ...]) -> dict[str, ClockModel]:
        if device.name not in self._models:
            self._models[device.name] = device_models(device.sim or {}, default_clocks, self.t0_ns,
                                                      self.seed, device.name)
        return self._models[device.name]

    def record_sample(self, device: str, clock: str, t_ns: int, value_ns: int) -> None:
        self._samples.writerow([device, clock, t_ns, value_ns])
        self._samples_file.flush()
        self.faults.sampled(device, clock)

    def record_event(self, device: str, kind: str, t_ns: int, **detail: Any) -> None:
        self.events[device].append({"t_ns": int(t_ns), "kind": kind, **detail})

    def add_cleanup(self, fn: Callable[[], Awaitable[None] | None]) -> None:
        self._cleanups.append(fn)

    async def close(self) -> None:
        try:
            for fn in reversed(self._cleanups):
                try:
                    r = fn()
                    if asyncio.iscoroutine(r):
                        await r
                except Exception:
                    traceback.print_exc()
            self._cleanups.clear()
            self._samples_file.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)     # the TLS key among others

    def truth(self, t_end_ns: int | None = None, points: int = 2000) -> dict:
        """Truth on a grid from t0 to `t_end_ns` (default now), one sample a second at most."""
        t_end = int(t_end_ns if t_end_ns is not None else self.now_ns())
        span = max(t_end - self.t0_ns, NS)
        step = max(NS, span // points)
        grid = range(self.t0_ns, t_end + step, step)
        return {"schema": 1, "schema_version": version("truth.json"), "t0_ns": self.t0_ns, "devices": {
            name: {"clocks": {c: m.truth(grid) for c, m in models.items()},
                   "events": self.events.get(name, [])}
            for name, models in self._models.items()}}


async def start_rack(rack: RackConfig, ctx: SimContext) -> tuple[RackConfig, dict[str, str]]:
    """Start every emulator; returns the resolved rack and, per device, the error of any emulator
    that failed to start (that device is then left out, the others go on)."""
    from dataclasses import replace

    by_driver: dict[str, list[DeviceConfig]] = defaultdict(list)
    for d in rack.devices:
        by_driver[str((d.sim or {}).get("emulator", d.driver))].append(d)
    resolved: dict[str, DeviceConfig] = {}
    failed: dict[str, str] = {}
    for emulator, devices in by_driver.items():
        try:
            module = emulator_module(emulator)
            overrides = await module.serve(devices, ctx)
        except Exception as exc:  # one broken emulator must not stop the rack
            for d in devices:
                failed[d.name] = f"emulator {emulator} failed to start: {exc!r}"
            continue
        resolved.update(_resolved(devices, overrides))
    _arm_faults(rack, ctx, resolved, failed)
    served = tuple(resolved[d.name] for d in rack.devices if d.name in resolved)
    return replace(rack, simulated=True, devices=served), failed


def _resolved(devices: list[DeviceConfig], overrides: dict) -> dict[str, DeviceConfig]:
    """Each device as its emulator serves it: the address it listens on, the options it sets."""
    from dataclasses import replace
    out = {}
    for d in devices:
        o = dict(overrides.get(d.name, {}))
        address = o.pop("address", d.address)
        out[d.name] = replace(d, address=address, options={**d.options, **o})
    return out


def _arm_faults(rack: RackConfig, ctx: SimContext, resolved: dict[str, DeviceConfig],
                failed: dict[str, str]) -> None:
    """The faults the rack file arms (bench/sim/faults.py); a device whose faults cannot be
    armed (e.g. a wrap on a device with no wrapping counter) is left out, with why."""
    for d in rack.devices:
        try:
            for table in (d.sim or {}).get("faults", []) if d.name in resolved else ():
                ctx.faults.arm(d.name, fault_from_table(table))
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            failed[d.name] = f"sim.faults: {exc}"
            del resolved[d.name]


def write_rack_toml(rack: RackConfig, path: Path) -> None:
    """Write the resolved rack file (real loopback addresses) for other clients."""
    import tomli_w

    # other clients talk to the served rack exactly as to hardware: it is not marked simulated
    # (a run against it needs --reference-allowance and --arm), only said to be served by us
    data = {"rack": {"name": rack.name, "reference": rack.reference, "simulated": False,
                     **dict(rack.options), "served_by": "rackclock sim"},
            "devices": {}}
    for d in rack.devices:
        t = {"plane": d.plane, "driver": d.driver, "address": d.address, "rate_hz": d.rate_hz,
             "stimuli": list(d.stimuli), **dict(d.options)}
        if d.username:
            t["username"] = d.username
        if d.password_env:
            t["password_env"] = d.password_env
        if d.sim is not None:
            t["sim"] = json.loads(json.dumps(d.sim, default=dict))
        data["devices"][d.name] = t
    from bench import safeio
    safeio.write_bytes(path, tomli_w.dumps(data).encode())


def read_samples(path: str | Path) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """`sim_samples.csv` back: per (device, clock) the (t_ns, value_ns) of every sample the
    emulators took, in time order."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    from bench import saferead
    for r in saferead.csv_rows(path):
        try:
            out[r["device"], r["clock"]].append((int(r["t_ns"]), int(r["value_ns"])))
        except (KeyError, ValueError):
            continue                        # a line the simulator did not finish
    return {k: sorted(v) for k, v in out.items()}


def samples_in(samples: list[tuple[int, int]], s_ns: int, e_ns: int) -> list[tuple[int, int]]:
    """The samples (sorted by time) taken inside the bracket [s_ns, e_ns]."""
    import bisect
    i = bisect.bisect_left(samples, (s_ns, -(2**63)))
    j = bisect.bisect_right(samples, (e_ns, 2**63))
    return samples[i:j]
