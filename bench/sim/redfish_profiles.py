"""Vendor-shaped layouts of the emulated BMC (`[devices.NAME.sim] profile = ...`).

Each profile lays the service out as the vendor's public Redfish documentation does: the
Manager and System Ids, the LogServices under each (what LogEntryType and OverWritePolicy they
advertise, what kind of entries they hold, and which one records a SubmitTestEvent), how the
Manager renders `DateTime`, whether there is a SessionService, whether the EventService serves
SSE, and which subscription filters it advertises.

- `openbmc` (bmcweb, the emulator's default): `Managers/bmc` and `Systems/system`; the event
  log `Systems/system/LogServices/EventLog` (Redfish events), the BMC journal
  `Managers/bmc/LogServices/Journal` (OEM records); DateTime in the local offset it claims;
  SSE; RegistryPrefixes.
- `idrac` (Dell iDRAC9): `Managers/iDRAC.Embedded.1`, `Systems/System.Embedded.1`; the SEL
  `Managers/iDRAC.Embedded.1/LogServices/Sel` (SEL records) and the Lifecycle log `Lclog`
  (registry messages: where test events land); sessions time out after 1800 s of idle (the
  web server's documented default); a SubmitTestEvent missing a schema parameter is refused.
- `ilo` (HPE iLO 5/6): `Managers/1`, `Systems/1`; the Integrated Management Log
  `Systems/1/LogServices/IML` and the iLO Event Log `Managers/1/LogServices/IEL` (HPE's log
  services page); neither advertises a LogEntryType (their entries are OEM-formatted; the IEL
  keeps registry MessageIds); DateTime in UTC (`Z`); no SSE: push subscriptions only. HPE
  advises that iLO's session table is small: sessions are limited here.
- `supermicro`: `Managers/1`, `Systems/1`; one log, `Systems/1/LogServices/Log1`; DateTime in
  UTC with `+00:00`; an EventService v1_0 that lists `EventTypesForSubscription` (so a test
  event carries `EventType`), no SSE.

Session counts and rate limits are this emulator's model where the documents give no figure
(a rate limit is off unless `rate_limit_hz` is set): a request over the limit is answered 429
with `Retry-After`, a login over `max_sessions` 503 with `Retry-After`. Sim keys override a
profile's: `max_sessions`, `session_timeout_s`, `rate_limit_hz`, `retry_after_s`,
`session_service` (false: no SessionService, basic auth only), `auth_required` (false: none),
`logs` (false: no LogService at all; test events reach the subscribers only), `test_event_log`
(the Id of the log that records the test events instead of the profile's), `managers_linked`
(false: the service root has no Managers link), `manager_datetime` (false: the BMC's Manager has
no DateTime).
- `bladed` (DMTF's public-bladed mockup's shape): the enclosure's Manager `MultiBladeBMC`,
  listed first, with no DateTime, and the blade's `Blade1BMC` with one; `Systems/Blade1`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

ROOT = "/redfish/v1"


@dataclass(frozen=True)
class LogSpec:
    parent: str                  # "Managers" | "Systems"
    id: str
    entry_type: str | None       # LogEntryType advertised (None: not advertised)
    policy: str                  # OverWritePolicy
    test_events: bool = False    # SubmitTestEvent's entries land here
    seeded: int = 0              # entries there at start
    seed_type: str = "Event"     # EntryType of the seeded entries: Event | SEL | Oem
    oem_format: str = ""         # OemRecordFormat of Oem entries
    message_ids: bool = True     # entries carry a registry MessageId


@dataclass(frozen=True)
class Profile:
    name: str
    manager_id: str
    system_id: str
    logs: tuple[LogSpec, ...]
    manager_name: str = "Manager"
    datetime_utc: str = ""               # "" local offset; "Z" or "+00:00": UTC rendered so
    session_service: bool = True
    auth_required: bool = True
    max_sessions: int = 64
    session_timeout_s: int = 3600
    rate_limit_hz: float = 0.0           # 0: no limit
    retry_after_s: int = 2
    sse: bool = True
    es_version: str = "v1_8_0"
    registry_prefixes: tuple[str, ...] = ("Base",)
    event_types: tuple[str, ...] = ()     # EventTypesForSubscription
    strict_test_event: bool = False
    chassis_managers: tuple[str, ...] = ()   # Manager Ids listed before the BMC, no DateTime
    managers_linked: bool = True             # the service root links its Managers
    manager_datetime: bool = True            # the BMC's Manager has DateTime

    def manager_uri(self) -> str:
        return f"{ROOT}/Managers/{self.manager_id}"

    def system_uri(self) -> str:
        return f"{ROOT}/Systems/{self.system_id}"

    def parent_uri(self, parent: str) -> str:
        return self.manager_uri() if parent == "Managers" else self.system_uri()

    def log_uri(self, spec: LogSpec) -> str:
        return f"{self.parent_uri(spec.parent)}/LogServices/{spec.id}"

    def logs_under(self, parent: str) -> list[LogSpec]:
        return [x for x in self.logs if x.parent == parent]


PROFILES = {
    "openbmc": Profile(
        "openbmc", "bmc", "system",
        (LogSpec("Systems", "EventLog", "Event", "WrapsWhenFull", test_events=True),
         LogSpec("Managers", "Journal", "OEM", "WrapsWhenFull", seeded=5, seed_type="Oem",
                 oem_format="BMC Journal Entry", message_ids=False)),
        manager_name="OpenBMC Manager"),
    "idrac": Profile(
        "idrac", "iDRAC.Embedded.1", "System.Embedded.1",
        (LogSpec("Managers", "Sel", "SEL", "WrapsWhenFull", seeded=8, seed_type="SEL",
                 message_ids=False),
         LogSpec("Managers", "Lclog", "Multiple", "WrapsWhenFull", test_events=True, seeded=3)),
        manager_name="Manager", max_sessions=8, session_timeout_s=1800, es_version="v1_10_0",
        registry_prefixes=("Base", "IDRAC"), strict_test_event=True),
    "ilo": Profile(
        "ilo", "1", "1",
        (LogSpec("Systems", "IML", None, "WrapsWhenFull", seeded=6, seed_type="Oem",
                 oem_format="Hpe-IML", message_ids=False),
         LogSpec("Managers", "IEL", None, "WrapsWhenFull", test_events=True, seeded=4,
                 seed_type="Oem", oem_format="Hpe-iLOEventLog")),
        manager_name="Manager", datetime_utc="Z", max_sessions=6, session_timeout_s=1800,
        sse=False, es_version="v1_2_0", registry_prefixes=(),
        event_types=("StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved",
                     "Alert")),
    # a blade enclosure (DMTF's public-bladed mockup): the chassis's own Manager, listed first,
    # keeps no DateTime; the blade's BMC does
    "bladed": Profile(
        "bladed", "Blade1BMC", "Blade1",
        (LogSpec("Systems", "EventLog", "Event", "WrapsWhenFull", test_events=True),),
        manager_name="Blade 1 BMC", chassis_managers=("MultiBladeBMC",)),
    "supermicro": Profile(
        "supermicro", "1", "1",
        (LogSpec("Systems", "Log1", "SEL", "WrapsWhenFull", test_events=True, seeded=2),),
        manager_name="Manager", datetime_utc="+00:00", max_sessions=4, session_timeout_s=300,
        sse=False, es_version="v1_0_6", registry_prefixes=(),
        event_types=("StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved",
                     "Alert")),
}


def profile_of(sim: dict, base: Profile | None = None) -> Profile:
    """The sim table's profile (default openbmc; `base` instead where given) with its keys
    applied; ValueError if unknown."""
    name = str(sim.get("profile", "openbmc"))
    if base is None and name not in PROFILES:
        raise ValueError(f"profile {name!r}: one of {', '.join(PROFILES)}")
    p = base or PROFILES[name]
    keys = ("max_sessions", "session_timeout_s", "rate_limit_hz", "retry_after_s",
            "session_service", "auth_required", "managers_linked", "manager_datetime")
    p = replace(p, **{k: type(getattr(p, k))(sim[k]) for k in keys if k in sim})
    if "test_event_log" in sim:                # another of its logs records the test events
        p = replace(p, logs=tuple(replace(x, test_events=x.id == sim["test_event_log"])
                                  for x in p.logs))
    return p if sim.get("logs", True) else replace(p, logs=())
