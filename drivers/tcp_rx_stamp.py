"""The kernel's arrival stamp of TCP answers, for drivers whose exchanges run over TCP.

A bracket's `e` stamped on the event loop carries the loop's delay: a loop busy with other
devices widens every bracket it closes. The kernel stamps each incoming segment as it arrives
(SO_TIMESTAMPNS, CLOCK_REALTIME) and hands the stamp over with `recvmsg`'s ancillary data only.
asyncio's stream transports read with `recv` / `recv_into`, and TCP has no SIOCGSTAMPNS (the
ioctl the SNMP driver uses on UDP answers fails with ENOENT), so no library gives the stamp: the
socket the transport reads from is a `socket.socket` whose `recv` and `recv_into` call
`recvmsg` and keep the stamp. After each read, `rx_ns` is the arrival of the last segment that
read consumed. The selector event loop's transports (plain and TLS) call the socket's own
methods, so the subclass is all it takes; libraries are given it through their socket hooks
(aiohttp's `socket_factory`, pymodbus' connection factory).

The stamp is on the reference only when the reference is CLOCK_REALTIME (`on_kernel_clock`).
"""
from __future__ import annotations

import asyncio
import socket
import struct
import sys
import weakref
from collections.abc import Callable

import aiohappyeyeballs

NS = 1_000_000_000
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS",       # asm-generic/socket.h: SO_TIMESTAMPNS_OLD
                         35 if sys.platform.startswith("linux") else None)
_ANCILLARY = socket.CMSG_SPACE(16)                         # one struct timespec
_BY_FD: weakref.WeakValueDictionary[int, StampedSocket] = weakref.WeakValueDictionary()


def on_kernel_clock(now_ns: Callable[[], int]) -> bool:
    """True when `now_ns` reads CLOCK_REALTIME, the clock of the kernel's arrival stamps."""
    from bench.reference.clock import Reference
    return now_ns is Reference.now_ns


class StampedSocket(socket.socket):
    """A TCP socket that keeps the kernel's arrival stamp of what it last read (`rx_ns`, 0 before
    any stamped read)."""

    rx_ns = 0

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _flags, _addr = self.recvmsg(bufsize, _ANCILLARY, flags)
        if ancillary:
            self._keep(ancillary)
        return data

    def recv_into(self, buffer, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        n, ancillary, _flags, _addr = self.recvmsg_into([view[:nbytes] if nbytes else view],
                                                        _ANCILLARY, flags)
        if ancillary:
            self._keep(ancillary)
        return n

    def _keep(self, ancillary: list[tuple[int, int, bytes]]) -> None:
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack_from("qq", data)
                self.rx_ns = sec * NS + nsec


def stamped_socket(addr_info: aiohappyeyeballs.AddrInfoType) -> StampedSocket:
    """A socket for one `getaddrinfo` entry, its arrivals stamped (aiohttp's `socket_factory`).
    Where the kernel will not stamp, it is a plain socket whose `rx_ns` stays 0 (the drivers then
    keep the loop's stamp)."""
    family, type_, proto = addr_info[:3]
    sock = StampedSocket(family, type_, proto)
    if SO_TIMESTAMPNS is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            return sock
        _BY_FD[sock.fileno()] = sock
    return sock


def stamped_socket_of(transport: asyncio.BaseTransport | None) -> StampedSocket | None:
    """The stamped socket under an asyncio transport (TLS included), if it is one."""
    raw = transport.get_extra_info("socket") if transport is not None else None
    if raw is None:
        return None
    try:
        return _BY_FD.get(raw.fileno())
    except OSError:
        return None


async def connect(host: str, port: int) -> StampedSocket:
    """A connected, non-blocking stamped socket to host:port (Happy Eyeballs over its addresses,
    as aiohttp connects)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    sock = await aiohappyeyeballs.start_connection(infos, socket_factory=stamped_socket)
    if not isinstance(sock, StampedSocket):           # made by the factory: never
        sock.close()
        raise TypeError(f"start_connection returned a {type(sock).__name__}")
    return sock


def arrival(rx_ns: int | None, sent_ns: int, now_ns: int) -> int | None:
    """A kernel arrival stamp (TCP's `rx_ns`, a datagram's SIOCGSTAMPNS) if it can close the
    bracket of a request sent at `sent_ns` whose answer the loop saw at `now_ns`: it lies in
    between (bytes that came before the request answer an older one). Else None, and the
    loop's stamp stands."""
    return rx_ns if rx_ns is not None and sent_ns <= rx_ns <= now_ns else None
