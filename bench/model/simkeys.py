"""The keys of a simulated device's `[devices.NAME.sim]` table, checked when the rack file is read.

Every key the clock model (bench/sim/clock.py `ClockParams`), the fault board (bench/sim/faults.py)
and the device's emulator (bench/sim/<emulator>.py) read is declared here with its type and a
range that keeps the simulator's memory and time bounded (outlets, log capacity, list lengths,
wrap periods); a key no one reads is refused. Each problem is one InventoryError naming the
device and the key's path (`sim.clocks.sysuptime.uptime_s`, `sim.faults[2].kind`).
The model layer cannot import bench/sim; tests/test_simkeys.py checks that these declarations
cover the dataclasses there field for field.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.model.keys import SAFE_NAME, InventoryError, Key, did_you_mean, short

MAX_LIST = 1000              # steps, reboots, slews, faults, ...: entries in one list
MAX_STR = 1024               # characters in one string
YEARS_100_S = 3.2e9          # offsets and step sizes: a clock set to 1970 is -1.8e9 s off
Check = Callable[[Any, str], None]      # (value, key path) -> None, or InventoryError


def _bad(path: str, value: Any, accepted: str) -> InventoryError:
    return InventoryError(f"{short(value)} is not accepted ({accepted})", key=path)


def key(spec: Key) -> Check:
    def check(value: Any, path: str) -> None:
        try:
            spec.check(value)
        except InventoryError as exc:
            raise InventoryError(exc.problem, key=path) from None
        if isinstance(value, str) and len(value) > MAX_STR:
            raise _bad(path, value, f"at most {MAX_STR} characters")
    return check


def num(lo: float, hi: float, unit: str = "", kind: str = "float") -> Check:
    return key(Key(kind, lo, hi, unit=unit))


TEXT = key(Key("str"))
FLAG = key(Key("bool"))


def choice(*options: str) -> Check:
    return key(Key("str", choices=options))


def list_of(item: Check, most: int = MAX_LIST) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) > most:
            raise _bad(path, value, f"a list of at most {most} entries")
        for i, x in enumerate(value):
            item(x, f"{path}[{i}]")
    return check


def table(keys: Mapping[str, Check], required: tuple[str, ...] = ()) -> Check:
    """A table of these keys (unknown ones refused, `required` ones present)."""
    def check(value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise _bad(path, value, "a table")
        for k in required:
            if k not in value:
                raise InventoryError(f"missing (a table here has {', '.join(required)})",
                                     key=f"{path}.{k}")
        for k, v in value.items():
            if k not in keys:
                raise InventoryError(f"unknown key{did_you_mean(str(k), keys)}", key=f"{path}.{k}")
            keys[k](v, f"{path}.{k}")
    return check


def record(names: tuple[str, ...], checks: tuple[Check, ...]) -> Check:
    """A table of exactly these keys, or a list of their values in this order."""
    as_table = table(dict(zip(names, checks)), required=names)

    def check(value: Any, path: str) -> None:
        if isinstance(value, list) and len(value) == len(names):
            for i, (c, x) in enumerate(zip(checks, value)):
                c(x, f"{path}[{i}]")
        elif isinstance(value, Mapping):
            as_table(value, path)
        else:
            raise _bad(path, value, f"{{{', '.join(names)}}} or [{', '.join(names)}]")
    return check


def named(item: Check, most: int, name: Callable[[Any], Any] | None = None,
          what: str = "names of letters, digits, '.', '_', '-'") -> Check:
    """A table of at most `most` entries, each under a name `name` accepts."""
    name = name or (lambda k: isinstance(k, str) and SAFE_NAME.fullmatch(k))

    def check(value: Any, path: str) -> None:
        if not isinstance(value, Mapping) or len(value) > most:
            raise _bad(path, value, f"a table of at most {most} entries")
        for k, v in value.items():
            if not name(k):
                raise InventoryError(f"{short(k)} is not accepted ({what})", key=path)
            item(v, f"{path}.{k}")
    return check


def span(lo: float, hi: float, unit: str = "s") -> Check:
    """A number, or [lo, hi] with lo <= hi, each within [lo, hi]."""
    one = num(lo, hi, unit)

    def check(value: Any, path: str) -> None:
        if isinstance(value, list):
            if len(value) != 2:
                raise _bad(path, value, f"a number or [lo, hi] from {lo:g} to {hi:g} {unit}")
            one(value[0], f"{path}[0]")
            one(value[1], f"{path}[1]")
            if value[0] > value[1]:
                raise _bad(path, value, "[lo, hi] with lo <= hi")
        else:
            one(value, path)
    return check


def iso_instant(value: Any, path: str) -> None:
    TEXT(value, path)
    try:
        if datetime.fromisoformat(value).tzinfo is None:
            raise ValueError("no UTC offset")
    except ValueError:
        raise _bad(path, value, "an ISO 8601 date and time with its UTC offset") from None


def zone(value: Any, path: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    TEXT(value, path)
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise _bad(path, value, "an IANA time zone such as 'Europe/Berlin'") from None


def port_name(k: str | int) -> bool:
    return str(k).isdigit() and 1 <= int(k) <= 255


def label(k: str) -> bool:
    return isinstance(k, str) and 0 < len(k) <= 64


MAP_DIR = Path(__file__).resolve().parents[2] / "drivers" / "maps" / "cooling"


def cooling_map(value: Any, path: str) -> None:
    """A register map the emulator serves: a family's name or a .toml file."""
    TEXT(value, path)
    file = Path(value) if value.endswith(".toml") else MAP_DIR / f"{value}.toml"
    if "/" in value and not value.endswith(".toml") or not os.path.isfile(file):
        known = ", ".join(sorted(p.stem for p in MAP_DIR.glob("*.toml")))
        raise _bad(path, value, f"a map of drivers/maps/cooling ({known}) or a .toml file")


# -- the clock model (bench/sim/clock.py ClockParams) -------------------------------------------
AT_S = num(0.0, 1e8, "s")                # an instant after the run's start (3 years)
PPM = num(-10_000.0, 10_000.0, "ppm")
CLOCK: dict[str, Check] = {
    "offset_s": num(-YEARS_100_S, YEARS_100_S, "s"), "drift_ppm": PPM,
    "wander_ppm": num(0.0, 1000.0, "ppm per sqrt(hour)"),
    "resolution_s": num(1e-9, 86400.0, "s"), "counter": FLAG,
    "uptime_s": num(0.0, YEARS_100_S, "s"), "wrap_ticks": num(0, 2**64, kind="int"),
    "steps": list_of(record(("at_s", "size_s"), (AT_S, num(-YEARS_100_S, YEARS_100_S, "s")))),
    "reboots": list_of(AT_S),
    "slews": list_of(record(("at_s", "duration_s", "rate_ppm"), (AT_S, AT_S, PPM))),
    "freq_steps": list_of(record(("at_s", "delta_ppm"), (AT_S, PPM))),
    "reboot_down_s": num(0.0, 3600.0, "s"), "sample_delay_s": num(0.0, 10.0, "s"),
    "reply_delay_s": num(0.0, 10.0, "s"), "jitter_s": num(0.0, 10.0, "s"),
    "log_latency_s": span(0.0, 3600.0), "local_offset_min": num(-1440, 1440, "min", "int"),
    "true_local_offset_min": num(-1440, 1440, "min", "int"), "firmware": TEXT,
    "seed": num(0, 2**63 - 1, kind="int"),
    # the clocks racks really have (issue 28): each generated up to horizon_s, so the periods
    # have floors that keep the generated slews few
    "blips": list_of(record(("at_s", "size_s", "back_after_s"),
                            (AT_S, num(-YEARS_100_S, YEARS_100_S, "s"), num(0.0, 1e8, "s")))),
    "discipline": record(("every_lo_s", "every_hi_s", "corr_lo_ms", "corr_hi_ms", "slew_ppm"),
                         (num(1.0, 86400.0, "s"), num(1.0, 86400.0, "s"), num(0.0, 1e6, "ms"),
                          num(0.0, 1e6, "ms"), num(1.0, 10_000.0, "ppm"))),
    "hunting": record(("ppm", "period_s"), (PPM, num(1.0, 86400.0, "s"))),
    "tick_lag_ms": record(("lo", "hi"), (num(0.0, 10_000.0, "ms"), num(0.0, 10_000.0, "ms"))),
    "update_s": num(0.0, 86400.0, "s"), "frozen_at_s": AT_S,
    "horizon_s": num(0.0, 2 * 86400.0, "s"),
}
MIN_WRAP_S = 1.0             # a shorter wrap period makes the truth's list of wraps unbounded
FINEST_DEFAULT_S = 0.001     # the finest resolution an emulator gives a counter by default


def _sizes(steps: list[Any]) -> float:
    total: float = sum(abs(x["size_s"] if isinstance(x, Mapping) else x[1]) for x in steps)
    return total


def _clock_limits(sim: Mapping[str, Any]) -> None:
    """Each clock as the models see it (the sim table's keys, its own table's, its firmware's)
    wraps no faster than once a second, and its offset and steps together stay within a
    century of the reference (a date every emulator can still write)."""
    top = {k: v for k, v in sim.items() if k in CLOCK}
    own = [(f"sim.clocks.{n}", t) for n, t in (sim.get("clocks") or {}).items()]
    own += [(f"sim.modules.{p}.clock", m["clock"]) for p, m in (sim.get("modules") or {}).items()
            if "clock" in m]
    faults = _sizes([(0, f.get("size_s", 0)) for f in sim.get("faults", [])])
    for path, table in own or [("sim", {})]:
        t = {**top, **table}
        t.update((sim.get("by_firmware") or {}).get(t.get("firmware"), {}))
        _one_clock_limits(t, path if table else "sim", faults)


def _one_clock_limits(t: Mapping[str, Any], where: str, faults: float) -> None:
    """One clock's wrap period and its offset plus steps plus the faults' sizes (`faults`, s)."""
    ticks = t.get("wrap_ticks", 0)
    res = t.get("resolution_s", FINEST_DEFAULT_S)
    if ticks and ticks * res < MIN_WRAP_S:
        raise InventoryError(f"{ticks} ticks of {res:g} s wrap in under {MIN_WRAP_S:g} s "
                             f"(wrap_ticks x resolution_s must be at least {MIN_WRAP_S:g} s)",
                             key=f"{where}.wrap_ticks")
    if abs(t.get("offset_s", 0)) + _sizes(t.get("steps", [])) + faults > YEARS_100_S:
        raise InventoryError(f"offset_s and the sizes of steps add up to more than "
                             f"{YEARS_100_S:g} s (about a century)", key=f"{where}.steps")


CLOCK_TABLE = table(CLOCK)
# -- faults (bench/sim/faults.py Fault) and the NTP client (bench/sim/ntp.py NtpParams) ---------
FAULT = table({"kind": choice("reboot", "wrap", "step"), "clock": TEXT,
               "after_samples": num(0, 10**9, kind="int"), "in_s": num(0.0, 1e6, "s"),
               "lead_s": num(0.0, 1e6, "s"), "size_s": num(-YEARS_100_S, YEARS_100_S, "s")},
              required=("kind",))
SERVERS = list_of(TEXT, 16)
NTP = table({"poll_s": num(0.1, 86400.0, "s"), "step_threshold_s": num(0.0, 1e6, "s"),
             "slew_ppm": num(0.0, 100_000.0, "ppm"), "first_poll_s": num(0.0, 86400.0, "s"),
             "unreachable": SERVERS, "manual_set": choice("refuse", "accept")})

# -- each emulator's own keys -------------------------------------------------------------------
POWER = key(Key("str", pattern=r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}:\d{1,3}", hint="'PDU:OUTLET'"))
UDP_PEER = key(Key("str", pattern=r"(udp://)?[A-Za-z0-9.-]*:\d{1,5}/?", hint="'udp://HOST:PORT'"))
OPTIC_MODULE = table({
    "vendor": TEXT, "part": TEXT, "revision": TEXT, "serial": TEXT, "date_code": TEXT,
    "oui": key(Key("str", pattern=r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){2}", hint="'00:90:65'")),
    "firmware": key(Key("str", pattern=r"\d{1,3}(\.\d{1,3})?", hint="'MAJOR.MINOR'")),
    "identifier": num(0, 255, kind="int"),
    "lanes": num(1, 8, kind="int"), "far_end": num(1, 255, kind="int"),
    "tx_disable_s": num(0.0, 60.0, "s"), "tx_enable_s": num(0.0, 60.0, "s"),
    "los_assert_s": span(0.0, 60.0), "los_deassert_s": span(0.0, 60.0),
    "vdm_freeze_s": num(0.0, 60.0, "s"), "tx_fault_at_s": list_of(AT_S),
    "counter_page": num(0, 255, kind="int"), "stalled": FLAG, "clock": CLOCK_TABLE})
EMULATORS: dict[str, dict[str, Check]] = {
    "redfish_bmc": {
        "ntp": FLAG, "ntp_servers": SERVERS, "manufacturer": TEXT, "model": TEXT, "serial": TEXT,
        "log_capacity": num(1, 100_000, kind="int"), "ntp_model": NTP,
        "boot_s": num(0.0, 600.0, "s"), "power_clock": choice("rtc", "epoch", "image"),
        "image_date": iso_instant, "power": POWER, "event_subscriptions": FLAG,
        "event_delivery_s": span(0.0, 60.0), "event_retry_s": num(0.01, 3600.0, "s"),
        "event_ca_file": TEXT,
        # vendor-shaped layouts and their session rules (bench/sim/redfish_profiles.py)
        "profile": choice("openbmc", "idrac", "ilo", "supermicro", "bladed"),
        "max_sessions": num(1, 1024, kind="int"), "session_timeout_s": num(1, 86400, "s", "int"),
        "rate_limit_hz": num(0.0, 10_000.0, "Hz"), "retry_after_s": num(0, 3600, "s", "int"),
        "session_service": FLAG, "auth_required": FLAG, "logs": FLAG, "test_event_log": TEXT,
        "managers_linked": FLAG, "manager_datetime": FLAG},
    "redfish_hmc": {       # the BMC emulator's keys and the GPU baseboard's own
        "gpus": num(1, 8, kind="int"), "report_period_s": num(0.1, 3600.0, "s"),
        "throttle_on_test_event": FLAG, "throttle_gpu": num(1, 8, kind="int"),
        "throttle_s": num(0.0, 86400.0, "s"),
        "xid_events": list_of(table({"at_s": AT_S, "gpu": num(1, 8, kind="int"),
                                     "xid": num(0, 255, kind="int")},
                                    required=("at_s", "gpu", "xid")))},
    "snmp_pdu": {
        "outlets": lambda v, p: (list_of(TEXT, 256) if isinstance(v, list)
                                 else num(1, 256, kind="int"))(v, p),
        "trap_receivers": list_of(UDP_PEER, 16), "model": TEXT, "sys_descr": TEXT, "serial": TEXT,
        "actuation_latency_s": num(0.0, 60.0, "s"), "outlet_reboot_s": num(0.0, 3600.0, "s"),
        "community": TEXT, "write_community": TEXT, "privacy": TEXT, "trap_community": TEXT,
        # the vendor MIB the agent answers (bench/sim/snmp_pdu_vendors.LAYOUTS), traps it loses
        "vendor": choice("rackclock", "apc", "apc_rpdu2", "apc_spdu", "raritan", "eaton",
                         "sentry4"),
        "drop_traps": num(0, 10**6, kind="int")},
    "modbus_cooling": {
        "rtc_timezone": zone, "busy_every": num(0, 10**6, kind="int"), "ntp_model": NTP,
        "ntp_servers": SERVERS, "sensors": named(num(-1e6, 1e6), 64), "identification": FLAG,
        "vendor": TEXT, "product_code": TEXT, "model": TEXT, "serial": TEXT, "map": cooling_map,
        "line_delay": FLAG},
    "serial_optic": {
        "vendor": TEXT, "model": TEXT, "serial": TEXT,
        "baudrate": num(300, 4_000_000, "baud", "int"),
        "latency_timer_ms": num(0.0, 255.0, "ms"), "i2c_khz": num(1.0, 5000.0, "kHz"),
        "bridge_delay_s": num(0.0, 1.0, "s"), "i2c_timeout_ms": num(1.0, 60_000.0, "ms"),
        "max_count": num(1, 128, kind="int"),
        "modules": named(OPTIC_MODULE, 255, port_name, "ports 1 to 255"),
        "bridge_ports": list_of(num(1, 255, kind="int"), 255)},
    "ipmi_bmc": {"sel_set": choice("none", "utc", "local"),
                 "sel_offset_s": num(-YEARS_100_S, YEARS_100_S, "s", "int")},
    "k8s_scheduler": {
        "version": TEXT, "schedule_latency_s": span(0.0, 60.0), "nodes": list_of(TEXT, 256),
        "not_ready": list_of(table({"at_s": AT_S, "node": TEXT, "for_s": num(0.0, 1e6, "s")},
                                   required=("at_s", "node")))},
    "host_kernel": {},
    "redfish_unreachable": {},     # a device that is down (bench/sim/redfish_unreachable.py)
}
# the GPU baseboard controller is the BMC emulator with its own layout (bench/sim/redfish_hmc.py)
EMULATORS["redfish_hmc"] = {**{k: v for k, v in EMULATORS["redfish_bmc"].items()
                               if k != "profile"}, **EMULATORS["redfish_hmc"]}

# cooling and power equipment on the BMC emulator's core (bench/sim/redfish_equipment.py)
EMULATORS["redfish_equipment"] = {
    **{k: v for k, v in EMULATORS["redfish_bmc"].items() if k not in ("profile", "test_event_log")},
    "equipment": choice("cdu", "rack_pdu", "power_shelf"), "pumps": num(1, 16, kind="int"),
    "outlets": num(0, 64, kind="int"), "actuation_latency_s": num(0.0, 60.0, "s")}


@functools.cache
def emulators() -> list[str]:
    """The emulator modules of bench/sim (those serving devices), by file, not by import."""
    here = Path(__file__).resolve().parents[1] / "sim"
    return sorted(p.stem for p in here.glob("*.py")
                  if "\nasync def serve(devices" in p.read_text())


def check_sim(sim: Any, driver: str) -> None:
    """Raise InventoryError (key: the path under `sim`) for the first key of a device's `[sim]`
    table that no one reads or whose value is out of its range."""
    if not isinstance(sim, Mapping):
        raise _bad("sim", sim, "a table")
    emulator = sim.get("emulator", driver)
    if "emulator" in sim and emulator not in emulators():
        raise InventoryError(f"{short(emulator)}: no such emulator (known: "
                             f"{', '.join(emulators())})", key="sim.emulator")
    if emulator not in emulators():
        return                # no emulator reads it (an unknown driver is refused by its check)
    own = EMULATORS.get(emulator, {})
    keys = {**CLOCK, **own, "emulator": TEXT, "faults": list_of(FAULT, 100),
            "clocks": named(CLOCK_TABLE, 16), "by_firmware": named(CLOCK_TABLE, 16, label,
                                                                   "names of 1 to 64 characters")}
    table(keys)(sim, "sim")
    _clock_limits(sim)

