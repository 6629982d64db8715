"""Optics plane: CMIS optical modules behind an I2C-to-serial bridge (drivers/i2c_bridge.py).

One device is one bridge with several module ports. Inventory keys (beyond the common ones):

    address = "serial:///dev/ttyUSB0"       # any pyserial URL; "socket://host:port" for ser2net
    baudrate = 115200
    bridge = "i2c_bridge"                   # module in drivers/ speaking the bridge's protocol
    latency_timer_ms = 16                   # the adapter's, for the record (sysfs is read if it can)
    timeout_s = 1.0                         # per exchange
    ports = [1, 2]                          # module ports to identify and poll
    counter_ports = [1]                     # modules whose vendor has a power-on counter
    counter_page = 0xA0                     # where it is: 4 bytes big-endian at 128-131
    counter_resolution_ns = 1_000_000       # one tick
    stimuli = ["tx_disable:1", "tx_enable:1", "vdm_freeze:1"]

CMIS defines no clock; a module counts time only where its vendor added a counter, and then it
is clock `counterN` (N the port). A module without one has no clock here at all.

Clocks: a counter read is one `RD A0 80 4` exchange; its bracket is the whole exchange. The port
select before it (`SEL`, only when the port changes) is a separate exchange, outside the bracket.

Log: CMIS flags are latched and cleared on read, so a flag seen set means its condition rose
after the previous read of the same flags and before this one. `log_entries` polls page 11h
bytes 135-147 of every port (and the bridge's pin history, and the VDM status of a port with a
freeze pending) on each call. Each change becomes a LogEntry whose bracket [s_ns, e_ns] is the
read that first saw it; `raw` holds `prev_s_ns`, the start of the previous read of the same
flags: the change happened in (prev_s_ns, e_ns]. (The previous read's *start*, not its end: the
module sampled its flags somewhere inside that read's bracket.) Where the module has a counter,
the counter is read right after and the entry carries that value: the change happened before it.

pyserial blocks: every exchange runs in `asyncio.to_thread` (one at a time per bridge, under a
lock held in the thread, so a call abandoned at the runner's timeout finishes before the next
starts), so the event loop the other devices share never waits on the line.
"""
from __future__ import annotations

import asyncio
import importlib
import json
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bench.config.inventory import DeviceConfig, Key
from drivers.base import (
    TIMEOUT_KEY,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    Read,
    Stimulated,
    Stimulus,
)
from drivers.i2c_bridge import Answer

T = TypeVar("T")                 # what a blocking module access returns

# CMIS 5 addresses (page, offset)
LOWER_ID, LOWER_FW = 0, 39                  # lower page: identifier, revision; firmware 39-40
UPPER_ID_FIRST, UPPER_ID_LAST = 128, 189    # page 00h: identifier .. date code
FLAGS_FIRST, FLAGS_COUNT = 135, 13          # page 11h: latched lane flags 135-147
TX_DISABLE = (0x10, 130)
VDM_CONTROL, VDM_STATUS = (0x2F, 144), (0x2F, 145)
FREEZE_REQUEST, FREEZE_DONE, UNFREEZE_DONE = 0x80, 0x80, 0x40
COUNTER_OFFSET = 128

FLAG_NAMES = {135: "TxFault", 136: "TxLOS", 137: "TxCDRLOL", 138: "TxAdaptEqFail",
              139: "TxPowerHighAlarm", 140: "TxPowerLowAlarm", 141: "TxPowerHighWarning",
              142: "TxPowerLowWarning", 143: "TxBiasHighAlarm", 144: "TxBiasLowAlarm",
              145: "TxBiasHighWarning", 146: "TxBiasLowWarning", 147: "RxLOS"}


def _text(b: bytes) -> str:
    return b.decode("ascii", "replace").strip()


def _lanes(mask: int) -> list[int]:
    return [i + 1 for i in range(8) if mask >> i & 1]


def adapter_latency_ms(url: str) -> int | None:
    """The latency timer of a Linux USB-serial adapter (ftdi_sio exposes it in sysfs), if any."""
    name = os.path.basename(os.path.realpath(url)) if url.startswith("/dev/") else ""
    try:
        with open(f"/sys/bus/usb-serial/devices/{name}/latency_timer") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


class SerialOptic(Stimulated, Driver):
    MAX_ENTRIES = 10_000
    SCHEMES = ("serial", "socket", "rfc2217", "loop", "")
    OPTIONS = {"ports": Key("list[int]", 1, 255), "counter_ports": Key("list[int]", 1, 255),
               "counter_page": Key("int", 0, 255), "bridge": Key("str", choices=("i2c_bridge",)),
               "counter_resolution_ns": Key("int", 1, 10**10, unit="ns"),
               "baudrate": Key("int", 300, 4_000_000, unit="baud"), "timeout_s": TIMEOUT_KEY,
               "latency_timer_ms": Key("float", 0, 255, unit="ms")}

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.ports = [int(p) for p in o.get("ports", [1])]
        self.counter_ports = [int(p) for p in o.get("counter_ports", [])]
        self.counter_page = int(o.get("counter_page", 0xA0))
        self.counter_res_ns = int(o.get("counter_resolution_ns", 1_000_000))
        transport = importlib.import_module(f"drivers.{o.get('bridge', 'i2c_bridge')}")
        self.link = transport.BridgeLink(self.name, config.address, now_ns,
                                         int(o.get("baudrate", 115200)),
                                         float(o.get("timeout_s", 1.0)))
        self._selected: int | None = None
        self._entries: list[LogEntry] = []
        self._seq = 0
        self._prev_flags: dict[int, int] = {}       # port -> start of the last flag read
        self._hist_seq = 0
        self._prev_hist: int | None = None
        self._vdm_watch: dict[int, tuple[int, int]] = {}   # port -> (done bit, since s_ns)
        self._line = threading.Lock()

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` (pyserial underneath) off the event loop, one at a time on this line."""
        def locked() -> T:
            with self._line:
                return fn(*args)
        return await asyncio.to_thread(locked)

    # -- lifecycle ----------------------------------------------------------------------------
    async def open(self) -> None:
        await self._blocking(self.link.open)

    async def close(self) -> None:
        try:
            await self._blocking(self.link.close)
        except RuntimeError:         # the loop's executor is already shut down: close in place
            self.link.close()

    # -- exchanges with the selected module -----------------------------------------------------
    def _on(self, port: int, fn: Callable[..., T], *args: Any) -> T:
        """Run a module access on `port`, selecting it first when needed."""
        if port not in self.ports:
            raise self.error("refused", f"port {port} is not in the inventory's ports {self.ports}")
        try:
            if self._selected != port:
                self.link.select_port(port)
                self._selected = port
            return fn(*args)
        except DeviceError:
            self._selected = None              # the bridge's state is unknown after an error
            raise

    def _read(self, port: int, page: int, offset: int, count: int) -> tuple[bytes, Answer]:
        return self._on(port, self.link.read, page, offset, count)

    def _write(self, port: int, where: tuple[int, int], value: int) -> Answer:
        return self._on(port, self.link.write, where[0], where[1], bytes([value]))

    # -- identity -------------------------------------------------------------------------------
    def _module_identity(self, port: int) -> dict:
        lower, _ = self._read(port, 0x00, 0, LOWER_FW + 2)
        up, _ = self._read(port, 0x00, UPPER_ID_FIRST, UPPER_ID_LAST - UPPER_ID_FIRST + 1)
        f = lambda a, b: up[a - UPPER_ID_FIRST:b - UPPER_ID_FIRST + 1]   # noqa: E731
        return {"identifier": f"0x{lower[LOWER_ID]:02X}",
                "cmis_revision": f"{lower[1] >> 4}.{lower[1] & 0xF}",
                "vendor": _text(f(129, 144)), "oui": ":".join(f"{b:02X}" for b in f(145, 147)),
                "part_number": _text(f(148, 163)), "revision": _text(f(164, 165)),
                "serial": _text(f(166, 181)), "date_code": _text(f(182, 189)),
                "firmware": f"{lower[LOWER_FW]}.{lower[LOWER_FW + 1]}",
                "counter": port in self.counter_ports}

    async def identity(self) -> Identity:
        return await self._blocking(self._identity)

    def _identity(self) -> Identity:
        info, _ = self.link.identify()
        modules = {}
        for port in self.ports:
            try:
                modules[str(port)] = self._module_identity(port)
            except DeviceError as exc:
                modules[str(port)] = {"error": f"{exc.kind}: {exc.message}"}
        return Identity(vendor=info.get("vendor", ""), model=info.get("model", ""),
                        serial=info.get("serial", ""), firmware=info.get("fw", ""),
                        extra={"bridge_ports": info.get("ports", ""), "modules": modules,
                               "no_clock": [f"module {p}" for p in self.ports
                                            if p not in self.counter_ports],
                               "baudrate": self.link.baudrate,
                               "latency_timer_ms": adapter_latency_ms(self.link.url)
                               or self.config.options.get("latency_timer_ms")})

    # -- clocks ---------------------------------------------------------------------------------
    def clocks(self) -> list[ClockSpec]:
        res = self.counter_res_ns
        return [ClockSpec(f"counter{p}", res, counter=True, modulus_ns=2 ** 32 * res)
                for p in self.counter_ports]

    def _counter(self, port: int) -> tuple[int, Answer]:
        data, a = self._read(port, self.counter_page, COUNTER_OFFSET, 4)
        return int.from_bytes(data, "big") * self.counter_res_ns, a

    async def read_clock(self, clock: str) -> Read:
        port = int(clock[len("counter"):]) if clock.startswith("counter") and \
            clock[len("counter"):].isdigit() else None
        if port not in self.counter_ports:
            raise self.error("refused", f"no clock {clock!r} (counters: "
                                        f"{[c.name for c in self.clocks()] or 'none'})")
        value, a = await self._blocking(self._counter, port)
        return Read(clock, a.s_ns, a.e_ns, value, self.counter_res_ns, "user", a.raw)

    # -- stimuli --------------------------------------------------------------------------------
    def stimuli(self) -> list[str]:
        return ["tx_disable", "tx_enable", "vdm_freeze", "vdm_unfreeze"]

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if target is None or not target.isdigit():
            raise self.error("refused", f"stimulus {name} needs a module port as target")
        port = int(target)
        if name in ("tx_disable", "tx_enable"):
            a = await self._blocking(self._write, port, TX_DISABLE,
                                     0xFF if name == "tx_disable" else 0x00)
        else:
            freeze = name == "vdm_freeze"
            a = await self._blocking(self._write, port, VDM_CONTROL,
                                     FREEZE_REQUEST if freeze else 0x00)
            self._vdm_watch[port] = (FREEZE_DONE if freeze else UNFREEZE_DONE, a.s_ns)
        return Stimulus(name, target, a.s_ns, a.e_ns, True, "user", a.raw)

    # -- log ------------------------------------------------------------------------------------
    def _add(self, clock: str, value_ns: int | None, s_ns: int, e_ns: int, message: str,
             **raw) -> LogEntry:
        self._seq += 1
        res = self.counter_res_ns if clock else 0
        entry = LogEntry(str(self._seq), clock, value_ns, res, s_ns, e_ns, message,
                         json.dumps(raw, sort_keys=True))
        self._entries.append(entry)
        del self._entries[:-self.MAX_ENTRIES]
        return entry

    def _bound(self, prev_s: int | None, e: int) -> str:
        return f"in ({prev_s}, {e}] ns" if prev_s is not None else f"before {e} ns (first read)"

    def _poll_history(self) -> None:
        nxt, events, a = self.link.history(self._hist_seq)
        for q, port, pin, level in events:
            what = {"INT": "IntL", "PRS": "ModPrsL"}.get(pin, pin)
            state = "asserted" if level == 0 else "released"
            self._add("", None, a.s_ns, a.e_ns,
                      f"bridge: port {port} {what} {state} (#{q}), "
                      f"{self._bound(self._prev_hist, a.e_ns)}",
                      source="bridge", seq=q, port=port, pin=pin, level=level,
                      prev_s_ns=self._prev_hist, answer=a.raw)
        self._hist_seq = max(self._hist_seq, nxt)
        self._prev_hist = a.s_ns

    def _poll_port(self, port: int) -> None:
        flags, a = self._read(port, 0x11, FLAGS_FIRST, FLAGS_COUNT)
        prev = self._prev_flags.get(port)
        self._prev_flags[port] = a.s_ns
        seen = [(FLAGS_FIRST + i, b) for i, b in enumerate(flags) if b]
        if port in self._vdm_watch:
            bit, since = self._vdm_watch[port]
            status, v = self._read(port, *VDM_STATUS, 1)
            if status[0] & bit:
                del self._vdm_watch[port]
                name = "VdmFreezeDone" if bit == FREEZE_DONE else "VdmUnfreezeDone"
                self._add("", None, v.s_ns, v.e_ns,
                          f"port {port} {name} {self._bound(since, v.e_ns)}",
                          source="module", port=port, flag=name, prev_s_ns=since, answer=v.raw)
            else:
                self._vdm_watch[port] = (bit, v.s_ns)
        if not seen:
            return
        clock, value, counter_raw = "", None, ""
        if port in self.counter_ports:
            value, c = self._counter(port)
            clock, counter_raw = f"counter{port}", c.raw
        for byte, mask in seen:
            name = FLAG_NAMES.get(byte, f"flag{byte}")
            self._add(clock, value, a.s_ns, a.e_ns,
                      f"port {port} {name} latched on lanes {_lanes(mask)}, "
                      f"{self._bound(prev, a.e_ns)}"
                      + (f"; counter read after it: {value} ns" if clock else ""),
                      source="module", port=port, flag=name, byte=byte, lanes=mask,
                      prev_s_ns=prev, answer=a.raw, counter_answer=counter_raw)

    def poll(self) -> list[DeviceError]:
        """Poll the bridge's history and every port's flags once; returns per-part errors."""
        errors = []
        for part in [None] + self.ports:
            try:
                self._poll_history() if part is None else self._poll_port(part)
            except DeviceError as exc:
                errors.append(exc)
                if exc.kind in ("reset", "unreachable"):
                    break                      # the bridge itself is gone
        return errors

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Polls once, then returns every entry after `cursor`. A poll that failed raises its
        first error unless there are new entries to hand over (they would be lost otherwise)."""
        errors = await self._blocking(self.poll)
        after = int(cursor) if cursor and cursor.isdigit() else 0
        new = [e for e in self._entries if int(e.cursor) > after]
        if errors and not new:
            raise errors[0]
        return new, (new[-1].cursor if new else cursor)


DRIVER = SerialOptic
