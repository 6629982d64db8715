"""The watch endpoint's guard against its clients: at most MAX_CONNECTIONS at once, a request's
headers within HEADER_S of connecting, a connection closed after IDLE_S without a byte from its
client; one log line per class of dropped client and minute (`OncePer`), never a traceback per
connection. Any local user can reach the endpoint: none of them may take the scrapes down.

Beyond the limit the connection that never sent a byte for longest (and not in its first
GRACE_S) is dropped for the new one, so an idle flood cannot keep a scraper out, nor push out a
scraper that has just connected; when there is none such, the new one is closed at once.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
MAX_CONNECTIONS = 256
HEADER_S = 10.0          # from connecting to the end of the first request's headers
IDLE_S = 30.0            # without a byte from the client (aiohttp's keep-alive: KEEPALIVE_S)
KEEPALIVE_S = 15.0
LOG_EVERY_S = 60.0
GRACE_S = 1.0            # a new connection's time to send its request before it may be dropped


class OncePer:
    """`ok(key)`: True at most once per `every_s` per key; `.held[key]`: the ones held back."""

    def __init__(self, every_s: float = LOG_EVERY_S, keys: int = 1024):
        self.every_s, self.keys = every_s, keys
        self.last: dict[Any, float] = {}
        self.held: Counter = Counter()

    def ok(self, key) -> bool:
        now = time.monotonic()
        t = self.last.get(key)
        if t is not None and now - t < self.every_s:
            self.held[key] += 1
            return False
        if len(self.last) >= self.keys:          # bounded whatever the clients
            cut = now - self.every_s
            self.last = {k: v for k, v in self.last.items() if v > cut}
        self.last[key] = now
        return True

    def said(self, key) -> str:
        n = self.held.pop(key, 0)
        return f" ({n} more in the last minute)" if n else ""


class QuietFilter(logging.Filter):
    """On asyncio's and aiohttp's loggers: a record's first line once a minute per message,
    without its traceback (a flood of accept errors or bad clients is one line)."""

    def __init__(self):
        super().__init__()
        self.once = OncePer()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg)[:80])
        if not self.once.ok(key):
            return False
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.msg = f"{str(record.getMessage()).splitlines()[0][:300]}{self.once.said(key)}"
        record.args = ()
        return True


def quiet_loggers() -> None:
    f = QuietFilter()
    for name in ("asyncio", "aiohttp.server", "aiohttp.web", "aiohttp.access",
                 "aiohttp.internal"):
        lg = logging.getLogger(name)
        if not any(isinstance(x, QuietFilter) for x in lg.filters):
            lg.addFilter(f)


class _Conn(asyncio.Protocol):
    """One client connection: aiohttp's handler behind it, watched by the guard."""

    def __init__(self, guard: Guard, inner: Any):
        self.guard, self.inner = guard, inner
        self.opened = self.last = time.monotonic()
        self.sent = 0                 # bytes from the client
        self.headers_done = False
        self._tail = b""
        self.transport: asyncio.Transport | None = None
        self.admitted = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.admitted = self.guard.admit(self)
        if self.admitted:
            self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self.admitted:
            return
        self.last = time.monotonic()
        self.sent += len(data)
        if not self.headers_done:
            self.headers_done = b"\r\n\r\n" in self._tail + data
            self._tail = data[-3:]
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.admitted else None

    def connection_lost(self, exc) -> None:
        self.guard.conns.discard(self)
        if self.admitted:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def drop(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class Guard:
    """The protocol factory in front of aiohttp's (`web.Server`): `loop.create_server(guard)`."""

    def __init__(self, factory: Callable[[], Any], limit: int = MAX_CONNECTIONS,
                 header_s: float = HEADER_S, idle_s: float = IDLE_S):
        self.factory, self.limit, self.header_s, self.idle_s = factory, limit, header_s, idle_s
        self.conns: set[_Conn] = set()
        self.once = OncePer()
        self.dropped: Counter = Counter()     # class -> clients dropped (this process)

    def __call__(self) -> _Conn:
        return _Conn(self, self.factory())

    def _say(self, what: str) -> None:
        self.dropped[what] += 1
        if self.once.ok(what):
            log.warning("watch endpoint: a client dropped: %s%s", what, self.once.said(what))

    def admit(self, c: _Conn) -> bool:
        if len(self.conns) >= self.limit:
            cut = time.monotonic() - GRACE_S
            silent = [x for x in self.conns if x.sent == 0 and x.opened < cut]
            if not silent:
                self._say(f"over {self.limit} connections, each busy or new: the new one closed")
                c.drop()
                return False
            min(silent, key=lambda x: x.opened).drop()
            self._say(f"over {self.limit} connections: the oldest that never sent a byte closed")
        self.conns.add(c)
        return True

    def sweep(self) -> None:
        """Close the connections past their deadlines (called every second)."""
        now = time.monotonic()
        for c in list(self.conns):
            if not c.headers_done and now - c.opened > self.header_s:
                self._say(f"no request headers within {self.header_s:g} s")
                c.drop()
            elif now - c.last > self.idle_s:
                self._say(f"idle for {self.idle_s:g} s")
                c.drop()

    async def sweeping(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.sweep()
