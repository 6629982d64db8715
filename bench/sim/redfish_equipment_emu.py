"""Redfish cooling and power equipment: a coolant distribution unit, a rack PDU, a power shelf.

The BMC emulator's service core (bench/sim/redfish_bmc_emu.py: sessions, basic auth, limits, the
Manager's `DateTime` sampled from the clock model inside the request, NetworkProtocol and NTP,
LogServices, the EventService with SSE and push, AccountService) with the equipment's own
resources (bench/sim/redfish_equipment_payloads.py, after DMTF's mockups `public-cooling-unit`,
`public-pdu`, `public-power-shelf`): the service root links `ThermalEquipment` (CDUs) or
`PowerEquipment` (RackPDUs, PowerShelves) and `Chassis`, and no `Systems`; the equipment and
its chassis name their Manager in `Links.ManagedBy` (`Managers/CDU` for a CDU, `Managers/BMC`
for the others, as the mockups), whose one LogService `Log` records the events.

Sim keys beyond the BMC emulator's: `equipment` (cdu | rack_pdu | power_shelf, default cdu),
`pumps` (a CDU's pump count, default 2), `outlets` (a rack PDU's outlet count, default 8; a
power shelf has none). Events the equipment plays:

- a test event (`EventService.SubmitTestEvent`) as the BMC's; one whose MessageId ends in
  `PumpFailed` (DMTF's Environmental registry) is a pump fault: pump `MessageArgs[0]` (default
  1) fails (its Status and the CDU's turn Critical, a Condition is listed), truth `pump_fault`;
- `Outlet.PowerControl` (`PowerState` On | Off | PowerCycle) on a rack PDU's outlet: the
  outlet switches after `actuation_latency_s` (truth `outlet_off` / `outlet_on` with the
  outlet), the devices it feeds (`power = "NAME:OUTLET"`, bench/sim/power.py) hear it, and the
  log gets the outlet's entry after the model's log latency (truth `log`, as a test event's);
- `Manager.Reset` (and a reboot fault, bench/sim/faults.py): the controller reboots: its clock
  model's reboot, no answer for `reboot_down_s`, sessions lost.
"""
from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import web

from bench.config.inventory import DeviceConfig
from bench.config.schema import choice, num
from bench.sim import power
from bench.sim import redfish_bmc_emu as bmc
from bench.sim import redfish_equipment_payloads as E
from bench.sim import redfish_equipment_service as S
from bench.sim import redfish_payloads as P
from bench.sim.clock_model import NS, ClockModel
from bench.sim.rack import SimContext
from bench.sim.redfish_profiles import LogSpec, Profile

# cooling and power equipment on the BMC emulator's core: its keys and the equipment's own
SIM_KEYS = {
    **{k: v for k, v in bmc.SIM_KEYS.items() if k not in ("profile", "test_event_log")},
    "equipment": choice("cdu", "rack_pdu", "power_shelf"), "pumps": num(1, 16, kind="int"),
    "outlets": num(0, 64, kind="int"), "actuation_latency_s": num(0.0, 60.0, "s")}

log = logging.getLogger(__name__)
PUMP_FAILED = "PumpFailed"
OUTLET_MESSAGE = "ResourceEvent.1.3.ResourceChanged"
RESET_TYPES = ["ForceRestart", "GracefulRestart"]
ROOT_VERSION = "v1_16_0"        # the first ServiceRoot with ThermalEquipment
REGISTRY_PREFIXES = ("Base", "Environmental", "Power", "ResourceEvent", "SensorEvent", "Update")
DEFAULT_MODEL = {"cdu": "RC-CDU-800", "rack_pdu": "RC-RPDU-48", "power_shelf": "RC-PSU-33"}


def equipment_profile(kind: str, sim: dict) -> Profile:
    if kind not in E.KINDS:
        raise ValueError(f"equipment {kind!r}: one of {', '.join(E.KINDS)}")
    manager = E.KINDS[kind][2]
    name = {"cdu": "CDU Network Interface Module"}.get(kind, "Management Controller")
    return Profile(kind, manager, "", (LogSpec("Managers", "Log", "Event", "WrapsWhenFull",
                                               test_events=True, seeded=2),),
                   manager_name=name, registry_prefixes=REGISTRY_PREFIXES,
                   max_sessions=int(sim.get("max_sessions", 16)),
                   session_timeout_s=int(sim.get("session_timeout_s", 1800)),
                   rate_limit_hz=float(sim.get("rate_limit_hz", 0.0)))



def _writable_labels(patch: dict, place) -> bool:
    """Whether a PATCH writes only UserLabel (a string), LocationIndicatorActive (a boolean)
    and Location.Placement (`place`)."""
    return set(patch) <= {"UserLabel", "Location", "LocationIndicatorActive"} and \
        isinstance(patch.get("LocationIndicatorActive", False), bool) and \
        isinstance(patch.get("UserLabel", ""), str) and \
        ("Location" not in patch or _writable_placement(patch["Location"], place))


def _writable_placement(location, place) -> bool:
    """Whether a PATCH's Location holds only a Placement of Row and Rack strings."""
    return isinstance(place, dict) and set(location) == {"Placement"} \
        and set(place) <= {"Row", "Rack"} and all(isinstance(v, str) for v in place.values())

class EmulatedEquipment(bmc.EmulatedBMC):
    """One piece of equipment behind its management controller."""

    def __init__(self, device: DeviceConfig, model: ClockModel, ctx: SimContext):
        sim = dict(device.sim or {})
        self.kind = str(sim.get("equipment", "cdu"))
        self.pumps = {str(i): True for i in range(1, int(sim.get("pumps", 2)) + 1)} \
            if self.kind == "cdu" else {}
        n = int(sim.get("outlets", 8)) if self.kind == "rack_pdu" else 0
        self.outlets = {str(i): True for i in range(1, n + 1)}
        self.conditions: list[dict] = []
        self.writes: dict[str, dict] = {}       # URI -> UserLabel and Location as PATCHed
        self.actuation_s = float(sim.get("actuation_latency_s", 0.05))
        super().__init__(device, model, ctx)
        self.model_name = str(sim.get("model", DEFAULT_MODEL[self.kind]))
        self.firmware = model.p.firmware
        ctx.faults.on_reboot(self.name, self._rebooted)

    def make_profile(self, sim: dict) -> Profile:
        return equipment_profile(str(sim.get("equipment", "cdu")), sim)

    # -- the service -----------------------------------------------------------------------------
    def routes(self) -> dict:
        out = super().routes()
        for uri in (f"{P.ROOT}/Systems", self.profile.system_uri()):
            out.pop(uri, None)
        root = P.ROOT
        out[root] = {"GET": lambda r: self._static(self.service_root)}
        out[P.ODATA] = {"GET": lambda r: self._static(self.odata_document)}
        bodies = {**E.tree(self.kind, self), **S.resources(self),
                  self.network_uri: lambda: S.network_protocol(self),
                  P.EVENT_SERVICE: lambda: S.event_service(self),
                  P.ACCOUNT_SERVICE: S.account_service}
        eq = E.equipment_uri(self.kind)
        writable = [eq, E.chassis_uri(self.kind), f"{eq}/Mains/AC1", f"{eq}/Branches/A",
                    *E.supplies(self.kind)] if self.kind != "cdu" else []
        for uri, body in bodies.items():
            def shown(body=body, uri=uri) -> dict:
                return {**body(), **self.writes.get(uri, {})}
            out[uri] = {**out.get(uri, {}), "GET": lambda r, shown=shown: self._static(shown)}
            if uri in writable:
                out[uri]["PATCH"] = lambda r, uri=uri, body=body: self.patch_labels(r, uri, body)
        out[f"{eq}/Metrics/Actions/PowerDistributionMetrics.ResetMetrics"] = {
            "POST": self.reset_metrics}
        for oid in self.outlets:
            out[f"{eq}/Outlets/{oid}/Actions/Outlet.PowerControl"] = {
                "POST": lambda r, oid=oid: self.power_control(r, oid)}
        out[f"{self.manager_uri}/Actions/Manager.Reset"] = {"POST": self.manager_reset}
        for action in S.CERT_ACTIONS:
            out[f"{S.CERTS}/Actions/CertificateService.{action}"] = {"POST": self.not_implemented}
        return out

    def service_root(self) -> dict:
        body = P.service_root(self.uuid, self.profile.session_service)
        del body["Systems"]
        body[E.KINDS[self.kind][0]] = P.link(f"{P.ROOT}/{E.KINDS[self.kind][0]}")
        body["Chassis"] = P.link(E.CHASSIS)
        body.update(S.root_extras(self), ProtocolFeaturesSupported=S.features())
        body["@odata.type"] = f"#ServiceRoot.{ROOT_VERSION}.ServiceRoot"    # ThermalEquipment
        return body

    def odata_document(self) -> dict:
        body = P.odata_service_document(self.profile.session_service)
        key = E.KINDS[self.kind][0]
        body["value"] = [v for v in body["value"] if v["name"] != "Systems"] + [
            {"name": key, "kind": "Singleton", "url": f"{P.ROOT}/{key}"},
            {"name": "Chassis", "kind": "Singleton", "url": E.CHASSIS}]
        return body

    async def get_metadata(self, request: web.BaseRequest) -> web.Response:
        return web.Response(text=metadata_xml(self.profile.es_version),
                            content_type="application/xml", charset="utf-8",
                            headers=bmc.JSON_HEADERS)

    async def get_manager(self, request: web.BaseRequest) -> web.Response:
        resp = await super().get_manager(request)
        body = json_of(resp)
        body.update({"ManagerType": "ManagementController",
                     "EthernetInterfaces": P.link(f"{self.manager_uri}/EthernetInterfaces"),
                     "Description": f"The {E.EQUIPMENT_TYPE[self.kind]}'s management controller",
                     "Links": {"ManagerForChassis": [P.link(E.chassis_uri(self.kind))]},
                     "Actions": {"#Manager.Reset": {
                         "target": f"{self.manager_uri}/Actions/Manager.Reset",
                         "ResetType@Redfish.AllowableValues": RESET_TYPES}}})
        return bmc._reply(body)

    async def patch_labels(self, request: web.BaseRequest, uri: str, body) -> web.Response:
        """PATCH of `UserLabel`, `LocationIndicatorActive` and `Location.Placement` Row/Rack (the
        OCP profiles make them writable); anything else is 400 PropertyNotWritable."""
        patch = await self._json(request)
        if not isinstance(patch, dict):
            return patch
        place = (patch.get("Location") or {}).get("Placement") if isinstance(
            patch.get("Location"), dict) else None
        if not _writable_labels(patch, place):
            return bmc._error(400, "PropertyNotWritable", "Only UserLabel, LocationIndicatorActive "
                              "and Location/Placement Row and Rack can be written here.",
                              ["UserLabel/Location"])
        cur = {**body(), **self.writes.get(uri, {})}
        new = self.writes.setdefault(uri, {})
        new.update({k: patch[k] for k in ("UserLabel", "LocationIndicatorActive") if k in patch})
        if place:
            old = cur.get("Location", {}).get("Placement", {})
            new["Location"] = {**cur.get("Location", {}), "Placement": {**old, **place}}
        return bmc._reply(None, 204)

    async def reset_metrics(self, request: web.BaseRequest) -> web.Response:
        self.ctx.record_event(self.name, "metrics_reset", self.ctx.now_ns())
        return bmc._reply(None, 204)

    async def not_implemented(self, request: web.BaseRequest) -> web.Response:
        return bmc._error(501, "ActionNotSupported", f"The action {request.path.rsplit('/', 1)[1]}"
                          " is not supported by the resource.", [request.path])

    async def account_item(self, request: web.BaseRequest, user: str) -> web.Response:
        resp = await super().account_item(request, user)
        if resp.status != 200:
            return resp
        return bmc._reply({**json_of(resp), "Password": None}, headers={"ETag": resp.headers["ETag"]})

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.model.down(self.ctx.now_ns()):      # rebooting: nothing answers
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=503)
        return await super().handle(request)

    # -- what the equipment plays ----------------------------------------------------------------
    async def submit_test_event(self, request: web.BaseRequest) -> web.Response:
        t = self.ctx.now_ns()
        try:
            body = await request.json()
        except ValueError:
            body = None                    # the core answers 400 MalformedJSON
        resp = await super().submit_test_event(request)
        mid = body.get("MessageId") if isinstance(body, dict) else None
        if resp.status == 204 and self.pumps and isinstance(mid, str) and \
                mid.endswith(PUMP_FAILED):
            args = body.get("MessageArgs") or ["1"]
            self.pump_fault(t, str(args[0]), mid)
        return resp

    def pump_fault(self, t: int, pump: str, message_id: str) -> None:
        pump = pump if pump in self.pumps else next(iter(self.pumps))
        self.pumps[pump] = False
        self.conditions.append({
            "MessageId": message_id, "Message": f"Pump '{pump}' has failed.",
            "MessageArgs": [pump], "Severity": "Critical", "ConditionType": "Alert",
            "Timestamp": self.render((self.model.read_ns(t) // NS) * NS),
            "OriginOfCondition": P.link(f"{E.equipment_uri('cdu')}/Pumps/{pump}")})
        self.ctx.record_event(self.name, "pump_fault", t, pump=pump)

    async def power_control(self, request: web.BaseRequest, oid: str) -> web.Response:
        t = self.ctx.now_ns()
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        state = body.get("PowerState")
        if state not in ("On", "Off", "PowerCycle"):
            return bmc._error(400, "ActionParameterValueNotInList", f"The value '{state}' for "
                              "the parameter PowerState in the action Outlet.PowerControl is not "
                              "in the list of acceptable values.", [str(state), "PowerState",
                                                                    "Outlet.PowerControl"])
        self.ctx.record_event(self.name, "outlet_command", t, outlet=int(oid), state=state)
        loop = asyncio.get_running_loop()
        steps = [False, True] if state == "PowerCycle" else [state == "On"]
        for k, on in enumerate(steps):
            at = self.actuation_s + k * 5.0
            self._later(loop, at, lambda on=on: self._switch(oid, on))
        return bmc._reply(None, 204)

    def _later(self, loop, delay_s: float, fn) -> None:
        handle: asyncio.TimerHandle | None = None

        def run() -> None:
            self.pending.discard(handle)
            fn()
        handle = loop.call_later(max(0.0, delay_s), run)
        self.pending.add(handle)

    def _switch(self, oid: str, on: bool) -> None:
        t = self.ctx.now_ns()
        self.outlets[oid] = on
        self.ctx.record_event(self.name, "outlet_on" if on else "outlet_off", t, outlet=int(oid))
        power.bus(self.ctx).switch(self.name, int(oid), on, t)
        t_log = t + self.model.log_latency_ns()
        message = f"Outlet {oid} power {'on' if on else 'off'}"
        self._later(asyncio.get_running_loop(), (t_log - self.ctx.now_ns()) / NS,
                    lambda: self.append_entry(t_log, OUTLET_MESSAGE, message,
                                              [f"{E.equipment_uri(self.kind)}/Outlets/{oid}"],
                                              "OK", t))

    async def manager_reset(self, request: web.BaseRequest) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        kind = body.get("ResetType", "GracefulRestart")
        if kind not in RESET_TYPES:
            return bmc._error(400, "ActionParameterValueNotInList", f"The value '{kind}' for the "
                              "parameter ResetType in the action Manager.Reset is not in the "
                              "list of acceptable values.", [str(kind), "ResetType",
                                                             "Manager.Reset"])
        at = self.ctx.now_ns() + round(0.2 * NS)       # after this answer has gone
        self.model.add_reboot(at)
        self.ctx.record_event(self.name, "reset", at, reset_type=kind)
        self._rebooted(at)
        return bmc._reply(None, 204)

    def _rebooted(self, at: int) -> None:
        """A reboot of the controller: the sessions it held are gone."""
        self.sessions.clear()


def json_of(resp: web.Response) -> dict:
    return json.loads(resp.text or "{}")


def metadata_xml(es_version: str) -> str:
    """The BMC's `$metadata` with the equipment's schemas referenced too."""
    text = P.metadata_xml({"EventService": es_version, "ServiceRoot": ROOT_VERSION})
    refs = []
    versions = {**E.VERSIONS, **S.VERSIONS}
    for ns in sorted([*versions, *E.COLLECTIONS, *S.COLLECTIONS]):
        inc = [f'    <edmx:Include Namespace="{ns}"/>']
        if ns in versions:
            inc.append(f'    <edmx:Include Namespace="{ns}.{versions[ns]}"/>')
        refs.append(f'  <edmx:Reference Uri="{P.SCHEMAS}/{ns}_v1.xml">\n' + "\n".join(inc)
                    + "\n  </edmx:Reference>\n")
    head, sep, tail = text.partition("  <edmx:DataServices>")
    return head + "".join(refs) + sep + tail


async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]:
    return await bmc.serve(devices, ctx, EmulatedEquipment, S.TLS_NAME)
