"""JSON bodies of the emulated Redfish service, shaped as OpenBMC's bmcweb serves them.

Pure functions: resource identity and state in, dicts out. The URIs are bmcweb's: one Manager
`bmc`, one ComputerSystem `system` whose `EventLog` LogService holds the event log.
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


def event_service() -> dict:
    return {"@odata.id": EVENT_SERVICE, "@odata.type": "#EventService.v1_8_0.EventService",
            "Id": "EventService", "Name": "Event Service", "ServiceEnabled": True,
            "DeliveryRetryAttempts": 3, "DeliveryRetryIntervalSeconds": 30,
            "Subscriptions": link(f"{EVENT_SERVICE}/Subscriptions"),
            "Actions": {"#EventService.SubmitTestEvent": {"target": SUBMIT_TEST_EVENT}}}
