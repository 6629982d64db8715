"""A simulated device's `[devices.NAME.sim]` table, checked when the rack file is read (by the
loader, bench/config/loader.py, and by `rackclock sim` before it serves): the keys are declared
by what reads them, beside its code: the clock model's parameters (bench/sim/clock_model.py
`ClockParams`, each with its check), the fault board's (bench/sim/faults.py `FAULT_KEYS`) and
each emulator's own (`SIM_KEYS` of bench/sim/<emulator>_emu.py). A key no one reads is refused;
each problem is one InventoryError naming the key's path (`sim.clocks.sysuptime.uptime_s`).
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.config.keys import InventoryError, short
from bench.config.schema import TEXT, YEARS_100_S, Check, bad, label, list_of, named, table
from bench.sim.clock_model import CLOCK_KEYS
from bench.sim.faults import FAULT_KEYS

MIN_WRAP_S = 1.0             # a shorter wrap period makes the truth's list of wraps unbounded
FINEST_DEFAULT_S = 0.001     # the finest resolution an emulator gives a counter by default
CLOCK_TABLE = table(CLOCK_KEYS)
# the keys of every [sim] table, whatever its emulator: the clock's, and these
COMMON: dict[str, Check] = {
    "emulator": TEXT, "faults": list_of(FAULT_KEYS, 100),
    "clocks": named(CLOCK_TABLE, 16),
    "by_firmware": named(CLOCK_TABLE, 16, label, "names of 1 to 64 characters")}


EMU_SUFFIX = "_emu"           # emulator NAME (the rack file's `sim.emulator`) lives in NAME_emu.py


@functools.cache
def emulators() -> list[str]:
    """The emulators of bench/sim (modules NAME_emu.py serving devices), by file, not by import."""
    here = Path(__file__).resolve().parent
    return sorted(p.stem.removesuffix(EMU_SUFFIX) for p in here.glob(f"*{EMU_SUFFIX}.py")
                  if "\nasync def serve(devices" in p.read_text())


def emulator_module(emulator: str) -> ModuleType:
    """The module serving the rack file's `emulator` (bench/sim/<emulator>_emu.py)."""
    return importlib.import_module(f"bench.sim.{emulator}{EMU_SUFFIX}")


def emulator_keys(emulator: str) -> dict[str, Check]:
    """The keys of a [sim] table served by `emulator`: the common ones, the clock's, its own."""
    own = emulator_module(emulator).SIM_KEYS
    return {**CLOCK_KEYS, **own, **COMMON}


def check_sim(sim: Any, driver: str) -> None:
    """Raise InventoryError (key: the path under `sim`) for the first key of a device's `[sim]`
    table that no one reads or whose value is out of its range."""
    if not isinstance(sim, Mapping):
        raise bad("sim", sim, "a table")
    emulator = sim.get("emulator", driver)
    if "emulator" in sim and emulator not in emulators():
        raise InventoryError(f"{short(emulator)}: no such emulator (known: "
                             f"{', '.join(emulators())})", key="sim.emulator")
    if emulator not in emulators():
        return                # no emulator reads it (an unknown driver is refused by its check)
    table(emulator_keys(emulator))(sim, "sim")
    _clock_limits(sim)


def _sizes(steps: list[Any]) -> float:
    total: float = sum(abs(x["size_s"] if isinstance(x, Mapping) else x[1]) for x in steps)
    return total


def _clock_limits(sim: Mapping[str, Any]) -> None:
    """Each clock as the models see it (the sim table's keys, its own table's, its firmware's)
    wraps no faster than once a second, and its offset and steps together stay within a
    century of the reference (a date every emulator can still write)."""
    top = {k: v for k, v in sim.items() if k in CLOCK_KEYS}
    faults = _sizes([(0, f.get("size_s", 0)) for f in sim.get("faults", [])])
    for path, t in _own_clocks(sim) or [("sim", {})]:
        merged = {**top, **t}
        merged.update((sim.get("by_firmware") or {}).get(merged.get("firmware"), {}))
        _one_clock_limits(merged, path if t else "sim", faults)


def _own_clocks(sim: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(key path, table) of each clock with a table of its own: [sim.clocks.NAME], an optic
    module's clock."""
    own = [(f"sim.clocks.{n}", t) for n, t in (sim.get("clocks") or {}).items()]
    own += [(f"sim.modules.{p}.clock", m["clock"]) for p, m in (sim.get("modules") or {}).items()
            if "clock" in m]
    return own


def _one_clock_limits(t: Mapping[str, Any], where: str, faults: float) -> None:
    """One clock's wrap period and its offset plus steps plus the faults' sizes (`faults`, s)."""
    ticks = t.get("wrap_ticks", 0)
    res = t.get("resolution_s", FINEST_DEFAULT_S)
    if ticks and ticks * res < MIN_WRAP_S:
        raise InventoryError(f"{ticks} ticks of {res:g} s wrap in under {MIN_WRAP_S:g} s "
                             f"(wrap_ticks x resolution_s must be at least {MIN_WRAP_S:g} s)",
                             key=f"{where}.wrap_ticks")
    if abs(t.get("offset_s", 0)) + _sizes(t.get("steps", [])) + faults > YEARS_100_S:
        raise InventoryError(f"offset_s and the sizes of steps add up to more than "
                             f"{YEARS_100_S:g} s (about a century)", key=f"{where}.steps")


def check_rack_sims(devices: Any) -> None:
    """Every simulated device's [sim] table checked (InventoryError naming the device)."""
    for d in devices:
        if d.sim is None:
            continue
        try:
            check_sim(dict(d.sim), d.driver)
        except InventoryError as exc:
            raise InventoryError(exc.problem, device=d.name, key=exc.key) from None
