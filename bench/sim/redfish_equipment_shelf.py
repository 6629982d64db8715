"""A power shelf's chassis beyond the others' (OCPPowerShelfManagement; DMTF's
`public-power-shelf` mockup): its PowerSubsystem with power supplies and their metrics, its
ThermalSubsystem with ThermalMetrics, and its EnvironmentMetrics, with fixed readings."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bench.sim.redfish_payloads import collection, link

Body = Callable[[], dict]
VERSIONS = {"PowerSubsystem": "v1_1_3", "PowerSupply": "v1_6_0", "PowerSupplyMetrics": "v1_2_0",
            "ThermalSubsystem": "v1_5_0", "ThermalMetrics": "v1_3_2",
            "EnvironmentMetrics": "v1_5_0"}
COLLECTIONS = ["PowerSupplyCollection"]
OK = {"State": "Enabled", "Health": "OK"}
BAYS = ("Bay1", "Bay2")


def _t(name: str) -> str:
    return f"#{name}.{VERSIONS[name]}.{name}"


def _r(value: float) -> dict:
    return {"Reading": value}


def chassis_links(ch: str) -> dict:
    return {"PowerSubsystem": link(f"{ch}/PowerSubsystem"),
            "ThermalSubsystem": link(f"{ch}/ThermalSubsystem"),
            "EnvironmentMetrics": link(f"{ch}/EnvironmentMetrics")}


def tree(ch: str, state) -> dict[str, Body]:
    ps, th = f"{ch}/PowerSubsystem", f"{ch}/ThermalSubsystem"
    out: dict[str, Body] = {
        ps: lambda: {"@odata.id": ps, "@odata.type": _t("PowerSubsystem"), "Id": "PowerSubsystem",
                     "Name": "Power Subsystem", "CapacityWatts": 33000, "Status": OK,
                     "PowerSupplies": link(f"{ps}/PowerSupplies")},
        f"{ps}/PowerSupplies": lambda: collection(
            f"{ps}/PowerSupplies", "PowerSupplyCollection.PowerSupplyCollection",
            "Power Supplies", [link(f"{ps}/PowerSupplies/{b}") for b in BAYS]),
        th: lambda: {"@odata.id": th, "@odata.type": _t("ThermalSubsystem"),
                     "Id": "ThermalSubsystem", "Name": "Thermal Subsystem", "Status": OK,
                     "ThermalMetrics": link(f"{th}/ThermalMetrics")},
        f"{th}/ThermalMetrics": lambda: {
            "@odata.id": f"{th}/ThermalMetrics", "@odata.type": _t("ThermalMetrics"),
            "Id": "ThermalMetrics", "Name": "Thermal Metrics",
            "TemperatureSummaryCelsius": {"Ambient": _r(24.0), "Internal": _r(31.5)},
            "TemperatureReadingsCelsius": [{"DeviceName": "Internal", "Reading": 31.5}]},
        f"{ch}/EnvironmentMetrics": lambda: {
            "@odata.id": f"{ch}/EnvironmentMetrics", "@odata.type": _t("EnvironmentMetrics"),
            "Id": "EnvironmentMetrics", "Name": "Environment Metrics",
            "PowerWatts": _r(5120.0), "TemperatureCelsius": _r(31.5)},
    }
    for bay in BAYS:
        uri = f"{ps}/PowerSupplies/{bay}"
        out[uri] = partial(_supply, uri, bay, state)
        out[f"{uri}/Metrics"] = partial(_metrics, f"{uri}/Metrics")
    return out


def _supply(uri: str, bay: str, state) -> dict:
    return {"@odata.id": uri, "@odata.type": _t("PowerSupply"), "Id": bay,
            "Name": f"Power supply {bay}", "PowerSupplyType": "AC", "LineInputStatus": "Normal",
            "InputNominalVoltageType": "AC200To240V", "PowerCapacityWatts": 5500,
            "Manufacturer": state.manufacturer, "Model": "RC-PSU-5500",
            "SerialNumber": f"{state.serial}-{bay}", "PartNumber": "RC-PSU-5500-01",
            "FirmwareVersion": state.firmware, "Version": "A01",
            "ProductionDate": "2025-06-01T08:00:00Z", "LocationIndicatorActive": False,
            "Location": {"PartLocation": {"ServiceLabel": bay, "LocationType": "Bay"}},
            "OutputRails": [{"NominalVoltage": 50.0}], "Status": OK,
            "Metrics": link(f"{uri}/Metrics")}


def _metrics(uri: str) -> dict:
    return {"@odata.id": uri, "@odata.type": _t("PowerSupplyMetrics"), "Id": "Metrics",
            "Name": "Power supply metrics", "Status": OK, "InputVoltage": _r(230.0),
            "InputCurrentAmps": _r(11.1), "InputPowerWatts": _r(2560.0),
            "OutputPowerWatts": _r(2480.0), "RailVoltage": [_r(50.0)],
            "RailCurrentAmps": [_r(49.6)], "RailPowerWatts": [_r(2480.0)],
            "TemperatureCelsius": _r(38.0)}
