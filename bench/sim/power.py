"""The simulated rack's power topology: which PDU outlet feeds which device.

A device's `[sim]` table names its feed, `power = "PDU:OUTLET"`; the PDU emulator switches the
outlet (`bus(ctx).switch`) and every device fed by it hears it (`bus(ctx).feed`). Emulators of one
rack share the SimContext, so the bus lives on it.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable


class PowerBus:
    def __init__(self):
        self.loads: dict[tuple[str, int], list[Callable[[bool, int], None]]] = defaultdict(list)

    def feed(self, feed: str, on_switch: Callable[[bool, int], None]) -> None:
        """`feed` = "PDU:OUTLET"; `on_switch(on, t_ns)` runs when that outlet switches."""
        pdu, _, outlet = str(feed).partition(":")
        self.loads[pdu, int(outlet)].append(on_switch)

    def switch(self, pdu: str, outlet: int, on: bool, t_ns: int) -> None:
        for fn in self.loads.get((pdu, int(outlet)), []):
            fn(on, t_ns)


def bus(ctx) -> PowerBus:
    if getattr(ctx, "power_bus", None) is None:
        ctx.power_bus = PowerBus()
    return ctx.power_bus
