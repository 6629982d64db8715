"""Small simulated racks for tests, cut from the default rack so their devices stay the ones
the rest of the suite knows: `sim_rack_text(["bmc-1"], changes={"bmc-1": {"sim": {...}}})`.
A `None` in `changes` removes that key."""
from __future__ import annotations

import contextlib
import copy
import os
import secrets
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

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


@contextlib.contextmanager
def served_rack(tmp_path, monkeypatch, devices: list[str]):
    """`rackclock sim` serving these devices of the default rack in a process of its own (their
    credentials set in the environment); yields its folder (`rack.toml`: a lab rack to clients)."""
    from bench.config.inventory import load_rack

    rack_file = tmp_path / "small.toml"
    rack_file.write_text(sim_rack_text(devices))
    for d in load_rack(rack_file).devices:
        for var in [d.password_env] + [v for k, v in d.options.items() if k.endswith("_env")]:
            if var:
                monkeypatch.setenv(var, secrets.token_urlsafe(9))
    out = tmp_path / "served"
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "sim", "--rack", str(rack_file),
                             "--out", str(out)], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "rack.toml").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.05)
        yield out
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
