"""The managed objects of an emulated switched PDU: its identity, clocks, outlets and event log.

`PduObjects` is the agent's whole MIB as one small ordered table answering GET, GETNEXT and SET
with values computed at the instant of the request from the device's clock models. It plugs into
pysnmp's command responders as a MIB instrumentation controller (the protocol, communities, USM
and VACM stay pysnmp's); writing the table by hand is simpler than pysnmp's SMI object classes
for values that must be sampled, and recorded, at the instant of each request.

Vendor layouts are in bench/sim/snmp_pdu_vendors.
"""
from __future__ import annotations

import bisect
import datetime as dt
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pysnmp.proto import rfc1902
from pysnmp.proto.api import v2c
from pysnmp.smi import error as smi_error

from bench.sim.clock_model import NS, ClockModel
from bench.sim.snmp_pdu_vendors import Oid, VendorLayout, oid

TICK_NS = 10_000_000                 # TimeTicks: hundredths of a second
TICKS_MOD = 2 ** 32


SYS_DESCR = oid("1.3.6.1.2.1.1.1.0")
SYS_OBJECT_ID = oid("1.3.6.1.2.1.1.2.0")
SYS_UPTIME = oid("1.3.6.1.2.1.1.3.0")
SYS_NAME = oid("1.3.6.1.2.1.1.5.0")
HR_SYSTEM_DATE = oid("1.3.6.1.2.1.25.1.2.0")
SNMP_ENGINE_TIME = oid("1.3.6.1.6.3.10.2.1.3.0")
SNMP_TRAP_OID = oid("1.3.6.1.6.3.1.1.4.1.0")
# The outlet event log: not a vendor MIB (real firmware keeps it behind its web UI or syslog);
# rows are (index, sysUpTime stamp, outlet, new state 1 on / 2 off) under the experimental arc,
# served by the simulated "rackclock" vendor only.
OUTLET_LOG = oid("1.3.6.1.3.7070.1.1")


def made(make: Callable[[Any], object], value: object) -> Callable[[int], object]:
    """An object of fixed value, made anew at each read."""
    return lambda t: make(value)


def date_and_time(utc_ns: int, offset_min: int) -> bytes:
    """SNMPv2-TC DateAndTime, 11 bytes: local time with deciseconds and its stated UTC offset."""
    local_ns = utc_ns + offset_min * 60 * NS
    secs, rem = divmod(local_ns, NS)
    t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
    h, m = divmod(abs(offset_min), 60)
    return struct.pack(">HBBBBBBcBB", t.year, t.month, t.day, t.hour, t.minute, t.second,
                       rem // 100_000_000, b"+" if offset_min >= 0 else b"-", h, m)


def parse_date_and_time(b: bytes, default_offset_min: int) -> int:
    """SNMPv2-TC DateAndTime (8 or 11 bytes) -> UTC ns; the 8-byte form is local time at the
    agent's own offset."""
    if len(b) not in (8, 11):
        raise ValueError(f"DateAndTime of {len(b)} bytes")
    y, mo, d, h, mi, sec, ds = struct.unpack(">HBBBBBB", b[:8])
    off = default_offset_min
    if len(b) == 11:
        off = (b[9] * 60 + b[10]) * (-1 if b[8:9] == b"-" else 1)
    t = dt.datetime(y, mo, d, h, mi, sec, tzinfo=dt.UTC)
    return int(t.timestamp()) * NS + ds * 100_000_000 - off * 60 * NS


@dataclass
class LogRow:
    index: int
    ticks: int
    outlet: int
    state: int                       # 1 on, 2 off (the log's own coding, vendor-neutral)


def _security_name(engine) -> str:
    """The SNMPv3 user (or v2c community name) of the request being served, or ""."""
    if engine is None:
        return ""
    ectx = engine.observer.get_execution_context("rfc3412.receiveMessage:request")
    return str(ectx.get("securityName", "")) if ectx else ""


class PduObjects:
    """The agent's MIB. `command` is called for an accepted outlet command (outlet, "on" | "off"
    | "reboot"); `sample` records a clock sample (clock, t_ns, value_ns)."""

    def __init__(self, layout: VendorLayout, models: dict[str, ClockModel], now_ns: Callable[[], int],
                 identity: dict, outlets: list[str], local_offset_min: int,
                 sample: Callable[[str, int, int], None], command: Callable[[int, str], None],
                 engine_time: Callable[[], int], writers: Callable[[str], bool]):
        self.layout = layout
        self.models = models
        self.now_ns = now_ns
        self.identity = identity
        self.names = outlets
        self.state = {i + 1: layout.state_on for i in range(len(outlets))}
        self.local_offset_min = local_offset_min
        self.sample = sample
        self.command = command
        self.engine_time = engine_time
        self.writers = writers
        self.log: list[LogRow] = []
        self.set_date: Callable[[int], None] | None = None   # hrSystemDate SET: UTC ns (the agent's)
        self._static: dict[Oid, Callable[[int], object]] = self._build()
        self._keys: list[Oid] = []
        self._keys_at = -1

    # -- values ------------------------------------------------------------------------------
    def uptime_ticks(self, t_ns: int) -> int:
        return (self.models["sysuptime"].read_ns(t_ns) // TICK_NS) % TICKS_MOD

    def _uptime(self, t_ns: int):
        ticks = self.uptime_ticks(t_ns)
        self.sample("sysuptime", t_ns, ticks * TICK_NS)
        return rfc1902.TimeTicks(ticks)

    def _date(self, t_ns: int):
        v = self.models["hrsystemdate"].read_ns(t_ns)
        self.sample("hrsystemdate", t_ns, v // 100_000_000 * 100_000_000)
        return rfc1902.OctetString(date_and_time(v, self.local_offset_min))

    def _build(self) -> dict[Oid, Callable[[int], object]]:
        L, idn = self.layout, self.identity
        s = lambda text: (lambda t: rfc1902.OctetString(str(text)))  # noqa: E731
        objs: dict[Oid, Callable[[int], object]] = {
            SYS_DESCR: s(idn["descr"]),
            SYS_OBJECT_ID: lambda t: rfc1902.ObjectName(L.sys_object_id),
            SYS_UPTIME: self._uptime,
            SYS_NAME: s(idn["name"]),
            SNMP_ENGINE_TIME: lambda t: rfc1902.Integer32(self.engine_time()),
            L.model: s(idn["model"]),
            L.serial: s(idn["serial"]),
            L.firmware: s(idn["firmware"]),
        }
        if "hrsystemdate" in self.models:
            objs[HR_SYSTEM_DATE] = self._date
        for n, name in enumerate(self.names, 1):
            objs[L.outlet_name + L.index + (n,)] = s(name)
            objs[L.outlet_state + L.index + (n,)] = self._state_of(n)
            for col, (on, off) in L.reads.items():
                objs[col + L.index + (n,)] = self._read_of(n, on, off)
        return objs

    def _state_of(self, n: int) -> Callable[[int], object]:
        return lambda t: rfc1902.Integer32(self.state[n])

    def _read_of(self, n: int, on: int, off: int) -> Callable[[int], object]:
        """A command column read: its `on` value while outlet n is on, else `off`."""
        return lambda t: rfc1902.Integer32(on if self.state[n] == self.layout.state_on else off)

    def _log_objects(self) -> dict[Oid, Callable[[int], object]]:
        out: dict[Oid, Callable[[int], object]] = {}
        for r in self.log if self.layout.has_log else ():
            out[OUTLET_LOG + (1, r.index)] = made(rfc1902.Integer32, r.index)
            out[OUTLET_LOG + (2, r.index)] = made(rfc1902.TimeTicks, r.ticks)
            out[OUTLET_LOG + (3, r.index)] = made(rfc1902.Integer32, r.outlet)
            out[OUTLET_LOG + (4, r.index)] = made(rfc1902.Integer32, r.state)
        return out

    def _objects(self) -> tuple[dict[Oid, Callable[[int], object]], list[Oid]]:
        objs = {**self._static, **self._log_objects()}
        if self._keys_at != len(self.log):
            self._keys = sorted(objs)
            self._keys_at = len(self.log)
        return objs, self._keys

    def add_log(self, ticks: int, outlet: int, on: bool) -> LogRow:
        row = LogRow(len(self.log) + 1, ticks, outlet, 1 if on else 2)
        self.log.append(row)
        return row

    # -- pysnmp MIB instrumentation controller interface --------------------------------------
    def read_variables(self, *varBinds, **context):
        objs, _ = self._objects()
        t = self.now_ns()
        out = []
        for name, _val in varBinds:
            key = tuple(name)
            get = objs.get(key)
            out.append((name, get(t) if get else v2c.NoSuchObject()))
        return out

    def read_next_variables(self, *varBinds, **context):
        objs, keys = self._objects()
        t = self.now_ns()
        out = []
        for name, _val in varBinds:
            i = bisect.bisect_right(keys, tuple(name))
            if i < len(keys):
                out.append((v2c.ObjectIdentifier(keys[i]), objs[keys[i]](t)))
            else:
                out.append((name, v2c.EndOfMibView()))
        return out

    def write_variables(self, *varBinds, **context):
        security_name = _security_name(context.get("snmpEngine"))
        accepted = []
        dates = []
        for idx, (name, val) in enumerate(varBinds):
            key = tuple(name)
            if not self.writers(security_name):
                raise smi_error.NoAccessError(name=name, idx=idx)
            if key == HR_SYSTEM_DATE and self.set_date is not None and key in self._static:
                try:
                    dates.append(parse_date_and_time(bytes(val), self.local_offset_min))
                except (TypeError, ValueError, struct.error):
                    raise smi_error.WrongValueError(name=name, idx=idx) from None
                continue
            accepted.append(self._outlet_command(key, name, val, idx))
        for outlet, what in accepted:
            self.command(outlet, what)
        for utc_ns in dates:
            self.set_date(utc_ns)
        return [(name, val) for name, val in varBinds]

    def _outlet_command(self, key: Oid, name, val, idx: int) -> tuple[int, str]:
        """(outlet, "on" | "off" | "reboot") of one SET of a command column, or the SNMP error
        the agent answers."""
        column, outlet = self._command_column(key)
        if column is None or outlet not in self.state:
            if key in self._static or column is not None:
                raise smi_error.NotWritableError(name=name, idx=idx)
            raise smi_error.NoCreationError(name=name, idx=idx)
        if not isinstance(val, (rfc1902.Integer, rfc1902.Integer32)):
            raise smi_error.WrongTypeError(name=name, idx=idx)
        what = self.layout.commands[column].get(int(val))
        if what is None:
            raise smi_error.WrongValueError(name=name, idx=idx)
        return outlet, what

    def _command_column(self, key: Oid) -> tuple[Oid | None, int | None]:
        """(the command column, the outlet) that `key` is an instance of, or (None, None)."""
        L = self.layout
        head, outlet = key[:-1], key[-1]
        for col in L.commands:
            if head == col + L.index:
                return col, outlet
        return None, None
