"""A Redfish device that is down: its address is a port bound on loopback that never listens,
so every connection is refused at once (`[devices.NAME.sim] emulator = "redfish_unreachable"`).

For tests of what a run or an experiment does with a device it cannot reach beside the simulated
rack's others. The port stays bound (not listening) until the rack stops, so nothing else can
take it meanwhile.
"""
from __future__ import annotations

import socket

from bench.config.inventory import DeviceConfig
from bench.sim.rack import SimContext

SIM_KEYS: dict = {}          # a device that is down: the clock's keys only


async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for device in devices:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((ctx.host, 0))                   # bound, never listening: connect is refused
        ctx.add_cleanup(sock.close)
        scheme = device.address.split("://", 1)[0] if "://" in device.address else "https"
        out[device.name] = {"address": f"{scheme}://{ctx.host}:{sock.getsockname()[1]}"}
    return out
