"""Redfish resources of a rack's cooling and power equipment, shaped after DMTF's mockups
(Redfish-Publications `mockups/public-cooling-unit`, `public-pdu`, `public-power-shelf`) and
the OCP profiles (OCPCoolantDistributionUnit, OCPLiquidCoolingBaseline, OCPRackPDU,
OCPPowerShelfManagement): the properties those profiles make mandatory, with fixed readings.

`tree(kind, state)` gives {URI: body()} for one piece of equipment; bodies are built at each
GET from `state` (the pumps' and outlets' live state, held by bench/sim/redfish_equipment_emu.py).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from bench.sim import redfish_equipment_shelf as shelf
from bench.sim.redfish_payloads import ROOT, collection, link

Body = Callable[[], dict]
THERMAL, POWER, CHASSIS = f"{ROOT}/ThermalEquipment", f"{ROOT}/PowerEquipment", f"{ROOT}/Chassis"
# where each kind hangs: (the equipment collection's parent key, its URI, the Manager Id)
KINDS = {"cdu": ("ThermalEquipment", f"{THERMAL}/CDUs", "CDU"),
         "rack_pdu": ("PowerEquipment", f"{POWER}/RackPDUs", "BMC"),
         "power_shelf": ("PowerEquipment", f"{POWER}/PowerShelves", "BMC")}
CHASSIS_ID = {"cdu": "CDU", "rack_pdu": "PDU", "power_shelf": "PowerShelf"}
EQUIPMENT_TYPE = {"cdu": "CDU", "rack_pdu": "RackPDU", "power_shelf": "PowerShelf"}
VERSIONS = {   # resource types served, at the CSDL bundle's versions (for $metadata)
    "CoolingUnit": "v1_5_0", "PowerDistribution": "v1_6_0", "Outlet": "v1_4_4",
    "Circuit": "v1_9_0", "Pump": "v1_2_0", "CoolantConnector": "v1_3_0",
    "LeakDetection": "v1_2_0", "LeakDetector": "v1_6_0", "Chassis": "v1_28_0",
    "PowerDistributionMetrics": "v1_4_0", "ThermalEquipment": "v1_2_0",
    "PowerEquipment": "v1_2_3", "Sensor": "v1_12_0", **shelf.VERSIONS}
COLLECTIONS = [*shelf.COLLECTIONS, "ChassisCollection", "CircuitCollection", "CoolantConnectorCollection",
               "CoolingUnitCollection", "LeakDetectorCollection", "OutletCollection",
               "PowerDistributionCollection", "PumpCollection", "SensorCollection"]
OK = {"State": "Enabled", "Health": "OK"}


def _t(name: str) -> str:
    return f"#{name}.{VERSIONS[name]}.{name}"


def _r(value: float, source: str | None = None) -> dict:
    return {"Reading": value, **({"DataSourceUri": source} if source else {})}


def _coll(uri: str, odata: str, name: str, members: list[str]) -> Body:
    return lambda: collection(uri, f"{odata}.{odata}", name, [link(m) for m in members])


def equipment_uri(kind: str) -> str:
    return f"{KINDS[kind][1]}/1"


def supplies(kind: str) -> list[str]:
    """A power shelf's power supplies (bench/sim/redfish_equipment_shelf.py)."""
    ps = f"{chassis_uri(kind)}/PowerSubsystem/PowerSupplies"
    return [f"{ps}/{b}" for b in shelf.BAYS] if kind == "power_shelf" else []


def chassis_uri(kind: str) -> str:
    return f"{CHASSIS}/{CHASSIS_ID[kind]}"


def _identity(state) -> dict:
    return {"Manufacturer": state.manufacturer, "Model": state.model_name,
            "SerialNumber": state.serial, "PartNumber": f"{state.model_name[:8]}-01",
            "FirmwareVersion": state.firmware, "Version": "1.03b",
            "ProductionDate": "2025-06-01T08:00:00Z", "UUID": state.uuid}


def _health(state) -> dict:
    bad = any(not ok for ok in state.pumps.values())
    return {"State": "Enabled", "Health": "Critical" if bad else "OK"}


def tree(kind: str, state) -> dict[str, Body]:
    """Every resource of one piece of equipment, its chassis and the collections above them."""
    parent_key, coll_uri, _ = KINDS[kind]
    parent = f"{ROOT}/{parent_key}"
    eq, ch = equipment_uri(kind), chassis_uri(kind)
    odata = "CoolingUnit" if kind == "cdu" else "PowerDistribution"
    out: dict[str, Body] = {
        parent: lambda: {"@odata.id": parent, "@odata.type": _t(parent_key), "Id": parent_key,
                         "Name": "Cooling Equipment" if kind == "cdu" else "Power Equipment",
                         "Status": {"State": "Enabled", "HealthRollup": "OK"},
                         coll_uri.rsplit("/", 1)[1]: link(coll_uri)},
        coll_uri: _coll(coll_uri, f"{odata}Collection", f"{EQUIPMENT_TYPE[kind]} Collection",
                        [eq]),
        CHASSIS: _coll(CHASSIS, "ChassisCollection", "Chassis Collection", [ch]),
        ch: lambda: _chassis(kind, state),
        f"{ch}/Sensors": _coll(f"{ch}/Sensors", "SensorCollection", "Sensors",
                               [f"{ch}/Sensors/Temperature"]),
        f"{ch}/Sensors/Temperature": lambda: _sensor(f"{ch}/Sensors/Temperature", state),
    }
    out.update(_cdu(state) if kind == "cdu" else _power(kind, state))
    if kind == "power_shelf":
        out.update(shelf.tree(ch, state))
    return out


def _chassis(kind: str, state) -> dict:
    ch, eq = chassis_uri(kind), equipment_uri(kind)
    links: dict[str, Any] = {"ManagedBy": [link(state.manager_uri)]}
    if kind == "cdu":
        links["CoolingUnits"] = [link(eq)]
    else:
        links["PowerDistribution"] = link(eq)
    return {"@odata.id": ch, "@odata.type": _t("Chassis"), "Id": CHASSIS_ID[kind],
            "Name": f"Chassis of the {EQUIPMENT_TYPE[kind]}", "ChassisType": "RackMount",
            **{k: v for k, v in _identity(state).items() if k not in ("FirmwareVersion",
                                                                       "ProductionDate")},
            "PowerState": "On", "Status": _health(state) if kind == "cdu" else OK,
            "Location": {"Placement": {"Row": "North 1", "Rack": "42"}},
            "Sensors": link(f"{ch}/Sensors"), "Links": links,
            **(shelf.chassis_links(ch) if kind == "power_shelf" else {})}


def _sensor(uri: str, state) -> dict:
    return {"@odata.id": uri, "@odata.type": _t("Sensor"), "Id": "Temperature",
            "Name": "Internal temperature", "ReadingType": "Temperature", "ReadingUnits": "Cel",
            "Reading": 31.5, "ReadingTime": state.now_rendered(), "SensingInterval": "PT1S",
            "Status": OK}


# -- a coolant distribution unit (public-cooling-unit) ---------------------------------------------
def _cdu(state) -> dict[str, Body]:
    eq = equipment_uri("cdu")
    pumps = [f"{eq}/Pumps/{p}" for p in state.pumps]
    out: dict[str, Body] = {
        eq: lambda: _cooling_unit(state),
        f"{eq}/Pumps": _coll(f"{eq}/Pumps", "PumpCollection", "Pumps", pumps),
        f"{eq}/LeakDetection": lambda: _leak_detection(eq),
        f"{eq}/LeakDetection/LeakDetectors": _coll(
            f"{eq}/LeakDetection/LeakDetectors", "LeakDetectorCollection", "Leak Detectors",
            [f"{eq}/LeakDetection/LeakDetectors/Moisture"]),
        f"{eq}/LeakDetection/LeakDetectors/Moisture": lambda: {
            "@odata.id": f"{eq}/LeakDetection/LeakDetectors/Moisture",
            "@odata.type": _t("LeakDetector"), "Id": "Moisture", "Name": "Moisture sensor",
            "LeakDetectorType": "Moisture", "DetectorState": "OK", "Status": OK,
            "Location": {"PartLocation": {"ServiceLabel": "Moisture"}}},
    }
    for pid in state.pumps:
        out[f"{eq}/Pumps/{pid}"] = partial(_pump, eq, pid, state)
    for side in ("Primary", "Secondary"):
        uri = f"{eq}/{side}CoolantConnectors"
        out[uri] = _coll(uri, "CoolantConnectorCollection", f"{side} Coolant Connectors",
                         [f"{uri}/1"])
        out[f"{uri}/1"] = partial(_connector, f"{uri}/1", side)
    return out


def _cooling_unit(state) -> dict:
    eq = equipment_uri("cdu")
    return {"@odata.id": eq, "@odata.type": _t("CoolingUnit"), "Id": "1", "EquipmentType": "CDU",
            "Name": "Rack Coolant Distribution Unit", **{k: v for k, v in _identity(state).items()
                                                         if k != "UUID"},
            "Status": {**_health(state), "Conditions": list(state.conditions)},
            "Coolant": _coolant(), "CoolingCapacityWatts": 80000,
            "PrimaryCoolantConnectors": link(f"{eq}/PrimaryCoolantConnectors"),
            "SecondaryCoolantConnectors": link(f"{eq}/SecondaryCoolantConnectors"),
            "Pumps": link(f"{eq}/Pumps"), "LeakDetection": link(f"{eq}/LeakDetection"),
            "Links": {"Chassis": [link(chassis_uri("cdu"))],
                      "ManagedBy": [link(state.manager_uri)]}}


def _coolant() -> dict:
    return {"CoolantType": "Water", "AdditiveName": "Glycol", "AdditivePercent": 20,
            "SpecificHeatkJoulesPerKgK": 3.974, "DensityKgPerCubicMeter": 1030}


def _pump(eq: str, pid: str, state) -> dict:
    ok = state.pumps[pid]
    return {"@odata.id": f"{eq}/Pumps/{pid}", "@odata.type": _t("Pump"), "Id": pid,
            "Name": f"CDU Pump {pid}", "PumpType": "Liquid",
            "Status": {"State": "Enabled" if ok else "UnavailableOffline",
                       "Health": "OK" if ok else "Critical"},
            "PumpSpeedPercent": _r(42.5 if ok else 0.0),
            "Location": {"PartLocation": {"ServiceLabel": f"Pump {pid}"}}}


def _leak_detection(eq: str) -> dict:
    uri = f"{eq}/LeakDetection"
    return {"@odata.id": uri, "@odata.type": _t("LeakDetection"), "Id": "LeakDetection",
            "Name": "Leak Detection", "Status": OK,
            "LeakDetectors": link(f"{uri}/LeakDetectors"),
            "LeakDetectorGroups": [{"GroupName": "Drip tray", "HumidityPercent": _r(41.0),
                                    "Status": OK,
                                    "Detectors": [{"DataSourceUri":
                                                   f"{uri}/LeakDetectors/Moisture",
                                                   "DetectorState": "OK"}]}]}


def _connector(uri: str, side: str) -> dict:
    supply, ret = (17.0, 27.5) if side == "Primary" else (25.0, 35.0)
    return {"@odata.id": uri, "@odata.type": _t("CoolantConnector"), "Id": "1",
            "Name": f"{side} coolant connector", "CoolantConnectorType": "Pair",
            "Coolant": _coolant(), "RatedFlowLitersPerMinute": 120, "Status": OK,
            "FlowLitersPerMinute": _r(96.0), "HeatRemovedkW": _r(66.3),
            "SupplyTemperatureCelsius": _r(supply), "ReturnTemperatureCelsius": _r(ret),
            "DeltaTemperatureCelsius": _r(ret - supply), "SupplyPressurekPa": _r(310.0),
            "ReturnPressurekPa": _r(220.0), "DeltaPressurekPa": _r(90.0)}


# -- a rack PDU or a power shelf (public-pdu, public-power-shelf) ----------------------------------
def _power(kind: str, state) -> dict[str, Body]:
    eq = equipment_uri(kind)
    outlets = [f"{eq}/Outlets/{o}" for o in state.outlets]
    out: dict[str, Body] = {
        eq: lambda: _distribution(kind, state),
        f"{eq}/Metrics": lambda: {
            "@odata.id": f"{eq}/Metrics", "@odata.type": _t("PowerDistributionMetrics"),
            "Id": "Metrics", "Name": "Metrics", "PowerWatts": _r(5120.0),
            "EnergykWh": _r(36166.0), "PowerLoadPercent": _r(41.0),
            "TemperatureCelsius": _r(31.5),
            "Actions": {"#PowerDistributionMetrics.ResetMetrics": {
                "target": f"{eq}/Metrics/Actions/PowerDistributionMetrics.ResetMetrics"}}},
        f"{eq}/Mains": _coll(f"{eq}/Mains", "CircuitCollection", "Mains", [f"{eq}/Mains/AC1"]),
        f"{eq}/Mains/AC1": lambda: _circuit(f"{eq}/Mains/AC1", "AC1", "Mains", []),
        f"{eq}/Branches": _coll(f"{eq}/Branches", "CircuitCollection", "Branches",
                                [f"{eq}/Branches/A"]),
        f"{eq}/Branches/A": lambda: _circuit(f"{eq}/Branches/A", "A", "Branch", outlets),
        f"{eq}/Outlets": _coll(f"{eq}/Outlets", "OutletCollection", "Outlets", outlets),
    }
    for oid in state.outlets:
        out[f"{eq}/Outlets/{oid}"] = partial(_outlet, eq, oid, state)
    return out


def _distribution(kind: str, state) -> dict:
    eq = equipment_uri(kind)
    body = {"@odata.id": eq, "@odata.type": _t("PowerDistribution"), "Id": "1",
            "EquipmentType": EQUIPMENT_TYPE[kind], "Name": f"{EQUIPMENT_TYPE[kind]}1",
            "UserLabel": state.name, **_identity(state), "Status": OK,
            "Location": {"Placement": {"Row": "North 1", "Rack": "42"}},
            "Mains": link(f"{eq}/Mains"), "Branches": link(f"{eq}/Branches"),
            "Metrics": link(f"{eq}/Metrics"),
            "Links": {"Chassis": [link(chassis_uri(kind))],
                      "ManagedBy": [link(state.manager_uri)]}}
    if state.outlets:
        body["Outlets"] = link(f"{eq}/Outlets")
    return body


def _electrical(volts: float, amps: float) -> dict:
    return {"VoltageType": "AC", "NominalVoltage": "AC230V", "PhaseWiringType": "OnePhase3Wire",
            "ElectricalContext": "Line1ToNeutral", "RatedCurrentAmps": 16,
            "Voltage": _r(volts), "CurrentAmps": _r(amps), "PowerWatts": _r(volts * amps),
            "EnergykWh": _r(1234.5), "FrequencyHz": _r(50.0)}


def _circuit(uri: str, cid: str, ctype: str, outlets: list[str]) -> dict:
    body = {"@odata.id": uri, "@odata.type": _t("Circuit"), "Id": cid, "Name": f"{ctype} {cid}",
            "CircuitType": ctype, "UserLabel": f"{ctype} {cid}", "PowerState": "On",
            "Status": OK, **_electrical(230.0, 22.3)}
    if ctype == "Mains":
        body["Links"] = {}
    if ctype == "Branch":
        body["PowerRestorePolicy"] = "AlwaysOn"
        body["Links"] = {"Outlets": [link(o) for o in outlets]}
    return body


def _outlet(eq: str, oid: str, state) -> dict:
    uri = f"{eq}/Outlets/{oid}"
    on = state.outlets[oid]
    return {"@odata.id": uri, "@odata.type": _t("Outlet"), "Id": oid, "Name": f"Outlet {oid}",
            "OutletType": "IEC_60320_C13", "PowerRestorePolicy": "AlwaysOn",
            "PowerState": "On" if on else "Off", "PowerEnabled": True, "Status": OK,
            **_electrical(230.0, 1.7 if on else 0.0),
            "Links": {"BranchCircuit": link(f"{eq}/Branches/A")},
            "Actions": {"#Outlet.PowerControl": {
                "target": f"{uri}/Actions/Outlet.PowerControl",
                "PowerState@Redfish.AllowableValues": ["On", "Off", "PowerCycle"]}}}
