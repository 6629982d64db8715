"""GPU baseboard management controller emulator (an HGX-style HMC, OCP UBB profile).

The BMC emulator's core (bench/sim/redfish_bmc_emu.py: sessions, DateTime from the clock model,
NetworkProtocol/NTP, EventService with SubmitTestEvent and SSE, LogServices, faults) laid out as
NVIDIA's public HGX HMC layout: Manager `Managers/HGX_BMC_0` (DateTime in UTC, `+00:00`),
baseboard `Systems/HGX_Baseboard_0` with GPUs `Processors/GPU_SXM_n`, a chassis per GPU
`Chassis/HGX_GPU_SXM_n` with temperature and power Sensors, the event log
`Systems/HGX_Baseboard_0/LogServices/EventLog` (GPU events: Xid-like errors, thermal events;
test events) and the BMC journal; and the TelemetryService
(bench/sim/redfish_hmc_payloads.py): two periodic MetricReportDefinitions,
`HGX_PlatformEnvironmentMetrics_0` (GPU temperature and power) and `HGX_ProcessorMetrics_0`
(SM clock and ThrottleCauses), whose MetricReports (`ReportUpdates: Overwrite`, the latest one)
carry in every MetricValue a `Timestamp` read from the controller's own clock model, in ms:
the instant the value was sampled, and for the state metric ThrottleCauses the instant it was
last updated (its first sample showing the current value), as an event-driven sensor is.

Reports are generated every `report_period_s` of reference time from the emulator's start
(report k at start + k x period; its values sampled 1 ms apart before it, in report order): a
report is computed when first asked for, from the models at those past instants, so a report
never shows a later step early. Each report served is recorded in the truth (`metric_report`,
its true instant and stamp); so is the start of a throttle (`thermal_throttle`) and an Xid event
(`xid`).

The cascade's stand-in (bench/sim/cascade.py): with `throttle_on_test_event`, a test event
starts the modelled thermal throttle of GPU `throttle_gpu` for `throttle_s`: from that instant
the GPU reports ThrottleCauses ["ThermalLimit"], a lower SM clock and a hot temperature, and
the event log gets a thermal entry after the model's log latency. `xid_events = [{at_s, gpu,
xid}]` logs Xid-like errors (`at_s` from the emulator's start). While the clock model is down
after a reboot fault the controller does not answer, and its sessions are gone when it returns.

Sim keys beyond the BMC emulator's: `gpus` (1-8, default 8), `report_period_s` (default 1 s),
`throttle_on_test_event`, `throttle_gpu`, `throttle_s`, `xid_events`.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from bench.config.inventory import DeviceConfig
from bench.config.schema import FLAG, list_of, num, table
from bench.sim import redfish_bmc_emu as redfish_bmc
from bench.sim import redfish_hmc_payloads as H
from bench.sim import redfish_payloads as P
from bench.sim.clock_model import AT_S, NS, ClockModel
from bench.sim.rack import SimContext
from bench.sim.redfish_profiles import LogSpec, Profile, profile_of

# the BMC emulator's keys (its vendor profile aside) and the GPU baseboard's own
SIM_KEYS = {
    **{k: v for k, v in redfish_bmc.SIM_KEYS.items() if k != "profile"},
    "gpus": num(1, 8, kind="int"), "report_period_s": num(0.1, 3600.0, "s"),
    "throttle_on_test_event": FLAG, "throttle_gpu": num(1, 8, kind="int"),
    "throttle_s": num(0.0, 86400.0, "s"),
    "xid_events": list_of(table({"at_s": AT_S, "gpu": num(1, 8, kind="int"),
                                 "xid": num(0, 255, kind="int")}, required=("at_s", "gpu", "xid")))}

log = logging.getLogger(__name__)
MS = 1_000_000
VALUE_GAP_NS = MS              # a report's values are sampled this far apart, before it
XID_TEXT = {13: "Graphics Engine Exception", 31: "GPU memory page fault",
            48: "Double Bit ECC Error", 79: "GPU has fallen off the bus"}

HGX = Profile(
    "hgx", "HGX_BMC_0", "HGX_Baseboard_0",
    (LogSpec("Systems", "EventLog", "Event", "WrapsWhenFull", test_events=True, seeded=1),
     LogSpec("Managers", "Journal", "OEM", "WrapsWhenFull", seeded=3, seed_type="Oem",
             oem_format="BMC Journal Entry", message_ids=False)),
    manager_name="HGX BMC", datetime_utc="+00:00")


class EmulatedHMC(redfish_bmc.EmulatedBMC):
    """The BMC emulator with the HGX layout, GPUs and a TelemetryService."""

    CERT_PREFIX = "redfish-hmc"    # its TLS files in the simulator's folder (one CA per emulator)

    def make_profile(self, sim: dict) -> Profile:
        return profile_of(sim, HGX)          # the HGX layout, with the sim table's overrides

    def __init__(self, device: DeviceConfig, model: ClockModel, ctx: SimContext):
        sim = dict(device.sim or {})
        self.gpus = int(sim.get("gpus", 8))
        self.period_ns = round(float(sim.get("report_period_s", 1.0)) * NS)
        self.throttle_on_test = bool(sim.get("throttle_on_test_event", False))
        self.throttle_gpu = int(sim.get("throttle_gpu", 1))
        self.throttle_ns = round(float(sim.get("throttle_s", 30.0)) * NS)
        self.xid_events = list(sim.get("xid_events", []))
        self.throttles: list[tuple[int, int]] = []      # (gpu, reference ns it began)
        self.started = ctx.now_ns()
        self._reported: dict[str, int] = {}             # report Id -> last k recorded
        super().__init__(device, model, ctx)
        self.model_name = str(sim.get("model", "HGX HMC (emulated)"))
        self.manufacturer = str(sim.get("manufacturer", "NVIDIA"))
        ctx.faults.on_reboot(self.name, self._rebooted)
        self.schedule_xids()

    # -- the GPUs' state ---------------------------------------------------------------------------
    def gpu_state(self, n: int, t: int) -> dict[str, Any]:
        hot = any(g == n and at <= t < at + self.throttle_ns for g, at in self.throttles)
        wave = ((t - self.started) // NS + 3 * n) % 7 / 10
        energy = round((t - self.started) / NS * (385.0 + 10 * n), 1)     # J since start
        if hot:
            return {"temp_c": 88.0 + wave, "power_w": 612.0, "sm_clock_mhz": 1410,
                    "throttle": ["ThermalLimit"], "health": "Warning", "energy_j": energy}
        return {"temp_c": round(41.0 + 2 * n + wave, 1), "power_w": 385.0 + 10 * n,
                "sm_clock_mhz": 1980, "throttle": [], "health": "OK", "energy_j": energy}

    def _changed_at(self, n: int, at: int, lead: int) -> int:
        """A state metric is stamped when it was last updated: the first of its samples (at
        `lead` from each report instant) that showed its current value."""
        edges = [self.started] + [x for g, on in self.throttles if g == n
                                  for x in (on, on + self.throttle_ns) if x <= at]
        edge = max(edges)
        j = -((self.started + lead - edge) // self.period_ns)          # ceil division
        return min(at, self.started + max(j, 0) * self.period_ns + lead)

    def _value_text(self, prop: str, state: dict) -> str:
        if prop.endswith("ThrottleCauses"):
            return ",".join(state["throttle"]) or "None"
        if prop.endswith("OperatingSpeedMHz"):
            return str(state["sm_clock_mhz"])
        return f"{state['temp_c'] if '_TEMP_' in prop else state['power_w']:g}"

    # -- metric reports ---------------------------------------------------------------------------
    def _latest_k(self, t: int) -> int | None:
        """The latest report generated by t, skipping instants the controller was down."""
        k = (t - self.started) // self.period_ns
        for _ in range(1000):
            if k < 0:
                return None
            if not self.model.down(self.started + k * self.period_ns):
                return k
            k -= 1
        return None

    def report(self, rid: str) -> dict:
        k = self._latest_k(self.ctx.now_ns())
        if k is None:
            return H.metric_report(rid, 0, H.render_ms(self.model.read_ns(self.started)), [])
        t_k = self.started + k * self.period_ns
        props = [(n, p) for n in range(1, self.gpus + 1) for p in H.DEFINITION_METRICS[rid](n)]
        values = []
        for i, (n, prop) in enumerate(props):
            at = t_k - (len(props) - i) * VALUE_GAP_NS
            stamped = self._changed_at(n, at, at - t_k) if prop.endswith("ThrottleCauses") else at
            values.append(H.metric_value(prop, self._value_text(prop, self.gpu_state(n, at)),
                                         H.render_ms(self.model.read_ns(stamped))))
        stamp = self.model.read_ns(t_k)
        if self._reported.get(rid, -1) < k:
            self._reported[rid] = k
            self.ctx.record_event(self.name, "metric_report", t_k, report=rid, seq=k,
                                  stamp_ns=(stamp // MS) * MS)
        return H.metric_report(rid, k, H.render_ms(stamp), values)

    # -- events: the throttle and Xid errors ------------------------------------------------------
    async def submit_test_event(self, request: web.BaseRequest) -> web.Response:
        t = self.ctx.now_ns()
        resp = await super().submit_test_event(request)
        if resp.status == 204 and self.throttle_on_test:
            self.start_throttle(self._cool_gpu(t), t)
        return resp

    def _cool_gpu(self, t: int) -> int:
        """`throttle_gpu`, or the next GPU not throttled at t: a throttle started on a GPU
        already throttled would change no ThrottleCauses value, so no reading could show it."""
        order = [(self.throttle_gpu - 1 + k) % self.gpus + 1 for k in range(self.gpus)]
        return next((n for n in order if not self.gpu_state(n, t)["throttle"]), self.throttle_gpu)

    def start_throttle(self, gpu: int, t: int) -> None:
        self.throttles.append((gpu, t))
        del self.throttles[:-64]               # a long run's test events: the latest only
        self.ctx.record_event(self.name, "thermal_throttle", t, gpu=gpu)
        self._log_later(t, f"{H.gpu_id(gpu)} temperature over its thermal limit: clocks "
                           f"throttled", ["GPU", f"{H.gpu_id(gpu)} thermal"], "Warning",
                        "ResourceEvent.1.3.ResourceErrorsDetected", "thermal_log")

    def _log_later(self, t: int, message: str, args: list, severity: str, message_id: str,
                   kind: str) -> None:
        """An event log entry stamped by the model after its log latency."""
        event_log = self.event_log
        if event_log is None:
            return
        t_log = t + self.model.log_latency_ns()
        handle: asyncio.TimerHandle | None = None

        def create() -> None:
            self.pending.discard(handle)
            created, entry_id = self._append(event_log, t_log, message, args, severity,
                                             message_id=message_id)
            self.ctx.record_event(self.name, kind, t_log, created_ns=created,
                                  entry_id=entry_id, latency_ns=t_log - t)

        delay = max(0.0, (t_log - self.ctx.now_ns()) / NS)
        handle = asyncio.get_running_loop().call_later(delay, create)
        self.pending.add(handle)

    def schedule_xids(self) -> None:
        loop = asyncio.get_running_loop()
        for ev in self.xid_events:
            at = self.started + round(float(ev["at_s"]) * NS)
            self.pending.add(loop.call_later(max(0.0, (at - self.ctx.now_ns()) / NS), self._xid,
                                             int(ev["gpu"]), int(ev["xid"])))

    def _xid(self, gpu: int, xid: int) -> None:
        t = self.ctx.now_ns()
        self.ctx.record_event(self.name, "xid", t, gpu=gpu, xid=xid)
        self._log_later(t, f"{H.gpu_id(gpu)} Xid {xid}: {XID_TEXT.get(xid, 'GPU error')}",
                        [H.gpu_id(gpu), f"Xid {xid}"], "Critical",
                        "ResourceEvent.1.3.ResourceErrorsDetected", "xid_log")

    def _rebooted(self, at_ns: int) -> None:
        self.sessions.clear()
        self.cancel_pending()

    # -- HTTP ---------------------------------------------------------------------------------------
    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.model.down(self.ctx.now_ns()):     # rebooting: nothing answers
            self.sessions.clear()
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=503)
        return await super().handle(request)

    async def _static(self, body) -> web.Response:
        return redfish_bmc._reply(H.describe(body()))

    async def get_metadata(self, request: web.BaseRequest) -> web.Response:
        return web.Response(text=P.metadata_xml({"EventService": self.profile.es_version,
                                                 **H.SCHEMA_VERSIONS}),
                            content_type="application/xml", charset="utf-8",
                            headers=redfish_bmc.JSON_HEADERS)

    def routes(self) -> dict[str, dict[str, Any]]:
        out = super().routes()
        static = lambda body: {"GET": lambda r: self._static(body)}   # noqa: E731
        out[P.ROOT] = static(lambda: {**P.service_root(self.uuid, self.profile.session_service),
                                      **H.service_root_links()})
        out[H.SYSTEM] = static(lambda: H.system(self.uuid, self.manager_uri))
        out.update({uri: static(body) for uri, body in self._gpu_resources().items()})
        out.update({uri: static(body) for uri, body in self._telemetry_resources().items()})
        return out

    def _gpu_resources(self) -> dict[str, Any]:
        gpus = range(1, self.gpus + 1)
        now = self.ctx.now_ns
        out: dict[str, Any] = {
            H.PROCESSORS: lambda: H.collection_of(H.PROCESSORS, "ProcessorCollection",
                                                  "Processor Collection",
                                                  [H.processor_uri(n) for n in gpus]),
            H.MEMORY: lambda: H.collection_of(H.MEMORY, "MemoryCollection", "Memory Collection",
                                              [f"{H.MEMORY}/GPU_SXM_{n}_DRAM_0" for n in gpus]),
            H.CHASSIS: lambda: H.collection_of(H.CHASSIS, "ChassisCollection",
                                               "Chassis Collection", [H.BASEBOARD_CHASSIS]
                                               + [H.gpu_chassis(n) for n in gpus]),
            H.BASEBOARD_CHASSIS: lambda: H.chassis(H.BASEBOARD_CHASSIS, "HGX Baseboard",
                                                   "Module", False, self.serial, self.uuid),
        }
        for n in gpus:
            proc, ch = H.processor_uri(n), H.gpu_chassis(n)
            out[proc] = lambda n=n: H.processor(n, self.gpu_state(n, now()))
            out[f"{proc}/EnvironmentMetrics"] = lambda n=n: H.environment(n, self.gpu_state(n, now()))
            out[f"{proc}/Ports"] = lambda proc=proc: H.collection_of(
                f"{proc}/Ports", "PortCollection", "Port Collection", [])
            out[ch] = lambda n=n, ch=ch: H.chassis(ch, f"HGX GPU SXM {n}", "Component", True,
                                                   f"{self.serial}-{n}", self.uuid)
            mem = f"{H.MEMORY}/GPU_SXM_{n}_DRAM_0"
            out[mem] = lambda n=n: H.memory(n)
            out[f"{mem}/MemoryMetrics"] = lambda n=n: H.memory_metrics(
                n, 91.0 if self.gpu_state(n, now())["throttle"] else 64.0)
            out[f"{ch}/Sensors"] = lambda n=n, ch=ch: H.collection_of(
                f"{ch}/Sensors", "SensorCollection", "Sensor Collection",
                [H.sensor_uri(n, "TEMP"), H.sensor_uri(n, "Power")])
            out[H.sensor_uri(n, "TEMP")] = lambda n=n: H.sensor(
                n, "TEMP", self.gpu_state(n, now())["temp_c"])
            out[H.sensor_uri(n, "Power")] = lambda n=n: H.sensor(
                n, "Power", self.gpu_state(n, now())["power_w"])
        return out

    def _telemetry_resources(self) -> dict[str, Any]:
        ids = list(H.DEFINITION_METRICS)
        period = self.period_ns / NS
        out: dict[str, Any] = {
            H.TELEMETRY: lambda: H.telemetry_service(period),
            H.DEFINITIONS: lambda: H.collection_of(
                H.DEFINITIONS, "MetricReportDefinitionCollection",
                "Metric Report Definition Collection", [f"{H.DEFINITIONS}/{i}" for i in ids]),
            H.REPORTS: lambda: H.collection_of(H.REPORTS, "MetricReportCollection",
                                               "Metric Report Collection",
                                               [f"{H.REPORTS}/{i}" for i in ids]),
            H.UPDATE: H.update_service,
            H.FIRMWARE: lambda: H.collection_of(H.FIRMWARE, "SoftwareInventoryCollection",
                                                "Firmware Inventory", [f"{H.FIRMWARE}/HGX_FW_BMC_0"]),
            f"{H.FIRMWARE}/HGX_FW_BMC_0": lambda: H.firmware("HGX_FW_BMC_0", self.model.p.firmware),
            H.SOFTWARE: lambda: H.collection_of(H.SOFTWARE, "SoftwareInventoryCollection",
                                                "Software Inventory", [f"{H.SOFTWARE}/HGX_Driver_0"]),
            f"{H.SOFTWARE}/HGX_Driver_0": lambda: H.software("HGX_Driver_0", "550.54.15"),
        }
        for rid in ids:
            out[f"{H.DEFINITIONS}/{rid}"] = lambda rid=rid: H.report_definition(
                rid, self.gpus, period)
            out[f"{H.REPORTS}/{rid}"] = lambda rid=rid: self.report(rid)
        return out


async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]:
    return await redfish_bmc.serve(devices, ctx, EmulatedHMC, EmulatedHMC.CERT_PREFIX)

