"""The start line of a run's loops (bench/run/startline.py): the devices of a loop start probing
together once every open of the run is over; a device that does not open, or a worker process
that never arrives, holds the others no longer than the quiet time. Every wait is a condition
with a deadline; the test decides when each open ends."""
from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

from bench.run.startline import Peers, StartLine


def test_devices_start_only_when_the_last_open_has_ended():
    async def main():
        line = StartLine(3, quiet_s=600.0)
        stop = threading.Event()
        watch = asyncio.create_task(line.watch(stop))
        opened = [asyncio.Event() for _ in range(3)]
        started: list[int] = []

        async def device(i):
            await opened[i].wait()          # the test ends this device's open
            line.opened(i)
            line.opened(i)                  # a second call (a reopen) counts once
            await line.event.wait()
            started.append(i)

        tasks = [asyncio.create_task(device(i)) for i in range(3)]
        for i in (2, 0):
            opened[i].set()
            await asyncio.sleep(0.05)
        assert not line.event.is_set() and started == [] and line.pending == 1
        opened[1].set()
        async with asyncio.timeout(60):
            await asyncio.gather(*tasks)
        assert sorted(started) == [0, 1, 2] and line.crossed_after_s is not None
        await watch
    asyncio.run(main())


def test_a_device_that_never_opens_holds_the_line_only_for_the_quiet_time():
    async def main():
        line = StartLine(2, quiet_s=0.3)
        watch = asyncio.create_task(line.watch(threading.Event()))
        line.opened("a")                    # "b" never ends its open
        t = time.monotonic()
        async with asyncio.timeout(60):
            await line.event.wait()
        assert time.monotonic() - t >= 0.25    # it waited for the quiet time, not less
        assert line.pending == 1
        await watch
    asyncio.run(main())


def _peer(arrived, go) -> None:
    go.wait(120)
    Peers(arrived, 2).arrive()


def test_loops_in_two_processes_start_together_and_a_missing_peer_is_not_waited_for_ever():
    ctx = multiprocessing.get_context("spawn")
    arrived, go = ctx.Value("i", 0), ctx.Event()
    proc = ctx.Process(target=_peer, args=(arrived, go), daemon=True)
    proc.start()
    try:
        async def main():
            line = StartLine(1, quiet_s=600.0, peers=Peers(arrived, 2))
            watch = asyncio.create_task(line.watch(threading.Event()))
            line.opened("only")
            async with asyncio.timeout(60):     # this loop has arrived: the peer has not
                while arrived.value < 1:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            assert not line.event.is_set()
            go.set()                             # the other process's opens are over
            async with asyncio.timeout(60):
                await line.event.wait()
            await watch
        asyncio.run(main())
    finally:
        go.set()
        proc.join(60)
    assert arrived.value == 2

    async def alone():                           # a peer that died never arrives
        line = StartLine(1, quiet_s=0.3, peers=Peers(ctx.Value("i", 0), 2))
        watch = asyncio.create_task(line.watch(threading.Event()))
        line.opened("only")
        async with asyncio.timeout(60):
            await line.event.wait()
        await watch
    asyncio.run(alone())


def test_a_stop_releases_the_devices_waiting_at_the_line():
    async def main():
        line = StartLine(2, quiet_s=600.0)
        stop = threading.Event()
        watch = asyncio.create_task(line.watch(stop))
        stop.set()
        async with asyncio.timeout(60):
            await line.event.wait()
        await watch
    asyncio.run(main())
