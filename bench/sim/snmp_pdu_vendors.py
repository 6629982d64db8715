"""The vendor MIBs an emulated PDU answers (`[devices.NAME.sim] vendor = ...`): where each keeps
identity, outlet control and outlet state, what its values mean, and the trap announcing an
outlet change. Written from the vendors' MIBs independently of drivers/pdu_backends (an emulator
must not share its client's tables, or both could be wrong the same way).

Indexes: an outlet's instance is `<column> + index + (outlet,)`. Eaton's commands are delays in
seconds (only 0, now, is accepted here); Sentry4's action column reads none(0).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

Oid = tuple[int, ...]


def oid(text: str) -> Oid:
    return tuple(int(x) for x in text.strip(".").split("."))


@dataclass(frozen=True)
class VendorLayout:
    vendor: str
    sys_object_id: Oid
    model: Oid
    serial: Oid
    firmware: Oid
    outlet_name: Oid
    commands: dict[Oid, dict[int, str]]      # writable column -> value -> "on" | "off" | "reboot"
    reads: dict[Oid, tuple[int, int]]        # command column -> what a GET reads (on, off)
    outlet_state: Oid                        # read-only column
    state_on: int
    state_off: int
    trap_on: Oid
    trap_off: Oid
    trap_outlet: Oid = ()                    # scalar varbind whose value is the outlet number
    trap_state: bool = False                 # the trap carries outlet_state.<index>.<outlet>
    index: Oid = ()
    has_log: bool = False                    # the experimental outlet log (rackclock only)
    model_name: str = ""
    descr: str = "{model} firmware {fw}"
    extra: dict = field(default_factory=dict)


APC_ = "1.3.6.1.4.1.318"
APC_DESCR = ("APC Web/SNMP Management Card (MB:v4.1.0 PF:v{fw} PN:apc_hw05_aos_{fw}.bin AF1:v{fw} "
             "AN1:apc_hw05_rpdu2g_{fw}.bin MN:{model} HR:02 SN: {serial} MD:01/15/2024)")
APC_CMD = {1: "on", 2: "off", 3: "reboot"}


class Traps(TypedDict):
    """A layout's trap fields, shared as keyword arguments."""
    trap_on: Oid
    trap_off: Oid
    trap_outlet: Oid


APC_TRAPS = Traps(trap_on=oid(f"{APC_}.0.268"), trap_off=oid(f"{APC_}.0.269"),
                  trap_outlet=oid(f"{APC_}.2.3.1.0"))

APC = VendorLayout(
    vendor="apc", sys_object_id=oid(f"{APC_}.1.3.4.5"),
    model=oid(f"{APC_}.1.1.12.1.5.0"), serial=oid(f"{APC_}.1.1.12.1.6.0"),
    firmware=oid(f"{APC_}.1.1.12.1.3.0"), outlet_name=oid(f"{APC_}.1.1.12.3.3.1.1.2"),
    commands={oid(f"{APC_}.1.1.12.3.3.1.1.4"): APC_CMD},
    reads={oid(f"{APC_}.1.1.12.3.3.1.1.4"): (1, 2)},       # reading the command: the state
    outlet_state=oid(f"{APC_}.1.1.12.3.5.1.1.4"), state_on=1, state_off=2,
    model_name="AP8641", descr=APC_DESCR, **APC_TRAPS)

APC_RPDU2 = VendorLayout(
    vendor="apc_rpdu2", sys_object_id=oid(f"{APC_}.1.3.4.6"),
    model=oid(f"{APC_}.1.1.26.2.1.8.1"), serial=oid(f"{APC_}.1.1.26.2.1.9.1"),
    firmware=oid(f"{APC_}.1.1.26.2.1.6.1"), outlet_name=oid(f"{APC_}.1.1.26.9.2.4.1.3"),
    commands={oid(f"{APC_}.1.1.26.9.2.4.1.5"): APC_CMD},
    reads={oid(f"{APC_}.1.1.26.9.2.4.1.5"): (1, 2)},
    outlet_state=oid(f"{APC_}.1.1.26.9.2.3.1.5"), state_on=2, state_off=1,   # off(1) on(2)
    model_name="AP8941", descr=APC_DESCR, **APC_TRAPS)

APC_SPDU = VendorLayout(
    vendor="apc_spdu", sys_object_id=oid(f"{APC_}.1.3.4.2"),
    model=oid(f"{APC_}.1.1.4.1.4.0"), serial=oid(f"{APC_}.1.1.4.1.5.0"),
    firmware=oid(f"{APC_}.1.1.4.1.2.0"), outlet_name=oid(f"{APC_}.1.1.4.4.2.1.4"),
    commands={oid(f"{APC_}.1.1.4.4.2.1.3"): APC_CMD}, reads={oid(f"{APC_}.1.1.4.4.2.1.3"): (1, 2)},
    outlet_state=oid(f"{APC_}.1.1.4.4.2.1.3"), state_on=1, state_off=2,
    model_name="AP9211", descr=APC_DESCR,      # MasterSwitch traps outletOn(41) / outletOff(42)
    trap_on=oid(f"{APC_}.0.41"), trap_off=oid(f"{APC_}.0.42"), trap_outlet=APC_TRAPS["trap_outlet"])

RARITAN_ = "1.3.6.1.4.1.13742.6"
RARITAN = VendorLayout(
    vendor="raritan", sys_object_id=oid(RARITAN_),
    model=oid(f"{RARITAN_}.3.2.1.1.3.1"), serial=oid(f"{RARITAN_}.3.2.1.1.4.1"),
    firmware=oid(f"{RARITAN_}.3.2.3.1.6.1.1.1"), outlet_name=oid(f"{RARITAN_}.3.5.3.1.3"),
    commands={oid(f"{RARITAN_}.4.1.2.1.2"): {1: "on", 0: "off", 2: "reboot"}},
    reads={oid(f"{RARITAN_}.4.1.2.1.2"): (1, 0)},
    outlet_state=oid(f"{RARITAN_}.4.1.2.1.3"), state_on=7, state_off=8,
    trap_on=oid(f"{RARITAN_}.0.63"), trap_off=oid(f"{RARITAN_}.0.63"),
    trap_outlet=oid(f"{RARITAN_}.3.5.3.1.2.1"), index=(1,),
    model_name="PX3-5190R", descr="Raritan Dominion PX - Firmware Version {fw}")

EATON_ = "1.3.6.1.4.1.534.6.6.7"
EATON = VendorLayout(
    vendor="eaton", sys_object_id=oid(EATON_),
    model=oid(f"{EATON_}.1.2.1.2.0"), serial=oid(f"{EATON_}.1.2.1.4.0"),
    firmware=oid(f"{EATON_}.1.2.1.5.0"), outlet_name=oid(f"{EATON_}.6.1.1.3"),
    commands={oid(f"{EATON_}.6.6.1.3"): {0: "off"}, oid(f"{EATON_}.6.6.1.4"): {0: "on"},
              oid(f"{EATON_}.6.6.1.5"): {0: "reboot"}},
    reads={oid(f"{EATON_}.6.6.1.{c}"): (-1, -1) for c in (3, 4, 5)},   # no command pending
    outlet_state=oid(f"{EATON_}.6.6.1.2"), state_on=1, state_off=0,
    trap_on=oid(f"{EATON_}.0.33"), trap_off=oid(f"{EATON_}.0.33"), trap_state=True, index=(0,),
    model_name="EMAT10-10", descr="Eaton ePDU MA 1P IN:C20 10A OUT:10xC13 firmware {fw}")

SENTRY_ = "1.3.6.1.4.1.1718.4"
SENTRY4 = VendorLayout(
    vendor="sentry4", sys_object_id=oid(f"{SENTRY_}"),
    model=oid(f"{SENTRY_}.1.2.2.1.5.1"), serial=oid(f"{SENTRY_}.1.2.2.1.4.1"),
    firmware=oid(f"{SENTRY_}.1.1.1.3.0"), outlet_name=oid(f"{SENTRY_}.1.8.2.1.3"),
    commands={oid(f"{SENTRY_}.1.8.5.1.2"): APC_CMD}, reads={oid(f"{SENTRY_}.1.8.5.1.2"): (0, 0)},
    outlet_state=oid(f"{SENTRY_}.1.8.3.1.1"), state_on=1, state_off=2,
    trap_on=oid(f"{SENTRY_}.100.0.16"), trap_off=oid(f"{SENTRY_}.100.0.16"), trap_state=True,
    index=(1, 1), model_name="C2WG24MN-DCFE2M66/C", descr="Sentry Switched PDU {model} {fw}")

# the project's own simulated PDU: APC's rPDU objects plus the experimental outlet log
RACKCLOCK = VendorLayout(**{**APC.__dict__, "vendor": "rackclock", "has_log": True,
                            "sys_object_id": oid("1.3.6.1.3.7070.2")})

LAYOUTS = {x.vendor: x for x in (APC, APC_RPDU2, APC_SPDU, RARITAN, EATON, SENTRY4, RACKCLOCK)}
