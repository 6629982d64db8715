"""Run folders and logs made in virtual time for the timeline tests: each device's reads come from
a clock model (bench/sim/clock_model.py), each log line is that model's reading at a known instant, so
every interval the timeline prints can be checked against the instant it stands for."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.model.store import RunStore
from bench.sim.clock_model import ClockModel, ClockParams

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_796_000_000 * NS          # 2026-11-30
SPAN_S = 600                     # reads over ten minutes: long enough to prove each drift


@dataclass
class Rack:
    """A run folder and the models of its clocks, by (device, clock)."""
    path: Path
    models: dict[tuple[str, str], ClockModel]
    t0: int

    def read(self, device: str, clock: str, t: int) -> int:
        return self.models[(device, clock)].read_ns(int(t))


def make_run(folder: Path, devices: dict[str, tuple[str, dict[str, ClockParams]]],
             name: str = "run", reads: int = 1200, seed: int = 3,
             zones: dict[str, str] | None = None) -> Rack:
    """A run folder: per device (plane, {clock: params}) random bracketed reads of each clock
    over SPAN_S; `zones`: a device's `timezone` in the manifest's inventory."""
    store = RunStore(folder, name)
    rng = np.random.default_rng(seed)
    models: dict[tuple[str, str], ClockModel] = {}
    manifest: dict = {"started_ns": T0, "run_id": name, "devices": {},
                      "inventory": {"name": "lab", "devices": {}}}
    for k, (dev, (plane, clocks)) in enumerate(devices.items()):
        w = store.samples(dev)
        specs = []
        for j, (clock, p) in enumerate(clocks.items()):
            m = models[(dev, clock)] = ClockModel(p, T0, seed=10 * k + j + 1)
            t = T0
            for _ in range(reads):
                t += int(rng.uniform(0.5, 1.5) * SPAN_S * NS / reads)
                s, e = t, t + int(rng.uniform(0.5, 3) * MS)
                if not m.down(s):
                    w.write("read", clock, s, e, m.read_ns(int(rng.integers(s, e + 1))),
                            m.p.resolution_ns, "user", "ok", "")
            specs.append({"name": clock, "resolution_ns": m.p.resolution_ns,
                          "counter": p.counter})
        w.close()
        manifest["devices"][dev] = {"plane": plane, "clocks": specs}
        inv = {"plane": plane}
        if zones and dev in zones:
            inv["log_timezone"] = zones[dev]
        manifest["inventory"]["devices"][dev] = inv
    store.write_manifest(manifest)
    store.close()
    return Rack(folder / name, models, T0)


def iso(ns: int, digits: int = 0, zone: str = "Z") -> str:
    """A Unix-ns reading as RFC 3339 to `digits` fraction digits (floored), zone suffix `zone`."""
    s, f = divmod(int(ns), NS)
    text = datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text += "." + f"{f:09d}"[:digits]
    return text + zone


def local(ns: int, zone: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A Unix-ns reading as the wall time of `zone` (no zone in the text)."""
    from zoneinfo import ZoneInfo
    return datetime.fromtimestamp(int(ns) // NS, UTC).astimezone(ZoneInfo(zone)).strftime(fmt)


def entries_of(run: Path, log: str) -> dict[int, dict]:
    """timeline.json's entries of one log file, by line number."""
    data = json.loads((run / "timeline.json").read_text())
    out = {}
    for e in data["entries"]:
        if e["log"] == log:
            out[int(e["label"].split(":", 1)[1].split(" ", 1)[0])] = e
    return out


def misses(run: Path, log: str, truth: dict[int, int]) -> list[tuple[int, dict]]:
    """The entries of `log` whose interval does not hold their line's true instant."""
    got = entries_of(run, log)
    return [(n, e) for n, e in got.items() if not e["lo_ns"] <= truth[n] <= e["hi_ns"]]


def report_of(run: Path, log: str) -> dict:
    data = json.loads((run / "timeline.json").read_text())
    return next(r for r in data["logs"] if r.get("file", "").endswith(log))
