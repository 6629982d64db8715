"""Politeness and authentication for any Redfish client of the bench: reusable by the BMC driver
and by later Redfish drivers (CDUs, power shelves).

- `Budget`: the per-device request budget, a contract with the device: at most `rate_hz`
  requests per second (a token bucket holding one second's worth) and `concurrent` requests in
  flight; a `429 Too Many Requests` or `503 Service Unavailable` answer holds every request until
  its `Retry-After` has passed (capped at `RETRY_AFTER_CAP_S`; 1 s when the header is absent or
  unreadable). Requests that can wait (log polls) ask `urgent=False` with a `max_wait_s` that
  ends before the next clock read is due, and are skipped (never queued) when the budget has no
  room by then, so clock reads are never late behind them.
- `auth_mode`: session (default), HTTP basic, or none, as the rack file says or as the service
  shows (a service root without a SessionService: basic).
- `Meter`: requests, logins and throttled answers counted for the runner (`on_traffic`), each
  request also by what it was for (`requests_clock`, `_log`, `_events`, `_stimulus`,
  `_discovery`; `counted_as`).
Defaults a BMC vendor accepts: 10 requests per second, 2 at once (BMC web servers are small:
HPE advises against filling iLO's limited session table; bmcweb serves a few connections).
"""
from __future__ import annotations

import asyncio
import contextvars
import email.utils
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from bench.errors import RackclockError

DEFAULT_RATE_HZ = 10.0
DEFAULT_CONCURRENT = 2
RETRY_AFTER_CAP_S = 60.0
AUTH_MODES = ("session", "basic", "none")


class Skipped(RackclockError):
    """A request that could wait was not sent: the budget was spent or the service asked for a
    pause (Retry-After)."""


def retry_after_s(value: str | None, now_s: float | None = None) -> float:
    """A `Retry-After` header (seconds, or an HTTP date) as seconds from now, in [0, cap]."""
    if value:
        value = value.strip()
        try:
            s = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                return 1.0
            s = when - (time.time() if now_s is None else now_s)
        if s == s:                                     # not NaN
            return min(max(0.0, s), RETRY_AFTER_CAP_S)
    return 1.0


class Budget:
    """At most `rate_hz` requests a second (bursts up to one second's worth) and `concurrent`
    in flight. `async with budget.slot(urgent)`: waits for room, or (urgent False) raises
    Skipped at once when there is none. `hold(seconds)`: no request until then."""

    def __init__(self, rate_hz: float = DEFAULT_RATE_HZ, concurrent: int = DEFAULT_CONCURRENT,
                 clock: Callable[[], float] = time.monotonic):
        self.rate = float(rate_hz)
        self.capacity = max(1.0, self.rate)
        self.tokens = self.capacity
        self.clock = clock
        self.t = clock()
        self.held_until = 0.0
        self.concurrent = int(concurrent)
        self._sem: asyncio.Semaphore | None = None
        self.skipped = 0

    def _refill(self) -> float:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.t) * self.rate)
        self.t = now
        return now

    def hold(self, seconds: float) -> None:
        self.held_until = max(self.held_until, self.clock() + seconds)

    def _wait_s(self) -> float:
        now = self._refill()
        wait = max(0.0, self.held_until - now)
        if self.tokens < 1.0:
            wait = max(wait, (1.0 - self.tokens) / self.rate)
        return wait

    def slot(self, urgent: bool = True, max_wait_s: float | None = None) -> _Slot:
        """Room for one request, waited for up to `max_wait_s` (default: 1 s when `urgent`, else
        not at all); a longer wait (a Retry-After pause, a spent budget) raises Skipped and
        nothing is sent. A request that is not urgent never queues for a concurrent slot."""
        if max_wait_s is None:
            max_wait_s = 1.0 if urgent else 0.0
        if self._sem is None:                  # made on the loop that uses it
            self._sem = asyncio.Semaphore(self.concurrent)
        return _Slot(self, self._sem, urgent, max_wait_s)


class _Slot:
    def __init__(self, budget: Budget, sem: asyncio.Semaphore, urgent: bool, max_wait_s: float) -> None:
        self.b, self.sem, self.urgent, self.max_wait = budget, sem, urgent, max_wait_s

    async def __aenter__(self) -> _Slot:
        b = self.b
        while (wait := b._wait_s()) > 0:
            if wait > self.max_wait:
                b.skipped += 1
                held = b.held_until - b.clock()
                raise Skipped(f"the service asked for a pause (Retry-After): {held:.1f} s left"
                              if held > 0 else f"request budget: next request in {wait:.2f} s")
            await asyncio.sleep(wait)
        if not self.urgent and self.sem.locked():
            b.skipped += 1
            raise Skipped("request budget: all concurrent requests in use")
        await self.sem.acquire()
        b._refill()
        b.tokens -= 1.0
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.sem.release()


def auth_mode(configured: str | None, root: dict) -> tuple[str, str | None]:
    """(mode, note): the rack file's `auth`, else session where the service root links a
    SessionService (or Links.Sessions), else basic; the note says why when it was discovered."""
    if configured:
        return configured, None
    links = root.get("Links")
    if isinstance(root.get("SessionService"), dict) or (isinstance(links, dict)
                                                         and isinstance(links.get("Sessions"), dict)):
        return "session", None
    return "basic", ("the service root links no SessionService: using HTTP basic "
                     "authentication")


class Meter:
    """Counts of what the driver sent: `requests`, `logins`, `throttled` (429/503 answers);
    each count also goes to `on_traffic(kind)` when the runner set it."""

    def __init__(self) -> None:
        self.counts = {"requests": 0, "logins": 0, "throttled": 0}
        self.on_traffic: Callable[[str], None] | None = None

    def count(self, kind: str) -> None:
        self._add(kind)
        if kind == "requests":
            self._add(f"requests_{REQUEST_KIND.get()}")

    def _add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.on_traffic is not None:
            self.on_traffic(kind)


# What each request is for, counted by kind (`Meter`): the driver's entry points say so
# (`counted_as`); anything else (login, the service root, discovery) is "discovery".
REQUEST_KINDS = ("clock", "log", "events", "stimulus", "discovery")
REQUEST_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("redfish_request_kind",
                                                                   default="discovery")
P = ParamSpec("P")
R = TypeVar("R")


def counted_as(kind: str) -> Callable[[Callable[P, Coroutine[Any, Any, R]]],
                                      Callable[P, Coroutine[Any, Any, R]]]:
    """Requests made inside the decorated coroutine (and tasks it starts) count as `kind`."""
    def deco(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            token = REQUEST_KIND.set(kind)
            try:
                return await fn(*args, **kwargs)
            finally:
                REQUEST_KIND.reset(token)
        return wrapper
    return deco
