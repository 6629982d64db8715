"""Serve the simulated rack until SIGTERM/SIGINT (`rackclock sim`, `python -m bench.commands.sim`).

Writes `<out>/rack.toml` (the resolved rack: real loopback addresses) when every emulator is up
(and `<out>/sim_control`, the socket on which a test triggers faults: bench/sim/faults.py),
`<out>/sim_samples.csv` as requests are answered, and `<out>/truth.json` when it stops. Its
secrets (TLS keys, the kubeconfig's token) go in a 0700 temp folder, every file 0600, removed
when it stops (a SimProcess removes it also when the simulator was killed).
Passwords come from the environment variables the rack names; unset ones get a random value,
printed to the terminal only.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from bench import priority, safeio
from bench.config.inventory import InventoryError, RackConfig, load_rack
from bench.sim import DEFAULT_RACK  # noqa: F401 (re-exported: tests and benchmarks import it here)
from bench.sim.faults import serve_control
from bench.sim.rack import SimContext, start_rack, write_rack_toml
from bench.sim.simtable import check_rack_sims

log = logging.getLogger(__name__)
_SECRETS = threading.Lock()      # runs started in parallel threads must not give a var two values


def ensure_secrets(rack: RackConfig) -> dict[str, str]:
    """Give every credential variable the rack names (`password_env`, any `*_env` key) a value,
    random where unset; returns the ones it made."""
    made = {}
    with _SECRETS:
        for d in rack.devices:
            names = [d.password_env] + [v for k, v in d.options.items() if k.endswith("_env")]
            for var in names:
                if isinstance(var, str) and var and not os.environ.get(var):
                    os.environ[var] = made[var] = secrets.token_urlsafe(12)
    return made


async def serve(rack_path: Path, out: Path, duration_s: float | None = None,
                realtime: bool = False, say: Callable[[str], None] = log.info) -> int:
    """Serve until stopped; `say` is told what a user of the simulator needs to know."""
    rack = load_rack(rack_path)
    try:
        check_rack_sims(rack.devices)      # what `run` checks at load (bench/config/loader.py)
    except InventoryError as exc:
        raise exc.located(str(rack_path)) from None
    ctx = SimContext(rack, out)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)   # a clean stop: truth.json, temp folder removed
    try:
        umask = os.umask(0o077)      # what the emulators write (kubeconfig: a token) is 0600
        try:
            resolved, failed = await start_rack(rack, ctx)
        finally:
            os.umask(umask)
        await serve_control(ctx)             # faults on command (bench/sim/faults.py)
        if realtime:     # at the bench workers' scheduling, once the slow start is over
            say(f"simulator {priority.realtime(lambda w: say(f'simulator {w}'))}")
        safeio.write_text(out / "sim_failed.json", json.dumps(failed, indent=1))
        write_rack_toml(resolved, out / "rack.toml")      # last: its presence says "serving"
        say(f"simulated rack {rack.name!r} serving {len(resolved.devices)} devices; "
            f"resolved rack file: {out / 'rack.toml'}")
        for name, why in failed.items():
            say(f"  {name}: {why}")
        try:
            await asyncio.wait_for(stop.wait(), duration_s)
        except TimeoutError:
            pass
    finally:
        truth = ctx.truth()
        await ctx.close()
        safeio.write_text(out / "truth.json", json.dumps(truth))
    return 0
