"""JSON bodies of the emulated Redfish service, shaped as OpenBMC's bmcweb serves them.

Pure functions: resource identity and state in, dicts out. The URIs are bmcweb's: one Manager
`bmc`, one ComputerSystem `system` whose `EventLog` LogService holds the event log, an
AccountService with the user the rack file names and the three standard roles, and an EventService
with subscriptions (push and server-sent events). The `$metadata` document references the DMTF
schemas of the resource types served here, as bmcweb's does.
"""
from __future__ import annotations

import datetime as dt

ROOT = "/redfish/v1"
SESSIONS = f"{ROOT}/SessionService/Sessions"
MANAGER = f"{ROOT}/Managers/bmc"
NETWORK = f"{MANAGER}/NetworkProtocol"
SYSTEM = f"{ROOT}/Systems/system"
EVENT_LOG = f"{SYSTEM}/LogServices/EventLog"
ENTRIES = f"{EVENT_LOG}/Entries"
EVENT_SERVICE = f"{ROOT}/EventService"
SUBMIT_TEST_EVENT = f"{EVENT_SERVICE}/Actions/EventService.SubmitTestEvent"
CLEAR_LOG = f"{EVENT_LOG}/Actions/LogService.ClearLog"
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
    "EventDestination": "v1_13_0", "Event": "v1_8_0", "AccountService": "v1_13_0",
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


def service_root(uuid: str) -> dict:
    return {
        "@odata.id": f"{ROOT}", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
        "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.17.0", "UUID": uuid,
        "Links": {"Sessions": link(SESSIONS)},
        "SessionService": link(f"{ROOT}/SessionService"),
        "Managers": link(f"{ROOT}/Managers"),
        "Systems": link(f"{ROOT}/Systems"),
        "EventService": link(EVENT_SERVICE),
        "AccountService": link(ACCOUNT_SERVICE),
        "ProtocolFeaturesSupported": {"ExpandQuery": {"ExpandAll": False},
                                      "SelectQuery": False, "FilterQuery": False},
    }


def session_service() -> dict:
    return {"@odata.id": f"{ROOT}/SessionService",
            "@odata.type": "#SessionService.v1_0_2.SessionService", "Id": "SessionService",
            "Name": "Session Service", "ServiceEnabled": True, "SessionTimeout": 3600,
            "Sessions": link(SESSIONS)}


def session(sid: str, username: str) -> dict:
    return {"@odata.id": f"{SESSIONS}/{sid}", "@odata.type": "#Session.v1_5_0.Session",
            "Id": sid, "Name": "User Session", "UserName": username}


def manager(*, datetime: str, offset_min: int, firmware: str, manufacturer: str, model: str,
            serial: str, uuid: str) -> dict:
    return {
        "@odata.id": MANAGER, "@odata.type": "#Manager.v1_14_0.Manager", "Id": "bmc",
        "Name": "OpenBMC Manager", "Description": "Baseboard Management Controller",
        "ManagerType": "BMC", "PowerState": "On",
        "Status": {"State": "Enabled", "Health": "OK"},
        "DateTime": datetime, "DateTimeLocalOffset": render_offset(offset_min),
        "FirmwareVersion": firmware, "Manufacturer": manufacturer, "Model": model,
        "SerialNumber": serial, "UUID": uuid, "ServiceEntryPointUUID": uuid,
        "NetworkProtocol": link(NETWORK),
        "Links": {"ManagerForServers": [link(SYSTEM)]},
    }


def network_protocol(ntp_enabled: bool, servers: list[str]) -> dict:
    return {"@odata.id": NETWORK,
            "@odata.type": "#ManagerNetworkProtocol.v1_9_0.ManagerNetworkProtocol",
            "Id": "NetworkProtocol", "Name": "Manager Network Protocol",
            "HTTPS": {"ProtocolEnabled": True, "Port": 443},
            "NTP": {"ProtocolEnabled": ntp_enabled, "NTPServers": servers}}


def system(uuid: str) -> dict:
    return {"@odata.id": SYSTEM, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
            "Id": "system", "Name": "system", "UUID": uuid, "PowerState": "On",
            "LogServices": link(f"{SYSTEM}/LogServices")}


def event_log_service(datetime: str, offset_min: int) -> dict:
    return {"@odata.id": EVENT_LOG, "@odata.type": "#LogService.v1_2_0.LogService",
            "Id": "EventLog", "Name": "Event Log Service", "OverWritePolicy": "WrapsWhenFull",
            "DateTime": datetime, "DateTimeLocalOffset": render_offset(offset_min),
            "Entries": link(ENTRIES),
            "Actions": {"#LogService.ClearLog": {"target": CLEAR_LOG}}}


def log_entry(entry_id: str, created: str, message_id: str, message: str, args: list,
              severity: str) -> dict:
    return {"@odata.id": f"{ENTRIES}/{entry_id}", "@odata.type": "#LogEntry.v1_9_0.LogEntry",
            "Id": entry_id, "Name": "System Event Log Entry", "EntryType": "Event",
            "Created": created, "Message": message, "MessageId": message_id,
            "MessageArgs": args, "Severity": severity}


def event_service(enabled: bool = True) -> dict:
    """bmcweb lists `ServerSentEventUri` whether or not the service will accept a stream."""
    return {"@odata.id": EVENT_SERVICE, "@odata.type": "#EventService.v1_8_0.EventService",
            "Id": "EventService", "Name": "Event Service", "ServiceEnabled": enabled,
            "DeliveryRetryAttempts": 3, "DeliveryRetryIntervalSeconds": 30,
            "EventFormatTypes": ["Event"], "RegistryPrefixes": ["Base"],
            "Subscriptions": link(SUBSCRIPTIONS), "ServerSentEventUri": SSE,
            "Actions": {"#EventService.SubmitTestEvent": {"target": SUBMIT_TEST_EVENT}}}


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
          severity: str, context: str, origin: str) -> dict:
    """An Event payload with one record (DSP0266 §13.5), as pushed or streamed."""
    record = {"EventId": event_id, "EventTimestamp": timestamp, "EventType": "Other",
              "MessageId": message_id, "Message": message, "MessageArgs": args,
              "MessageSeverity": severity, "OriginOfCondition": link(origin)}
    return {"@odata.type": "#Event.v1_8_0.Event", "Id": event_id, "Name": "Event",
            "Context": context, "Events": [record]}


def account_service() -> dict:
    return {"@odata.id": ACCOUNT_SERVICE, "@odata.type": "#AccountService.v1_13_0.AccountService",
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


def odata_service_document() -> dict:
    """The OData service document: the service root and its direct children (DSP0266 §7.2)."""
    children = [("Systems", f"{ROOT}/Systems"), ("Managers", f"{ROOT}/Managers"),
                ("SessionService", f"{ROOT}/SessionService"), ("Sessions", SESSIONS),
                ("EventService", EVENT_SERVICE), ("AccountService", ACCOUNT_SERVICE)]
    value = [{"name": "Service", "kind": "Singleton", "url": f"{ROOT}/"}]
    value += [{"name": n, "kind": "Singleton", "url": u} for n, u in children]
    return {"@odata.context": METADATA, "value": value}


def metadata_xml() -> str:
    """The OData `$metadata` document: a reference to each DMTF schema served, and the
    EntityContainer of the service (the ServiceRoot's)."""
    refs = []
    for ns in sorted([*SCHEMA_VERSIONS, *COLLECTIONS]):
        versioned = [f'    <edmx:Include Namespace="{ns}"/>']
        if ns in SCHEMA_VERSIONS:
            versioned.append(f'    <edmx:Include Namespace="{ns}.{SCHEMA_VERSIONS[ns]}"/>')
        refs.append(f'  <edmx:Reference Uri="{SCHEMAS}/{ns}_v1.xml">\n'
                    + "\n".join(versioned) + "\n  </edmx:Reference>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
            + "\n".join(refs) + "\n"
            '  <edmx:DataServices>\n'
            '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
            f'      <EntityContainer Name="Service" Extends="ServiceRoot.{SCHEMA_VERSIONS["ServiceRoot"]}'
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
