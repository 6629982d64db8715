"""The driver contract as small capability interfaces (drivers/base.py): a plane implements only
what it has, and callers ask the protocol instead of calling a default that answers nothing."""
from __future__ import annotations

import asyncio

import pytest

import drivers
from bench.config.inventory import DeviceConfig
from bench.config.loader import known_drivers
from drivers.base import (
    ClockSetter,
    ClockSource,
    Driver,
    Identity,
    LogSource,
    NtpClient,
    StimulusRefused,
    StimulusTarget,
)

CAPABILITIES = (ClockSource, LogSource, StimulusTarget, ClockSetter, NtpClient)
EXPECTED = {
    "host_kernel": {ClockSource, LogSource, StimulusTarget},
    "ipmi_bmc": {ClockSource, LogSource, StimulusTarget},
    "k8s_scheduler": {ClockSource, LogSource, StimulusTarget},
    "modbus_cooling": {ClockSource, LogSource, StimulusTarget, ClockSetter},
    "redfish_bmc": {ClockSource, LogSource, StimulusTarget, ClockSetter, NtpClient},
    "redfish_equipment": {ClockSource, LogSource, StimulusTarget, ClockSetter, NtpClient},
    "redfish_hmc": {ClockSource, LogSource, StimulusTarget, ClockSetter, NtpClient},
    "serial_optic": {ClockSource, LogSource, StimulusTarget},
    "snmp_pdu": {ClockSource, LogSource, StimulusTarget, ClockSetter},
}


def test_each_driver_is_what_it_can_do():
    assert set(known_drivers()) == set(EXPECTED)
    for name, expected in EXPECTED.items():
        cls = drivers.driver_class(name)
        assert {p for p in CAPABILITIES if issubclass(cls, p)} == expected, name


def test_the_base_has_no_empty_defaults():
    for method in ("log_entries", "stimuli", "stimulate", "set_clock", "set_ntp",
                   "can_set_clock", "can_set_ntp"):
        assert not hasattr(Driver, method), method


class ClockOnly(Driver):
    """A plane that has a clock and nothing else."""

    async def identity(self):
        return Identity(vendor="test")

    def clocks(self):
        return []

    async def read_clock(self, clock):
        raise NotImplementedError


def test_a_clock_only_plane_is_only_a_clock_source():
    drv = ClockOnly(DeviceConfig(name="x", plane="test", driver="clock_only", address=""), lambda: 0)
    assert isinstance(drv, ClockSource)
    assert not any(isinstance(drv, p) for p in (LogSource, StimulusTarget, ClockSetter, NtpClient))


def test_the_gate_refuses_what_the_inventory_does_not_allow_and_logs_unarmed(caplog):
    cls = drivers.driver_class("snmp_pdu")
    allowed = DeviceConfig(name="pdu-1", plane="power", driver="snmp_pdu",
                           address="udp://127.0.0.1:1",
                           stimuli=("set_clock",))
    drv = cls(allowed, lambda: 42, armed=False)
    st = asyncio.run(drv.set_clock(offset_s=1.0))
    assert not st.sent and st.name == "set_clock" and st.s_ns == 42
    assert "[unarmed] would set the clock of pdu-1" in caplog.text
    with pytest.raises(StimulusRefused, match="not allowed by the inventory"):
        asyncio.run(drv.stimulate("outlet_reboot", 3))


@pytest.mark.parametrize("driver,address,options", [
    ("snmp_pdu", "udp://127.0.0.1:1", {}),
    ("modbus_cooling", "tcp://127.0.0.1:1", {"map": "family_a", "timezone": "UTC"}),
    ("redfish_bmc", "https://127.0.0.1:1", {})])
def test_set_clock_with_neither_a_value_nor_an_offset_is_refused_clearly(driver, address, options):
    # found by mypy (issue 32): `offset_s * NS` with both None was a TypeError deep in the driver
    # (armed), or a "would set the clock" line (unarmed); now one clear error before anything
    cls = drivers.driver_class(driver)
    config = DeviceConfig(name="d-1", plane="test", driver=driver, address=address,
                          stimuli=("set_clock",), options=options)
    for armed in (False, True):
        drv = cls(config, lambda: 42, armed=armed)
        with pytest.raises(ValueError, match="set_clock: give value_ns or offset_s"):
            asyncio.run(drv.set_clock())
