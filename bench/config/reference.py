"""docs/RACKFILE.md, the rack file's key reference, made from the declarations themselves: the
[rack] and device keys (bench/config/inventory.py), each driver's `OPTIONS`, the clock model's
parameters (bench/sim/clock_model.py), each emulator's `SIM_KEYS` and the [limits] keys. Written by
tests/data/regen_rackfile.py; tests/test_rackfile.py fails when the file is not what this makes.
In the loader's layer: it reads the drivers and the simulator, as the loader does."""
from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Mapping
from typing import Any

HEAD = """# The rack file's keys

Generated from the declarations by `tests/data/regen_rackfile.py` (do not edit by hand;
`tests/test_rackfile.py` fails when it is out of date). A rack file is TOML: `[rack]`, one
`[devices.NAME]` table per device (with a `[devices.NAME.sim]` table on a simulated rack) and
`[limits]`. Every key is checked when the file is read, before anything starts; a mistake is one
line naming the file, the device and the key (exit 2). `bench/sim/default_rack.toml` is an
example of every plane."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(keys: Mapping[str, Any], docs: Mapping[str, str] | None = None) -> list[str]:
    """A markdown table of keys and what each accepts (a `Key`'s accepted(), a check's
    `accepted`), and what each means where `docs` says."""
    out = ["| key | accepts | meaning |" if docs else "| key | accepts |",
           "|---|---|---|" if docs else "|---|---|"]
    for k, spec in keys.items():
        said = spec.accepted() if callable(getattr(spec, "accepted", None)) else spec.accepted
        meaning = f" {_cell(docs.get(k, ''))} |" if docs else ""
        out.append(f"| `{k}` | {_cell(said)} |{meaning}")
    return out


def _section(title: str, text: str, keys: Mapping[str, Any],
             docs: Mapping[str, str] | None = None) -> list[str]:
    return ["", f"## {title}" if title.startswith("[") or "keys" in title else f"### {title}", "",
            *([text, ""] if text else []), *_rows(keys, docs)]


def _first_sentence(cls: Any) -> str:
    """The first sentence of the driver module's documentation."""
    doc = inspect.getdoc(sys.modules[cls.__module__]) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    return text.split(". ")[0].rstrip(".") + "."


def _drivers() -> Iterable[list[str]]:
    import drivers
    from bench.config.loader import known_drivers
    for name in known_drivers():
        cls = drivers.driver_class(name)
        schemes = ", ".join(f"`{s}://`" for s in cls.SCHEMES if s) or "any"
        yield _section(f"driver `{name}` (drivers/{name}.py)",
                       f"{_first_sentence(cls)} Addresses: {schemes}.", cls.OPTIONS)


def _emulators() -> Iterable[list[str]]:
    from bench.sim.simtable import emulator_module, emulators
    for name in emulators():
        own = emulator_module(name).SIM_KEYS
        if own:
            yield _section(f"emulator `{name}` (bench/sim/{name}_emu.py)", "", own)


def reference_text() -> str:
    """The whole of docs/RACKFILE.md."""
    from bench.config.inventory import DEVICE_KEYS, RACK_KEYS
    from bench.model.limit_checks import KEYS as LIMIT_KEYS
    from bench.sim.clock_model import CLOCK_DOCS, CLOCK_KEYS
    from bench.sim.simtable import COMMON

    parts = [HEAD.split("\n")]
    parts.append(_section("[rack]", "The rack as a whole.", RACK_KEYS))
    parts.append(_section("[devices.NAME]: every device", "Every device's table; its driver's "
                          "own keys follow.", DEVICE_KEYS))
    parts.append(["", "## Each driver's own keys (in [devices.NAME])"])
    parts += list(_drivers())
    parts.append(_section(
        "[devices.NAME.sim]: the clock model", "A simulated device's clock (bench/sim/clock_model.py "
        "`ClockParams`): in the `sim` table for every clock of the device, in `[sim.clocks.NAME]` "
        "for one clock, in `[sim.by_firmware.VERSION]` for the firmware named by `firmware`. "
        "Instants are seconds after the run's start (t0).", CLOCK_KEYS, CLOCK_DOCS))
    parts.append(_section("[devices.NAME.sim]: every emulator", "", COMMON))
    parts.append(["", "## Each emulator's own keys (in [devices.NAME.sim])"])
    parts += list(_emulators())
    parts.append(_section("[limits] keys", "In `[limits.planes.PLANE]` and "
                          "`[limits.devices.NAME]` (bench/model/limit_checks.py); the unit each takes.",
                          {k: _Said(f"a limit in {u}") for k, u in LIMIT_KEYS.items()}))
    return "\n".join(line for p in parts for line in p).rstrip() + "\n"


class _Said:
    """A plain description in the place of a check."""

    def __init__(self, accepted: str):
        self.accepted = accepted
