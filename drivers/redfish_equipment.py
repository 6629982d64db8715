"""Redfish cooling and power equipment: coolant distribution units, rack PDUs, power shelves.

The BMC driver's session, bracketing, log and event machinery (drivers/redfish_bmc.py,
redfish_session.py, redfish_log.py, redfish_events.py) pointed at the equipment's management
controller: the equipment is found by link from the service root (`ThermalEquipment` ->
`CDUs`..., `PowerEquipment` -> `RackPDUs`, `PowerShelves`...; drivers/redfish_discovery.py),
its Manager by the equipment's `Links.ManagedBy` (or its chassis's, as DMTF's CDU mockup
links it), and that Manager's `DateTime` is the clock read inside brackets, as a BMC's. The
log is found by the service's links (the controller's LogServices), events are heard by SSE
or push where the EventService offers them.

Stimuli, only as the inventory's allow-list says and, on a rack that is not simulated, only
with `--arm`:
- `test_event`: `EventService.SubmitTestEvent` (as the BMC's; `test_message_id` may name a
  registry message, e.g. `Environmental.1.2.PumpFailed` for a CDU's pump fault);
- `outlet_off:ID`, `outlet_on:ID`, `outlet_reboot:ID` (a rack PDU's or power shelf's outlet
  with Id ID): `Outlet.PowerControl` with `PowerState` Off, On or PowerCycle; the device
  stamps the switch in its log, and that log entry is the device's stamp of the stimulus.

Inventory keys: the BMC driver's, and `equipment` (the equipment's URI where the service
holds more than one; default the first found).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable

from bench.config.inventory import DeviceConfig, Key
from drivers import redfish_discovery as discovery
from drivers.base import DeviceError, Identity, Stimulus
from drivers.redfish_bmc import RedfishBMC
from drivers.redfish_session import counted_as

log = logging.getLogger(__name__)
OUTLET_STIMULI = {"outlet_off": "Off", "outlet_on": "On", "outlet_reboot": "PowerCycle"}


class RedfishEquipment(RedfishBMC):
    OPTIONS = {**RedfishBMC.OPTIONS, "equipment": Key("str")}

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        self.equipment_uri: str | None = config.options.get("equipment")
        self.equipment: dict = {}

    async def _find_manager(self) -> str:
        get = self._getter()
        if not self.equipment_uri:
            found = await discovery.find_equipment(get, await self._service_root())
            if not found:
                raise self._fail("protocol", "the service root links no ThermalEquipment or "
                                 "PowerEquipment holding equipment (CDUs, RackPDUs, "
                                 "PowerShelves...): not cooling or power equipment")
            self.equipment_uri = found[0]
        self.equipment = await get(self.equipment_uri, f"GET {self.equipment_uri}")
        manager = await discovery.managed_by(get, self.equipment)
        if manager is None:
            log.info("%s: %s names no ManagedBy manager: reading the first Manager with "
                     "DateTime", self.name, self.equipment_uri)
            manager, self.manager_choice, _ = await self._examine_managers()
        return manager

    def _getter(self):
        async def get(uri: str, what: str) -> dict:
            return (await self._get_json(uri, what))[0]
        return get

    async def identity(self) -> Identity:
        ident = await super().identity()
        eq = self.equipment
        return Identity(vendor=str(eq.get("Manufacturer") or ident.vendor),
                        model=str(eq.get("Model") or ident.model),
                        serial=str(eq.get("SerialNumber") or ident.serial),
                        firmware=str(eq.get("FirmwareVersion") or ident.firmware),
                        extra={**ident.extra, "equipment": self.equipment_uri or "",
                               "equipment_type": str(eq.get("EquipmentType") or ""),
                               "manager_firmware": ident.firmware})

    def stimuli(self) -> list[str]:
        return [self.TEST_EVENT, *OUTLET_STIMULI]

    @counted_as("stimulus")
    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name not in OUTLET_STIMULI:
            return await super()._stimulate(name, target)
        outlet = await self._outlet(target)
        actions = (outlet or {}).get("Actions")
        actions = actions if isinstance(actions, dict) else {}
        action = actions.get("#Outlet.PowerControl")
        uri = action.get("target") if isinstance(action, dict) else None
        if not isinstance(uri, str) or not uri:
            raise DeviceError(self.name, "refused", f"outlet {target}: no Outlet.PowerControl "
                              "action")
        body = {"PowerState": OUTLET_STIMULI[name]}
        resp, s, e, note = await self._exchange("POST", uri, body, "POST Outlet.PowerControl")
        return Stimulus(name, target, s, e, sent=True, stamp="user",
                        raw=f"HTTP {resp.status} {json.dumps(body)}" + (f" {note}" if note else ""))

    async def _outlet(self, target: str | None) -> dict:
        """The outlet with Id `target` of this equipment's Outlets collection."""
        coll_uri = discovery.link(self.equipment, "Outlets")
        if not coll_uri or not target:
            raise DeviceError(self.name, "refused", f"{self.equipment_uri} has no outlet "
                              f"{target!r}" + ("" if coll_uri else " (no Outlets)"))
        uri = f"{coll_uri.rstrip('/')}/{target}"
        coll, *_ = await self._get_json(coll_uri, f"GET {coll_uri}")
        if uri not in discovery.members(coll, self.name):
            raise DeviceError(self.name, "refused", f"no outlet {target!r} in {coll_uri}")
        outlet, *_ = await self._get_json(uri, f"GET {uri}")
        return outlet


DRIVER = RedfishEquipment
