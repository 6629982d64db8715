"""The rack file: records, allow-lists, secrets kept out of everything written."""
import json

import pytest

from bench.config.inventory import InventoryError, load_rack, rack_from_dict
from bench.run.experiment import DEFAULT_RACK

RACK = {
    "rack": {"name": "lab", "reference": "realtime", "site": "b3"},
    "devices": {
        "bmc-1": {"plane": "bmc", "driver": "redfish_bmc", "address": "https://10.0.0.21",
                  "username": "root", "password_env": "BMC1_PASSWORD",
                  "stimuli": ["test_event"], "verify_tls": False},
        "pdu-1": {"plane": "pdu", "driver": "snmp_pdu", "address": "udp://10.0.0.31:161",
                  "stimuli": ["outlet_reboot:3"], "rate_hz": 0.5},
    },
}


def test_records_and_options():
    rack = rack_from_dict(RACK)
    assert rack.name == "lab" and rack.options["site"] == "b3" and not rack.simulated
    bmc = rack.device("bmc-1")
    assert bmc.options["verify_tls"] is False and bmc.rate_hz == 1.0
    assert rack.device("pdu-1").rate_hz == 0.5


def test_allow_list_is_exact():
    rack = rack_from_dict(RACK)
    pdu = rack.device("pdu-1")
    assert pdu.allows("outlet_reboot", 3) and pdu.allows("outlet_reboot", "3")
    assert not pdu.allows("outlet_reboot", 4)
    assert not pdu.allows("outlet_reboot")          # a bare name does not allow every target
    assert rack.device("bmc-1").allows("test_event")
    assert not rack.device("bmc-1").allows("reset")


def test_secret_comes_from_the_environment_and_never_into_public(monkeypatch):
    monkeypatch.setenv("BMC1_PASSWORD", "hunter2-very-secret")
    rack = rack_from_dict(RACK)
    assert rack.device("bmc-1").secret() == "hunter2-very-secret"
    assert "hunter2" not in json.dumps(rack.public())
    assert rack.public()["devices"]["bmc-1"]["password_env"] == "BMC1_PASSWORD"


def test_inline_password_is_refused():
    bad = {"devices": {"x": {"plane": "bmc", "driver": "redfish_bmc", "address": "https://h",
                             "password": "inline"}}}
    with pytest.raises(InventoryError, match="password_env"):
        rack_from_dict(bad)


@pytest.mark.parametrize("change, match", [
    ({"address": None}, "address"),
    ({"stimuli": "test_event"}, "stimuli"),
    ({"rate_hz": 0}, "rate_hz"),
])
def test_malformed_entries_are_clear_errors(change, match):
    entry = {"plane": "bmc", "driver": "redfish_bmc", "address": "https://h", **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(InventoryError, match=match):
        rack_from_dict({"devices": {"x": entry}})


def test_default_rack_loads_and_is_simulated():
    rack = load_rack(DEFAULT_RACK)
    assert rack.simulated and rack.devices
    planes = {d.plane for d in rack.devices}
    assert "bmc" in planes
    for d in rack.devices:
        assert d.sim is not None, f"{d.name} has no [sim] table"
