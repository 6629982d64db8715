"""Where a Redfish service keeps its logs, found by the service's own links, never by name.

Vendors lay their logs out differently (OpenBMC `Systems/system/LogServices/EventLog` and
`Managers/bmc/LogServices/Journal`; iDRAC `Managers/iDRAC.Embedded.1/LogServices/Sel` and
`Lclog`; iLO `Systems/1/LogServices/IML` and `Managers/1/LogServices/IEL`; Supermicro
`Systems/1/LogServices/Log1`). `find_logs` follows the service root's `Managers` and `Systems`
collections to each member's `LogServices` and each LogService's `Entries`; `choose` ranks what
it found by what the service says of each log (`LogEntryType`, `OverWritePolicy`,
`ServiceEnabled`) and by the entries it holds (the newest entry's `EntryType`, and whether
entries carry a registry `MessageId`, as event records do). Reusable by any Redfish driver: it
needs only a `get_json(uri, what) -> dict` coroutine.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from drivers.base import DeviceError

GetJson = Callable[[str, str], Awaitable[dict]]
# the kinds of log, best first for stimulus-to-log latency: an event log records the Redfish
# events a test event raises; a SEL records IPMI sensor events; an OEM log is the vendor's own
_TYPE_RANK = {"Event": 3, "Multiple": 2, "SEL": 2, "CXL": 1, "OEM": 0, "Oem": 0}
_POLICY_RANK = {"WrapsWhenFull": 2, "Unknown": 1, "NeverOverWrites": 0}


def link(obj: Any, key: str | None = None) -> str | None:
    """The `@odata.id` of `obj[key]` (or of `obj`), None when the answer has no such link."""
    if key is not None:
        obj = obj.get(key) if isinstance(obj, dict) else None
    uri = obj.get("@odata.id") if isinstance(obj, dict) else None
    return uri if isinstance(uri, str) and uri else None


def members(coll: dict, device: str = "redfish service") -> list[str]:
    """The member URIs of a collection; DeviceError (malformed) when `Members` is not an array."""
    raw = coll.get("Members") if isinstance(coll, dict) else None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DeviceError(device, "malformed", f"{link(coll) or 'a collection'}: Members is "
                          f"{type(raw).__name__} {str(raw)[:40]!r}, not an array")
    return [u for u in (link(m) for m in raw if isinstance(m, dict)) if u]


# equipment collections under the service root's ThermalEquipment and PowerEquipment (DSP0268)
EQUIPMENT = {"ThermalEquipment": ("CDUs", "ImmersionUnits", "HeatExchangers", "RPUs"),
             "PowerEquipment": ("RackPDUs", "PowerShelves", "FloorPDUs", "TransferSwitches",
                                "Switchgear", "ElectricalBuses")}


async def find_equipment(get_json: GetJson, root: dict) -> list[str]:
    """Every piece of cooling or power equipment the service root's links lead to, in the
    order the service lists them."""
    out: list[str] = []
    for top, colls in EQUIPMENT.items():
        uri = link(root, top)
        if not uri:
            continue
        res = await get_json(uri, f"GET {uri}")
        for key in colls:
            coll = link(res, key)
            if coll:
                out += members(await get_json(coll, f"GET {coll}"))
    return out


def first_link(resource: dict, key: str) -> str | None:
    """The first `@odata.id` of `resource["Links"][key]` (an array or one link)."""
    links = resource.get("Links") if isinstance(resource, dict) else None
    refs = links.get(key) if isinstance(links, dict) else None
    refs = refs if isinstance(refs, list) else [refs]
    return next((u for u in (link(r) for r in refs) if u), None)


async def managed_by(get_json: GetJson, resource: dict) -> str | None:
    """The Manager of a resource: its `Links.ManagedBy`, else its first chassis's (DMTF's CDU
    mockup links only its Chassis, which names the Manager)."""
    uri = first_link(resource, "ManagedBy")
    chassis = first_link(resource, "Chassis")
    if uri or not chassis:
        return uri
    return first_link(await get_json(chassis, f"GET {chassis}"), "ManagedBy")


def redfish_message(body: Any) -> str:
    """The first message of a Redfish error body, if it is one."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        info = err.get("@Message.ExtendedInfo")
        if isinstance(info, list) and info and isinstance(info[0], dict):
            return f"{info[0].get('MessageId', '')}: {info[0].get('Message', '')}"
        return str(err.get("message") or err.get("code") or "")
    return ""


@dataclass
class LogCandidate:
    """A LogService with an Entries collection, and what the service said of it."""

    service: str                      # the LogService URI
    entries: str                      # its LogEntry collection URI
    parent: str                       # the Manager or System it hangs under
    entry_type: str = ""              # LogEntryType, else the newest entry's EntryType
    policy: str = ""                  # OverWritePolicy
    enabled: bool = True              # ServiceEnabled
    count: int | None = None          # Members@odata.count of the first entries page
    message_ids: bool = False         # its entries carry a registry MessageId
    notes: list[str] = field(default_factory=list)

    def rank(self) -> tuple:
        return (self.enabled, _TYPE_RANK.get(self.entry_type, 1), self.message_ids,
                _POLICY_RANK.get(self.policy, 1), bool(self.count))

    def describe(self) -> str:
        return (f"{self.service} (LogEntryType {self.entry_type or '?'}, OverWritePolicy "
                f"{self.policy or '?'}, {self.count if self.count is not None else '?'} entries"
                + (", MessageIds" if self.message_ids else "")
                + ("" if self.enabled else ", ServiceEnabled false") + ")")


async def find_logs(get_json: GetJson, root: dict) -> list[LogCandidate]:
    """Every LogService with Entries under the service's Managers and Systems, in the order the
    service lists them. A member or log that cannot be read is skipped (its error is the
    caller's to see only if nothing at all is found)."""
    out: list[LogCandidate] = []
    for coll in ("Managers", "Systems"):
        uri = link(root, coll)
        if not uri:
            continue
        for member in members(await get_json(uri, f"GET {uri}")):
            try:
                res = await get_json(member, f"GET {member}")
                services = link(res, "LogServices")
                if not services:
                    continue
                for svc in members(await get_json(services, f"GET {services}")):
                    cand = await _candidate(get_json, svc, member)
                    if cand is not None:
                        out.append(cand)
            except DeviceError:
                continue
    return out


async def _candidate(get_json: GetJson, svc: str, parent: str) -> LogCandidate | None:
    ls = await get_json(svc, f"GET {svc}")
    entries = link(ls, "Entries")
    if not entries:
        return None
    c = LogCandidate(svc, entries, parent, str(ls.get("LogEntryType") or ""),
                     str(ls.get("OverWritePolicy") or ""), ls.get("ServiceEnabled") is not False)
    _learn_from_first_page(c, await get_json(entries, f"GET {entries}"))
    return c


def _learn_from_first_page(c: LogCandidate, page: dict) -> None:
    """What the first entries page says of the log: its count (else the rows shown), and from
    its full entries the newest EntryType (where the service gave none) and whether they carry
    registry MessageIds."""
    count = page.get("Members@odata.count")
    rows = [m for m in page.get("Members") or [] if isinstance(m, dict)]
    c.count = count if isinstance(count, int) else len(rows)
    full = _full_entries(rows)
    if full:
        newest = full[-1]
        c.entry_type = c.entry_type or str(newest.get("EntryType") or "")
        c.message_ids = _has_registry_ids(full[-10:])


def _full_entries(rows: list[dict]) -> list[dict]:
    """The rows that are entries (an EntryType or a MessageId), not only links to them."""
    return [m for m in rows if "EntryType" in m or "MessageId" in m]


def _has_registry_ids(rows: list[dict]) -> bool:
    """Whether an entry carries a registry MessageId (`Registry.Version.Message`)."""
    return any(isinstance(m.get("MessageId"), str) and "." in m["MessageId"] for m in rows)


def choose(cands: list[LogCandidate]) -> LogCandidate | None:
    """The best log for stimulus-to-log latency: enabled, an event log before a SEL before an
    OEM one, entries with registry MessageIds, a log that wraps before one that stops when full,
    one that holds entries; the service's own order breaks ties."""
    if not cands:
        return None
    best = max(range(len(cands)), key=lambda i: (cands[i].rank(), -i))
    return cands[best]
