"""The watch endpoint's accepting thread: connections are taken off the kernel's accept queue
by a tight loop of its own (never behind the event loop's work), held here while they have sent
nothing, and handed to the event loop (aiohttp behind bench/watch/guard.py) with their first
byte. A flood of idle connections costs one descriptor each and never a transport, a task or an
HTTP handler.

Why: a scraper's SYN is dropped while the listening socket's accept queue is full, and it
retransmits after 1, 3, 7 s. An idle flood whose client reopens what the server closes keeps
that queue full whenever the server accepts slower than the client reconnects; so here

- the listening socket has TCP_DEFER_ACCEPT (DEFER_S): the kernel queues a connection for
  accept() once it has data, a silent one only after DEFER_S rounded up to its SYN-ACK
  retransmits (10-15 s; those over the backlog get SYN cookies and are queued at once);
- up to `silent` connections (default: from the file limit) are held silent, for `silent_s`
  each; beyond, the oldest is reset (SO_LINGER 0: no FIN_WAIT, no TIME_WAIT);
- the expired ones are reset at most SWEEP_MAX a second, so a flood opened at once does not
  come back at once.
"""
from __future__ import annotations

import logging
import resource
import select
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable

from bench.watch.guard import OncePer

log = logging.getLogger(__name__)
BACKLOG = 4096           # the kernel caps it at net.core.somaxconn
DEFER_S = 10             # TCP_DEFER_ACCEPT: a silent connection stays in the kernel this long
SILENT_S = 300.0         # a connection held here without a byte, at most
SWEEP_MAX = 1000         # expired silent connections reset a second, at most
RESERVE_FDS = 1024       # descriptors left for the devices, the day folder and active clients
_RST = struct.pack("ii", 1, 0)


def silent_limit() -> int:
    """Silent connections held at most: the file limit less RESERVE_FDS, at least 256."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(256, int(soft) - RESERVE_FDS)


def listen_socket(host: str, port: int, defer_s: int = DEFER_S) -> socket.socket:
    """A non-blocking listening TCP socket on host:port (its first address), SO_REUSEADDR,
    TCP_DEFER_ACCEPT `defer_s` (0: none), backlog BACKLOG."""
    fam, kind, proto, _, addr = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                   flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(fam, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if defer_s and hasattr(socket, "TCP_DEFER_ACCEPT"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, int(defer_s))
        sock.bind(addr)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def reset(sock: socket.socket) -> None:
    """Close with a reset: nothing lingers on either side."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RST)
    except OSError:
        pass
    sock.close()


class Acceptor(threading.Thread):
    """`Acceptor(listening, hand).start()`; `hand(sock)` gets each connection with its first
    byte waiting (called on this thread: it must only schedule); `.stop()`."""

    def __init__(self, sock: socket.socket, hand: Callable[[socket.socket], None],
                 silent: int | None = None, silent_s: float = SILENT_S):
        super().__init__(name="watch-accept", daemon=True)
        self.sock, self.hand = sock, hand
        self.max_silent = silent if silent is not None else silent_limit()
        self.silent_s = silent_s
        self.held: dict[int, tuple[socket.socket, float]] = {}     # fd -> (sock, since), oldest first
        self.dropped: Counter = Counter()          # class -> connections dropped (this process)
        self.accepted = 0
        self.once = OncePer()
        self._ep = select.epoll()
        self._halt = threading.Event()

    def _say(self, what: str, n: int = 1) -> None:
        self.dropped[what] += n
        if self.once.ok(what):
            log.warning("watch endpoint: a client dropped: %s%s", what, self.once.said(what))

    def run(self) -> None:
        lfd = self.sock.fileno()
        self._ep.register(lfd, select.EPOLLIN)
        swept = time.monotonic()
        try:
            while not self._halt.is_set():
                for fd, _ in self._ep.poll(0.25):
                    if fd == lfd:
                        self._accept()
                    else:
                        self._ready(fd)
                if time.monotonic() - swept >= 1.0:
                    swept = time.monotonic()
                    self._sweep(swept)
        finally:
            for c, _ in self.held.values():
                reset(c)
            self.held.clear()
            self._ep.close()
            self.sock.close()

    def _accept(self) -> None:
        for _ in range(BACKLOG):
            try:
                c, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:              # EMFILE, ENFILE, ENOBUFS: make room, go on
                self._say(f"cannot accept ({exc.strerror}): the oldest silent one closed")
                if not self._drop_oldest():
                    time.sleep(0.05)
                return
            self.accepted += 1
            c.setblocking(False)
            if len(self.held) >= self.max_silent:
                self._drop_oldest()
                self._say(f"over {self.max_silent} connections that sent nothing: "
                          f"the oldest closed")
            self.held[c.fileno()] = (c, time.monotonic())
            self._ep.register(c.fileno(), select.EPOLLIN)

    def _drop_oldest(self) -> bool:
        if not self.held:
            return False
        fd = next(iter(self.held))
        c, _ = self.held.pop(fd)
        self._ep.unregister(fd)
        reset(c)
        return True

    def _ready(self, fd: int) -> None:
        got = self.held.pop(fd, None)
        if got is None:                    # dropped earlier in this same batch of events
            return
        c = got[0]
        self._ep.unregister(fd)
        try:
            first = c.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            first = b"?"
        except OSError:
            first = b""
        if not first:                      # closed (or reset) by its client without a byte
            c.close()
            return
        self.hand(c)

    def _sweep(self, now: float) -> None:
        """Reset the silent connections held over silent_s, oldest first, at most SWEEP_MAX."""
        n = 0
        while self.held and n < SWEEP_MAX:
            fd, (c, since) = next(iter(self.held.items()))
            if now - since <= self.silent_s:
                break
            del self.held[fd]
            self._ep.unregister(fd)
            reset(c)
            n += 1
        if n:
            self._say(f"nothing sent within {self.silent_s:g} s", n)

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5)
