"""Run the simulated rack in a background thread of this process (tests, notebooks).

`rackclock run` serves it from a separate process instead (bench/sim/serve.py), so that the
emulators do not share the drivers' interpreter lock.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
import tempfile
import threading
from pathlib import Path

from bench import safeio
from bench.config.inventory import RackConfig
from bench.sim.faults import Fault
from bench.sim.rack import SimContext, start_rack


class SimRackThread:
    """`with SimRackThread(rack) as sim:` serves `rack`; `sim.rack` is the resolved rack (real
    addresses), `sim.failed` the devices whose emulator did not start, `sim.ctx` the context."""

    def __init__(self, rack: RackConfig, out_dir: str | Path | None = None, t0_ns: int | None = None):
        self.source = rack
        self._own_dir = out_dir is None                  # made here: removed at stop
        self.out_dir = Path(out_dir or tempfile.mkdtemp(prefix="rackclock-simthread-"))
        self.t0_ns = t0_ns
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sim-rack", daemon=True)
        self.rack: RackConfig | None = None
        self.failed: dict[str, str] = {}
        self.ctx: SimContext | None = None
        self.truth: dict | None = None

    def call(self, coro, timeout: float = 30.0):
        """Run a coroutine on the rack's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> SimRackThread:
        self.thread.start()

        async def _start():
            self.ctx = SimContext(self.source, self.out_dir, t0_ns=self.t0_ns)
            return await start_rack(self.source, self.ctx)

        try:
            self.rack, self.failed = self.call(_start())
        except BaseException:
            self.stop()
            raise
        return self

    def fault(self, device: str, kind: str, **how) -> concurrent.futures.Future:
        """Arm a fault (bench/sim/faults.py: `kind` reboot | wrap | step, `how` its Fault
        fields); the future gives the reference instant (ns) it is scheduled for, at once when
        it fires now, else when its trigger comes (`.result(timeout)` waits on that)."""
        fault = Fault(kind, **how)

        async def arm():
            return self.ctx.faults.arm(device, fault)

        armed = self.call(arm())

        async def wait():
            return await armed

        return asyncio.run_coroutine_threadsafe(wait(), self.loop)

    def stop(self) -> dict:
        if self.ctx is not None and self.truth is None:
            self.truth = self.ctx.truth()
            self.call(self.ctx.close())
            safeio.write_text(self.out_dir / "truth.json", json.dumps(self.truth))
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        if self._own_dir:
            shutil.rmtree(self.out_dir, ignore_errors=True)
        return self.truth or {}

    def __enter__(self) -> SimRackThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
