"""Cooling controller (CDU) driver over Modbus: RTC, identity, test alarm and alarm log.

Where things sit and how they are encoded comes from the register map the inventory names
(`map = "family_a"`; drivers/modbus_map.py, drivers/maps/cooling/*.toml); this module reads the
device as the map describes it. Client: pymodbus' asyncio clients (3.16), with `retries=0` (no
silent re-sends), a short timeout (`timeout_s`, default 1 s) and no automatic reconnect; a
dropped connection fails the request in flight at once ("reset") instead of waiting for the
timeout, and the next request reconnects.

Bracket: `s` is stamped by pymodbus' `trace_packet` hook just before the request frame is written
to the transport, `e` when the last bytes of the answer arrive (before decoding); the RTC is read
in ONE request, so the device sampled it inside [s, e]. Over TCP on a CLOCK_REALTIME reference,
`e` is the kernel's stamp of those bytes' arrival (drivers/tcp_rx_stamp.py; pymodbus connects
through a stamped socket), so a busy loop does not widen the bracket; such reads say
`stamp = "kernel"`. Local-time RTCs and log stamps are turned
into UTC with the zone the inventory declares (`timezone = "Europe/Berlin"`, zoneinfo); if the
controller really shows another zone, the reading is off by the zones' difference and that shows
in the measured offset (nothing here corrects it). In the repeated hour at the end of summer time
a local reading is ambiguous; the earlier instant is taken (fold=0). Date/time fields, BCD and
word order are decoded here (stdlib `datetime`, pymodbus' `convert_from_registers`).

Addresses: `tcp://host:502` (Modbus TCP), `serial:///dev/ttyUSB0?baud=19200` (Modbus RTU;
also `parity`, `stopbits`, `bytesize` in the query), `socket://host:port` (RTU framing over TCP,
a serial device server). Inventory keys: `map`, `timezone`, `device_id`, `baudrate`, `parity`,
`stopbits`, `bytesize`, `word_order`, `timeout_s`.
"""
from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Literal, TypedDict
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pymodbus import FramerType
from pymodbus.client import AsyncModbusSerialClient, AsyncModbusTcpClient, ModbusBaseClient
from pymodbus.constants import DeviceInformation
from pymodbus.exceptions import ConnectionException, ModbusException, ModbusIOException
from pymodbus.pdu import ModbusPDU
from pymodbus.pdu.mei_message import ReadDeviceInformationResponse

from bench.config.inventory import DeviceConfig, Key
from drivers import tcp_rx_stamp
from drivers.base import (
    TIMEOUT_KEY,
    ClockSetting,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    Read,
    Stimulated,
    Stimulus,
)
from drivers.modbus_map import CoolingMap, MapError, RingLogSpec, Span, WindowLogSpec, load_map

NS = 1_000_000_000
UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
MAX_READ = 120                   # registers per read request (the protocol allows 125)

EXCEPTIONS = {1: "illegal function", 2: "illegal data address", 3: "illegal data value",
              4: "server device failure", 5: "acknowledge", 6: "server device busy",
              8: "memory parity error", 10: "gateway path unavailable",
              11: "gateway target device failed to respond"}


def to_ns(t: dt.datetime) -> int:
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000


def from_bcd(word: int, what: str) -> int:
    """Packed BCD -> int; ValueError naming `what` if a nibble is not a digit."""
    out = 0
    for shift in (12, 8, 4, 0):
        nib = (word >> shift) & 0xF
        if nib > 9:
            raise ValueError(f"{what} 0x{word:04x} is not BCD")
        out = out * 10 + nib
    return out


class _ClientOptions(TypedDict):
    """The pymodbus client's keyword arguments the driver sets, whatever the transport."""

    timeout: float
    retries: int
    reconnect_delay: float
    trace_packet: Callable[[bool, bytes], bytes]
    trace_pdu: Callable[[bool, ModbusPDU], ModbusPDU]
    trace_connect: Callable[[bool], None]


FUNCTION = {"coil": 1, "discrete": 2, "holding": 3, "input": 4}   # read function codes
READ_METHOD = {"holding": "read_holding_registers", "input": "read_input_registers",
               "coil": "read_coils", "discrete": "read_discrete_inputs"}


class ModbusCooling(Stimulated, ClockSetting, Driver):
    SCHEMES = ("tcp", "socket", "serial")
    OPTIONS = {"map": Key("str", file_suffix=".toml"), "timezone": Key("str"),
               "device_id": Key("int", 0, 247),
               "word_order": Key("str", choices=("big", "little")), "timeout_s": TIMEOUT_KEY,
               "baudrate": Key("int", 300, 4_000_000, unit="baud"),
               "parity": Key("str", choices=("N", "E", "O")), "stopbits": Key("int", 1, 2),
               "bytesize": Key("int", 5, 8)}
    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        if "map" not in o:
            raise self.error("error", "the inventory names no register map (key `map`)")
        try:
            self.map: CoolingMap = load_map(str(o["map"]))
        except MapError as exc:
            raise self.error("error", str(exc)) from None
        self.zone: dt.tzinfo = UTC
        if self.map.local_time:
            if "timezone" not in o:
                raise self.error("error", f"map {self.map.name} keeps local time; the inventory "
                                          f"must declare its zone (key `timezone`)")
        if "timezone" in o:
            try:
                self.zone = ZoneInfo(str(o["timezone"]))
            except (ZoneInfoNotFoundError, ValueError):
                raise self.error("error", f"unknown time zone {o['timezone']!r}") from None
        self.device_id = int(o.get("device_id", self.map.device_id))
        order = str(o.get("word_order", self.map.word_order))      # checked: big | little
        self.word_order: Literal["big", "little"] = "little" if order == "little" else "big"
        self.timeout_s = float(o.get("timeout_s", 1.0))
        self.resolution_ns = round(self.map.rtc.resolution_s * NS)
        self.client: ModbusBaseClient | None = None
        self._lock = asyncio.Lock()          # made anew at each open (bound to its loop)
        self._inflight: asyncio.Task[object] | None = None    # the task whose request is on the wire
        self._cut = False            # _trace_connect cancelled it
        self._drops = 0              # connections the device dropped
        self._stamps: dict[str, int] = {}
        self._labels: dict[tuple[Span, str], str] = {}    # (span, what) -> the request's label in errors
        self._guard = False          # a request timed out on a serial line: let late bytes pass
        self._dropped = False        # the device closed the connection since the last exchange
        self._closing = False
        self._sock: tcp_rx_stamp.StampedSocket | None = None    # the connection's, if stamped
        self.stamp = "user"          # how the last exchange's answer was stamped (or "kernel")

    # -- connection ------------------------------------------------------------------------------
    def _make_client(self) -> ModbusBaseClient:
        u = urlsplit(self.config.address)
        o = self.config.options
        common = _ClientOptions(timeout=self.timeout_s, retries=0, reconnect_delay=0,
                                trace_packet=self._trace_packet, trace_pdu=self._trace_pdu,
                                trace_connect=self._trace_connect)
        if u.scheme in ("tcp", "socket") and u.hostname:
            port = u.port or (502 if u.scheme == "tcp" else 4001)
            client = AsyncModbusTcpClient(u.hostname, port=port, framer=FramerType.SOCKET
                                          if u.scheme == "tcp" else FramerType.RTU, **common)
            if tcp_rx_stamp.on_kernel_clock(self.now_ns):
                self._connect_stamped(client, u.hostname, port)
            return client
        if u.scheme == "serial":
            q = {k: v[-1] for k, v in parse_qs(u.query).items()}
            return AsyncModbusSerialClient(
                u.path, framer=FramerType.RTU,
                baudrate=int(q.get("baud", o.get("baudrate", 19200))),
                parity=str(q.get("parity", o.get("parity", "N"))),
                stopbits=int(q.get("stopbits", o.get("stopbits", 1))),
                bytesize=int(q.get("bytesize", o.get("bytesize", 8))), **common)
        raise self.error("error", f"address {self.config.address!r}: expected tcp://, socket:// "
                                  f"or serial://")

    def _connect_stamped(self, client: ModbusBaseClient, host: str, port: int) -> None:
        """Connect `client` through a stamped socket: pymodbus has no socket hook, but connects
        (and reconnects) by calling its transport's `call_create`."""
        ctx = client.ctx

        async def create() -> tuple[asyncio.Transport, asyncio.BaseProtocol]:
            self._sock = None
            sock = await tcp_rx_stamp.connect(host, port)
            try:
                out = await ctx.loop.create_connection(ctx.handle_new_connection, sock=sock)
            except BaseException:
                sock.close()
                raise
            self._sock = sock
            return out

        ctx.call_create = create

    @property
    def _serial_line(self) -> bool:
        return urlsplit(self.config.address).scheme in ("serial", "socket")

    async def open(self) -> None:
        self._lock = asyncio.Lock()
        self.client = self._make_client()
        await self._connect()

    async def _connect(self) -> None:
        if self.client is None:
            raise self.error("error", "driver not opened")
        try:
            ok = await self.client.connect()
        except (OSError, ModbusException) as exc:
            raise self.error("unreachable", f"cannot connect to {self.config.address}: {exc}") from exc
        if not ok:
            raise self.error("unreachable", f"cannot connect to {self.config.address}")

    async def close(self) -> None:
        self._closing = True
        try:
            if self.client is not None:
                self.client.close()
        except Exception:
            pass

    def _trace_packet(self, sending: bool, data: bytes) -> bytes:
        t = self.now_ns()
        if sending:
            self._stamps["s"] = t
        else:      # called as the transport hands over what the socket just read
            self._stamps["rx"] = t
            k = tcp_rx_stamp.arrival(self._sock.rx_ns if self._sock is not None else None,
                                     self._stamps.get("s", t), t)
            if k is not None:
                self._stamps["rx_kernel"] = k
            else:
                self._stamps.pop("rx_kernel", None)
        return data

    def _trace_pdu(self, sending: bool, pdu: ModbusPDU) -> ModbusPDU:
        if not sending and "rx" in self._stamps:       # the bytes that completed this answer
            self._stamps["e"] = self._stamps.get("rx_kernel", self._stamps["rx"])
            self.stamp = "kernel" if "rx_kernel" in self._stamps else "user"
        return pdu

    def _trace_connect(self, connected: bool) -> None:
        if connected or self._closing:
            return
        self._dropped = True
        self._drops += 1
        task = self._inflight
        if task is not None and not task.done():      # fail the request in flight at once
            self._cut = True
            task.cancel()

    # -- one exchange ----------------------------------------------------------------------------
    async def _exchange(self, what: str, call: Callable[[], Awaitable[ModbusPDU]],
                        ) -> tuple[ModbusPDU, int, int]:
        """Send one request; its answer and its bracket (s, e). Raises DeviceError.

        The request runs in the calling task (no task and wait of its own: two loop turns less
        per read; benchmarks/README.md, "CPU per read"); a connection dropped meanwhile cancels it
        (_trace_connect), and that cancellation, told apart from the caller's, is a "reset"."""
        await self._ready(what)
        self._stamps = {}
        self.stamp = "user"
        drops = self._drops
        task = self._inflight = asyncio.current_task()
        assert task is not None                  # a coroutine runs in a task
        self._cut = False
        s0 = self.now_ns()
        guard = asyncio.timeout(2 * self.timeout_s + 1)
        try:
            async with guard:
                rr = await call()
        except asyncio.CancelledError:
            cut, self._cut = self._cut, False
            if not cut or task.uncancel() > 0:             # the caller's cancellation
                raise
            raise self.error("reset", f"connection dropped by the device during {what}") from None
        except TimeoutError:
            if not guard.expired():
                raise
            raise self._no_answer(what) from None
        except ModbusException as exc:
            raise self._modbus_error(exc, what) from None
        finally:
            self._inflight = None
            if self._drops != drops:     # the drop is this exchange's outcome, not the next's
                self._dropped = False
            if self._cut:                # its cancellation never reached us: nothing pends
                self._cut = False
                task.uncancel()
        e0 = self.now_ns()
        self._refuse_an_exception_answer(rr, what)
        return rr, self._stamps.get("s", s0), self._stamps.get("e", e0)

    def _modbus_error(self, exc: ModbusException, what: str) -> DeviceError:
        """pymodbus's error as a DeviceError: no answer (the line's guard time is then waited
        before the next request), a malformed answer, a lost connection, a protocol error."""
        if isinstance(exc, ModbusIOException):
            if "No response" in str(exc):
                self._guard = self._serial_line
                return self._no_answer(what)
            return self.error("malformed", f"{what}: {exc}")
        if isinstance(exc, ConnectionException):
            return self.error("reset", f"connection lost before {what}")
        return self.error("protocol", f"{what}: {exc}")

    def _refuse_an_exception_answer(self, rr: ModbusPDU, what: str) -> None:
        """An exception response raises a DeviceError ("protocol") naming its code."""
        if rr.isError():
            code = getattr(rr, "exception_code", 0)
            raise self.error("protocol", f"answered exception {code} "
                                         f"({EXCEPTIONS.get(code, 'unknown')}) to {what}")

    async def _ready(self, what: str) -> None:
        """Connected, a dropped connection said once, a late answer's guard time waited."""
        if self.client is None:
            raise self.error("error", "driver not opened")
        if self._dropped:          # said once; the next exchange connects again
            self._dropped = False
            raise self.error("reset", f"the device dropped the connection before {what}")
        if not self.client.connected:
            await self._connect()
        if self._guard:
            await asyncio.sleep(min(0.2, self.timeout_s))   # a late answer must not pass for ours
            self._guard = False

    def _no_answer(self, what: str) -> DeviceError:
        if "rx" in self._stamps:           # bytes came back, but no frame answering ours
            return self.error("malformed", f"bytes came back for {what} within {self.timeout_s} "
                                           f"s, none a valid answer")
        return self.error("timeout", f"no answer to {what} within {self.timeout_s} s")

    async def _read(self, span: Span, what: str) -> tuple[list[int], int, int]:
        label = self._labels.get((span, what))
        if label is None:
            label = f"read {what} ({span.table} {span.address}+{span.count})"
            if len(self._labels) < 64:
                self._labels[(span, what)] = label
        fn = getattr(self.client, READ_METHOD[span.table])
        rr, s, e = await self._exchange(label, lambda: fn(span.address, count=span.count,
                                                          device_id=self.device_id))
        self._matches(rr, FUNCTION[span.table], label)
        bits = span.table in ("coil", "discrete")
        values = list(rr.bits if bits else rr.registers)
        # bits come padded to whole bytes; registers must be exactly the count asked for
        if not (span.count <= len(values) < span.count + 8 if bits else len(values) == span.count):
            raise self.error("malformed", f"{label}: {len(values)} values in the answer")
        return values[: span.count], s, e

    def _matches(self, rr: ModbusPDU, function: int, label: str) -> None:
        """An answer to another request (function code or device id not ours) is malformed."""
        fc = getattr(rr, "function_code", function)
        if fc != function:
            raise self.error("malformed", f"{label}: answer has function code {fc} "
                                          f"(asked {function})")
        dev = getattr(rr, "dev_id", self.device_id)
        if dev not in (self.device_id, None) and self.device_id != 0:
            raise self.error("malformed", f"{label}: answer from device id {dev} "
                                          f"(asked {self.device_id})")

    async def _write(self, table: str, address: int, value: int, what: str) -> tuple[int, int]:
        c, dev = self.client, self.device_id
        label = f"write {what} ({table} {address} = {value})"
        if c is None:
            raise self.error("error", "driver not opened")
        if table == "coil":
            call = lambda: c.write_coil(address, bool(value), device_id=dev)   # noqa: E731
        elif table == "holding":
            call = lambda: c.write_register(address, value, device_id=dev)     # noqa: E731
        else:
            raise self.error("error", f"{label}: the map puts it in a read-only table")
        rr, s, e = await self._exchange(label, call)
        self._matches(rr, 5 if table == "coil" else 6, label)
        return s, e

    # -- identity --------------------------------------------------------------------------------
    async def _device_information(self, read_code: int, object_id: int = 0) -> dict[int, bytes]:
        info: dict[int, bytes] = {}
        c = self.client
        if c is None:
            raise self.error("error", "driver not opened")
        for _ in range(8):                                # segmented answers: `more follows`
            what = f"read device identification (code {read_code}, object {object_id})"
            rr, _s, _e = await self._exchange(what, lambda: c.read_device_information(
                read_code=read_code, object_id=object_id,  # noqa: B023 (awaited in this iteration)
                device_id=self.device_id))
            if not isinstance(rr, ReadDeviceInformationResponse):
                raise self.error("malformed", f"{what}: answered {type(rr).__name__}")
            info.update(rr.information)
            if not getattr(rr, "more_follows", 0) or rr.next_object_id in info:
                break
            object_id = rr.next_object_id
        return info

    async def identity(self) -> Identity:
        """From Read Device Identification (regular objects, else basic ones); a controller that
        answers neither with data is described by its map, and `extra` says so."""
        async with self._lock:
            info: dict[int, bytes] = {}
            refused = ""
            for code in (DeviceInformation.REGULAR, DeviceInformation.BASIC):
                try:
                    info = await self._device_information(code)
                    break
                except DeviceError as exc:
                    if exc.kind != "protocol":
                        raise
                    refused = exc.message
            if not info:
                return Identity(vendor=self.map.vendor, model=self.map.model,
                                extra={"source": f"register map {self.map.name} (the device "
                                                 f"{refused or 'gave no objects'})",
                                       "map": self.map.name, "timezone": str(self.zone)})
            text = {k: (v.decode("ascii", "replace") if isinstance(v, bytes) else str(v))
                    .strip("\0 ") for k, v in info.items()}
            serial = await self._serial()
        product = text.get(1, "")
        return Identity(vendor=text.get(0, ""), model=text.get(5) or product, serial=serial,
                        firmware=text.get(2, ""),
                        extra={"product_code": product, "map": self.map.name,
                               "map_product_code": self.map.product_code,
                               "map_matches": product == self.map.product_code,
                               "timezone": str(self.zone)})

    async def _serial(self) -> str:
        """The serial number where the map keeps it: a device-specific MEI object, or registers."""
        if self.map.serial.mei_object is not None:
            obj = self.map.serial.mei_object
            extra = await self._device_information(DeviceInformation.SPECIFIC, obj)
            return extra.get(obj, b"").decode("ascii", "replace").strip("\0 ")
        if self.map.serial.span is not None:
            regs, _s, _e = await self._read(self.map.serial.span, "serial number")
            raw = b"".join(r.to_bytes(2, "big") for r in regs)
            return raw.split(b"\0")[0].decode("ascii", "replace").strip()
        return ""

    # -- the RTC ---------------------------------------------------------------------------------
    def clocks(self) -> list[ClockSpec]:
        return [ClockSpec("rtc", self.resolution_ns)]

    def _instant_ns(self, fields: dict[str, int], time_base: str) -> int:
        t = dt.datetime(fields["year"], fields["month"], fields["day"], fields["hour"],
                        fields["minute"], fields["second"],
                        tzinfo=self.zone if time_base == "local" else UTC)
        return to_ns(t)

    def decode_rtc(self, regs: list[int]) -> int:
        rtc = self.map.rtc
        if rtc.encoding == "fields":
            return self._instant_ns(dict(zip(rtc.fields, regs)), rtc.time_base)
        secs = ModbusBaseClient.convert_from_registers(regs, ModbusBaseClient.DATATYPE.UINT32,
                                                       word_order=self.word_order)
        if not isinstance(secs, int):                     # two registers give one uint32
            raise ValueError(f"{regs} is not one uint32")
        if rtc.time_base == "local":           # seconds since 1970 on the local wall clock
            wall = dt.datetime.fromtimestamp(secs, UTC).replace(tzinfo=None)
            return to_ns(wall.replace(tzinfo=self.zone))
        return secs * NS

    async def read_clock(self, clock: str) -> Read:
        if clock != "rtc":
            raise self.error("error", f"no clock {clock!r} (this device has: rtc)")
        async with self._lock:
            regs, s, e = await self._read(self.map.rtc.span, "RTC")
            stamp = self.stamp
        raw = f"{self.map.rtc.span.table} {self.map.rtc.span.address}: {regs}"
        try:
            value = self.decode_rtc(regs)
        except (ValueError, OverflowError) as exc:
            raise self.error("malformed", f"RTC registers {regs} are not a time: {exc}") from exc
        return Read("rtc", s, e, value, self.resolution_ns, stamp, raw)

    def encode_rtc(self, t_s: int) -> list[int]:
        """Registers that set the RTC to Unix second `t_s` (the inverse of decode_rtc)."""
        rtc = self.map.rtc
        t = dt.datetime.fromtimestamp(t_s, UTC)
        if rtc.time_base == "local":
            t = t.astimezone(self.zone)
        if rtc.encoding == "fields":
            return [getattr(t, f) for f in rtc.fields]
        offset = t.utcoffset() or dt.timedelta(0)              # t is aware: never None
        secs = t_s + (int(offset.total_seconds()) if rtc.time_base == "local" else 0)
        return ModbusBaseClient.convert_to_registers(secs & 0xFFFFFFFF,
                                                     ModbusBaseClient.DATATYPE.UINT32,
                                                     word_order=self.word_order)

    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        """Write the RTC registers in one request (function 16) at a whole second of the
        target, so that the one-second register holds the target exactly when it lands."""
        target = self._target_ns(value_ns, offset_s)
        now = self.now_ns()
        wait = (-target) % NS if value_ns is None else 0
        await asyncio.sleep(wait / NS)
        if value_ns is None:
            target += self.now_ns() - now
        secs = round(target / NS)
        regs = self.encode_rtc(secs)
        span = self.map.rtc.span
        label = f"write RTC ({span.table} {span.address}+{len(regs)} = {regs})"
        c = self.client
        if c is None:
            raise self.error("error", "driver not opened")
        async with self._lock:
            _, s, e = await self._exchange(label, lambda: c.write_registers(
                span.address, regs, device_id=self.device_id))
        return Stimulus(self.SET_CLOCK, str(secs), s, e, True, "user", label)

    # -- sensors (not clocks; for experiments and the report) ------------------------------------
    async def read_sensors(self) -> dict[str, dict[str, float | str]]:
        out: dict[str, dict[str, float | str]] = {}
        types = {"int16": "INT16", "uint16": "UINT16", "int32": "INT32", "uint32": "UINT32",
                 "float32": "FLOAT32"}
        async with self._lock:
            for sp in self.map.sensors:
                regs, _s, _e = await self._read(sp.span, sp.name)
                v = ModbusBaseClient.convert_from_registers(
                    regs, getattr(ModbusBaseClient.DATATYPE, types[sp.type]),
                    word_order=self.word_order)
                if not isinstance(v, int | float):        # the span is the type's width: one value
                    raise self.error("malformed", f"{sp.name}: {regs} is not one {sp.type}")
                out[sp.name] = {"value": float(v) * sp.scale if sp.type != "float32" else float(v),
                                "unit": sp.unit}
        return out

    # -- the test alarm --------------------------------------------------------------------------
    def stimuli(self) -> list[str]:
        return ["test_alarm"] if self.map.test_alarm is not None else []

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        ta = self.map.test_alarm
        if name != "test_alarm" or ta is None:
            return await super()._stimulate(name, target)
        async with self._lock:
            s, e = await self._write(ta.table, ta.address, ta.value, "test-alarm control")
        return Stimulus("test_alarm", None, s, e, True, "user",
                        f"{ta.table} {ta.address} := {ta.value}")

    # -- the alarm log ---------------------------------------------------------------------------
    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Entries logged since `cursor` (None: every entry the controller holds), oldest first;
        each with the bracket of the read that first showed it (the index or count register)."""
        log = self.map.alarm_log
        if log is None:
            return [], cursor
        if cursor is not None and not (cursor.isdigit() and int(cursor) < 65536):
            raise self.error("error", f"alarm log cursor {cursor!r} is not one of this driver's")
        async with self._lock:
            if isinstance(log, RingLogSpec):
                return await self._ring_entries(log, cursor)
            return await self._window_entries(log, cursor)

    def _message(self, code: int | None) -> str:
        ta = self.map.test_alarm
        if code is None:
            return "alarm"
        return f"alarm {code}" + (" (test alarm)" if ta is not None and code == ta.code else "")

    async def _ring_entries(self, log: RingLogSpec, cursor: str | None,
                            ) -> tuple[list[LogEntry], str | None]:
        (index,), s, e = await self._read(Span(log.table, log.index_address), "alarm log index")
        if not 0 <= index < log.entries:
            raise self.error("malformed", f"alarm log index {index} outside 0..{log.entries - 1}")
        start = index if cursor is None else int(cursor)
        if cursor is not None and start == index:
            return [], str(index)
        count = (index - start) % log.entries or log.entries
        slots = [(start + i) % log.entries for i in range(count)]
        ring = await self._read_ring(log)
        out = []
        for slot in slots:
            regs = ring[slot * log.entry_size:(slot + 1) * log.entry_size]
            if any(regs):                                  # else never written
                out.append(self._ring_entry(log, slot, regs, s, e))
        return out, str(index)

    async def _read_ring(self, log: RingLogSpec) -> list[int]:
        """The whole ring of entries, in reads of at most MAX_READ registers."""
        ring: list[int] = []
        total = log.entries * log.entry_size
        for a in range(0, total, MAX_READ):
            regs, _s, _e = await self._read(
                Span(log.table, log.base_address + a, min(MAX_READ, total - a)), "alarm log")
            ring += regs
        return ring

    def _ring_entry(self, log: RingLogSpec, slot: int, regs: list[int], s: int, e: int,
                    ) -> LogEntry:
        f = dict(zip(log.entry_fields, regs))
        try:
            value: int | None = self._instant_ns(f, log.time_base)
        except (ValueError, OverflowError):
            value = None
        return LogEntry(str((slot + 1) % log.entries), "rtc", value, self.resolution_ns,
                        s, e, self._message(f.get("code")), f"slot {slot}: {regs}")

    async def _window_entries(self, log: WindowLogSpec, cursor: str | None,
                              ) -> tuple[list[LogEntry], str | None]:
        (count,), s, e = await self._read(Span(log.table, log.count_address), "alarm log count")
        if cursor is None:
            new = min(count, log.entries)
        else:
            new = (count - int(cursor)) % 65536
        lost = max(0, new - log.entries)
        out = []
        for k in range(new - min(new, log.entries), new):
            seq = (count - new + k) % 65536
            await self._write(log.table, log.select_address, seq, "alarm log select")
            regs, _s, _e = await self._read(Span(log.table, log.window_address,
                                                 len(log.window_fields)), "alarm log window")
            f = dict(zip(log.window_fields, regs))
            raw = f"entry {seq}: " + " ".join(f"{r:04x}" for r in regs)
            if f["seq"] != seq:
                raise self.error("malformed", f"alarm log window shows entry {f['seq']} after "
                                              f"selecting {seq}")
            if not any(v for k2, v in f.items() if k2 != "seq"):
                continue                                   # no longer held
            try:
                dd, mm = divmod(from_bcd(f["bcd_ddmm"], "dd/mm"), 100)
                mi, ss = divmod(from_bcd(f["bcd_mmss"], "mm:ss"), 100)
                value = self._instant_ns({"year": from_bcd(f["bcd_yyyy"], "yyyy"), "month": mm,
                                          "day": dd, "hour": from_bcd(f["bcd_00hh"], "00:hh"),
                                          "minute": mi, "second": ss}, log.time_base)
            except (ValueError, OverflowError):
                value = None
            out.append(LogEntry(str((seq + 1) % 65536), "rtc", value, self.resolution_ns, s, e,
                                self._message(f.get("code")), raw))
        if lost:
            out.insert(0, LogEntry(str((count - log.entries) % 65536), "rtc", None,
                                   self.resolution_ns, s, e,
                                   f"{lost} alarm log entries overwritten before they were read"))
        return out, str(count)


DRIVER = ModbusCooling
