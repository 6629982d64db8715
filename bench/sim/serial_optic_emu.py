"""Emulator of the optics plane: one I2C-to-serial bridge per device, with CMIS modules behind it.

Served on a pty pair (inventory address `serial://auto`, resolved to `serial:///dev/pts/N`; the
emulator holds the master side and reads it with `loop.add_reader`) or over TCP the way a
ser2net serial server is (`socket://127.0.0.1:0`, resolved to the ephemeral port). Nothing
here blocks the shared loop: modelled delays are asyncio sleeps (bench/sim/optic_bridge.py).

Rack file keys:

    [devices.optic-1]
    address = "serial://auto"            # or "socket://127.0.0.1:0"
    baudrate = 115200                    # the sideband's UART (10 bits per byte)
    ports = [1, 2]                       # the driver's; the bridge serves its modules' ports
    [devices.optic-1.sim]
    latency_timer_ms = 16                # the host's USB-serial adapter (inventory key also read)
    i2c_timeout_ms = 2000                # a stalled module's bus is given up after this
    bridge_ports = [1, 2, 3]             # cages the bridge has (default: its modules' ports)
    vendor / model / serial / firmware   # the bridge's identity
    [devices.optic-1.sim.modules.1]      # one CMIS module per port: see optic_cmis.ModuleSpec
    vendor = "ACME OPTICS"
    far_end = 2                          # its TX feeds port 2's RX (default: itself)
    stalled = false                      # true: holds the I2C bus, never answers
    tx_fault_at_s = [30.0]               # TX fault pulses (truth events), s after t0
    los_assert_s = [0.0001, 0.0008]      # light gone -> RX LOS latched, uniform
    [devices.optic-1.sim.modules.1.clock]
    counter = true                       # the vendor has a power-on counter (page A0h, 128-131)
    resolution_s = 0.001                 # its tick; wrap_ticks defaults to 2**32
    uptime_s = 86400.0                   # free running since cold boot, a day before t0
    drift_ppm = 23.0

Truth: counter samples via ctx.record_sample(device, "counterN", t, value); TX disable/enable,
RX LOS assert/clear, VDM freeze/unfreeze (request and done) via ctx.record_event.
Test hooks: `bridge_of(ctx, name)` gives the Bridge (inject faults, stall a module, unplug).
"""
from __future__ import annotations

import asyncio
import os
import socket
import tty
import weakref
from dataclasses import fields, replace
from typing import Any

from bench.config.inventory import DeviceConfig
from bench.config.schema import TEXT, list_of, named, num
from bench.sim.clock_model import seed_for
from bench.sim.optic_bridge import Bridge, BridgeSpec
from bench.sim.optic_cmis import MODULE_KEYS, CmisModule, ModuleHooks, module_spec
from bench.sim.rack import SimContext

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
SIM_KEYS = {
    "vendor": TEXT, "model": TEXT, "serial": TEXT,
    "baudrate": num(300, 4_000_000, "baud", "int"),
    "latency_timer_ms": num(0.0, 255.0, "ms"), "i2c_khz": num(1.0, 5000.0, "kHz"),
    "bridge_delay_s": num(0.0, 1.0, "s"), "i2c_timeout_ms": num(1.0, 60_000.0, "ms"),
    "max_count": num(1, 128, kind="int"),
    "modules": named(MODULE_KEYS, 255, lambda k: str(k).isdigit() and 1 <= int(k) <= 255,
                     "ports 1 to 255"),
    "bridge_ports": list_of(num(1, 255, kind="int"), 255)}

_BRIDGES: weakref.WeakKeyDictionary[SimContext, dict[str, Bridge]] = weakref.WeakKeyDictionary()
_BRIDGE_KEYS = {f.name for f in fields(BridgeSpec)}


def bridge_of(ctx: SimContext, device: str) -> Bridge:
    """The emulated bridge serving `device` (test hook; touch it on the rack's loop)."""
    return _BRIDGES[ctx][device]


def bridge_spec(device: DeviceConfig) -> BridgeSpec:
    sim = dict(device.sim or {})
    kw: dict[str, Any] = {k: v for k, v in sim.items() if k in _BRIDGE_KEYS}
    kw.setdefault("baudrate", int(device.options.get("baudrate", 115200)))
    kw.setdefault("latency_timer_ms", float(device.options.get("latency_timer_ms", 16.0)))
    return BridgeSpec(**kw)


def build_bridge(device: DeviceConfig, ctx: SimContext) -> Bridge:
    sim = dict(device.sim or {})
    tables = {int(p): dict(t) for p, t in dict(sim.get("modules", {})).items()}
    specs = {p: module_spec(p, t) for p, t in tables.items()}
    models = _counter_models(device, sim, specs, ctx)
    ports = sorted(set(specs) | {int(p) for p in sim.get("bridge_ports", [])})
    bridge = Bridge(bridge_spec(device), {}, ports, ctx.now_ns, ctx.t0_ns,
                    seed_for(ctx.seed, device.name, "bridge"))
    name = device.name
    hooks = ModuleHooks(
        event=lambda kind, t_ns, **d: ctx.record_event(name, kind, t_ns, **d),
        interrupt=lambda port, asserted, t_ns: bridge.pin_changed(port, "INT", 0 if asserted else 1),
        sample=lambda clock, t_ns, v: ctx.record_sample(name, clock, t_ns, v))
    for p, spec in specs.items():
        bridge.modules[p] = CmisModule(spec, ctx.t0_ns, models.get(f"counter{p}"),
                                       seed_for(ctx.seed, name, f"port{p}"), hooks)
    _link_far_ends(bridge.modules)
    return bridge


def _counter_models(device: DeviceConfig, sim: dict, specs: dict, ctx: SimContext) -> dict:
    """The clock model of each module that has a counter (`counterPORT`: 1 ms, 32-bit wrap,
    unless its own `clock` table says otherwise)."""
    clocks = {f"counter{p}": {"resolution_s": 0.001, "wrap_ticks": 2 ** 32, **dict(s.clock or {})}
              for p, s in specs.items() if s.has_counter}       # has_counter: it has a clock
    base = {k: v for k, v in sim.items() if k not in ("modules", "clocks")}
    return ctx.models(replace(device, sim={**base, "clocks": clocks}), ())


def _link_far_ends(modules: dict) -> None:
    """Each module's far end: the port its spec names, else itself (a loopback)."""
    for p, m in modules.items():
        m.far = modules.get(m.spec.far_end if m.spec.far_end is not None else p, m)


class _Lines:
    """Splits a byte stream into request lines, stamping each when its last byte arrived."""

    def __init__(self, bridge: Bridge, now_ns, send):
        self.bridge, self.now_ns, self.send = bridge, now_ns, send
        self.buf = bytearray()

    def feed(self, data: bytes) -> None:
        t = self.now_ns()
        self.buf.extend(data)
        while (i := self.buf.find(b"\n")) >= 0:
            line = bytes(self.buf[:i]).rstrip(b"\r")
            del self.buf[:i + 1]
            if line:
                self.bridge.submit(line, t, self.send)
        if len(self.buf) > 4096:                  # no line end in sight: drop the noise
            self.buf.clear()


def serve_pty(bridge: Bridge, ctx: SimContext) -> str:
    loop = asyncio.get_running_loop()
    master, slave = os.openpty()
    tty.setraw(slave)                             # no echo, no line discipline
    os.set_blocking(master, False)
    path = os.ttyname(slave)

    def send(data: bytes) -> None:
        try:
            os.write(master, data)
        except OSError:                           # host not reading (overrun) or unplugged
            pass

    lines = _Lines(bridge, ctx.now_ns, send)

    def readable() -> None:
        try:
            data = os.read(master, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            lines.feed(data)

    def close() -> None:
        loop.remove_reader(master)
        for fd in (master, slave):               # the emulator holds the slave open between clients
            try:
                os.close(fd)
            except OSError:
                pass

    loop.add_reader(master, readable)
    bridge.closers.append(close)
    return f"serial://{path}"


class _TcpLine(asyncio.Protocol):
    def __init__(self, bridge: Bridge, now_ns, conns: set):
        self.bridge, self.now_ns, self.conns = bridge, now_ns, conns

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lines = _Lines(self.bridge, self.now_ns, self.send)
        self.conns.add(transport)

    def send(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.lines.feed(data)

    def connection_lost(self, exc) -> None:
        self.conns.discard(self.transport)


async def serve_tcp(bridge: Bridge, ctx: SimContext, host: str, port: int) -> str:
    conns: set = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _TcpLine(bridge, ctx.now_ns, conns), host, port)

    def close() -> None:
        server.close()
        for t in list(conns):
            t.abort()

    bridge.closers.append(close)
    return f"socket://{host}:{server.sockets[0].getsockname()[1]}"


async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]:
    out = {}
    registry = _BRIDGES.setdefault(ctx, {})
    for device in devices:
        bridge = build_bridge(device, ctx)
        if device.address.startswith("socket://"):
            _, _, hostport = device.address.partition("://")
            host, _, port = hostport.rpartition(":")
            address = await serve_tcp(bridge, ctx, host or ctx.host, int(port or 0))
        else:
            address = serve_pty(bridge, ctx)
        bridge.start()
        registry[device.name] = bridge
        ctx.add_cleanup(bridge.unplug)
        out[device.name] = {"address": address}
    return out
