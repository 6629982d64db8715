"""Vendor object maps for the SNMP PDU driver: one small module per vendor MIB, each defining
`BACKEND`, a `PduBackend` (which objects hold identity, outlet control and outlet state, what the
values mean, which traps announce an outlet change, and whether the MIB keeps an outlet log).

The driver picks the backend by the agent's own `sysObjectID` (`for_sys_object_id`: the longest
`sys_object_ids` prefix that matches, so a vendor's enterprise arc picks its usual MIB); the
inventory key `vendor` (a module name here) overrides. Adding a vendor needs only a new module
here: `MODULES` lists the modules of this package that define `BACKEND` (docs/ARCHITECTURE.md,
"How to add").
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = tuple(sorted(p.stem for p in HERE.glob("*.py")
                       if not p.stem.startswith("_") and "\nBACKEND = " in p.read_text()))


@dataclass(frozen=True)
class PduBackend:
    """Where one vendor's PDU keeps identity, outlet control and state (dotted OIDs). An outlet's
    instance is `<column>.<index_prefix><outlet>`."""

    vendor: str                                   # as reported in Identity.vendor
    mib: str                                      # the MIB these objects come from
    model: str                                    # scalar instance OIDs
    serial: str
    firmware: str
    outlet_name: str                              # columns
    commands: Mapping[str, tuple[str, int]]       # stimulus -> (column written, value)
    outlet_state: str
    states: Mapping[int, str]                     # state value -> "on" | "off"
    sys_object_ids: tuple[str, ...] = ()          # prefixes of the agents that speak this MIB
    index_prefix: str = ""                        # e.g. "1." (Raritan's pduId), "0." (Eaton's unit)
    traps: Mapping[str, str] = field(default_factory=dict)    # trap OID -> its name
    trap_states: Mapping[str, str] = field(default_factory=dict)  # trap OID -> state it announces
    trap_outlet: str = ""                         # varbind whose value is the outlet number
    trap_state: str = ""                          # column varbind whose value is the new state,
                                                  # its instance's last sub-id the outlet
    log: str = ""                                 # "" (traps are the log) or "rackclock"
    log_note: str = ""                            # what the MIB keeps, said in the manifest

    def instance(self, column: str, outlet: int) -> str:
        return f"{column}.{self.index_prefix}{outlet}"

    def outlet_of(self, oid: str, column: str) -> int | None:
        """The outlet of `oid` if it is an instance of `column` under this index prefix."""
        head = f"{column}.{self.index_prefix}"
        tail = oid[len(head):] if oid.startswith(head) else ""
        return int(tail) if tail.isdigit() else None


# Outlet event log rows: index, sysUpTime stamp (TimeTicks), outlet, new state (1 on, 2 off).
# Not a vendor MIB: an experimental-arc table that only the simulated "rackclock" PDUs serve.
OUTLET_LOG = "1.3.6.1.3.7070.1.1"
OUTLET_LOG_STATES = {1: "on", 2: "off"}


def load(vendor: str) -> PduBackend:
    """The backend of `vendor` (module drivers.pdu_backends.<vendor>)."""
    name = vendor.strip().lower()
    if name not in MODULES:
        raise ValueError(f"no PDU backend for vendor {vendor!r} (known: {', '.join(MODULES)})")
    return importlib.import_module(f"drivers.pdu_backends.{name}").BACKEND


def for_sys_object_id(oid: str) -> tuple[str, PduBackend] | None:
    """(module name, backend) whose sys_object_ids prefix matches `oid` longest, or None."""
    oid = oid.strip(".")
    best = None
    for name in MODULES:
        b = load(name)
        for p in b.sys_object_ids:
            if (oid == p or oid.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), name, b)
    return None if best is None else best[1:]
