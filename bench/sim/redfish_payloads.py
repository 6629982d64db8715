"""JSON bodies of the emulated Redfish service, shaped as the profile's vendor serves them.

Pure functions: resource identity and state in, dicts out. The Manager, System and LogService
URIs are the profile's (bench/sim/redfish_profiles.py: bmcweb's `Managers/bmc` and
`Systems/system` by default); the service-wide ones are fixed: an AccountService with the user
the rack file names and the three standard roles, and an EventService with subscriptions (push,
and server-sent events where the profile has them). The `$metadata` document references the
DMTF schemas of the resource types served here, as bmcweb's does.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

ROOT = "/redfish/v1"
SESSIONS = f"{ROOT}/SessionService/Sessions"
EVENT_SERVICE = f"{ROOT}/EventService"
SUBMIT_TEST_EVENT = f"{EVENT_SERVICE}/Actions/EventService.SubmitTestEvent"
SUBSCRIPTIONS = f"{EVENT_SERVICE}/Subscriptions"
SSE = f"{EVENT_SERVICE}/SSE"
ACCOUNT_SERVICE = f"{ROOT}/AccountService"
ACCOUNTS = f"{ACCOUNT_SERVICE}/Accounts"
ROLES = f"{ACCOUNT_SERVICE}/Roles"
ODATA = f"{ROOT}/odata"
METADATA = f"{ROOT}/$metadata"
SCHEMAS = "https://redfish.dmtf.org/schemas/v1"

# DSP0266 §13.2.9: the standard roles and their privileges.
ROLE_PRIVILEGES = {
    "Administrator": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureComponents",
                      "ConfigureSelf"],
    "Operator": ["Login", "ConfigureComponents", "ConfigureSelf"],
    "ReadOnly": ["Login", "ConfigureSelf"],
}
# Resource types served, by namespace and version (for $metadata and the Link header).
SCHEMA_VERSIONS = {
    "ServiceRoot": "v1_15_0", "SessionService": "v1_0_2", "Session": "v1_5_0",
    "Manager": "v1_14_0", "ManagerNetworkProtocol": "v1_9_0", "ComputerSystem": "v1_20_0",
    "LogService": "v1_2_0", "LogEntry": "v1_9_0", "EventService": "v1_8_0",
    "EventDestination": "v1_13_0", "Event": "v1_8_0", "AccountService": "v1_15_0",
    "ManagerAccount": "v1_10_0", "Role": "v1_3_1", "Message": "v1_1_1",
}
COLLECTIONS = ["SessionCollection", "ManagerCollection", "ComputerSystemCollection",
               "LogServiceCollection", "LogEntryCollection", "EventDestinationCollection",
               "ManagerAccountCollection", "RoleCollection"]

BASE_REGISTRY = "Base.1.18.1"
NS = 1_000_000_000


def link(uri: str) -> dict:
    return {"@odata.id": uri}


def render_offset(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(int(minutes)), 60)
    return f"{sign}{h:02d}:{m:02d}"


def render_datetime(value_ns: int, offset_min: int) -> str:
    """A device reading (Unix-epoch ns as the device claims it) as bmcweb renders it: whole
    seconds, the device's local time, and the UTC offset the device claims."""
    tz = dt.timezone(dt.timedelta(minutes=offset_min))
    return dt.datetime.fromtimestamp(value_ns // NS, tz).isoformat()


def error(message_id: str, message: str, args: list | tuple = (), severity: str = "Warning",
          resolution: str = "None.") -> dict:
    """The standard Redfish error body (DSP0266 §9.6) with one Base-registry message."""
    mid = f"{BASE_REGISTRY}.{message_id}"
    info = {"@odata.type": "#Message.v1_1_1.Message", "MessageId": mid, "Message": message,
            "MessageArgs": [str(a) for a in args], "MessageSeverity": severity,
            "Resolution": resolution}
    return {"error": {"code": mid, "message": message, "@Message.ExtendedInfo": [info]}}


def collection(uri: str, odata_type: str, name: str, members: list[dict]) -> dict:
    return {"@odata.id": uri, "@odata.type": f"#{odata_type}", "Name": name,
            "Members": members, "Members@odata.count": len(members)}


def service_root(uuid: str, sessions: bool = True, managers: bool = True) -> dict:
    """`sessions` False: a service with no SessionService (basic authentication only);
    `managers` False: no Managers link."""
    return {
        "@odata.id": f"{ROOT}", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
        "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.17.0", "UUID": uuid,
        "Links": {"Sessions": link(SESSIONS)} if sessions else {},
        **({"SessionService": link(f"{ROOT}/SessionService")} if sessions else {}),
        **({"Managers": link(f"{ROOT}/Managers")} if managers else {}),
        "Systems": link(f"{ROOT}/Systems"),
        "EventService": link(EVENT_SERVICE),
        "AccountService": link(ACCOUNT_SERVICE),
        "ProtocolFeaturesSupported": {"ExpandQuery": {"ExpandAll": False},
                                      "SelectQuery": False, "FilterQuery": False},
    }


def session_service(timeout_s: int = 3600) -> dict:
    return {"@odata.id": f"{ROOT}/SessionService",
            "@odata.type": "#SessionService.v1_0_2.SessionService", "Id": "SessionService",
            "Name": "Session Service", "ServiceEnabled": True, "SessionTimeout": timeout_s,
            "Sessions": link(SESSIONS)}


def session(sid: str, username: str) -> dict:
    return {"@odata.id": f"{SESSIONS}/{sid}", "@odata.type": "#Session.v1_5_0.Session",
            "Id": sid, "Name": "User Session", "UserName": username}


def manager(profile, *, datetime: str, offset_min: int, firmware: str, manufacturer: str,
            model: str, serial: str, uuid: str) -> dict:
    uri = profile.manager_uri()
    logs = {"LogServices": link(f"{uri}/LogServices")} if profile.logs_under("Managers") else {}
    return {
        "@odata.id": uri, "@odata.type": "#Manager.v1_14_0.Manager", "Id": profile.manager_id,
        "Name": profile.manager_name, "Description": "Baseboard Management Controller",
        "ManagerType": "BMC", "PowerState": "On",
        "Status": {"State": "Enabled", "Health": "OK"},
        **({"DateTime": datetime, "DateTimeLocalOffset": render_offset(offset_min)}
           if profile.manager_datetime else {}),
        "FirmwareVersion": firmware, "Manufacturer": manufacturer, "Model": model,
        "SerialNumber": serial, "UUID": uuid, "ServiceEntryPointUUID": uuid,
        "NetworkProtocol": link(f"{uri}/NetworkProtocol"), **logs,
        "Links": {"ManagerForServers": [link(profile.system_uri())]},
    }


def enclosure_manager(manager_id: str) -> dict:
    """A chassis-level Manager of a blade enclosure: no DateTime (DMTF's public-bladed)."""
    return {"@odata.id": f"{ROOT}/Managers/{manager_id}", "@odata.type": "#Manager.v1_14_0.Manager",
            "Id": manager_id, "Name": "Enclosure Manager", "ManagerType": "EnclosureManager",
            "Status": {"State": "Enabled", "Health": "OK"}}


def network_protocol(uri: str, ntp_enabled: bool, servers: list[str]) -> dict:
    return {"@odata.id": uri,
            "@odata.type": "#ManagerNetworkProtocol.v1_9_0.ManagerNetworkProtocol",
            "Id": "NetworkProtocol", "Name": "Manager Network Protocol",
            "HTTPS": {"ProtocolEnabled": True, "Port": 443},
            "NTP": {"ProtocolEnabled": ntp_enabled, "NTPServers": servers}}


def system(uuid: str, profile) -> dict:
    uri = profile.system_uri()
    logs = {"LogServices": link(f"{uri}/LogServices")} if profile.logs_under("Systems") else {}
    return {"@odata.id": uri, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
            "Id": profile.system_id, "Name": "system", "UUID": uuid, "PowerState": "On", **logs}


def log_service(uri: str, spec, datetime: str, offset_min: int) -> dict:
    """A LogService as the profile's vendor describes it (LogEntryType only where it does)."""
    kind = {"LogEntryType": spec.entry_type} if spec.entry_type else {}
    return {"@odata.id": uri, "@odata.type": "#LogService.v1_2_0.LogService",
            "Id": spec.id, "Name": f"{spec.id} Log Service", "ServiceEnabled": True,
            "OverWritePolicy": spec.policy, **kind,
            "DateTime": datetime, "DateTimeLocalOffset": render_offset(offset_min),
            "Entries": link(f"{uri}/Entries"),
            "Actions": {"#LogService.ClearLog": {"target": f"{uri}/Actions/LogService.ClearLog"}}}


def log_entry(entries_uri: str, entry_id: str, created: str, message_id: str, message: str,
              args: list, severity: str, entry_type: str = "Event", oem_format: str = "") -> dict:
    """An entry; an SEL or OEM record carries no registry MessageId unless it has one."""
    out: dict[str, Any] = {
        "@odata.id": f"{entries_uri}/{entry_id}", "@odata.type": "#LogEntry.v1_9_0.LogEntry",
        "Id": entry_id, "Name": "Log Entry", "EntryType": entry_type, "Created": created,
        "Message": message, "Severity": severity}
    if message_id:
        out.update(MessageId=message_id, MessageArgs=args)
    if entry_type == "Oem" and oem_format:
        out["OemRecordFormat"] = oem_format
    return out


def event_service(profile, enabled: bool = True) -> dict:
    """bmcweb lists `ServerSentEventUri` whether or not the service will accept a stream; a
    profile without SSE lists none; the subscription filters are the profile's."""
    out = {"@odata.id": EVENT_SERVICE,
           "@odata.type": f"#EventService.{profile.es_version}.EventService",
           "Id": "EventService", "Name": "Event Service", "ServiceEnabled": enabled,
           "DeliveryRetryAttempts": 3, "DeliveryRetryIntervalSeconds": 30,
           "Subscriptions": link(SUBSCRIPTIONS),
           "Actions": {"#EventService.SubmitTestEvent": {"target": SUBMIT_TEST_EVENT}}}
    if tuple(int(x) for x in profile.es_version[1:].split("_")) >= (1, 2, 0):
        out["EventFormatTypes"] = ["Event"]
    if profile.registry_prefixes:
        out["RegistryPrefixes"] = list(profile.registry_prefixes)
    if profile.event_types:
        out["EventTypesForSubscription"] = list(profile.event_types)
    if profile.sse:
        out["ServerSentEventUri"] = SSE
    return out


def event_destination(sub_id: str, destination: str, context: str, protocol: str,
                      subscription_type: str, verify_certificate: bool) -> dict:
    return {"@odata.id": f"{SUBSCRIPTIONS}/{sub_id}",
            "@odata.type": "#EventDestination.v1_13_0.EventDestination", "Id": sub_id,
            "Name": "Event Destination", "Destination": destination, "Context": context,
            "Protocol": protocol, "SubscriptionType": subscription_type,
            "EventFormatType": "Event", "DeliveryRetryPolicy": "RetryForever",
            "VerifyCertificate": verify_certificate,
            "Status": {"State": "Enabled", "Health": "OK"}}


def event(event_id: str, timestamp: str, message_id: str, message: str, args: list,
          severity: str, context: str, origin: str, event_type: str = "Other") -> dict:
    """An Event payload with one record (DSP0266 §13.5), as pushed or streamed."""
    record = {"MemberId": "0", "EventId": event_id, "EventTimestamp": timestamp,
              "EventType": event_type,
              "MessageId": message_id, "Message": message, "MessageArgs": args,
              "MessageSeverity": severity, "OriginOfCondition": link(origin)}
    return {"@odata.type": "#Event.v1_8_0.Event", "Id": event_id, "Name": "Event",
            "Context": context, "Events": [record]}


def account_service() -> dict:
    return {"@odata.id": ACCOUNT_SERVICE, "@odata.type": "#AccountService.v1_15_0.AccountService",
            "Id": "AccountService", "Name": "Account Service", "ServiceEnabled": True,
            "Accounts": link(ACCOUNTS), "Roles": link(ROLES),
            "HTTPBasicAuth": "Enabled"}


def account(username: str) -> dict:
    return {"@odata.id": f"{ACCOUNTS}/{username}",
            "@odata.type": "#ManagerAccount.v1_10_0.ManagerAccount", "Id": username,
            "Name": "User Account", "UserName": username, "RoleId": "Administrator",
            "Enabled": True, "Locked": False, "AccountTypes": ["Redfish"],
            "Links": {"Role": link(f"{ROLES}/Administrator")}}


def role(role_id: str) -> dict:
    return {"@odata.id": f"{ROLES}/{role_id}", "@odata.type": "#Role.v1_3_1.Role",
            "Id": role_id, "Name": f"{role_id} Role", "RoleId": role_id, "IsPredefined": True,
            "AssignedPrivileges": list(ROLE_PRIVILEGES[role_id])}


def odata_service_document(sessions: bool = True) -> dict:
    """The OData service document: the service root and its direct children (DSP0266 §7.2)."""
    children = [("Systems", f"{ROOT}/Systems"), ("Managers", f"{ROOT}/Managers"),
                *([("SessionService", f"{ROOT}/SessionService"), ("Sessions", SESSIONS)]
                  if sessions else []),
                ("EventService", EVENT_SERVICE), ("AccountService", ACCOUNT_SERVICE)]
    value = [{"name": "Service", "kind": "Singleton", "url": f"{ROOT}/"}]
    value += [{"name": n, "kind": "Singleton", "url": u} for n, u in children]
    return {"@odata.context": METADATA, "value": value}


def metadata_xml(versions: dict | None = None) -> str:
    """The OData `$metadata` document: a reference to each DMTF schema served (`versions`
    overriding SCHEMA_VERSIONS), and the EntityContainer of the service (the ServiceRoot's)."""
    served = {**SCHEMA_VERSIONS, **(versions or {})}
    refs = []
    for ns in sorted([*served, *COLLECTIONS]):
        versioned = [f'    <edmx:Include Namespace="{ns}"/>']
        if ns in served:
            versioned.append(f'    <edmx:Include Namespace="{ns}.{served[ns]}"/>')
        refs.append(f'  <edmx:Reference Uri="{SCHEMAS}/{ns}_v1.xml">\n'
                    + "\n".join(versioned) + "\n  </edmx:Reference>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
            + "\n".join(refs) + "\n"
            '  <edmx:DataServices>\n'
            '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
            f'      <EntityContainer Name="Service" Extends="ServiceRoot.{served["ServiceRoot"]}'
            '.ServiceContainer"/>\n'
            '    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n')


def described_by(odata_type: str | None) -> str | None:
    """The JSON schema a resource of `@odata.type` is described by (the `Link` header target)."""
    if not odata_type:
        return None
    parts = odata_type.lstrip("#").split(".")
    if len(parts) == 3:
        return f"{SCHEMAS}/{parts[0]}.{parts[1]}.json"
    return f"{SCHEMAS}/{parts[0]}.json"


_EVENT_TYPES = ("StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved", "Alert",
                "MetricReport", "Other")


def test_event_problem(body: dict, profile) -> tuple[str, str, list] | None:
    """Why a SubmitTestEvent body is refused (MessageId, message, args of a 400), or None.
    Every service checks the types; a strict profile also wants every parameter its
    EventService version defines (EventType before v1_3_0)."""
    mid = body.get("MessageId")
    if not isinstance(mid, str) or not mid:
        return ("PropertyMissing", "The property MessageId is a required property and must be "
                "included in the request.", ["MessageId"])
    wanted = _test_event_parameters(profile)
    if profile.strict_test_event:
        missing = next((k for k in wanted if k not in body), None)
        if missing is not None:
            return ("ActionParameterMissing", f"The action SubmitTestEvent requires the parameter "
                    f"{missing} to be present in the request body.", ["SubmitTestEvent", missing])
    for key, ok in _TEST_EVENT_FORMATS:
        if key in body and not ok(body[key]):
            return ("ActionParameterValueFormatError", f"The value {json.dumps(body[key])} for "
                    f"the parameter {key} in the action SubmitTestEvent is of a different format "
                    f"than the parameter can accept.", [json.dumps(body[key]), key,
                                                        "SubmitTestEvent"])
    return None


def _test_event_parameters(profile) -> list[str]:
    """The parameters of SubmitTestEvent the profile's EventService version defines (EventType
    only before v1_3_0)."""
    wanted = ["EventId", "EventTimestamp", "Severity", "Message", "MessageArgs",
              "OriginOfCondition"]
    if tuple(int(x) for x in profile.es_version[1:].split("_")) < (1, 3, 0):
        wanted.append("EventType")
    return wanted


def _is_string_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(a, str) for a in v)


def _is_string(v) -> bool:
    return isinstance(v, str)


def _is_datetime(v) -> bool:
    try:
        return isinstance(v, str) and dt.datetime.fromisoformat(v).tzinfo is not None
    except ValueError:
        return False


# SubmitTestEvent's parameters and the test of each one's format, in the order they are checked
_TEST_EVENT_FORMATS = (("MessageArgs", _is_string_list),
                       ("EventType", lambda v: v in _EVENT_TYPES),
                       ("EventTimestamp", _is_datetime),
                       *((k, _is_string) for k in
                         ("EventId", "Severity", "Message", "OriginOfCondition")))
