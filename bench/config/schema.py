"""The checks a nested rack-file table is declared with: `Check`s built from `Key`
(bench/config/keys.py) that take a value and its key path (`sim.clocks.sysuptime.uptime_s`,
`sim.faults[2].kind`) and raise one InventoryError naming the path and what is accepted.

Whoever reads a table declares its keys with these, beside its code: the clock model each
parameter (bench/sim/clock_model.py `ClockParams`), each emulator its `SIM_KEYS`, the fault board and
the NTP client theirs (bench/sim/simtable.py gathers them). Ranges keep the simulator's memory
and time bounded (outlets, log capacity, list lengths). Every check carries `accepted`, the
text docs/RACKFILE.md shows for it (bench/config/reference.py).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from bench.config.keys import SAFE_NAME, InventoryError, Key, did_you_mean, short

MAX_LIST = 1000              # steps, reboots, slews, faults, ...: entries in one list
MAX_STR = 1024               # characters in one string
YEARS_100_S = 3.2e9          # offsets and step sizes: a clock set to 1970 is -1.8e9 s off


class Check(Protocol):
    """(value, key path) -> None, or InventoryError; `accepted`: what it accepts, in words."""

    accepted: str

    def __call__(self, value: Any, path: str, /) -> None: ...


def says(accepted: str) -> Callable[[Callable[[Any, str], None]], Check]:
    """Give a check function the words of what it accepts."""
    def mark(fn: Callable[[Any, str], None]) -> Check:
        fn.accepted = accepted        # type: ignore[attr-defined]
        return fn                     # type: ignore[return-value]
    return mark


def bad(path: str, value: Any, accepted: str) -> InventoryError:
    return InventoryError(f"{short(value)} is not accepted ({accepted})", key=path)


def key(spec: Key) -> Check:
    @says(spec.accepted())
    def check(value: Any, path: str) -> None:
        try:
            spec.check(value)
        except InventoryError as exc:
            raise InventoryError(exc.problem, key=path) from None
        if isinstance(value, str) and len(value) > MAX_STR:
            raise bad(path, value, f"at most {MAX_STR} characters")
    return check


def num(lo: float, hi: float, unit: str = "", kind: str = "float") -> Check:
    return key(Key(kind, lo, hi, unit=unit))


TEXT = key(Key("str"))
FLAG = key(Key("bool"))


def choice(*options: str) -> Check:
    return key(Key("str", choices=options))


def list_of(item: Check, most: int = MAX_LIST) -> Check:
    @says(f"a list of at most {most}: {item.accepted}")
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) > most:
            raise bad(path, value, f"a list of at most {most} entries")
        for i, x in enumerate(value):
            item(x, f"{path}[{i}]")
    return check


def table(keys: Mapping[str, Check], required: tuple[str, ...] = ()) -> Check:
    """A table of these keys (unknown ones refused, `required` ones present)."""
    @says("a table: " + ", ".join(f"{k}{' (required)' if k in required else ''}" for k in keys))
    def check(value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise bad(path, value, "a table")
        for k in required:
            if k not in value:
                raise InventoryError(f"missing (a table here has {', '.join(required)})",
                                     key=f"{path}.{k}")
        for k, v in value.items():
            if k not in keys:
                raise InventoryError(f"unknown key{did_you_mean(str(k), keys)}", key=f"{path}.{k}")
            keys[k](v, f"{path}.{k}")
    check.keys = keys                 # type: ignore[attr-defined]   # docs/RACKFILE.md
    return check


def record(names: tuple[str, ...], checks: tuple[Check, ...]) -> Check:
    """A table of exactly these keys, or a list of their values in this order."""
    as_table = table(dict(zip(names, checks)), required=names)

    @says(f"{{{', '.join(names)}}} or [{', '.join(names)}]: "
          + "; ".join(f"{n}: {c.accepted}" for n, c in zip(names, checks)))
    def check(value: Any, path: str) -> None:
        if isinstance(value, list) and len(value) == len(names):
            for i, (c, x) in enumerate(zip(checks, value)):
                c(x, f"{path}[{i}]")
        elif isinstance(value, Mapping):
            as_table(value, path)
        else:
            raise bad(path, value, f"{{{', '.join(names)}}} or [{', '.join(names)}]")
    return check


def named(item: Check, most: int, name: Callable[[Any], Any] | None = None,
          what: str = "names of letters, digits, '.', '_', '-'") -> Check:
    """A table of at most `most` entries, each under a name `name` accepts."""
    name = name or (lambda k: isinstance(k, str) and SAFE_NAME.fullmatch(k))

    @says(f"a table of at most {most} entries under {what}, each {item.accepted}")
    def check(value: Any, path: str) -> None:
        if not isinstance(value, Mapping) or len(value) > most:
            raise bad(path, value, f"a table of at most {most} entries")
        for k, v in value.items():
            if not name(k):
                raise InventoryError(f"{short(k)} is not accepted ({what})", key=path)
            item(v, f"{path}.{k}")
    return check


def span(lo: float, hi: float, unit: str = "s") -> Check:
    """A number, or [lo, hi] with lo <= hi, each within [lo, hi]."""
    one = num(lo, hi, unit)

    @says(f"a number or [lo, hi], from {lo:g} to {hi:g} {unit}")
    def check(value: Any, path: str) -> None:
        if isinstance(value, list):
            if len(value) != 2:
                raise bad(path, value, f"a number or [lo, hi] from {lo:g} to {hi:g} {unit}")
            one(value[0], f"{path}[0]")
            one(value[1], f"{path}[1]")
            if value[0] > value[1]:
                raise bad(path, value, "[lo, hi] with lo <= hi")
        else:
            one(value, path)
    return check


@says("an ISO 8601 date and time with its UTC offset")
def iso_instant(value: Any, path: str) -> None:
    TEXT(value, path)
    try:
        if datetime.fromisoformat(value).tzinfo is None:
            raise ValueError("no UTC offset")
    except ValueError:
        raise bad(path, value, "an ISO 8601 date and time with its UTC offset") from None


@says("an IANA time zone such as 'Europe/Berlin'")
def zone(value: Any, path: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    TEXT(value, path)
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise bad(path, value, "an IANA time zone such as 'Europe/Berlin'") from None


def label(k: str) -> bool:
    return isinstance(k, str) and 0 < len(k) <= 64


