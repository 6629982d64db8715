"""Small simulated racks for tests, cut from the default rack so their devices stay the ones
the rest of the suite knows: `sim_rack_text(["bmc-1"], changes={"bmc-1": {"sim": {...}}})`.
A `None` in `changes` removes that key."""
from __future__ import annotations

import copy
import tomllib

import tomli_w

from bench.sim.serve import DEFAULT_RACK


def _merge(into: dict, changes: dict) -> None:
    for k, v in changes.items():
        if v is None:
            into.pop(k, None)
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)


def sim_rack_dict(devices: list[str], name: str = "test-rack", seed: int | None = None,
                  changes: dict[str, dict] | None = None) -> dict:
    data = tomllib.loads(DEFAULT_RACK.read_text())
    data["rack"]["name"] = name
    if seed is not None:
        data["rack"]["seed"] = seed
    missing = set(devices) - set(data["devices"])
    assert not missing, f"not in the default rack: {missing}"
    data["devices"] = {k: v for k, v in data["devices"].items() if k in devices}
    for dev, ch in (changes or {}).items():
        _merge(data["devices"][dev], ch)
    return data


def sim_rack_text(devices: list[str], **kw) -> str:
    return tomli_w.dumps(sim_rack_dict(devices, **kw))


UTC_BMC2 = {"bmc-2": {"sim": {"local_offset_min": None, "true_local_offset_min": None}}}
