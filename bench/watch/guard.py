"""The watch endpoint's guard against its clients: at most MAX_CONNECTIONS that have sent
something at once, at most MAX_SILENT that have not, a request's headers within HEADER_S of
connecting, a connection closed after IDLE_S without a byte from its client; one log line per
class of dropped client and minute (`OncePer`), never a traceback per connection. Any local user
can reach the endpoint: none of them may take the scrapes down.

A scraper sends its request as it connects; an idle flood never does. So the two are held
apart: beyond MAX_SILENT silent connections the oldest silent one is dropped for the new one (a
flood pushes out only itself, and a scraper that just connected is the newest), and a silent
connection becomes one of the MAX_CONNECTIONS with its first bytes (beyond them it is closed).
In the watch, connections come here from bench/watch/acceptor.py, which holds the silent ones
itself and hands each over with its first byte waiting.
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
MAX_SILENT = 4096        # connections that have not sent a byte yet (each one descriptor)


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
        if self.sent == 0 and not self.guard.activate(self):
            self.admitted = False
            self.inner.connection_lost(None)
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
        self.guard.forget(self)
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
                 header_s: float = HEADER_S, idle_s: float = IDLE_S, silent: int = MAX_SILENT):
        self.factory, self.limit, self.header_s, self.idle_s = factory, limit, header_s, idle_s
        self.max_silent = silent
        self.conns: set[_Conn] = set()            # those that sent something
        self.silent: dict[_Conn, None] = {}       # those that did not, oldest first
        self.once = OncePer()
        self.dropped: Counter = Counter()     # class -> clients dropped (this process)

    def __call__(self) -> _Conn:
        return _Conn(self, self.factory())

    def _say(self, what: str) -> None:
        self.dropped[what] += 1
        if self.once.ok(what):
            log.warning("watch endpoint: a client dropped: %s%s", what, self.once.said(what))

    def admit(self, c: _Conn) -> bool:
        """A new connection, silent until its first bytes."""
        if len(self.silent) >= self.max_silent:
            old = next(iter(self.silent))
            self.silent.pop(old)
            old.drop()
            self._say(f"over {self.max_silent} connections that sent nothing: the oldest closed")
        self.silent[c] = None
        return True

    def activate(self, c: _Conn) -> bool:
        """Its first bytes: one of the `limit` active connections, or closed."""
        self.silent.pop(c, None)
        if len(self.conns) >= self.limit:
            self._say(f"over {self.limit} connections in use: the new one closed")
            c.drop()
            return False
        self.conns.add(c)
        return True

    def forget(self, c: _Conn) -> None:
        self.conns.discard(c)
        self.silent.pop(c, None)

    def sweep(self) -> None:
        """Close the connections past their deadlines (called every second)."""
        now = time.monotonic()
        for c in [*self.silent, *self.conns]:
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
