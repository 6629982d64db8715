"""What OCP's service baseline (OCPServiceBaseline, required by the CDU, rack PDU and power shelf
profiles) asks of an equipment controller's service beyond the BMC emulator's core: a
CertificateService and an UpdateService (with the controller's firmware), the Manager's
EthernetInterfaces, the NetworkProtocol's host names and ports, the EventService's filter
capabilities (all said unsupported: the core filters by RegistryPrefixes and MessageIds only),
and the AccountService's account types. The CertificateService lists GenerateCSR and
ReplaceCertificate, which the profile makes mandatory, and answers both 501: no certificate is
held or replaced (the emulator's TLS key is the simulator's); the HTTPS certificate it serves
is the one it presents. Bodies are built from `state` (the emulated equipment).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.sim import redfish_payloads as P

Body = Callable[[], dict]
TLS_NAME = "redfish-equipment"        # its certificates' file names (bench/sim/tls.py)
CERTS, UPDATE = f"{P.ROOT}/CertificateService", f"{P.ROOT}/UpdateService"
VERSIONS = {"CertificateService": "v1_0_4", "ActionInfo": "v1_4_2", "Certificate": "v1_2_0",
            "CertificateLocations": "v1_0_4", "UpdateService": "v1_11_0", "SoftwareInventory": "v1_10_0",
            "EthernetInterface": "v1_12_0"}
CERT_ACTIONS = ("GenerateCSR", "ReplaceCertificate")   # listed; answered 501 (no certificates)
COLLECTIONS = ["CertificateCollection", "SoftwareInventoryCollection",
               "EthernetInterfaceCollection"]


def _t(name: str) -> str:
    return f"#{name}.{VERSIONS[name]}.{name}"


def _coll(uri: str, odata: str, name: str, members: list[str]) -> Body:
    return lambda: P.collection(uri, f"{odata}.{odata}", name, [P.link(m) for m in members])


def root_extras(state) -> dict:
    return {"CertificateService": P.link(CERTS), "UpdateService": P.link(UPDATE),
            "Vendor": "rackclock", "Product": state.model_name}


def features() -> dict:
    return {"ExpandQuery": {"ExpandAll": False}, "SelectQuery": False, "FilterQuery": False,
            "OnlyMemberQuery": False, "MultipleHTTPRequests": False}


def resources(state) -> dict[str, Body]:
    m = state.manager_uri
    nics, https = f"{m}/EthernetInterfaces", f"{state.network_uri}/HTTPS/Certificates"
    fw = f"{UPDATE}/FirmwareInventory"
    return {
        CERTS: lambda: {"@odata.id": CERTS, "@odata.type": _t("CertificateService"),
                        "Id": "CertificateService", "Name": "Certificate Service",
                        "CertificateLocations": P.link(f"{CERTS}/CertificateLocations"),
                        "Actions": {f"#CertificateService.{a}": {
                            "target": f"{CERTS}/Actions/CertificateService.{a}",
                            "@Redfish.ActionInfo": f"{CERTS}/{a}ActionInfo"}
                            for a in CERT_ACTIONS}},
        **{f"{CERTS}/{a}ActionInfo": partial(action_info, f"{CERTS}/{a}ActionInfo", a)
           for a in CERT_ACTIONS},
        f"{CERTS}/CertificateLocations": lambda: {
            "@odata.id": f"{CERTS}/CertificateLocations",
            "@odata.type": _t("CertificateLocations"), "Id": "CertificateLocations",
            "Name": "Certificate Locations", "Links": {"Certificates": [P.link(f"{https}/1")]}},
        https: _coll(https, "CertificateCollection", "HTTPS Certificates", [f"{https}/1"]),
        f"{https}/1": lambda: {"@odata.id": f"{https}/1", "@odata.type": _t("Certificate"),
                               "Id": "1", "Name": "HTTPS server certificate",
                               "CertificateType": "PEM", "CertificateString": server_pem(state)},
        UPDATE: lambda: {"@odata.id": UPDATE, "@odata.type": _t("UpdateService"),
                         "Id": "UpdateService", "Name": "Update Service",
                         "ServiceEnabled": False, "FirmwareInventory": P.link(fw)},
        fw: _coll(fw, "SoftwareInventoryCollection", "Firmware Inventory", [f"{fw}/Controller"]),
        f"{fw}/Controller": lambda: {
            "@odata.id": f"{fw}/Controller", "@odata.type": _t("SoftwareInventory"),
            "Id": "Controller", "Name": "Controller firmware", "Manufacturer": state.manufacturer,
            "Version": state.firmware, "Updateable": False,
            "RelatedItem": [P.link(state.manager_uri)],
            "Status": {"State": "Enabled", "Health": "OK"}},
        nics: _coll(nics, "EthernetInterfaceCollection", "Ethernet Interfaces", [f"{nics}/eth0"]),
        f"{nics}/eth0": lambda: ethernet(f"{nics}/eth0", state),
    }


def server_pem(state) -> str:
    """The certificate this service presents (bench/sim/tls.py wrote it), "" over plain HTTP."""
    path = Path(state.ctx.workdir) / f"{TLS_NAME}-server.pem"
    return path.read_text() if path.is_file() else ""


def action_info(uri: str, action: str) -> dict:
    params = {"GenerateCSR": [("CertificateCollection", "Object"), ("Country", "String"),
                              ("City", "String"), ("CommonName", "String"),
                              ("State", "String"), ("Organization", "String"),
                              ("OrganizationalUnit", "String")],
              "ReplaceCertificate": [("CertificateString", "String"), ("CertificateType", "String"),
                                     ("CertificateUri", "Object")]}[action]
    return {"@odata.id": uri, "@odata.type": _t("ActionInfo"), "Id": f"{action}ActionInfo",
            "Name": f"{action} Action Info",
            "Parameters": [{"Name": n, "Required": True, "DataType": t} for n, t in params]}


def ethernet(uri: str, state) -> dict:
    v4 = {"Address": "127.0.0.1", "SubnetMask": "255.0.0.0", "Gateway": "0.0.0.0"}
    return {"@odata.id": uri, "@odata.type": _t("EthernetInterface"), "Id": "eth0",
            "Name": "Management port", "MACAddress": "02:00:00:00:00:01",
            "InterfaceEnabled": True, "LinkStatus": "LinkUp",
            "Status": {"State": "Enabled", "Health": "OK"},
            "HostName": state.name, "FQDN": f"{state.name}.rack.local", "NameServers": [],
            "SpeedMbps": 1000,
            "IPv4Addresses": [{**v4, "AddressOrigin": "Static"}],
            "IPv6Addresses": [{"Address": "::1", "PrefixLength": 128, "AddressOrigin": "Static",
                               "AddressState": "Preferred"}]}


def network_protocol(state) -> dict:
    body = P.network_protocol(state.network_uri, state.ntp, state.ntp_servers)
    body.update({"HostName": state.name, "FQDN": f"{state.name}.rack.local",
                 "HTTP": {"ProtocolEnabled": False, "Port": 80},
                 "HTTPS": {"ProtocolEnabled": True, "Port": 443, "Certificates":
                           P.link(f"{state.network_uri}/HTTPS/Certificates")},
                 "SSH": {"ProtocolEnabled": False, "Port": 22},
                 "SSDP": {"ProtocolEnabled": False, "Port": 1900}})
    body["NTP"]["Port"] = 123
    return body


def event_service(state) -> dict:
    body = P.event_service(state.profile, state.events.enabled)
    body.update({"ExcludeMessageId": False, "ExcludeRegistryPrefix": False,
                 "IncludeOriginOfConditionSupported": False, "SubordinateResourcesSupported":
                 False, "ResourceTypes": []})
    return body


def account_service() -> dict:
    return {**P.account_service(), "SupportedAccountTypes": ["Redfish"]}

