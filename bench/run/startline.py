"""The start line of a run's event loops: their devices start probing together, once the opens
are over on every loop of the run.

An open costs far more than a read (a login, an SNMP engine's tables, a MIB), and a loop opens
OPENS_AT_ONCE devices at a time. A device that began probing as soon as it was open read while
the others (on its loop, or on another worker process sharing the cores) were still opening: at
300 simulated devices most of the probes planned in the first seconds started late, and their
answers waited behind the opens (a wide bracket; benchmarks/README.md, "Scale"). So a device that has
opened waits here, and the first reads are planned from the instant the line is crossed.

Crossing, a loop collects what its opens left and freezes the rest (drivers, MIBs, sessions: kept
for the run) out of the collector's way: a full collection walking them stalled the loop for
hundreds of ms, and one in the first second of reads made them all late.

Nobody is waited for long: a device with no open ending for `quiet_s` (1 s: opens at their pace
end milliseconds apart; a device that does not answer is failing its own timeout) is left to join
when it opens, so it costs the others at most that (counted from the first open that ends: every
first attempt ends, within the open's timeout); a loop whose peers have not all arrived
`peer_wait_s` after it did (a worker died, or is still opening) starts without them.
"""
from __future__ import annotations

import asyncio
import gc
import threading
import time


class Peers:
    """The loops of one run in other processes: a shared count of those that crossed their own
    line (a multiprocessing Value, one per run)."""

    def __init__(self, arrived, loops: int):
        self.arrived = arrived
        self.loops = loops

    def arrive(self) -> None:
        with self.arrived.get_lock():
            self.arrived.value += 1

    def all_here(self) -> bool:
        return self.arrived.value >= self.loops


class StartLine:
    """One per loop, used from its thread: each device calls `opened(device)` when its first
    open attempt has ended (opened or not), then `await line.event.wait()`; `watch(stop)` runs
    beside them as a task of the same loop and sets the event."""

    POLL_S = 0.02

    def __init__(self, devices: int, quiet_s: float, peers: Peers | None = None,
                 peer_wait_s: float | None = None):
        self.devices = devices
        self.quiet_s = quiet_s
        self.peers = peers
        self.peer_wait_s = quiet_s if peer_wait_s is None else peer_wait_s
        self._t0 = time.monotonic()
        self._last: float | None = None                 # when the last open ended
        self._seen: set[int] = set()
        self._here: float | None = None                 # when this loop's opens were over
        self.event = asyncio.Event()
        self.crossed_after_s: float | None = None      # since the line was drawn

    @property
    def pending(self) -> int:
        """Devices whose first open attempt has not ended."""
        return self.devices - len(self._seen)

    def opened(self, who: object) -> None:
        if id(who) in self._seen:
            return
        self._seen.add(id(who))
        self._last = time.monotonic()

    def _arrive(self) -> None:
        gc.collect()
        gc.freeze()
        self._here = time.monotonic()
        if self.peers is not None:
            self.peers.arrive()

    async def watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            now = time.monotonic()
            quiet = self._last is not None and now - self._last > self.quiet_s
            if self._here is None and (self.pending <= 0 or quiet):
                self._arrive()
            if self._here is not None and (self.peers is None or self.peers.all_here()
                                           or time.monotonic() - self._here > self.peer_wait_s):
                break
            await asyncio.sleep(self.POLL_S)
        self.crossed_after_s = time.monotonic() - self._t0
        self.event.set()
