"""Modelled delays that keep their length below the event loop's timer granularity.

asyncio waits in its selector, which sleeps in whole milliseconds (epoll), so
`asyncio.sleep(0.0002)` returns after about 1 ms: a device modelled to sample its clock 0.2 ms into
a request would really sample 1+ ms in, and every bracket would carry that millisecond. `hold`
ends a delay with a Linux timerfd registered on the loop, so the loop sleeps in epoll until the
kernel's high-resolution timer wakes it, armed a little before the deadline by the wake-up
latency the loop has seen (an EWMA), and yields (`sleep(0)`) through the rest, so a delay still
ends within tens of µs of its target. The earlier way yielded through the whole of every delay
under 1.5 ms, a large share of the simulator's CPU per clock read (benchmarks/README.md, "CPU per
read").

Written by hand: Python has `os.timerfd_create` from 3.13 only; on 3.11 it is two libc calls
through ctypes. Where timerfd is missing (not Linux), `hold` sleeps the coarse part and yields
through the last SPIN_S as before.
"""
from __future__ import annotations

import asyncio
import ctypes
import heapq
import itertools
import os
import time
import weakref

SPIN_S = 0.0015
CLOCK_MONOTONIC = 1            # time.monotonic_ns() reads this clock on Linux
TFD_TIMER_ABSTIME = 1
TFD_NONBLOCK = os.O_NONBLOCK
TFD_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)
NS = 1_000_000_000
LEAD_START_NS = 100_000        # the timer's wake-up latency until measured
LEAD_MARGIN_NS = 20_000
LEAD_MAX_NS = 1_000_000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int,
                                         ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


class LoopTimer:
    """One timerfd per event loop, armed for the earliest pending deadline (monotonic ns)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        fd = _LIBC.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self.fd = fd
        self._heap: list[tuple[int, int, asyncio.Future]] = []
        self._seq = itertools.count()
        self._armed: int | None = None          # the deadline the timer is set for
        self.late_ns = LEAD_START_NS             # EWMA of how late the timer wakes the loop
        self._spec = _Itimerspec()
        loop.add_reader(fd, self._fire)
        weakref.finalize(loop, os.close, fd)     # no reference to the loop here: it can go

    def _arm(self, deadline_ns: int) -> None:
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(max(1, deadline_ns), NS)
        if _LIBC.timerfd_settime(self.fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None):
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")
        self._armed = deadline_ns

    def wait_until(self, deadline_ns: int) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (deadline_ns, next(self._seq), fut))
        if self._armed is None or deadline_ns < self._armed:
            self._arm(deadline_ns)
        return fut

    def _fire(self) -> None:
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            pass
        now = time.monotonic_ns()
        heap = self._heap
        if heap and self._armed is not None and heap[0][0] == self._armed:
            self.late_ns += (min(now - self._armed, LEAD_MAX_NS) - self.late_ns) // 16
        while heap and heap[0][0] <= now:
            fut = heapq.heappop(heap)[2]
            if not fut.done():
                fut.set_result(None)
        self._armed = None
        if heap:
            self._arm(heap[0][0])

    def lead_ns(self) -> int:
        """How long before a deadline to wake, so that the wake-up comes before it."""
        return min(LEAD_MAX_NS, self.late_ns + self.late_ns // 4 + LEAD_MARGIN_NS)


_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopTimer] = \
    weakref.WeakKeyDictionary()


def _timer() -> LoopTimer | None:
    if _LIBC is None:
        return None
    loop = asyncio.get_running_loop()
    t = _TIMERS.get(loop)
    if t is None:
        try:
            t = _TIMERS[loop] = LoopTimer(loop)
        except (OSError, AttributeError, NotImplementedError):
            return None
    return t


async def hold(seconds: float) -> None:
    """Wait `seconds` (monotonic time) without blocking the loop, accurate below 1 ms."""
    if seconds <= 0:
        return
    end = time.monotonic_ns() + round(seconds * NS)
    timer = _timer()
    if timer is not None:
        wake = end - timer.lead_ns()
        if wake > time.monotonic_ns():
            await timer.wait_until(wake)
    elif seconds > SPIN_S:
        await asyncio.sleep(seconds - SPIN_S)
    while time.monotonic_ns() < end:
        await asyncio.sleep(0)


async def sample_clock(ctx, device: str, clock: str, model) -> tuple[int, int]:
    """Sample `model` at its modelled instant inside a request and record it: (t_ns, value_ns)."""
    await hold(model.sample_delay_s())
    t = ctx.now_ns()
    v = model.read_ns(t)
    ctx.record_sample(device, clock, t, v)
    return t, v
