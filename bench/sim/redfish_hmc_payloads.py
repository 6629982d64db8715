"""JSON bodies of the emulated GPU baseboard controller (an HGX-style HMC), beyond the BMC's.

Pure functions, shaped after NVIDIA's public HGX HMC layout and the OCP UBB baseline profile
(OCP_UBB_BaselineManagement v1.0.0): the baseboard `Systems/HGX_Baseboard_0` with its GPUs
`Processors/GPU_SXM_n` (ThrottleCauses, OperatingSpeedMHz, EnvironmentMetrics), a chassis per
GPU `Chassis/HGX_GPU_SXM_n` with its temperature and power Sensors, the TelemetryService with
MetricReportDefinitions and MetricReports (MetricValues stamped by the controller's clock, in
milliseconds as bmcweb renders them), and an UpdateService with the firmware inventory.
"""
from __future__ import annotations

import datetime as dt

from bench.sim.redfish_payloads import ROOT, collection, link, render_datetime

NS = 1_000_000_000
SYSTEM = f"{ROOT}/Systems/HGX_Baseboard_0"
PROCESSORS = f"{SYSTEM}/Processors"
MEMORY = f"{SYSTEM}/Memory"
CHASSIS = f"{ROOT}/Chassis"
BASEBOARD_CHASSIS = f"{CHASSIS}/HGX_Baseboard_0"
TELEMETRY = f"{ROOT}/TelemetryService"
DEFINITIONS = f"{TELEMETRY}/MetricReportDefinitions"
REPORTS = f"{TELEMETRY}/MetricReports"
UPDATE = f"{ROOT}/UpdateService"
FIRMWARE = f"{UPDATE}/FirmwareInventory"
SOFTWARE = f"{UPDATE}/SoftwareInventory"
# the HMC's report definitions: (Id, what it carries)
ENVIRONMENT = "HGX_PlatformEnvironmentMetrics_0"
PROCESSOR = "HGX_ProcessorMetrics_0"
SCHEMA_VERSIONS = {"Chassis": "v1_23_0", "Processor": "v1_18_0", "EnvironmentMetrics": "v1_3_0",
                   "Sensor": "v1_8_0", "TelemetryService": "v1_3_1", "MetricReport": "v1_5_0",
                   "MetricReportDefinition": "v1_4_2", "UpdateService": "v1_11_0",
                   "SoftwareInventory": "v1_9_0", "ComputerSystem": "v1_20_0",
                   "Memory": "v1_17_0", "MemoryMetrics": "v1_7_0"}


def gpu_id(n: int) -> str:
    return f"GPU_SXM_{n}"


def gpu_chassis(n: int) -> str:
    return f"{CHASSIS}/HGX_GPU_SXM_{n}"


def sensor_uri(n: int, kind: str) -> str:
    """kind: TEMP | Power."""
    return f"{gpu_chassis(n)}/Sensors/HGX_GPU_SXM_{n}_{kind}_0"


def processor_uri(n: int) -> str:
    return f"{PROCESSORS}/{gpu_id(n)}"


def render_ms(value_ns: int, offset_min: int = 0) -> str:
    """A reading rendered to the millisecond, `+00:00` (bmcweb's metric Timestamps)."""
    ms = value_ns // 1_000_000
    tz = dt.timezone(dt.timedelta(minutes=offset_min))
    t = dt.datetime.fromtimestamp(ms // 1000, tz).replace(microsecond=(ms % 1000) * 1000)
    return t.isoformat(timespec="milliseconds")


def _status(health: str = "OK") -> dict:
    return {"State": "Enabled", "Health": health}


def _typed(uri: str, kind: str, name: str, **body) -> dict:
    return {"@odata.id": uri, "@odata.type": f"#{kind}.{SCHEMA_VERSIONS[kind]}.{kind}",
            "Id": uri.rsplit("/", 1)[-1], "Name": name, **body}


def service_root_links() -> dict:
    return {"Chassis": link(CHASSIS), "TelemetryService": link(TELEMETRY),
            "UpdateService": link(UPDATE)}


def system(uuid: str, manager_uri: str) -> dict:
    return _typed(SYSTEM, "ComputerSystem", "HGX Baseboard", UUID=uuid, PowerState="On",
                  SystemType="Physical", Status=_status(), Description="GPU universal baseboard",
                  Processors=link(PROCESSORS), Memory=link(MEMORY),
                  LogServices=link(f"{SYSTEM}/LogServices"),
                  Links={"Chassis": [link(BASEBOARD_CHASSIS)], "ManagedBy": [link(manager_uri)]})


def processor(n: int, state: dict) -> dict:
    """A GPU: its clock and whether (and why) it is throttled now."""
    uri = processor_uri(n)
    return _typed(uri, "Processor", f"GPU {n}", ProcessorType="GPU", Manufacturer="NVIDIA",
                  Model="GH100 (emulated)", Status=_status(state["health"]),
                  Location={"PartLocation": {"ServiceLabel": f"SXM_{n}", "LocationType": "Slot",
                                             "LocationOrdinalValue": n}},
                  OperatingSpeedMHz=state["sm_clock_mhz"], Throttled=bool(state["throttle"]),
                  ThrottleCauses=list(state["throttle"]),
                  EnvironmentMetrics=link(f"{uri}/EnvironmentMetrics"), Ports=link(f"{uri}/Ports"),
                  Links={"Chassis": link(gpu_chassis(n))})


def environment(n: int, state: dict) -> dict:
    uri = f"{processor_uri(n)}/EnvironmentMetrics"
    return _typed(uri, "EnvironmentMetrics", f"GPU {n} Environment Metrics",
                  TemperatureCelsius={"DataSourceUri": sensor_uri(n, "TEMP"),
                                      "Reading": state["temp_c"]},
                  PowerWatts={"DataSourceUri": sensor_uri(n, "Power"),
                              "Reading": state["power_w"]},
                  EnergyJoules={"Reading": state["energy_j"]})


def chassis(uri: str, name: str, kind: str, sensors: bool, serial: str, uuid: str) -> dict:
    extra = {"Sensors": link(f"{uri}/Sensors")} if sensors else {}
    return _typed(uri, "Chassis", name, ChassisType=kind, Status=_status(),
                  Manufacturer="NVIDIA", Model="HGX emulated", PartNumber="699-2G520-0200-000",
                  SKU="HGX-8-GPU", SerialNumber=serial, UUID=uuid,
                  MaxPowerWatts=700.0 if sensors else 6000.0, MinPowerWatts=100.0, **extra)


def sensor(n: int, kind: str, reading: float) -> dict:
    units, rtype = ("Cel", "Temperature") if kind == "TEMP" else ("W", "Power")
    limits = (85.0, 92.0, 10.0, 5.0, 0.0) if kind == "TEMP" else (650.0, 700.0, 80.0, 50.0, 0.0)
    thresholds = {name: {"Reading": v} for name, v in
                  zip(("UpperCritical", "UpperFatal", "LowerCaution", "LowerCritical",
                       "LowerFatal"), limits)}
    return _typed(sensor_uri(n, kind), "Sensor", f"GPU {n} {rtype}", Reading=reading,
                  ReadingUnits=units, ReadingType=rtype, Status=_status(), Thresholds=thresholds)


def memory(n: int) -> dict:
    """GPU n's HBM as the UBB profile lists it."""
    uri = f"{MEMORY}/GPU_SXM_{n}_DRAM_0"
    return _typed(uri, "Memory", f"GPU {n} HBM", MemoryDeviceType="HBM3", CapacityMiB=81920,
                  AllowedSpeedsMHz=[2619], ErrorCorrection="SingleBitECC", Status=_status(),
                  Metrics=link(f"{uri}/MemoryMetrics"))


def memory_metrics(n: int, busy: float) -> dict:
    uri = f"{MEMORY}/GPU_SXM_{n}_DRAM_0/MemoryMetrics"
    return _typed(uri, "MemoryMetrics", f"GPU {n} HBM Metrics", BandwidthPercent=busy)


def telemetry_service(period_s: float) -> dict:
    return _typed(TELEMETRY, "TelemetryService", "Telemetry Service", Status=_status(),
                  ServiceEnabled=True, MaxReports=len(DEFINITION_METRICS),
                  MinCollectionInterval=_duration(period_s),
                  MetricReportDefinitions=link(DEFINITIONS), MetricReports=link(REPORTS))


def _duration(s: float) -> str:
    return f"PT{s:g}S"


# the MetricProperties of each definition, per GPU n
DEFINITION_METRICS = {
    ENVIRONMENT: lambda n: [f"{sensor_uri(n, 'TEMP')}#/Reading",
                            f"{sensor_uri(n, 'Power')}#/Reading"],
    PROCESSOR: lambda n: [f"{processor_uri(n)}#/OperatingSpeedMHz",
                          f"{processor_uri(n)}#/ThrottleCauses"],
}


def report_definition(rid: str, gpus: int, period_s: float) -> dict:
    props = [p for n in range(1, gpus + 1) for p in DEFINITION_METRICS[rid](n)]
    return _typed(f"{DEFINITIONS}/{rid}", "MetricReportDefinition", rid, Status=_status(),
                  MetricReportDefinitionType="Periodic", ReportUpdates="Overwrite",
                  ReportActions=["LogToMetricReportsCollection"],
                  Schedule={"RecurrenceInterval": _duration(period_s)},
                  MetricProperties=props, MetricReport=link(f"{REPORTS}/{rid}"))


def metric_value(prop: str, value: str, stamp: str) -> dict:
    """One MetricValue: what was sampled, its value as a string, and the controller's stamp."""
    metric_id = prop.rsplit("/", 1)[-1]
    return {"MetricId": metric_id, "MetricProperty": prop, "MetricValue": value,
            "Timestamp": stamp}


def metric_report(rid: str, seq: int, stamp: str, values: list[dict]) -> dict:
    return _typed(f"{REPORTS}/{rid}", "MetricReport", rid, ReportSequence=str(seq),
                  Timestamp=stamp, MetricReportDefinition=link(f"{DEFINITIONS}/{rid}"),
                  MetricValues=values)


def update_service() -> dict:
    return _typed(UPDATE, "UpdateService", "Update Service", ServiceEnabled=True,
                  Status=_status(), FirmwareInventory=link(FIRMWARE),
                  SoftwareInventory=link(SOFTWARE),
                  HttpPushUri=f"{UPDATE}/update",
                  HttpPushUriOptions={"HttpPushUriApplyTime": {"ApplyTime": "OnReset"}})


def firmware(fid: str, version: str) -> dict:
    return _typed(f"{FIRMWARE}/{fid}", "SoftwareInventory", fid, Status=_status(),
                  Updateable=True, Version=version, WriteProtected=False)


def software(sid: str, version: str) -> dict:
    return _typed(f"{SOFTWARE}/{sid}", "SoftwareInventory", sid, Status=_status(),
                  Updateable=False, Version=version, WriteProtected=True)


def collection_of(uri: str, kind: str, name: str, uris: list[str]) -> dict:
    return {**collection(uri, f"{kind}.{kind}", name, [link(u) for u in uris]),
            "Description": name}


def describe(body: dict) -> dict:
    """A body with a `Description` (the UBB profile wants one on every LogService and
    collection); one that has none gets its Name."""
    if isinstance(body, dict) and "@odata.type" in body and "Description" not in body:
        return {**body, "Description": str(body.get("Name", ""))}
    return body


def datetime_text(value_ns: int) -> str:
    return render_datetime(value_ns, 0)
