"""One emulated CDU controller: its registers as its manual (the map file) lays them out, answered
from the clock model at the instant of each request.

pymodbus' simulator datastore (`SimDevice`/`SimData`, 3.13+) holds the registers; its `action`
hook runs before every access and fills the registers a request touches from this model, so the
answer leaves with the values of one sample (no torn second: the hook writes every register of the
request after its last await, and pymodbus slices the answer right after the hook returns).
Writes are interpreted here too (test-alarm control, log select register).

Workaround: pymodbus answers Read Device Identification (43/14) from a process-wide singleton
(`ModbusControlBlock`), so every server of the process would share one identity, and the
decoder swaps any custom 0x2B request for its own class by sub-function code. Each CDU therefore
registers its own request class (`identity_request_class`) that hides its sub-function code from
the decoder and answers from the CDU's own objects.

Sim keys (the device's `[sim]` table, beyond the clock model): `rtc_timezone` (the zone the
controller really shows local time in; default: the inventory's `timezone`), `busy_every` (every
Nth register request is answered "device busy", exception 6), `serial`, `vendor`,
`product_code`, `model` (identity; defaults from the manual), `sensors = {supply_temp = 18.0, ...}`
(mean sensor values), `identification = false` (no 43/14: "illegal function"), `map` (the
controller is really of another family than the inventory's `map` says), and for RTU
`line_delay` (model the line's byte time; a pty has none), `ntp_model` (an NTP client
always on, bench/sim/ntp.py: a written RTC is pulled back at its next poll).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import math
import struct
import zlib
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType, SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

from pymodbus.constants import DeviceInformation, ExcCodes
from pymodbus.pdu import ExceptionResponse
from pymodbus.pdu.device import DeviceInformationFactory, ModbusDeviceIdentification
from pymodbus.pdu.mei_message import ReadDeviceInformationRequest, ReadDeviceInformationResponse
from pymodbus.simulator import DataType, SimData, SimDevice

from bench.config.inventory import DeviceConfig
from bench.sim.clock_model import NS
from bench.sim.modbus_manual import spans
from bench.sim.timing import hold, sample_clock

FC_TABLE = {1: "coil", 5: "coil", 15: "coil", 2: "discrete", 4: "input",
            3: "holding", 6: "holding", 16: "holding", 22: "holding", 23: "holding"}
BIT_TABLES = ("coil", "discrete")
TABLE_ORDER = ("coil", "discrete", "holding", "input")
UTC = dt.UTC

SENSOR_MEAN = {"supply_temp": 18.0, "return_temp": 24.5, "flow": 310.0, "pump_speed": 2400.0}
SENSOR_SWING = {"supply_temp": 0.4, "return_temp": 0.8, "flow": 6.0, "pump_speed": 30.0}


def bcd(n: int) -> int:
    """0..9999 -> packed BCD (1234 -> 0x1234)."""
    out, shift = 0, 0
    while True:
        out |= (n % 10) << shift
        n //= 10
        shift += 4
        if not n:
            return out


def words(value: int, order: str) -> list[int]:
    """A 32-bit unsigned value as two registers in the controller's word order."""
    hi, lo = (value >> 16) & 0xFFFF, value & 0xFFFF
    return [hi, lo] if order == "big" else [lo, hi]


def encode_value(typ: str, value: float, scale: float, order: str) -> list[int]:
    if typ == "float32":
        return words(struct.unpack(">I", struct.pack(">f", value))[0], order)
    raw = round(value / scale)
    if typ in ("int16", "uint16"):
        return [raw & 0xFFFF]
    return words(raw & 0xFFFFFFFF, order)


def offset_s(t: dt.datetime) -> int:
    """Seconds east of UTC of an aware datetime."""
    off = t.utcoffset()
    if off is None:
        raise ValueError(f"{t} has no time zone")
    return int(off.total_seconds())


def identity_request_class(objects: dict[int, str] | None) -> type:
    """A Read Device Identification request class answering from this CDU's own objects
    (None: a controller without 43/14, answering "illegal function")."""
    control = SimpleNamespace(Identity=ModbusDeviceIdentification(info=objects or {}))

    class CduReadDeviceInformation(ReadDeviceInformationRequest):
        def decode(self, data: bytes) -> None:
            super().decode(data)
            self.mei_type = self.sub_function_code
            self.sub_function_code = -1      # else the decoder swaps in pymodbus' own class

        async def datastore_update(self, context, device_id):
            if objects is None or getattr(self, "mei_type", 0x0E) != 0x0E:
                return ExceptionResponse(self.function_code, ExcCodes.ILLEGAL_FUNCTION)
            if not 0x01 <= self.read_code <= 0x04:
                return ExceptionResponse(self.function_code, ExcCodes.ILLEGAL_VALUE)
            info = DeviceInformationFactory.get(control, self.read_code, self.object_id)
            if self.read_code == DeviceInformation.SPECIFIC and not info.get(self.object_id):
                return ExceptionResponse(self.function_code, ExcCodes.ILLEGAL_ADDRESS)
            return ReadDeviceInformationResponse(read_code=self.read_code, information=info,
                                                 dev_id=device_id,
                                                 transaction_id=self.transaction_id)

    return CduReadDeviceInformation


# an alarm-log window's fields from the entry's shown time and the entry (stamp, code)
WINDOW_FIELDS: dict[str, Callable[[Any, tuple[Any, int]], int]] = {
    "code": lambda t, e: e[1],
    "bcd_ddmm": lambda t, e: bcd(t.day) << 8 | bcd(t.month),
    "bcd_yyyy": lambda t, e: bcd(t.year),
    "bcd_00hh": lambda t, e: bcd(t.hour),
    "bcd_mmss": lambda t, e: bcd(t.minute) << 8 | bcd(t.second),
}



def _asked_range(table: str, address: int, count: int) -> tuple[int, int]:
    """The addresses [lo, hi) a read asks for; in a bit table, the bits of whole registers
    (pymodbus passes the bit address and a count of registers)."""
    if table in BIT_TABLES:
        return (address // 16) * 16, (address // 16 + count) * 16
    return address, address + count


def _put_registers(registers: list[int], start: int, a: int, regs: list[int], lo: int,
                   hi: int) -> None:
    """Copy a span's registers (from address `a`) into the answer (from `start`), those in
    [lo, hi) only."""
    for i, r in enumerate(regs):
        if lo <= a + i < hi:
            registers[a + i - start] = r

class Cdu:
    """The controller's state, its clock, and the action hook pymodbus calls on each access."""

    def __init__(self, device: DeviceConfig, manual: dict[str, Any], ctx):
        self.name = device.name
        self.ctx = ctx
        self.manual = manual
        sim = dict(device.sim or {})
        self.sim = sim
        ctl = manual["controller"]
        self.device_id = int(device.options.get("device_id", ctl.get("device_id", 1)))
        self.word_order = str(device.options.get("word_order", ctl.get("word_order", "big")))
        self.declared = ZoneInfo(str(device.options.get("timezone", "UTC")))
        self.shown = ZoneInfo(str(sim.get("rtc_timezone", device.options.get("timezone", "UTC"))))
        self.rtc = manual["rtc"]
        self.log_spec = manual.get("alarm_log")
        self.alarm = manual.get("test_alarm")
        self.spans = spans(manual)
        self.busy_every = int(sim.get("busy_every", 0))
        self.requests = 0
        # The model reads UTC; a controller showing local time in another zone than the inventory
        # declares is, to the bench, off by the zones' difference: put that into the model's
        # truth (as its local-offset error at t0) and take it out again before display.
        t0 = dt.datetime.fromtimestamp(ctx.t0_ns // NS, UTC)
        if self._local_anywhere():
            sim["local_offset_min"] = offset_s(t0.astimezone(self.declared)) // 60
            sim["true_local_offset_min"] = offset_s(t0.astimezone(self.shown)) // 60
        self.model = ctx.models(replace(device, sim=MappingProxyType(sim)), ("rtc",))["rtc"]
        self.tz_error_ns = self.model.p.tz_error_ns
        if sim.get("ntp_model"):        # an NTP client, always on (no map has its switch)
            from bench.sim.ntp import NtpDiscipline, NtpParams
            self.discipline = NtpDiscipline(
                self.model, NtpParams.from_table(sim["ntp_model"]), True,
                list(sim.get("ntp_servers", ["pool.ntp.org"])), ctx.now_ns(),
                record=lambda kind, at, **d: ctx.record_event(self.name, kind, at, **d))
        self.phase = zlib.crc32(self.name.encode()) / 2**32 * 2 * math.pi
        self.sensor_mean = {**SENSOR_MEAN, **dict(sim.get("sensors", {}))}
        # alarm log and control state
        self.entries: list[tuple[int, int, int]] = []        # (seq, stamp_ns, code)
        self.logged = 0
        self.select = 0
        self.alarm_pending = 0
        self.pending: set[asyncio.TimerHandle] = set()
        self.waiting: set[asyncio.Task] = set()

    def _local_anywhere(self) -> bool:
        return self.rtc.get("time_base") == "local" or (
            self.log_spec is not None and self.log_spec.get("time_base") == "local")

    # -- what pymodbus serves ----------------------------------------------------------------
    def identity_objects(self) -> dict[int, str] | None:
        if self.sim.get("identification", True) is False:
            return None
        ctl = self.manual["controller"]
        objects = {0x00: str(self.sim.get("vendor", ctl.get("vendor", ""))),
                   0x01: str(self.sim.get("product_code", ctl.get("product_code", ""))),
                   0x02: str(self.model.p.firmware),
                   0x05: str(self.sim.get("model", ctl.get("model", "")))}
        if "mei_object" in self.manual.get("identity", {}).get("serial", {}):
            objects[int(self.manual["identity"]["serial"]["mei_object"])] = self.serial()
        return objects

    def serial(self) -> str:
        return str(self.sim.get("serial", f"SN{zlib.crc32(self.name.encode()) % 10**8:08d}"))

    def simdevice(self) -> SimDevice:
        blocks: dict[str, list[SimData]] = {t: [] for t in TABLE_ORDER}
        for _what, table, address, count, writable in self.spans:
            if table in BIT_TABLES:
                blocks[table].append(SimData(address, values=[False] * count,
                                             datatype=DataType.BITS))
            else:
                blocks[table].append(SimData(address, count=count, values=0,
                                             datatype=DataType.REGISTERS,
                                             readonly=not (writable or _what == "rtc")))
        for table in BIT_TABLES:          # pymodbus needs every table; the hook refuses these
            if not blocks[table]:
                blocks[table].append(SimData(65000, values=[False], datatype=DataType.BITS))
        for table in ("holding", "input"):
            if not blocks[table]:
                blocks[table].append(SimData(65000, datatype=DataType.INVALID))
        coil, discrete, holding, inputs = (blocks[t] for t in TABLE_ORDER)
        return SimDevice(id=self.device_id, simdata=(coil, discrete, holding, inputs),
                         action=self.action)

    # -- the hook ------------------------------------------------------------------------------
    async def action(self, fc: int, start: int, address: int, count: int,
                     registers: list[int], values: list | None) -> ExcCodes | None:
        table = FC_TABLE.get(fc, "holding")
        if values is not None or fc in (1, 2, 3, 4):             # the first call of a request
            if table in BIT_TABLES and not self._mapped_bit(table, address):
                return ExcCodes.ILLEGAL_ADDRESS
            self.requests += 1
            if self.busy_every and self.requests % self.busy_every == 0:
                return ExcCodes.DEVICE_BUSY
        if values is not None:
            return self._write(table, address, values)
        await self._refresh(table, address, count, start, registers)
        return None

    def _mapped_bit(self, table: str, address: int) -> bool:
        return any(t == table and a <= address < a + n for _w, t, a, n, _ in self.spans)

    def _write(self, table: str, address: int, values: list) -> ExcCodes | None:
        a = self.alarm
        if a and a["table"] == table and a["address"] == address:
            return self._write_alarm(a, int(values[0]))
        if self._is_rtc(table, address, len(values)):
            return self._set_rtc([int(v) for v in values])
        if self._is_log_select(table, address):
            self.select = int(values[0]) & 0xFFFF
            return None
        return ExcCodes.ILLEGAL_ADDRESS

    def _write_alarm(self, a: dict, v: int) -> ExcCodes | None:
        """A write to the test-alarm register: 0 does nothing, the manual's value raises the
        alarm, any other value is refused."""
        if v == 0:
            return None
        if v != int(a.get("value", 1)):
            return ExcCodes.ILLEGAL_VALUE
        self._raise_test_alarm(int(a.get("code", 0)))
        return None

    def _is_rtc(self, table: str, address: int, count: int) -> bool:
        """Whether a write of `count` registers at `address` sets the whole RTC."""
        return table == self.rtc.get("table", "holding") and address == self.rtc["address"] \
            and count == self.rtc_span_count()

    def _is_log_select(self, table: str, address: int) -> bool:
        """Whether `address` is the row select register of a windowed event log."""
        log = self.log_spec
        if not log:
            return False
        return log["layout"] == "window" and table == log["table"] \
            and address == log["select_address"]

    async def _refresh(self, table: str, address: int, count: int, start: int,
                       registers: list[int]) -> None:
        """Fill the registers of [address, address+count) from the model, sampled now."""
        lo, hi = _asked_range(table, address, count)
        touched = self._spans_within(table, lo, hi)
        if not touched:
            return
        rtc_regs: list[int] = []
        if any(s[0] == "rtc" for s in touched):
            rtc_regs = await self._sample_rtc()
        t_now = self.ctx.now_ns()
        # no await below: every register of this answer is written from the same state
        for what, tbl, a, n, _ in touched:
            if tbl in BIT_TABLES and what != "rtc":
                self._put_bit(registers, start, a, bool(self.alarm_pending))
                continue
            regs = rtc_regs if what == "rtc" else self._registers_of(what, n, t_now)
            _put_registers(registers, start, a, regs, lo, hi)

    def _spans_within(self, table: str, lo: int, hi: int) -> list[tuple]:
        """The mapped spans of `table` that overlap [lo, hi)."""
        return [s for s in self.spans if s[1] == table and s[2] < hi and lo < s[2] + s[3]]

    async def _sample_rtc(self) -> list[int]:
        """The RTC's registers, sampled now, after the model's reply delay (the request's task
        cancelled at close if still sleeping)."""
        task = asyncio.current_task()
        assert task is not None             # pymodbus runs each request in a task
        self.waiting.add(task)                # cancelled at close if still sleeping
        try:
            _, v = await sample_clock(self.ctx, self.name, "rtc", self.model)
            rtc_regs = self.encode_rtc(v)
            await hold(self.model.p.reply_delay_s)
        finally:
            self.waiting.discard(task)
        return rtc_regs

    @staticmethod
    def _put_bit(registers: list[int], start: int, address: int, on: bool) -> None:
        i, bit = address // 16 - start, address % 16
        registers[i] = (registers[i] | (1 << bit)) if on else (registers[i] & ~(1 << bit))

    def _registers_of(self, what: str, n: int, t_ns: int) -> list[int]:
        if what == "serial":
            raw = self.serial().encode("ascii")[: 2 * n].ljust(2 * n, b"\0")
            return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, 2 * n, 2)]
        if what.startswith("sensor:"):
            name = what.split(":", 1)[1]
            s = self.manual["sensors"][name]
            return encode_value(s["type"], self.sensor(name, t_ns), float(s.get("scale", 1.0)),
                                self.word_order)
        if what == "test_alarm":
            return [int(self.manual["test_alarm"].get("value", 1)) if self.alarm_pending else 0]
        if what.startswith("log_"):
            return self._log_registers(what, n)
        return [0] * n

    def _log_registers(self, what: str, n: int) -> list[int]:
        """The alarm log's registers: index and ring, or count, select and window."""
        if what == "log_index":
            return [self.logged % int(self.manual["alarm_log"]["entries"])]
        if what == "log_ring":
            return self._ring()
        if what == "log_count":
            return [self.logged & 0xFFFF]
        if what == "log_select":
            return [self.select]
        if what == "log_window":
            return self._window()
        return [0] * n

    def rtc_span_count(self) -> int:
        return len(self.rtc["fields"]) if self.rtc["encoding"] == "fields" else 2

    def _set_rtc(self, regs: list[int]) -> ExcCodes | None:
        """A write of the whole RTC span sets the clock (the inverse of encode_rtc): from now on
        it shows the written second, its tick edges restarting at this instant."""
        base = self.rtc.get("time_base", "utc")
        try:
            if self.rtc["encoding"] == "fields":
                f = dict(zip(self.rtc["fields"], regs))
                t = dt.datetime(f["year"], f["month"], f["day"], f["hour"], f["minute"],
                                f["second"], tzinfo=self.shown if base == "local" else UTC)
                utc_s = int(t.timestamp())
            else:
                hi, lo = regs if self.word_order == "big" else regs[::-1]
                secs = (hi << 16) | lo
                utc_s = secs
                if base == "local":
                    wall = dt.datetime.fromtimestamp(secs, UTC).replace(tzinfo=None)
                    utc_s = int(wall.replace(tzinfo=self.shown).timestamp())
        except (ValueError, OverflowError, KeyError):
            return ExcCodes.ILLEGAL_VALUE
        t_ns = self.ctx.now_ns()
        size = utc_s * NS + self.tz_error_ns - self.model.true_ns(t_ns)
        self.model.add_step(t_ns, size)
        self.ctx.record_event(self.name, "step", t_ns, size_ns=size, set_to=utc_s,
                              source="RTC registers written")
        return None

    # -- time as the controller shows it -------------------------------------------------------
    def _shown(self, v_ns: int, time_base: str) -> dt.datetime:
        """The model's reading as the controller shows it (UTC, or local in its true zone)."""
        utc_s = (v_ns - self.tz_error_ns) // NS
        t = dt.datetime.fromtimestamp(utc_s, UTC)
        return t.astimezone(self.shown) if time_base == "local" else t

    def encode_rtc(self, v_ns: int) -> list[int]:
        base = self.rtc.get("time_base", "utc")
        t = self._shown(v_ns, base)
        if self.rtc["encoding"] == "fields":
            return [getattr(t, f) for f in self.rtc["fields"]]
        secs = (v_ns - self.tz_error_ns) // NS
        if base == "local":
            secs += offset_s(t)
        return words(secs & 0xFFFFFFFF, self.word_order)

    def sensor(self, name: str, t_ns: int) -> float:
        mean = float(self.sensor_mean.get(name, 0.0))
        swing = SENSOR_SWING.get(name, 0.0)
        return mean + swing * math.sin(2 * math.pi * (t_ns - self.ctx.t0_ns) / (300 * NS)
                                       + self.phase)

    # -- the alarm log -------------------------------------------------------------------------
    def _raise_test_alarm(self, code: int) -> None:
        t = self.ctx.now_ns()
        self.ctx.record_event(self.name, "test_alarm", t, code=code)
        self.alarm_pending += 1
        t_log = t + self.model.log_latency_ns()
        handle: asyncio.TimerHandle | None = None

        def log_it() -> None:
            self.pending.discard(handle)
            self.append_entry(t_log, code, t)

        handle = asyncio.get_running_loop().call_later(
            max(0.0, (t_log - self.ctx.now_ns()) / NS), log_it)
        self.pending.add(handle)

    def append_entry(self, t_log: int, code: int, t_event: int) -> None:
        stamp = (self.model.read_ns(t_log) // NS) * NS
        seq = self.logged
        self.entries.append((seq, stamp, code))
        del self.entries[:-int(self.log_spec["entries"]) if self.log_spec else None]
        self.logged += 1
        self.alarm_pending = max(0, self.alarm_pending - 1)
        self.ctx.record_event(self.name, "log", t_log, created_ns=stamp, entry_id=str(seq),
                              code=code, latency_ns=t_log - t_event)

    def _ring(self) -> list[int]:
        log = self.manual["alarm_log"]
        fields = log["entry_fields"]
        n = int(log["entries"])
        regs = [0] * (n * len(fields))
        for seq, stamp, code in self.entries:
            t = self._shown(stamp, log.get("time_base", "utc"))
            slot = seq % n
            for i, f in enumerate(fields):
                regs[slot * len(fields) + i] = code if f == "code" else getattr(t, f)
        return regs

    def _window(self) -> list[int]:
        log = self.manual["alarm_log"]
        held = {seq & 0xFFFF: (stamp, code) for seq, stamp, code in self.entries}
        out: list[int] = []
        entry = held.get(self.select)
        t = self._shown(entry[0], log.get("time_base", "utc")) if entry else None
        for f in log["window_fields"]:
            if f == "seq":
                out.append(self.select)
            elif t is None or entry is None:      # both None, or neither
                out.append(0)
            elif f in WINDOW_FIELDS:
                out.append(WINDOW_FIELDS[f](t, entry))
        return out

    async def close(self) -> None:
        for h in list(self.pending):
            h.cancel()
        self.pending.clear()
        tasks = [t for t in self.waiting if not t.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
