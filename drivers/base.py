"""The driver contract shared by every plane.

A driver is constructed from its inventory entry and a reference clock (`now_ns`, integer ns).
It reports identity and reads each of its clocks inside a bracket taken as close to the wire as its
library allows (`Driver`: every plane is a `ClockSource`). What else a plane can do is a small
capability interface (`typing.Protocol`) it implements only when it has it, and callers ask
`isinstance(drv, LogSource)` instead of calling a default that answers nothing:

- `ClockSource`: `clocks()`, `read_clock(clock)`;
- `LogSource`: `log_entries(cursor)`, entries since a cursor;
- `StimulusTarget`: `stimuli()`, `stimulate(name, target)`, only what the inventory allows
  (the `Stimulated` mixin holds the allow-list and --arm gate; a driver writes `_stimulate`);
- `ClockSetter`: `set_clock(value_ns | offset_s)` (mixin `ClockSetting`, `_set_clock`);
- `NtpClient`: `set_ntp(enabled, server)` (mixin `NtpCommanding`, `_set_ntp`).
The mixins are `DriverPart`s: what they use of the `Driver` is declared there for the type checker.

Driver calls are coroutines run on an event loop that other devices may share (one loop per
device in a small rack, one loop per worker process with a task per device in a large one; see
bench/run/runner.py and bench/run/shards.py), and they must not block that loop: a blocking
library call goes through `asyncio.to_thread` or the library's asyncio API (drivers/serial_optic.py
runs its pyserial exchanges in `asyncio.to_thread`), so a slow device never holds the loop's
timers (the log poll budget, the next clock read) nor another device's reads.
Errors are `DeviceError`s naming the device and what it answered; nothing is silently retried.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable
from urllib.parse import urlsplit

from bench.config.inventory import DeviceConfig, Key
from bench.errors import RackclockError
from bench.model.manifest_records import Identity  # noqa: F401  (drivers return it: one record)

TIMEOUT_KEY = Key("float", 0.01, 60.0, unit="s")
NS = 1_000_000_000
SET_CLOCK = "set_clock"           # the stimulus kinds of ClockSetter and NtpClient, allow-listed
SET_NTP = "ntp"                   # in the rack file like the others

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClockSpec:
    """A clock of the device as the driver knows it: its declared resolution and kind.

    `counter` clocks count from the device's zero (boot); `modulus_ns` is where they wrap (0: never).
    `lag_ns`: the reading may lag the clock by up to this much (a tick that flips late, e.g. libc
    time() on the kernel's coarse clock); the fit widens by it (bench/model/summary.lag_ns).
    `free_running`: the device's own word that nothing disciplines this clock, as the source it
    was read from (e.g. "Redfish NTP.ProtocolEnabled=false"); "" when it says nothing or that NTP
    is on. Where the reads cannot check the rate bound it stands instead of a disciplined clock's
    rate, named as an assumption (bench.analysis.estimate.fit_clock).
    """

    name: str
    resolution_ns: int
    counter: bool = False
    modulus_ns: int = 0
    lag_ns: int = 0
    free_running: str = ""


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


@runtime_checkable
class ClockSource(Protocol):
    """Reads its clocks, each in a bracket (every `Driver` is one)."""

    def clocks(self) -> list[ClockSpec]: ...

    async def read_clock(self, clock: str) -> Read: ...


@runtime_checkable
class LogSource(Protocol):
    """Keeps a log whose entries are fetched since a cursor. A paged source may set
    `log_backlog` (more left after its budget) and honour `log_until_ns` (start no page after)."""

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Entries newer than `cursor`, and the new cursor."""


@runtime_checkable
class StimulusTarget(Protocol):
    """Performs named stimuli (only those the inventory allows; unarmed: logged, not sent)."""

    def stimuli(self) -> list[str]: ...

    async def stimulate(self, name: str, target: str | int | None = None) -> Stimulus: ...


@runtime_checkable
class ClockSetter(Protocol):
    """Sets the device's clock (stimulus kind `set_clock`)."""

    async def set_clock(self, value_ns: int | None = None,
                        offset_s: float | None = None) -> Stimulus: ...


@runtime_checkable
class NtpClient(Protocol):
    """Commands the device's NTP client (stimulus kind `ntp`)."""

    async def set_ntp(self, enabled: bool | None = None,
                      server: str | None = None) -> Stimulus: ...


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
    async def open(self) -> None:  # noqa: B027 (a hook: drivers without a session keep it empty)
        """Connect and log in. Raises DeviceError."""

    async def close(self) -> None:  # noqa: B027 (a hook, as open)
        """Release the connection; never raises."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what every driver answers ---------------------------------------------------------------
    @abstractmethod
    async def identity(self) -> Identity: ...

    @abstractmethod
    def clocks(self) -> list[ClockSpec]:
        """The clocks this device has, as declared by the driver and the inventory."""

    @abstractmethod
    async def read_clock(self, clock: str) -> Read: ...

    SET_CLOCK = SET_CLOCK
    SET_NTP = SET_NTP

    def _gate(self, kind: str, target: str | None, what: str) -> Stimulus | None:
        """The allow-list and --arm gate of every stimulus kind: raises StimulusRefused when the
        inventory does not allow it; unarmed, logs what would be sent and returns the unsent
        Stimulus; armed, None (send it)."""
        if not self.config.allows(kind, target):
            label = kind if target is None else f"{kind}:{target}"
            raise StimulusRefused(self.name, f"stimulus {label!r} is not allowed by the inventory "
                                             f"(allowed: {list(self.config.stimuli) or 'none'})")
        if self.armed:
            return None
        t = self.now_ns()
        log.warning("[unarmed] would %s", what)
        return Stimulus(kind, target, t, t, sent=False)

    def error(self, kind: str, message: str) -> DeviceError:
        return DeviceError(self.name, kind, message)


class DriverPart:
    """A mixin of a `Driver`: what it uses of the driver it is mixed into, declared for the type
    checker only (nothing here exists at run time, so the driver's own definitions hold)."""

    name: str
    config: DeviceConfig
    now_ns: Callable[[], int]
    armed: bool
    log_until_ns: int | None
    if TYPE_CHECKING:
        def _gate(self, kind: str, target: str | None, what: str) -> Stimulus | None: ...

        def error(self, kind: str, message: str) -> DeviceError: ...


class Stimulated(DriverPart):
    """A `Driver` that is a StimulusTarget: lists `stimuli()` and writes `_stimulate`."""

    def stimuli(self) -> list[str]:
        raise NotImplementedError

    async def stimulate(self, name: str, target: str | int | None = None) -> Stimulus:
        """Perform a stimulus, only if the inventory allows it; unarmed, log and do not send."""
        if name not in self.stimuli():
            raise StimulusRefused(self.name, f"driver {self.config.driver} has no stimulus {name!r}")
        target = None if target is None else str(target)
        unsent = self._gate(name, target, f"send {name}" + (f":{target}" if target is not None
                                                             else "") + f" to {self.name}")
        return unsent or await self._stimulate(name, target)

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        raise StimulusRefused(self.name, f"no stimulus {name!r}")


class ClockSetting(DriverPart):
    """A `Driver` that is a ClockSetter: writes `_set_clock`."""

    async def set_clock(self, value_ns: int | None = None,
                        offset_s: float | None = None) -> Stimulus:
        """Set the device clock to `value_ns` (UTC ns), or to the reference's time at sending
        plus `offset_s`; only if the inventory allows `set_clock`; unarmed, log and do not send."""
        if value_ns is None and offset_s is None:
            raise ValueError("set_clock: give value_ns or offset_s")
        unsent = self._gate(SET_CLOCK, None, f"set the clock of {self.name}")
        return unsent or await self._set_clock(value_ns, offset_s)

    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        raise NotImplementedError

    def _target_ns(self, value_ns: int | None, offset_s: float | None) -> int:
        """The value to set: `value_ns`, else the reference's time now plus `offset_s`."""
        if value_ns is not None:
            return value_ns
        if offset_s is None:
            raise ValueError("set_clock: give value_ns or offset_s")
        return self.now_ns() + round(offset_s * NS)


class NtpCommanding(DriverPart):
    """A `Driver` that is an NtpClient: writes `_set_ntp`."""

    async def set_ntp(self, enabled: bool | None = None, server: str | None = None) -> Stimulus:
        """Switch the device's NTP client on/off and/or point it at `server`; only if the
        inventory allows `ntp`; unarmed, log and do not send."""
        unsent = self._gate(SET_NTP, None, f"command NTP of {self.name}")
        return unsent or await self._set_ntp(enabled, server)

    async def _set_ntp(self, enabled: bool | None, server: str | None) -> Stimulus:
        raise NotImplementedError
