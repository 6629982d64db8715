"""Faults a test triggers in the simulated rack: reboot, wrap, step.

A fault happens at a moment the test chooses, never at a fixed offset from the simulator's start
(which a loaded machine can reach before the driver has even opened):

- on command: `SimRackThread.fault(device, kind, ...)` (in-process), or
- on the device's own progress: after it has answered `after_samples` more clock samples,
  declared in the rack file (`[devices.X.sim] faults = [{kind = "reboot", after_samples = 3}]`)
  or armed by a command; the count runs from the moment the fault is armed.

Kinds (`in_s` delays the fault after its trigger):

  reboot   every clock model of the device reboots: a counter restarts from zero and the device is
           down for its `reboot_down_s`; emulators with more to do (close a TCP listener and its
           connections) register with `ctx.on_reboot`
  wrap     a wrapping counter (`clock`, default the device's only counter) is placed so that its
           first reading falls `lead_s` short of the wrap: the test's first read is before the
           wrap by construction. Only for a counter not yet read.
  step     a wall clock (`clock`, default every non-counter clock) is stepped by `size_s`

The effects are those of the clock models (`ClockModel.add_reboot`, `wrap_at_first_read`,
`add_step`), so truth.json and the models' `breaks()` carry them like scheduled ones.
"""
from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from bench.config.schema import TEXT, YEARS_100_S, choice, num, table
from bench.sim.clock_model import NS, ClockModel

# a [sim] table's `faults` entry (bench/sim/simtable.py): the Fault below
FAULT_KEYS = table({"kind": choice("reboot", "wrap", "step"), "clock": TEXT,
                    "after_samples": num(0, 10**9, kind="int"), "in_s": num(0.0, 1e6, "s"),
                    "lead_s": num(0.0, 1e6, "s"), "size_s": num(-YEARS_100_S, YEARS_100_S, "s")},
                   required=("kind",))

KINDS = ("reboot", "wrap", "step")


@dataclass(frozen=True)
class Fault:
    kind: str
    clock: str | None = None        # which clock (wrap, step); None: as the kind says
    after_samples: int = 0          # trigger: this many more clock samples answered (0: now)
    in_s: float = 0.0               # then this long after the trigger
    lead_s: float = 0.5             # wrap: the first reading falls this long short of the wrap
    size_s: float = 0.0             # step: its size

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.after_samples < 0 or self.in_s < 0:
            raise ValueError("a fault's after_samples and in_s are not negative")


_FIELDS = {f.name for f in fields(Fault)}


def fault_from_table(table: Mapping[str, Any]) -> Fault:
    unknown = set(table) - _FIELDS
    if unknown:
        raise ValueError(f"fault {dict(table)!r}: unknown keys {sorted(unknown)}")
    return Fault(**dict(table))


class FaultBoard:
    """The rack's armed faults and the emulators' reboot hooks; lives on the rack's event loop."""

    def __init__(self, now_ns: Callable[[], int], models: Callable[[str], dict[str, ClockModel]]):
        self.now_ns = now_ns
        self._models = models
        self._waiting: list[list] = []                       # [device, fault, samples left, done]
        self._on_reboot: dict[str, list[Callable[[int], None]]] = {}
        self.fired: list[dict] = []

    def on_reboot(self, device: str, fn: Callable[[int], None]) -> None:
        """`fn(at_ns)` is called when a reboot of `device` is scheduled (at_ns may be now)."""
        self._on_reboot.setdefault(device, []).append(fn)

    def arm(self, device: str, fault: Fault) -> asyncio.Future:
        """Arm `fault`; the future gives the reference instant it is scheduled for."""
        models = self._models(device)
        if not models:
            raise KeyError(f"no simulated device {device!r} with clock models")
        if fault.kind == "wrap":
            self._wrap_model(device, fault)      # checked now, applied at the first reading
        self._loop = asyncio.get_running_loop()
        done = self._loop.create_future()
        if fault.after_samples == 0:
            self._fire(device, fault, done)
        else:
            self._waiting.append([device, fault, fault.after_samples, done])
        return done

    def sampled(self, device: str, clock: str) -> None:
        """Called for every clock sample an emulator records."""
        if not self._waiting:
            return
        for w in list(self._waiting):
            dev, fault, left, done = w
            if dev != device or (fault.clock and fault.kind != "reboot" and fault.clock != clock):
                continue
            w[2] = left - 1
            if w[2] <= 0:
                self._waiting.remove(w)
                # from inside the emulator's answer: take effect once it yields (before it replies)
                self._loop.call_soon_threadsafe(self._fire, dev, fault, done)

    def _wrap_model(self, device: str, fault: Fault) -> ClockModel:
        models = self._models(device)
        names = [fault.clock] if fault.clock else [n for n, m in models.items()
                                                    if m.p.counter and m.p.wrap_ticks]
        if len(names) != 1 or names[0] not in models:
            raise ValueError(f"{device}: name the counter to wrap (clocks: {', '.join(models)})")
        return models[names[0]]

    def _fire(self, device: str, fault: Fault, done: asyncio.Future) -> None:
        at = self.now_ns() + round(fault.in_s * NS)
        models = self._models(device)
        if fault.kind == "reboot":
            for m in models.values():
                m.add_reboot(at)
            for fn in self._on_reboot.get(device, []):
                fn(at)
        elif fault.kind == "wrap":
            self._wrap_model(device, fault).wrap_at_first_read(fault.lead_s)
        elif fault.kind == "step":
            _step(models, fault, at)
        self.fired.append({"device": device, "kind": fault.kind, "t_ns": at})
        if not done.done():
            done.set_result(at)


def _step(models: dict, fault: Fault, at: int) -> None:
    """A step fault: on its clock, else on every wall clock of the device."""
    for name, m in models.items():
        if (fault.clock or name) == name and (fault.clock or not m.p.counter):
            m.add_step(at, round(fault.size_s * NS))


# -- on command from another process ---------------------------------------------------------
CONTROL_FILE = "sim_control"        # in the simulator's out folder: the control socket's path


async def serve_control(ctx) -> str:
    """A UNIX socket in the simulator's temp folder taking one JSON line per connection,
    `{"device": ..., "kind": ..., <Fault fields>}`, and answering one: `{"t_ns": ...}` (the instant
    the fault is scheduled for; `{"armed": true}` while it waits for its samples) or
    `{"error": ...}`. Its path goes into `<out>/sim_control` (`@name`: an abstract socket, where
    the temp folder's path is too long for one)."""
    import json

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            req = json.loads(await reader.readline())
            device = req.pop("device")
            done = ctx.faults.arm(device, Fault(req.pop("kind"), **req))
            answer = {"t_ns": done.result()} if done.done() else {"armed": True}
        except Exception as exc:              # a bad command is answered, the rack goes on
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        writer.write((json.dumps(answer) + "\n").encode())
        await writer.drain()
        writer.close()

    path = str(Path(ctx.workdir) / "control.sock")
    if len(path.encode()) > 100:     # AF_UNIX paths hold 107 bytes: under a long TMPDIR, a
        path = f"\0rackclock-sim-{os.getpid()}-{secrets.token_hex(6)}"   # Linux abstract name
    server = await asyncio.start_unix_server(handle, path=path)

    async def close() -> None:
        server.close()
        await server.wait_closed()

    ctx.add_cleanup(close)
    from bench import safeio
    safeio.write_text(Path(ctx.out_dir) / CONTROL_FILE, path.replace("\0", "@", 1))
    return path


def send_fault(out_dir: Path, device: str, kind: str, timeout_s: float = 30.0, **how) -> dict:
    """Arm a fault in a simulator serving from another process (`serve_control`); its answer."""
    import json
    import socket

    path = (Path(out_dir) / CONTROL_FILE).read_text().strip()
    if path.startswith("@"):
        path = "\0" + path[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(path)
        s.sendall((json.dumps({"device": device, "kind": kind, **how}) + "\n").encode())
        answer = json.loads(s.makefile().readline())
    if "error" in answer:
        raise ValueError(f"the simulator refused the fault: {answer['error']}")
    return answer
