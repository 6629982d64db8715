"""Which clock stamped each field of a log line (docs/TIMELINE.md lists them all): a line is mapped
only through the clock that wrote its stamp. The parsers (bench/model/logformats.py) say where a
line itself tells (a Kubernetes event's field, an snmptrapd trap's sysUpTime varbind, a Redfish
record's field); `stamping_clock` turns that role into a device clock of the run, or refuses
with one line when the clock the user named cannot have written it.

Roles: `origin` (the device's own clock: the one named, else the device's clock of the stamp's
kind), `agent` (an SNMP agent's sysUpTime: the device's counter clock), `receiver` (the host that
received and stamped the line: snmptrapd, a syslog relay; given with receiver=DEVICE[:CLOCK]),
`apiserver` (the Kubernetes API server's clock) and `component:NAME` (the Kubernetes component
that reported the event, e.g. the scheduler, on its own host and clock).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.model.logfile import LogError

# per format: (field, role, in words), the first the default (docs/TIMELINE.md shows this table)
SOURCES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "rfc5424": (("TIMESTAMP", "origin", "the originating device's clock"),
                ("TIMESTAMP (stamp=relay)", "receiver", "a relay that re-stamped the line")),
    "rfc3164": (("TIMESTAMP", "origin", "the originating device's clock, local time"),
                ("TIMESTAMP (stamp=relay)", "receiver", "a relay that re-stamped the line")),
    "iso8601": (("the line's first ISO 8601 time", "origin", "the device's clock"),
                ("(stamp=relay)", "receiver", "a relay or collector that stamped the line")),
    "rfc2822": (("the leading date", "origin", "the device's clock"),),
    "csv": (("the timestamp column", "origin", "the device's clock"),),
    "dmesg": (("[seconds since boot]", "origin", "the kernel's clock since boot (a counter)"),),
    "journald": (("__REALTIME_TIMESTAMP", "origin", "the host's wall clock (journald)"),
                 ("__MONOTONIC_TIMESTAMP", "origin", "the host's clock since boot")),
    "ipmi-sel": (("SEL time", "origin", "the BMC's SEL clock, local time"),),
    "snmptrapd": (("sysUpTime varbind", "agent", "the agent's uptime (the PDU's counter)"),
                  ("receive time", "receiver", "the trap receiver's clock (the snmptrapd host)")),
    "redfish": (("Created", "origin", "the Redfish service's clock when it logged the entry"),
                ("EventTimestamp", "origin", "the service's clock when the event occurred")),
    "k8s-events": (("eventTime", "component", "the reporting component's clock (e.g. the "
                    "scheduler, on its own host)"),
                   ("creationTimestamp", "apiserver", "the API server's clock"),
                   ("firstTimestamp / lastTimestamp", "component",
                    "the reporting component's clock")),
}
DEFAULT_FIELD = {fmt: rows[0][0] for fmt, rows in SOURCES.items()}
ROLE_WORDS = {"origin": "the device's own clock", "agent": "the agent's sysUpTime",
              "receiver": "the receiver's clock", "apiserver": "the API server's clock"}


@dataclass(frozen=True)
class Stamper:
    """The clock that stamped a group of lines: a device of the run and one of its clocks."""
    device: str
    clock: str
    role: str
    field: str

    def says(self) -> str:
        who = ROLE_WORDS.get(self.role) or f"the {self.role.split(':', 1)[-1]}'s clock"
        return f"{self.field} by {self.device}/{self.clock} ({who})"


def line_source(fmt: str, kind: str, src: str, stamp: str) -> tuple[str, str]:
    """(role, field) of a group of lines: the parser's word where it gave one, else the format's."""
    if src:
        role, _, field = src.partition("|")
        return role, field
    if fmt == "snmptrapd":
        return ("agent", "sysUpTime varbind") if kind == "monotonic" else \
            ("receiver", "receive time")
    if stamp == "relay":
        return "receiver", "relay's stamp"
    if fmt == "journald" and kind == "monotonic":
        return "origin", "__MONOTONIC_TIMESTAMP"
    return "origin", DEFAULT_FIELD.get(fmt, "stamp")


Clocks = Mapping[str, Any]          # clock name -> its fit (bench.model.summary.ClockResult)


def _counter(r: Any) -> bool:
    return bool(r.meta.get("counter"))


def _first_of_kind(device: str, clocks: Clocks, kind: str, spec: str) -> str:
    """The device's first clock of the stamps' kind (a counter for monotonic), or LogError."""
    want = kind == "monotonic"
    clock = next((c for c, r in clocks.items() if _counter(r) == want), "")
    if not clock:
        raise LogError(f"{spec!r}: the log's stamps are {kind} but {device} has no "
                       f"{'counter' if want else 'wall'} clock "
                       f"(clocks: {', '.join(clocks) or 'none'})")
    return clock


def _of_kind(device: str, clock: str, clocks: Clocks, kind: str, spec: str) -> str:
    """The device clock of the stamps' kind: the one named (checked), else the first."""
    want = kind == "monotonic"
    clock = clock or _first_of_kind(device, clocks, kind, spec)
    if clock not in clocks:
        raise LogError(f"{spec!r}: {device} has no clock {clock!r} "
                       f"(clocks: {', '.join(clocks) or 'none'})")
    if _counter(clocks[clock]) != want:
        raise LogError(f"{spec!r}: the log's stamps are {kind} "
                       f"({'since boot' if want else 'wall-clock dates'}) but clock "
                       f"{clock!r} is {'a counter' if not want else 'a wall clock'}: "
                       f"give a matching clock (or boot=... for a kernel log)")
    return clock


def stamping_clock(role: str, field: str, device: str, named: str, kind: str, spec: str,
                   clocks_of: Callable[[str], Clocks], receiver: str = "") -> Stamper:
    """The device clock that stamped `field` (role as line_source gives it), or LogError (one
    line) when the named clock cannot have, or none of the run's can be found."""
    clocks = clocks_of(device)
    if role == "origin":
        return Stamper(device, _of_kind(device, named, clocks, kind, spec), role, field)
    if role == "agent":
        return _agent(field, device, named, spec, clocks)
    if role == "receiver":
        return _receiver(field, device, named, kind, spec, clocks_of, receiver)
    return _component(role, field, device, named, spec, clocks)


def _agent(field: str, device: str, named: str, spec: str, clocks: Clocks) -> Stamper:
    """The agent's uptime clock (a counter) that stamped a trap's sysUpTime varbind."""
    if named and named in clocks and not _counter(clocks[named]):
        raise LogError(f"{spec!r}: {device}/{named} cannot have stamped the {field} (the "
                       f"agent's uptime, a counter): name {device}'s uptime clock, or map "
                       f"the receive time with stamp=wall,receiver=HOST")
    return Stamper(device, _of_kind(device, named, clocks, "monotonic", spec), "agent", field)


def _component(role: str, field: str, device: str, named: str, spec: str,
               clocks: Clocks) -> Stamper:
    """The clock of the API server or of the reporting component (role "component:NAME") that
    stamped a Kubernetes event's `field`."""
    want = "apiserver" if role == "apiserver" else role.split(":", 1)[-1]
    hint = "" if role == "apiserver" else \
        "; give field=creationTimestamp to map the API server's stamp"
    if named and named != want:
        raise LogError(f"{spec!r}: {device}/{named} cannot have stamped {field} (the {want}'s "
                       f"clock did){hint}")
    if want not in clocks:
        raise LogError(f"{spec!r}: {field} is stamped by the {want}'s clock and {device} has no "
                       f"clock {want!r} (clocks: {', '.join(clocks) or 'none'}){hint}")
    return Stamper(device, want, role, field)


def _receiver(field: str, device: str, named: str, kind: str, spec: str,
              clocks_of: Callable[[str], Clocks], receiver: str) -> Stamper:
    if named:
        raise LogError(f"{spec!r}: {device}/{named} cannot have stamped the {field}: the "
                       f"receiver's clock did; give receiver=HOST[:CLOCK] (the host that "
                       f"received the lines)"
                       + (", or a counter clock of the agent for the sysUpTime varbind"
                          if field == "receive time" else ""))
    if not receiver:
        raise LogError(f"{spec!r}: the {field} is stamped by the receiver's clock, not "
                       f"{device}'s: give receiver=HOST[:CLOCK] (the host that received the "
                       f"lines)" + (" (traps with a sysUpTime varbind map through the agent's "
                                    "uptime)" if field == "receive time" else ""))
    host, _, clock = receiver.partition(":")
    try:
        clocks = clocks_of(host)
    except KeyError:
        clocks = {}
    if not clocks:
        raise LogError(f"{spec!r}: receiver={receiver}: no device {host!r} with a clock in the "
                       f"calibrating run(s)")
    return Stamper(host, _of_kind(host, clock, clocks, kind, spec), "receiver", field)
