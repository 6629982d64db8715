"""Modelled delays that keep their length below the event loop's timer granularity.

asyncio waits in its selector, which sleeps in whole milliseconds (epoll), so
`asyncio.sleep(0.0002)` returns after about 1 ms: a device modelled to sample its clock 0.2 ms into
a request would really sample 1+ ms in, and every bracket would carry that millisecond. `hold`
sleeps the coarse part and yields (`sleep(0)`) through the last SPIN_S, so the other emulators on
the loop still run while the delay ends within tens of µs of its target.
"""
from __future__ import annotations

import asyncio
import time

SPIN_S = 0.0015


async def hold(seconds: float) -> None:
    """Wait `seconds` (perf_counter time) without blocking the loop, accurate below 1 ms."""
    if seconds <= 0:
        return
    end = time.perf_counter() + seconds
    if seconds > SPIN_S:
        await asyncio.sleep(seconds - SPIN_S)
    while time.perf_counter() < end:
        await asyncio.sleep(0)


async def sample_clock(ctx, device: str, clock: str, model) -> tuple[int, int]:
    """Sample `model` at its modelled instant inside a request and record it: (t_ns, value_ns)."""
    await hold(model.sample_delay_s())
    t = ctx.now_ns()
    v = model.read_ns(t)
    ctx.record_sample(device, clock, t, v)
    return t, v
