"""The fleet file: which racks, which experiment on each, and the Ray resource that pins each
rack's run to the bench host that reaches it. Records only (frozen, no I/O); bench.commands.fleet
reads the file.

    [fleet]
    name = "lab-a"
    experiment = "clock_offset"          # default of every rack
    duration_s = 60                      # default of every rack (omitted: the experiment's)
    params = { stimulus_every_s = "5" }  # default of every rack, merged under the rack's own
    cpus = 0.5                           # default of every rack: the CPUs a rack's run takes
                                         # (Ray's num_cpus of its task; CPU_PER_RACK when omitted)

    [racks.lab-a-3]
    rack = "racks/lab-a-3.toml"          # path on the bench host (relative: to the fleet file);
                                         # omitted: the simulated default rack
    resources = { "rack:lab-a-3" = 1 }   # default { "rack:<name>" = 1 }
    experiment = "clock_offset"
    duration_s = 30
    params = { stimulus_every_s = "10" }
    arm = false                          # --arm of `rackclock run`
    reference_allowance = "1ms"          # --reference-allowance of `rackclock run`
    transfer = "auto"                    # auto | folder | tarball (see bench/fleet/tasks.py)
    cpus = 1                             # this rack's CPUs (a large rack: more)

A node runs at most (its CPUs / a rack's cpus) racks at once; the rest queue in Ray until a
rack ends, so an over-full bench host delays racks instead of making every rack's probes late.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.errors import RackclockError

TRANSFERS = ("auto", "folder", "tarball")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")     # a rack's name is a folder name
FLEET_KEYS = {"name", "experiment", "duration_s", "params", "cpus"}
RACK_KEYS = {"rack", "resources", "experiment", "duration_s", "params", "arm",
             "reference_allowance", "transfer", "cpus"}
# CPUs a rack's task asks for unless the fleet file says (`cpus`). Measured on this project's
# 2-vCPU machine, a 30 s `rackclock run` (bench and simulator, start-up included) used 0.31 of a
# core on the 15-device default rack and 0.07 on a rack of two devices (about 0.05 + 0.02 per
# device; docs/FLEET.md): 0.5 holds the default rack with room for its start-up
CPU_PER_RACK = 0.5


class FleetError(RackclockError, ValueError):
    """The fleet file is wrong: said before any rack starts."""


@dataclass(frozen=True)
class RackEntry:
    name: str
    rack_file: str | None                 # None: the simulated default rack
    experiment: str = "clock_offset"
    duration_s: float | None = None
    params: tuple[tuple[str, str], ...] = ()
    resources: tuple[tuple[str, float], ...] = ()
    arm: bool = False
    reference_allowance: str | None = None
    transfer: str = "auto"
    cpus: float = CPU_PER_RACK

    def run_argv(self, out: str) -> list[str]:
        """The `rackclock run` arguments of this rack's experiment, its run folder under `out`."""
        argv = ["run", self.experiment, "--out", out, "--quiet"]
        if self.rack_file is not None:
            argv += ["--rack", self.rack_file]
        if self.duration_s is not None:
            argv += ["--duration", f"{self.duration_s:g}"]
        for k, v in self.params:
            argv += ["--param", f"{k}={v}"]
        if self.arm:
            argv.append("--arm")
        if self.reference_allowance:
            argv += ["--reference-allowance", self.reference_allowance]
        return argv

    def public(self) -> dict:
        return {"rack_file": self.rack_file or "default (simulated)",
                "experiment": self.experiment, "duration_s": self.duration_s,
                "params": dict(self.params), "resources": dict(self.resources), "arm": self.arm,
                "reference_allowance": self.reference_allowance, "transfer": self.transfer,
                "cpus": self.cpus}


@dataclass(frozen=True)
class FleetConfig:
    name: str
    racks: tuple[RackEntry, ...]
    source: str = ""
    base: str = ""                        # the folder relative rack paths were taken against

    def resources(self) -> dict[str, float]:
        """Every custom resource the racks ask for (what an embedded Ray node declares)."""
        out: dict[str, float] = {}
        for r in self.racks:
            for k, v in r.resources:
                out[k] = out.get(k, 0) + v
        return out


def _params(where: str, x) -> dict[str, str]:
    if x is None:
        return {}
    if not isinstance(x, dict) or any(isinstance(v, (dict, list)) for v in x.values()):
        raise FleetError(f"{where}.params: expected a table of KEY = value")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in x.items()}


def _duration(where: str, x) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0:
        raise FleetError(f"{where}.duration_s: expected a positive number of seconds, got {x!r}")
    return float(x)


def _cpus(where: str, x) -> float:
    if x is None:
        return CPU_PER_RACK
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= 1024:
        raise FleetError(f"{where}.cpus: expected the CPUs a rack's run takes (e.g. 0.5), "
                         f"got {x!r}")
    return float(x)


def _resources(where: str, x, name: str) -> tuple[tuple[str, float], ...]:
    if x is None:
        return ((f"rack:{name}", 1.0),)
    if not isinstance(x, dict) or not x:
        raise FleetError(f"{where}.resources: expected a table such as {{ \"rack:{name}\" = 1 }}")
    out = []
    for k, v in x.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise FleetError(f"{where}.resources.{k}: expected a positive amount, got {v!r}")
        if k in ("CPU", "GPU", "memory", "object_store_memory"):
            raise FleetError(f"{where}.resources: {k!r} is Ray's own resource; name the host's "
                             f"custom resource (e.g. \"rack:{name}\")")
        out.append((str(k), float(v)))
    return tuple(out)


def _rack_path(where: str, rack, base: Path | None) -> str | None:
    """The rack file's path (relative ones taken against `base`), or None when not given."""
    if rack is None:
        return None
    if not isinstance(rack, str) or not rack:
        raise FleetError(f"{where}.rack: expected the rack file's path")
    if base is not None and not Path(rack).is_absolute():
        rack = str(base / rack)
    return rack


def _check_options(where: str, t: dict, experiment) -> None:
    """A rack entry's experiment, reference_allowance and arm, checked."""
    if not isinstance(experiment, str) or not experiment:
        raise FleetError(f"{where}.experiment: expected an experiment's name or file")
    allowance = t.get("reference_allowance")
    if allowance is not None and not isinstance(allowance, str):
        raise FleetError(f"{where}.reference_allowance: expected a string such as \"1ms\"")
    if not isinstance(t.get("arm", False), bool):
        raise FleetError(f"{where}.arm: expected true or false")


def rack_entry(name: str, t: dict, defaults: dict, base: Path | None) -> RackEntry:
    where = f"racks.{name}"
    if not NAME.match(name):
        raise FleetError(f"{where}: a rack's name is letters, digits, '.', '_', '-'")
    if not isinstance(t, dict):
        raise FleetError(f"{where}: expected a table")
    unknown = sorted(set(t) - RACK_KEYS)
    if unknown:
        raise FleetError(f"{where}: unknown key(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(RACK_KEYS))})")
    rack = _rack_path(where, t.get("rack"), base)
    transfer = t.get("transfer", "auto")
    if transfer not in TRANSFERS:
        raise FleetError(f"{where}.transfer: one of {', '.join(TRANSFERS)}, got {transfer!r}")
    experiment = t.get("experiment", defaults.get("experiment", "clock_offset"))
    _check_options(where, t, experiment)
    allowance = t.get("reference_allowance")
    params = {**_params("fleet", defaults.get("params")), **_params(where, t.get("params"))}
    duration = _duration(where, t["duration_s"]) if "duration_s" in t else \
        _duration("fleet", defaults.get("duration_s"))
    cpus = _cpus(where, t["cpus"]) if "cpus" in t else _cpus("fleet", defaults.get("cpus"))
    return RackEntry(name, rack, experiment, duration, tuple(sorted(params.items())),
                     _resources(where, t.get("resources"), name), bool(t.get("arm", False)),
                     allowance, transfer, cpus)


def fleet_from_dict(data: dict, base: Path | None = None, source: str = "") -> FleetConfig:
    """The fleet of a parsed fleet file; relative rack paths are taken against `base`."""
    fleet = data.get("fleet", {})
    if not isinstance(fleet, dict):
        raise FleetError("[fleet]: expected a table")
    unknown = sorted(set(fleet) - FLEET_KEYS) + sorted(set(data) - {"fleet", "racks"})
    if unknown:
        raise FleetError(f"unknown key(s) {', '.join(unknown)} (the file has [fleet] and "
                         f"[racks.NAME] tables)")
    racks = data.get("racks")
    if not isinstance(racks, dict) or not racks:
        raise FleetError("no racks: add a [racks.NAME] table per rack")
    entries = tuple(rack_entry(n, t, fleet, base) for n, t in racks.items())
    name = fleet.get("name", Path(source).stem if source else "fleet")
    if not isinstance(name, str) or not NAME.match(name):
        raise FleetError(f"fleet.name: letters, digits, '.', '_', '-', got {name!r}")
    return FleetConfig(name, entries, source, str(base) if base is not None else "")
