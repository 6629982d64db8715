"""The rack file's schema (bench/config/): the generated key reference is current, the file is
read as a bounded regular file, the default racks load, and the two additions
docs/ARCHITECTURE.md's "How to add" shows each touch one file, done here in a temporary copy of
the tree (a subprocess imports the copy; no rack is started)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from bench.config.inventory import MAX_RACK_BYTES, InventoryError, load_rack
from bench.config.loader import load_checked
from bench.config.reference import reference_text
from tests.racks import sim_rack_dict

ROOT = Path(__file__).resolve().parents[1]


def test_the_key_reference_is_generated_from_the_schema():
    """docs/RACKFILE.md is what the declarations make (regenerate: tests/data/regen_rackfile.py)."""
    text = reference_text()
    assert (ROOT / "docs" / "RACKFILE.md").read_text() == text, \
        "docs/RACKFILE.md is out of date: PYTHONPATH=$PWD .venv/bin/python tests/data/regen_rackfile.py"
    for said in ("`drift_ppm`", "`sel_set`", "driver `snmp_pdu`", "'raritan'", "`offset_within`"):
        assert said in text, said


def test_the_default_racks_and_their_variants_load():
    for rack in (ROOT / "bench/sim/default_rack.toml", ROOT / "experiments/power_cycle_rack.toml"):
        assert load_checked(rack).devices


def test_a_bad_sim_key_is_refused_at_load_naming_its_path(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(tomli_w.dumps(sim_rack_dict(["pdu-1"], changes={
        "pdu-1": {"sim": {"clocks": {"sysuptime": {"wrap_tick": 5}}}}})))
    with pytest.raises(InventoryError, match="sim.clocks.sysuptime.wrap_tick.*did you mean"):
        load_checked(rack)


def _copy_tree(tmp: Path) -> Path:
    for top in ("bench", "drivers"):
        shutil.copytree(ROOT / top, tmp / top, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


def _run_in(tree: Path, code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(tree)})
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_new_clock_parameter_is_one_field_in_clock_py(tmp_path):
    """ARCHITECTURE.md: a field of ClockParams with its check is read from the rack file,
    checked, converted and documented (the reference reads CLOCK_KEYS and CLOCK_DOCS), no other
    file touched."""
    tree = _copy_tree(tmp_path)
    clock = tree / "bench" / "sim" / "clock_model.py"
    text = clock.read_text()
    anchor = "\n    @property\n    def tz_error_ns(self)"
    assert anchor in text
    clock.write_text(text.replace(anchor, '\n    settle_s: float = param(0.0, num(0.0, 60.0, "s"),'
                                  '\n        doc="how long the clock takes to settle after a '
                                  'step")\n' + anchor, 1))
    out = _run_in(tree, """
from bench.config.keys import InventoryError
from bench.sim.clock_model import CLOCK_DOCS, CLOCK_KEYS, params_from_table
from bench.sim.simtable import check_sim
check_sim({"settle_s": 2.5, "clocks": {"datetime": {"settle_s": 1}}}, "redfish_bmc")
print(params_from_table({"settle_s": 2.5}).settle_s)
try:
    check_sim({"settle_s": 99}, "redfish_bmc")
except InventoryError as exc:
    print(exc)
print(CLOCK_KEYS["settle_s"].accepted)      # what docs/RACKFILE.md will say of it
print(CLOCK_DOCS["settle_s"])
""")
    assert out.split("\n")[:4] == ["2.5", "key 'sim.settle_s': 99 is not accepted (float from 0 to "
                                   "60 s)", "float from 0 to 60 s",
                                   "how long the clock takes to settle after a step"], out


def test_a_new_pdu_vendor_is_one_file_for_the_driver_and_one_entry_for_the_emulator(tmp_path):
    """ARCHITECTURE.md: a vendor module in drivers/pdu_backends/ is found without a list; a
    layout in the emulator's vendor table is a `vendor` the [sim] table accepts."""
    tree = _copy_tree(tmp_path)
    backends = tree / "drivers" / "pdu_backends"
    (backends / "acme.py").write_text(
        (backends / "raritan.py").read_text().replace('vendor="Raritan"', 'vendor="Acme"')
        .replace('sys_object_ids=("1.3.6.1.4.1.13742",)', 'sys_object_ids=("1.3.6.1.4.1.99999",)'))
    vendors = tree / "bench" / "sim" / "snmp_pdu_vendors.py"
    vendors.write_text(vendors.read_text().replace(
        "\nLAYOUTS = {", '\nACME = VendorLayout(**{**RARITAN.__dict__, "vendor": "acme", '
        '"sys_object_id": oid("1.3.6.1.4.1.99999")})\n\nLAYOUTS = {').replace(
        "SENTRY4, RACKCLOCK)", "SENTRY4, RACKCLOCK, ACME)"))
    out = _run_in(tree, """
from drivers import pdu_backends
from bench.sim.simtable import check_sim
print(pdu_backends.load("acme").vendor, pdu_backends.for_sys_object_id("1.3.6.1.4.1.99999.1")[0])
check_sim({"vendor": "acme"}, "snmp_pdu")
print("acme" in __import__("drivers.snmp_pdu", fromlist=["x"]).DRIVER.OPTIONS["vendor"].choices)
""")
    assert out.split() == ["Acme", "acme", "True"], out


def _load_in_child(path: Path) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom bench.config.inventory import load_rack, InventoryError\n"
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
