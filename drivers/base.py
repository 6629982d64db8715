"""The driver contract shared by every plane.

A driver is constructed from its inventory entry and a reference clock (`now_ns`, integer ns).
It reports identity, reads each of its clocks inside a bracket taken as close to the wire as its
library allows, performs only stimuli the inventory allows, and fetches log entries since a cursor.
Errors are `DeviceError`s naming the device and what it answered; nothing is silently retried.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

from bench.errors import RackclockError
from bench.model.inventory import DeviceConfig, Key

TIMEOUT_KEY = Key("float", 0.01, 60.0, unit="s")


@dataclass(frozen=True)
class Identity:
    """Who the device says it is. `extra` is the driver's own; by convention its key `no_clock`
    lists parts of the device that keep no clock at all (reported as such in the summary)."""

    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ClockSpec:
    """A clock of the device as the driver knows it: its declared resolution and kind.

    `counter` clocks count from the device's zero (boot); `modulus_ns` is where they wrap (0: never).
    """

    name: str
    resolution_ns: int
    counter: bool = False
    modulus_ns: int = 0


@dataclass(frozen=True)
class Read:
    """One bracketed clock read: the device sampled its clock at some instant in [s_ns, e_ns]
    and its true reading then lay in [value_ns, value_ns + resolution_ns)."""

    clock: str
    s_ns: int
    e_ns: int
    value_ns: int
    resolution_ns: int
    stamp: str = "user"          # user | socket | kernel | hardware
    raw: str = ""


@dataclass(frozen=True)
class Stimulus:
    """A stimulus sent inside [s_ns, e_ns]; `sent` is False when it was only printed (unarmed)."""

    name: str
    target: str | None
    s_ns: int
    e_ns: int
    sent: bool = True
    stamp: str = "user"
    raw: str = ""


@dataclass(frozen=True)
class LogEntry:
    """A device log entry, stamped by the device in `clock` at `value_ns` (resolution as given),
    first seen in a fetch bracketed by [s_ns, e_ns]."""

    cursor: str
    clock: str
    value_ns: int | None
    resolution_ns: int
    s_ns: int
    e_ns: int
    message: str = ""
    raw: str = ""


class DeviceError(RackclockError):
    """A clear, per-device error. `kind` is the error class written to the `status` column:
    timeout | unreachable | auth | protocol | malformed | refused | reset | error."""

    def __init__(self, device: str, kind: str, message: str):
        super().__init__(f"{device}: {kind}: {message}")
        self.device = device
        self.kind = kind
        self.message = message


class StimulusRefused(DeviceError):
    def __init__(self, device: str, message: str):
        super().__init__(device, "refused", message)


def split_address(address: str) -> tuple[str, str, int | None, str]:
    """`scheme://host:port/path` -> (scheme, host, port, path)."""
    u = urlsplit(address)
    return u.scheme, u.hostname or "", u.port, u.path


class Driver(ABC):
    """Base of every driver. Subclasses implement the underscored coroutines.

    `OPTIONS` are the keys of the driver's own that a device table may hold (any other key is an
    error of the rack file), `SCHEMES` the address schemes it speaks."""

    OPTIONS: dict[str, Key] = {}
    SCHEMES: tuple[str, ...] = ()
    log_backlog = False       # set by log_entries() when it stopped at its budget with more left
    log_until_ns: int | None = None   # set by the runner: the next clock read is due then, so
                                      # log_entries() starts no further page after it

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False):
        self.config = config
        self.name = config.name
        self.now_ns = now_ns
        self.armed = armed

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        """Connect and log in. Raises DeviceError."""

    async def close(self) -> None:
        """Release the connection; never raises."""

    async def __aenter__(self):
        await self.open()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    # -- what every driver answers ---------------------------------------------------------------
    @abstractmethod
    async def identity(self) -> Identity: ...

    @abstractmethod
    def clocks(self) -> list[ClockSpec]:
        """The clocks this device has, as declared by the driver and the inventory."""

    @abstractmethod
    async def read_clock(self, clock: str) -> Read: ...

    def stimuli(self) -> list[str]:
        """Names of stimuli this driver can perform (allowed or not)."""
        return []

    async def stimulate(self, name: str, target: str | int | None = None) -> Stimulus:
        """Perform a stimulus, only if the inventory allows it; unarmed, print and do not send."""
        if name not in self.stimuli():
            raise StimulusRefused(self.name, f"driver {self.config.driver} has no stimulus {name!r}")
        if not self.config.allows(name, target):
            what = name if target is None else f"{name}:{target}"
            raise StimulusRefused(self.name, f"stimulus {what!r} is not allowed by the inventory "
                                             f"(allowed: {list(self.config.stimuli) or 'none'})")
        if not self.armed:
            t = self.now_ns()
            print(f"[unarmed] would send {name}" + (f":{target}" if target is not None else "")
                  + f" to {self.name}")
            return Stimulus(name, None if target is None else str(target), t, t, sent=False)
        return await self._stimulate(name, None if target is None else str(target))

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        raise StimulusRefused(self.name, f"no stimulus {name!r}")

    # -- setting the device's clock: the stimulus kind "set_clock", allow-listed like the others
    SET_CLOCK = "set_clock"

    def can_set_clock(self) -> bool:
        """Whether this driver can set its device's clock (it overrides `_set_clock`)."""
        return type(self)._set_clock is not Driver._set_clock

    async def set_clock(self, value_ns: int | None = None,
                        offset_s: float | None = None) -> Stimulus:
        """Set the device clock to `value_ns` (UTC ns), or to the reference's time at sending
        plus `offset_s`; only if the inventory allows `set_clock`; unarmed, print and do not send."""
        if not self.can_set_clock():
            raise StimulusRefused(self.name, f"driver {self.config.driver} cannot set the clock")
        if not self.config.allows(self.SET_CLOCK):
            raise StimulusRefused(self.name, f"stimulus 'set_clock' is not allowed by the inventory "
                                             f"(allowed: {list(self.config.stimuli) or 'none'})")
        if not self.armed:
            t = self.now_ns()
            print(f"[unarmed] would set the clock of {self.name}")
            return Stimulus(self.SET_CLOCK, None, t, t, sent=False)
        return await self._set_clock(value_ns, offset_s)

    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        raise StimulusRefused(self.name, "no set_clock")

    # -- the device's NTP client: the stimulus kind "ntp", allow-listed like the others
    SET_NTP = "ntp"

    def can_set_ntp(self) -> bool:
        return type(self)._set_ntp is not Driver._set_ntp

    async def set_ntp(self, enabled: bool | None = None, server: str | None = None) -> Stimulus:
        """Switch the device's NTP client on/off and/or point it at `server`; only if the
        inventory allows `ntp`; unarmed, print and do not send."""
        if not self.can_set_ntp():
            raise StimulusRefused(self.name, f"driver {self.config.driver} cannot command NTP")
        if not self.config.allows(self.SET_NTP):
            raise StimulusRefused(self.name, f"stimulus 'ntp' is not allowed by the inventory "
                                             f"(allowed: {list(self.config.stimuli) or 'none'})")
        if not self.armed:
            t = self.now_ns()
            print(f"[unarmed] would command NTP of {self.name}")
            return Stimulus(self.SET_NTP, None, t, t, sent=False)
        return await self._set_ntp(enabled, server)

    async def _set_ntp(self, enabled: bool | None, server: str | None) -> Stimulus:
        raise StimulusRefused(self.name, "no ntp")

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Entries newer than `cursor`, and the new cursor. Default: the device keeps no log."""
        return [], cursor

    def error(self, kind: str, message: str) -> DeviceError:
        return DeviceError(self.name, kind, message)
