"""Hypothesis strategies for rack files and the property every one must keep, shared by
tests/test_fuzz_rackfile.py (short, in the suite) and benchmarks/fuzz/rackfile.py (long).

Three sources of rack files: documents generated from the keys the bench knows (rack, device,
driver, [sim] and [limits] keys with values of every TOML type and edge values), structural
mutations of bench/sim/default_rack.toml (a value replaced, a key deleted or added, a list
made long), and text mutations of it (lines dropped, duplicated or cut, bytes inserted).

The property (`outcome`): `load_checked` either accepts the file or raises the project's
one-line error (InventoryError, a RackclockError) naming the file; nothing else. An accepted
simulated rack's [sim] tables also go through the simulator's own readers of them (clock
models, faults, NTP, optic modules and bridge) without an exception, so the loader's
declarations (bench/sim/simtable.py gathers them) cover what those readers need.
"""
from __future__ import annotations

import copy
import math
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import strategies as st

from bench.config.inventory import DEVICE_KEYS, RACK_KEYS, InventoryError
from bench.config.loader import known_drivers, load_checked
from bench.errors import RackclockError
from bench.model.limit_checks import KEYS as LIMIT_KEYS
from bench.sim.clock_model import CLOCK_KEYS as CLOCK
from bench.sim.serve import DEFAULT_RACK
from bench.sim.simtable import emulator_keys, emulators

DEFAULT = tomllib.loads(DEFAULT_RACK.read_text())
EMULATORS = {e: emulator_keys(e) for e in emulators()}
DEFAULT_TEXT = DEFAULT_RACK.read_text()
SIM_KEYS = sorted({*CLOCK, *(k for e in EMULATORS.values() for k in e), "faults", "clocks",
                   "by_firmware", "emulator", "modules"})
NAMES = sorted({*RACK_KEYS, *DEVICE_KEYS, *SIM_KEYS, *LIMIT_KEYS, "planes", "devices", "rack",
                "limits", "ca_file", "kubeconfig", "kmsg", "map", "version", "community_env",
                "at_s", "size_s", "kind", "after_samples", "clock", "counter", "wrap_ticks"})

KEY = st.one_of(st.sampled_from(NAMES), st.text(min_size=1, max_size=8))
EDGE = st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, -(2**63), 10**9, 0.0, -0.0, 1e-12, 1e300,
                        -1e300, math.inf, -math.inf, math.nan, "", " ", "x" * 300, "-5ms", "1e400s",
                        "/dev/../etc/passwd", "phc:/dev/ptp0", "virtual:3", "../x", "nan", True,
                        False, "realtime", "Europe/Berlin", "reboot", "wrap", "step"])
SCALAR = st.one_of(EDGE, st.booleans(), st.integers(-(2**63), 2**63 - 1),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                   st.dates(), st.times())
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEY, inner, max_size=4)), max_leaves=12)


NUM = st.one_of(st.integers(0, 100), st.floats(0, 100), st.sampled_from([1e-9, 0.5, 1e6, 2**32]))
RECORD = st.one_of(
    st.fixed_dictionaries({"at_s": NUM, "size_s": NUM}),
    st.fixed_dictionaries({"at_s": NUM, "duration_s": NUM, "rate_ppm": NUM}),
    st.fixed_dictionaries({"at_s": NUM, "delta_ppm": NUM}),
    st.fixed_dictionaries({"kind": st.sampled_from(["reboot", "wrap", "step"])}, optional={
        "clock": st.sampled_from(["datetime", "sysuptime", "x"]),
        "after_samples": st.integers(0, 5),
        "in_s": NUM, "lead_s": NUM, "size_s": NUM}),
    st.fixed_dictionaries({"at_s": NUM, "node": st.text(max_size=5)}, optional={"for_s": NUM}))
CLOCK_NAMES = st.sampled_from(["sysuptime", "hrsystemdate", "datetime", "rtc", "1", "2"])
CLOCKS = st.dictionaries(CLOCK_NAMES, st.dictionaries(st.sampled_from(sorted(CLOCK)),
                                                      st.one_of(NUM, st.booleans()), max_size=3),
                         max_size=2)
PLAUSIBLE = st.one_of(NUM, st.booleans(), st.lists(NUM, min_size=2, max_size=2),
                      st.lists(RECORD, max_size=3), CLOCKS, st.sampled_from(
                          ["none", "utc", "local", "rtc", "epoch", "refuse", "family_a", "UTC",
                           "2024-06-01T00:00:00+00:00", "pdu-1:3", "x"]))


@st.composite
def device(draw) -> dict:
    """A device of the default rack with plausible [sim] keys added, or one made of any keys
    the bench and drivers know with values of any kind."""
    if draw(st.integers(0, 3)):
        t = copy.deepcopy(DEFAULT["devices"][draw(st.sampled_from(sorted(DEFAULT["devices"])))])
        own = sorted({*CLOCK, *EMULATORS.get(t["driver"], {}), "faults", "clocks", "by_firmware"})
        t.setdefault("sim", {}).update(draw(st.dictionaries(st.sampled_from(own), PLAUSIBLE,
                                                            max_size=2)))
        return t
    t: dict[str, Any] = {"plane": draw(st.sampled_from(["bmc", "pdu", "x"])),
                         "driver": draw(st.one_of(st.sampled_from(known_drivers()),
                                                  st.text(max_size=6))),
                         "address": draw(st.sampled_from(["https://127.0.0.1:0", "udp://h:161",
                                                          "tcp://h:502", "serial://auto",
                                                          "local://", "ipmi://h:623", "x"]))}
    t.update(draw(st.dictionaries(KEY, VALUE, max_size=4)))
    if draw(st.booleans()):
        t["sim"] = draw(st.dictionaries(st.sampled_from(SIM_KEYS), VALUE, max_size=5))
    return t


@st.composite
def document(draw) -> dict:
    doc: dict[str, Any] = {"rack": {"name": "fuzz", "simulated": draw(st.integers(0, 3)) > 0}}
    if draw(st.booleans()):
        doc["rack"].update(draw(st.dictionaries(st.sampled_from(sorted(RACK_KEYS)), VALUE,
                                                max_size=2)))
    names = st.sampled_from(["d-1", "d-2", "d-3", "d-4", "d-5", "bad/name"])
    doc["devices"] = draw(st.dictionaries(names, device(), min_size=1, max_size=3))
    if not draw(st.integers(0, 3)):
        doc["limits"] = draw(st.one_of(VALUE, st.fixed_dictionaries({}, optional={
            "planes": st.dictionaries(KEY, VALUE, max_size=2),
            "devices": st.dictionaries(KEY, VALUE, max_size=2)})))
    return doc


def _places(node: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value in a nested dict/list."""
    out = [path]
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for k, v in items:
        out += _places(v, (*path, k))
    return out


@st.composite
def mutation(draw) -> dict:
    """The default rack with one to three structural changes."""
    doc = copy.deepcopy(DEFAULT)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_places(doc)[1:]))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        op = draw(st.sampled_from(["replace", "delete", "add", "long", "edge"]))
        if op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(KEY)] = draw(VALUE)
        elif op == "long":
            parent[last] = [draw(SCALAR)] * draw(st.sampled_from([2, 1001, 5000]))
        else:
            parent[last] = draw(EDGE if op == "edge" else VALUE)
    return doc


@st.composite
def text_mutation(draw) -> str:
    """The default rack's text with lines dropped, duplicated or cut, or characters inserted."""
    lines = DEFAULT_TEXT.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "cut", "insert"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
        else:
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(st.text(max_size=6)) + lines[i][j:]
    return "\n".join(lines) + "\n"


def write(folder: Path, doc: dict | str) -> Path | None:
    """The document as rack.toml in `folder`; None where TOML cannot hold it."""
    path = folder / "rack.toml"
    if isinstance(doc, dict):
        try:
            doc = tomli_w.dumps(doc)
        except (TypeError, ValueError):
            return None
    path.write_bytes(doc.encode("utf-8", "surrogatepass"))     # lone surrogates: not UTF-8
    return path


def outcome(path: Path) -> str:
    """'accepted' or 'refused'; any other exception propagates (the property fails)."""
    try:
        rack = load_checked(path)
    except InventoryError as exc:
        line = str(exc)
        assert "\n" not in line and str(path) in line, line
        return "refused"
    except RackclockError as exc:
        assert "\n" not in str(exc), str(exc)
        return "refused"
    if rack.simulated:
        for d in rack.devices:
            simulator_reads(d)
    return "accepted"


def simulator_reads(d) -> None:
    """What the simulator's config readers make of an accepted device's [sim] table."""
    from dataclasses import replace

    from bench.sim.clock_model import NS, device_models
    from bench.sim.faults import fault_from_table
    from bench.sim.ntp import NtpParams
    from bench.sim.optic_cmis import CmisModule, module_spec
    from bench.sim.serial_optic_emu import bridge_spec
    from bench.sim.snmp_pdu_emu import with_clock_defaults

    sim = dict(d.sim or {})
    emulator = sim.get("emulator", d.driver)
    if emulator == "snmp_pdu":
        sim = dict(with_clock_defaults(d).sim)
    if emulator == "serial_optic":
        specs = [module_spec(int(p), t) for p, t in (sim.get("modules") or {}).items()]
        for spec in specs:
            CmisModule(spec, 0)                     # fills its memory map from the table
        bridge_spec(replace(d, sim=sim))
        sim = {**{k: v for k, v in sim.items() if k not in ("modules", "clocks")},
               "clocks": {f"counter{s.port}": {"resolution_s": 0.001, "wrap_ticks": 2**32,
                                               **dict(s.clock)} for s in specs if s.has_counter}}
    if sim.get("ntp_model"):
        NtpParams.from_table(sim["ntp_model"])
    for f in sim.get("faults", []):
        fault_from_table(f)
    t0 = 1_780_000_000 * NS
    for m in device_models(sim, ("clock",), t0, 1, d.name).values():
        m.read_ns(t0 + NS)
        m.breaks()
