"""Emulated cooling controllers (CDUs) over Modbus: TCP, RTU on a pty, and RTU over TCP.

`serve(devices, ctx)` starts one pymodbus server per device, laid out by the register map the
inventory names (`map = "family_a"`, read as the device's manual by bench/sim/modbus_manual.py)
and answered by bench/sim/modbus_cdu.py. Addresses:

  tcp://127.0.0.1:0      Modbus TCP; port 0 becomes the real port
  serial://auto          Modbus RTU on a new pty; becomes serial:///dev/pts/N (the slave side);
                         the line's baud rate: `?baud=` or the inventory's `baudrate`
  socket://127.0.0.1:0   Modbus RTU framing over TCP (a serial device server)

Reboots of the clock model (`reboots`, `reboot_down_s`, or a fault a test triggers): over TCP
the listener and every connection are closed at the reboot and the port refuses connections
until the device is up again; over RTU the controller hears nothing while down.

pymodbus (3.16.1) server API notes: the simulator datastore (`SimDevice`, `SimData`, `action`)
is passed as the server's context; `serve_forever(background=True)` returns once listening, and
`server.transport` is then the asyncio server, whose socket gives the real port of port 0. The
serial server opens its port by name through pyserial, so for a pty its `call_create` is
replaced by one that hands it a transport over the pty master (bench/sim/modbus_pty.py).
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from pymodbus import FramerType
from pymodbus.server import ModbusSerialServer, ModbusTcpServer
from pymodbus.server.requesthandler import ServerRequestHandler

from bench.config.inventory import DeviceConfig
from bench.config.schema import FLAG, TEXT, named, num, says, zone
from bench.sim.clock_model import NS
from bench.sim.modbus_cdu import Cdu, identity_request_class
from bench.sim.modbus_manual import read_manual
from bench.sim.modbus_pty import PtyLine, PtyTransport
from bench.sim.ntp import NTP_KEYS, SERVERS

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
MAP_DIR = Path(__file__).resolve().parents[2] / "drivers" / "maps" / "cooling"


@says("a register map of drivers/maps/cooling (by name) or a .toml file")
def cooling_map(value, path: str) -> None:
    """A register map the emulator serves: a family's name or a .toml file."""
    from bench.config.schema import bad
    TEXT(value, path)
    file = Path(value) if value.endswith(".toml") else MAP_DIR / f"{value}.toml"
    if "/" in value and not value.endswith(".toml") or not file.is_file():
        known = ", ".join(sorted(p.stem for p in MAP_DIR.glob("*.toml")))
        raise bad(path, value, f"a map of drivers/maps/cooling ({known}) or a .toml file")


SIM_KEYS = {
    "rtc_timezone": zone, "busy_every": num(0, 10**6, kind="int"), "ntp_model": NTP_KEYS,
    "ntp_servers": SERVERS, "sensors": named(num(-1e6, 1e6), 64), "identification": FLAG,
    "vendor": TEXT, "product_code": TEXT, "model": TEXT, "serial": TEXT, "map": cooling_map,
    "line_delay": FLAG}


class _Handler(ServerRequestHandler):
    """pymodbus 3.16 hands each request from its protocol callback to its own loop through
    `run_coroutine_threadsafe` (a self-pipe write and read and a concurrent Future per request,
    though both run on the loop's thread); here it is a task on the loop, as the same coroutine.
    Its share of the emulator's CPU per read: benchmarks/README.md, "CPU per read"."""

    def handle_later(self):
        task = self.loop.create_task(self.handle_request())
        _HANDLING.add(task)
        task.add_done_callback(_HANDLING.discard)


_HANDLING: set[asyncio.Task] = set()      # requests being answered (the loop keeps weak refs)


class _Handoff:
    def callback_new_connection(self):
        return _Handler(self, self.trace_packet, self.trace_pdu, self.trace_connect)


class TcpServer(_Handoff, ModbusTcpServer):
    pass


class SerialServer(_Handoff, ModbusSerialServer):
    pass


async def serve(devices: list[DeviceConfig], ctx) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for device in devices:
        out[device.name] = await serve_one(device, ctx)
    return out


def _manual(device: DeviceConfig) -> dict:
    """The register map the device serves: its sim table's `map` (a wrong inventory), else the
    inventory's."""
    name = (device.sim or {}).get("map", device.options.get("map"))
    if not name:
        raise ValueError(f"{device.name}: the inventory names no register map (`map = ...`)")
    try:
        return read_manual(str(name))
    except FileNotFoundError:
        raise ValueError(f"{device.name}: no register map {name!r}") from None


async def serve_one(device: DeviceConfig, ctx) -> dict:
    cdu = Cdu(device, _manual(device), ctx)
    ctx.add_cleanup(cdu.close)
    pdu = identity_request_class(cdu.identity_objects())
    u = urlsplit(device.address)
    if u.scheme in ("tcp", "socket"):
        framer = FramerType.SOCKET if u.scheme == "tcp" else FramerType.RTU
        host = u.hostname or ctx.host
        server = TcpServer(cdu.simdevice(), framer=framer, address=(host, u.port or 0),
                                 custom_pdu=[pdu])
        await server.serve_forever(background=True)
        port = _listening_port(server)
        server.init_setup_connect_listen(host, port)        # a re-listen after a reboot: same port
        ctx.add_cleanup(server.shutdown)
        _schedule_reboots(cdu, server, ctx)
        return {"address": f"{u.scheme}://{host}:{port}"}
    if u.scheme == "serial":
        line = PtyLine()
        ctx.add_cleanup(line.close)
        query = parse_qs(u.query)
        baud = int(query.get("baud", [device.options.get("baudrate", 19200)])[-1])
        byte_time = 10.0 / baud if (device.sim or {}).get("line_delay") else 0.0
        rtu = SerialServer(cdu.simdevice(), framer=FramerType.RTU, port=line.path,
                           baudrate=baud, custom_pdu=[pdu])
        loop = asyncio.get_running_loop()

        async def open_pty():
            protocol = rtu.handle_new_connection()
            transport = PtyTransport(loop, protocol, line.master, byte_time,
                                     deaf=lambda: cdu.model.down(ctx.now_ns()))
            transport.start()
            return transport, protocol

        rtu.call_create = open_pty
        await rtu.serve_forever(background=True)
        ctx.add_cleanup(rtu.shutdown)
        return {"address": f"serial://{line.path}"}
    raise ValueError(f"{device.name}: address {device.address!r}: expected tcp://, socket:// or "
                     f"serial://auto")


def _listening_port(server: TcpServer) -> int:
    listener = server.transport       # pymodbus types it a transport; a listener's is a Server
    if not isinstance(listener, asyncio.Server):
        raise RuntimeError(f"pymodbus' TCP server is not listening ({listener!r})")
    port: int = listener.sockets[0].getsockname()[1]
    return port


def _schedule_reboots(cdu: Cdu, server: TcpServer, ctx) -> None:
    """The model's reboots: those of the rack file and those a test triggers (sim/faults.py)."""
    loop = asyncio.get_running_loop()
    down_ns = round(cdu.model.p.reboot_down_s * NS)
    handles: list[asyncio.TimerHandle] = []

    def reboot_at(r: int) -> None:
        now = ctx.now_ns()
        if r + down_ns <= now:
            return

        def go_down() -> None:
            ctx.record_event(cdu.name, "reboot", ctx.now_ns(), planned_ns=r)
            server.close()                     # the listener and every connection

        def come_up() -> None:
            ctx.record_event(cdu.name, "up", ctx.now_ns())
            loop.create_task(server.listen())

        if r <= now:
            go_down()                          # a fault triggered now: down before the next answer
        else:
            handles.append(loop.call_later((r - now) / NS, go_down))
        handles.append(loop.call_later(max(0.0, (r + down_ns - now) / NS), come_up))

    for at_s in cdu.model.p.reboots:
        reboot_at(ctx.t0_ns + round(at_s * NS))
    ctx.faults.on_reboot(cdu.name, reboot_at)

    def cancel_all() -> None:
        for h in handles:
            h.cancel()
    ctx.add_cleanup(cancel_all)
