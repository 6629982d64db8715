"""The [sim] key declarations of the loader (bench/model/simkeys.py, model layer) against what the
simulator reads (bench/sim, which the model layer cannot import): every field of its config
dataclasses and every `sim.get("KEY")` of an emulator is declared, so a key added there and not
here is caught by this test, not refused in a user's rack file. And the rack file itself is read
as a bounded regular file: a FIFO, /dev/zero or a huge file is one line, not a hang or a
memory blow-up (issue 31)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import tomli_w

from bench.model.inventory import MAX_RACK_BYTES, InventoryError, load_rack
from bench.model.simkeys import CLOCK, EMULATORS, NTP, OPTIC_MODULE, check_sim, emulators
from bench.sim.clock import ClockParams
from bench.sim.faults import Fault
from bench.sim.ntp import NtpParams
from bench.sim.optic_bridge import BridgeSpec
from bench.sim.optic_cmis import ModuleSpec
from drivers.rackcheck import load_checked
from tests.racks import sim_rack_dict

ROOT = Path(__file__).resolve().parents[1]
READERS = {"redfish_bmc": ["redfish_bmc", "redfish_events"],
           "redfish_hmc": ["redfish_bmc", "redfish_events", "redfish_hmc"], "snmp_pdu": ["snmp_pdu"],
           "modbus_cooling": ["modbus_cooling", "modbus_cdu"], "serial_optic": ["serial_optic"],
           "ipmi_bmc": ["ipmi_bmc"], "k8s_scheduler": ["k8s_scheduler"],
           "host_kernel": ["host_kernel"]}


def _sample(v):
    """A field's default as a rack file would give it."""
    return list(v) if isinstance(v, tuple) else "x" if v == "" else 1 if v is None else v


def _accepts(check, table: dict) -> bool:
    try:
        check(table, "sim")
        return True
    except InventoryError:
        return False


def test_every_clock_param_fault_ntp_and_optic_field_is_declared():
    assert {f.name for f in fields(ClockParams)} == set(CLOCK) - {"seed"}
    for f in fields(Fault):
        assert _accepts(lambda t, p: check_sim({"faults": [t]}, "redfish_bmc"),
                        {"kind": "step", f.name: getattr(Fault("step"), f.name) or 0}
                        if f.name != "clock" else {"kind": "step", "clock": "datetime"}), f.name
    for f in fields(NtpParams):
        assert _accepts(NTP, {f.name: _sample(getattr(NtpParams(), f.name))}), f.name
    for f in fields(ModuleSpec):
        if f.name not in ("port", "clock"):
            assert _accepts(OPTIC_MODULE, {f.name: _sample(getattr(ModuleSpec(1), f.name))}), \
                f.name
    bridge = EMULATORS["serial_optic"]
    assert {f.name for f in fields(BridgeSpec)} <= set(bridge) | set(CLOCK)


def test_every_key_an_emulator_reads_is_declared():
    assert sorted(EMULATORS) == emulators()
    for emulator, modules in READERS.items():
        read = set()
        for m in modules:
            text = (ROOT / "bench" / "sim" / f"{m}.py").read_text()
            read |= set(re.findall(r"\bsim\.get\(\"(\w+)\"", text))
            read |= set(re.findall(r"_secret\(\"\w+\", \"(\w+)\"", text))
        assert read <= set(EMULATORS[emulator]) | set(CLOCK) | {"clocks", "faults", "emulator"}, \
            (emulator, read - set(EMULATORS[emulator]) - set(CLOCK))


def test_the_default_racks_and_their_variants_load():
    for rack in (ROOT / "bench/sim/default_rack.toml", ROOT / "experiments/power_cycle_rack.toml"):
        assert load_checked(rack).devices


def _load_in_child(path: Path) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom bench.model.inventory import load_rack, InventoryError\n"
            "try:\n    load_rack(sys.argv[1])\nexcept InventoryError as e:\n    print(e)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_fifo_as_rack_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "rack.toml"
    os.mkfifo(fifo)
    p = _load_in_child(fifo)          # no writer ever opens it: a blocking read would hang
    assert p.returncode == 0 and "not a regular file" in p.stdout, p.stdout + p.stderr


def test_a_rack_file_beyond_the_cap_is_refused(tmp_path):
    big = tmp_path / "rack.toml"
    big.write_text(tomli_w.dumps(sim_rack_dict(["bmc-1"])) + "#" * MAX_RACK_BYTES + "\n")
    with pytest.raises(InventoryError, match="larger than 8 MiB"):
        load_rack(big)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_kmsg_naming_a_regular_file_under_dev_is_refused(tmp_path):
    """The host driver writes its markers into `kmsg`: a regular file there (even under /dev)
    would be overwritten, so only a character device is taken."""
    plain = Path("/dev/shm") / f"rackclock_kmsg_{os.getpid()}"
    plain.write_text("")
    try:
        rack = tmp_path / "rack.toml"
        rack.write_text(tomli_w.dumps(sim_rack_dict(["host-1"], changes={
            "host-1": {"kmsg": str(plain)}})))
        with pytest.raises(InventoryError, match="not a character device"):
            load_checked(rack)
    finally:
        plain.unlink()
