"""Register maps of Modbus cooling controllers, as data: one TOML file per controller family.

A map says where a controller keeps its RTC, identity, sensors, test-alarm control and alarm log,
and how each is encoded. A new controller is a new file in `drivers/maps/cooling/`, named by the
inventory's `map` key (`map = "family_a"`, or a path to a `.toml` file). The records here are plain
frozen dataclasses; `load_map` is the only function that reads a file.

Field vocabulary (the code that decodes them lives in the driver):
  RTC `encoding = "fields"`: `fields` names one register each: year month day hour minute second.
  RTC `encoding = "epoch32"`: two registers, unsigned Unix seconds, in the map's word order.
  Alarm log `layout = "ring"`: `index_address` holds the slot written next; slots of
      `entry_fields` (the RTC's field names and `code`) follow from `base_address`.
  Alarm log `layout = "window"`: `count_address` counts entries logged (mod 65536); writing an
      entry number to `select_address` shows it in the window at `window_address`, whose
      `window_fields` are `seq` (echo of the selection), `code`, and BCD `bcd_ddmm`, `bcd_yyyy`,
      `bcd_00hh`, `bcd_mmss`.
  `time_base` is "local" (the inventory declares the zone) or "utc".
"""
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import RackclockError

MAP_DIR = Path(__file__).with_name("maps") / "cooling"

TABLES = ("coil", "discrete", "holding", "input")
TIME_FIELDS = ("year", "month", "day", "hour", "minute", "second")
RING_FIELDS = TIME_FIELDS + ("code",)
WINDOW_FIELDS = ("seq", "code", "bcd_ddmm", "bcd_yyyy", "bcd_00hh", "bcd_mmss")
VALUE_TYPES = {"int16": 1, "uint16": 1, "int32": 2, "uint32": 2, "float32": 2}


class MapError(RackclockError, ValueError):
    """A map file is missing, malformed, or names something this code does not know."""


@dataclass(frozen=True)
class Span:
    """`count` consecutive registers (or coils) of one table from `address`."""

    table: str
    address: int
    count: int = 1


@dataclass(frozen=True)
class SerialSpec:
    """Where the serial number is: registers holding ASCII, or a private MEI object."""

    span: Span | None = None
    mei_object: int | None = None


@dataclass(frozen=True)
class RtcSpec:
    span: Span
    encoding: str                        # fields | epoch32
    fields: tuple[str, ...] = ()
    time_base: str = "utc"
    resolution_s: float = 1.0


@dataclass(frozen=True)
class SensorSpec:
    name: str
    span: Span
    type: str
    scale: float = 1.0
    unit: str = ""


@dataclass(frozen=True)
class TestAlarmSpec:
    table: str
    address: int
    value: int
    code: int


@dataclass(frozen=True)
class RingLogSpec:
    table: str
    index_address: int
    base_address: int
    entries: int
    entry_fields: tuple[str, ...]
    time_base: str

    @property
    def entry_size(self) -> int:
        return len(self.entry_fields)


@dataclass(frozen=True)
class WindowLogSpec:
    table: str
    count_address: int
    select_address: int
    window_address: int
    entries: int
    window_fields: tuple[str, ...]
    time_base: str


@dataclass(frozen=True)
class CoolingMap:
    name: str
    vendor: str
    product_code: str
    model: str
    device_id: int
    word_order: str
    serial: SerialSpec
    rtc: RtcSpec
    sensors: tuple[SensorSpec, ...]
    test_alarm: TestAlarmSpec | None
    alarm_log: RingLogSpec | WindowLogSpec | None
    source: str = ""

    @property
    def local_time(self) -> bool:
        """True if any timestamp of this controller is in local time (the inventory's zone)."""
        return self.rtc.time_base == "local" or (
            self.alarm_log is not None and self.alarm_log.time_base == "local")


# -- loading ---------------------------------------------------------------------------------------
def map_path(name: str) -> Path:
    """`family_a` -> drivers/maps/cooling/family_a.toml; a name ending `.toml` is a path."""
    return Path(name) if name.endswith(".toml") else MAP_DIR / f"{name}.toml"


def load_map(name: str) -> CoolingMap:
    path = map_path(name)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        known = sorted(p.stem for p in MAP_DIR.glob("*.toml"))
        raise MapError(f"no register map {name!r} ({path}); known maps: {known}") from None
    except tomllib.TOMLDecodeError as exc:
        raise MapError(f"{path}: {exc}") from exc
    try:
        return map_from_dict(data, name=path.stem, source=str(path))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, MapError):
            raise
        raise MapError(f"{path}: {type(exc).__name__}: {exc}") from exc


def map_from_dict(d: Mapping[str, Any], name: str, source: str = "") -> CoolingMap:
    c = d["controller"]
    word_order = str(c.get("word_order", "big"))
    _one_of("controller.word_order", word_order, ("big", "little"))
    return CoolingMap(
        name=str(c.get("family", name)), vendor=str(c.get("vendor", "")),
        product_code=str(c.get("product_code", "")), model=str(c.get("model", "")),
        device_id=int(c.get("device_id", 1)), word_order=word_order,
        serial=_serial(d.get("identity", {}).get("serial")), rtc=_rtc(d["rtc"]),
        sensors=tuple(_sensor(n, t) for n, t in d.get("sensors", {}).items()),
        test_alarm=_test_alarm(d["test_alarm"]) if "test_alarm" in d else None,
        alarm_log=_alarm_log(d["alarm_log"]) if "alarm_log" in d else None,
        source=source,
    )


def _one_of(what: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise MapError(f"{what} = {value!r}; expected one of {list(allowed)}")


def _table(t: Mapping[str, Any], what: str) -> str:
    table = str(t["table"])
    _one_of(f"{what}.table", table, TABLES)
    return table


def _serial(t: Mapping[str, Any] | None) -> SerialSpec:
    if not t:
        return SerialSpec()
    if "mei_object" in t:
        return SerialSpec(mei_object=int(t["mei_object"]))
    if t.get("type", "string") != "string":
        raise MapError(f"identity.serial.type = {t.get('type')!r}; expected 'string'")
    return SerialSpec(span=Span(_table(t, "identity.serial"), int(t["address"]), int(t["count"])))


def _rtc(t: Mapping[str, Any]) -> RtcSpec:
    enc = str(t["encoding"])
    _one_of("rtc.encoding", enc, ("fields", "epoch32"))
    _one_of("rtc.time_base", t.get("time_base", "utc"), ("utc", "local"))
    fields = tuple(t.get("fields", ()))
    if enc == "fields":
        if sorted(fields) != sorted(TIME_FIELDS):
            raise MapError(f"rtc.fields must name each of {list(TIME_FIELDS)} once, got {fields}")
        count = len(fields)
    else:
        count = 2
    return RtcSpec(span=Span(_table(t, "rtc"), int(t["address"]), count), encoding=enc,
                   fields=fields, time_base=str(t.get("time_base", "utc")),
                   resolution_s=float(t.get("resolution_s", 1.0)))


def _sensor(name: str, t: Mapping[str, Any]) -> SensorSpec:
    typ = str(t["type"])
    _one_of(f"sensors.{name}.type", typ, tuple(VALUE_TYPES))
    return SensorSpec(name=name, span=Span(_table(t, f"sensors.{name}"), int(t["address"]),
                                           VALUE_TYPES[typ]),
                      type=typ, scale=float(t.get("scale", 1.0)), unit=str(t.get("unit", "")))


def _test_alarm(t: Mapping[str, Any]) -> TestAlarmSpec:
    return TestAlarmSpec(table=_table(t, "test_alarm"), address=int(t["address"]),
                         value=int(t.get("value", 1)), code=int(t.get("code", 0)))


def _alarm_log(t: Mapping[str, Any]) -> RingLogSpec | WindowLogSpec:
    layout = str(t["layout"])
    _one_of("alarm_log.layout", layout, ("ring", "window"))
    base = str(t.get("time_base", "utc"))
    _one_of("alarm_log.time_base", base, ("utc", "local"))
    if layout == "ring":
        fields = tuple(t["entry_fields"])
        if not set(TIME_FIELDS) <= set(fields) or not set(fields) <= set(RING_FIELDS):
            raise MapError(f"alarm_log.entry_fields must hold {list(TIME_FIELDS)} (and may hold "
                           f"'code'), got {fields}")
        return RingLogSpec(table=_table(t, "alarm_log"), index_address=int(t["index_address"]),
                           base_address=int(t["base_address"]), entries=int(t["entries"]),
                           entry_fields=fields, time_base=base)
    fields = tuple(t["window_fields"])
    need = {"seq", "bcd_ddmm", "bcd_yyyy", "bcd_00hh", "bcd_mmss"}
    if not need <= set(fields) or not set(fields) <= set(WINDOW_FIELDS):
        raise MapError(f"alarm_log.window_fields must hold {sorted(need)} (and may hold 'code'), "
                       f"got {fields}")
    return WindowLogSpec(table=_table(t, "alarm_log"), count_address=int(t["count_address"]),
                         select_address=int(t["select_address"]),
                         window_address=int(t["window_address"]), entries=int(t["entries"]),
                         window_fields=fields, time_base=base)
