"""A serial line for the emulated RTU controllers: a pty pair whose master side the emulator owns.

Clients open the slave path (`/dev/pts/N`) as their serial port. pymodbus' serial server can only
open a port by name through pyserial, and the master side of a pty has no name, so
`PtyTransport` is a small asyncio transport over the master fd that the server is handed instead
(its `call_create` is replaced; see modbus_cooling.py). A pty ignores the baud rate: when the
inventory asks for it (`line_delay`), each frame is delivered only after its bytes would have
taken on the wire (10 bit times a byte), in both directions and in order.
"""
from __future__ import annotations

import asyncio
import os
import tty
from collections.abc import Callable


class PtyLine:
    """The pty pair. The emulator keeps the slave open too, so the master never reads EIO when
    no client has the port open, and the line stays raw (no echo, no line editing)."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self.slave)

    def close(self) -> None:
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


class PtyTransport(asyncio.Transport):
    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol, fd: int,
                 byte_time_s: float = 0.0, deaf: Callable[[], bool] = lambda: False):
        super().__init__()
        self._loop = loop
        self._protocol = protocol
        self._fd = fd
        self._byte_time = byte_time_s
        self._deaf = deaf
        self._rx_free = self._tx_free = 0.0
        self._out = b""
        self._timers: set[asyncio.TimerHandle] = set()
        self._closed = False

    def start(self) -> None:
        self._loop.add_reader(self._fd, self._read_ready)
        self._loop.call_soon(self._protocol.connection_made, self)

    # -- receive ---------------------------------------------------------------------------------
    def _read_ready(self) -> None:
        try:
            data = os.read(self._fd, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if not data or self._deaf():
            return                       # a rebooting controller hears nothing
        if self._byte_time:
            self._rx_free = max(self._loop.time(), self._rx_free) + len(data) * self._byte_time
            self._later(self._rx_free, self._protocol.data_received, data)
        else:
            self._protocol.data_received(data)

    # -- send ----------------------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed:
            return
        if self._byte_time:
            self._tx_free = max(self._loop.time(), self._tx_free) + len(data) * self._byte_time
            self._later(self._tx_free, self._write_now, bytes(data))
        else:
            self._write_now(bytes(data))

    def _write_now(self, data: bytes) -> None:
        if self._closed:
            return
        self._out += data
        self._flush()

    def _flush(self) -> None:
        try:
            n = os.write(self._fd, self._out)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self._out = b""
            return
        self._out = self._out[n:]
        if self._out:
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        self._loop.remove_writer(self._fd)
        self._flush()

    def _later(self, when: float, fn, *args) -> None:
        handle: asyncio.TimerHandle | None = None

        def run() -> None:
            self._timers.discard(handle)
            if not self._closed:
                fn(*args)

        handle = self._loop.call_at(when, run)
        self._timers.add(handle)

    # -- asyncio.Transport ---------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        for h in self._timers:
            h.cancel()
        self._timers.clear()

    def is_closing(self) -> bool:
        return self._closed

    def abort(self) -> None:
        self.close()

    def get_protocol(self):
        return self._protocol

    def set_protocol(self, protocol) -> None:
        self._protocol = protocol

    def get_write_buffer_size(self) -> int:
        return len(self._out)

    def can_write_eof(self) -> bool:
        return False

    def is_reading(self) -> bool:
        return not self._closed
