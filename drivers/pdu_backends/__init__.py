"""Vendor object maps for the SNMP PDU driver: one small module per vendor, each defining
`BACKEND`, a `PduBackend` (which objects hold identity and outlet control, what values mean).
Adding a vendor needs only a new module here, named by the inventory key `vendor`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class PduBackend:
    """Where one vendor's PDU keeps identity and outlet control (dotted OIDs)."""

    vendor: str                                   # as reported in Identity.vendor
    model: str                                    # scalar instance OIDs
    serial: str
    firmware: str
    outlet_name: str                              # columns: + ".<outlet>"
    outlet_command: str
    commands: Mapping[str, int]                   # stimulus name -> value written to the command
    outlet_state: str = ""
    states: Mapping[int, str] = field(default_factory=dict)   # state value -> "on" | "off"
    traps: Mapping[str, str] = field(default_factory=dict)    # trap OID -> its name
    trap_outlet: str = ""                         # varbind of a trap carrying the outlet number


# Outlet event log rows: index, sysUpTime stamp (TimeTicks), outlet, new state (1 on, 2 off).
# Not a vendor MIB: an experimental-arc table that the simulated PDUs (and any agent extended the
# same way) serve; on a PDU without it the walk finds nothing and traps remain the log.
OUTLET_LOG = "1.3.6.1.3.7070.1.1"
OUTLET_LOG_STATES = {1: "on", 2: "off"}


def load(vendor: str) -> PduBackend:
    """The backend of `vendor` (module drivers.pdu_backends.<vendor>)."""
    name = vendor.strip().lower()
    if not name.isidentifier():
        raise ValueError(f"bad PDU vendor name {vendor!r}")
    try:
        module = importlib.import_module(f"drivers.pdu_backends.{name}")
    except ModuleNotFoundError as exc:
        raise ValueError(f"no PDU backend for vendor {vendor!r}") from exc
    return module.BACKEND
