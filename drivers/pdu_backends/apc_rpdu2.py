"""APC rack PDUs of the second generation (AP84xx/86xx/88xx/89xx, AP7900B), PowerNet-MIB rPDU2
branch (device index 1 omitted: the tables are indexed by outlet). Chosen by the inventory key
`vendor = "apc_rpdu2"`; these PDUs also answer the rPDU objects of drivers/pdu_backends/apc.
rPDU2OutletSwitchedStatusState counts off(1) on(2), the reverse of rPDU's."""
from drivers.pdu_backends import PduBackend
from drivers.pdu_backends.apc import APC
from drivers.pdu_backends.apc import BACKEND as RPDU

CONTROL = f"{APC}.1.1.26.9.2.4.1.5"                  # rPDU2OutletSwitchedControlCommand

BACKEND = PduBackend(
    vendor="APC", mib="PowerNet-MIB (rPDU2)",
    model=f"{APC}.1.1.26.2.1.8.1",                   # rPDU2IdentModelNumber.1
    serial=f"{APC}.1.1.26.2.1.9.1",                  # rPDU2IdentSerialNumber.1
    firmware=f"{APC}.1.1.26.2.1.6.1",                # rPDU2IdentFirmwareRevision.1
    outlet_name=f"{APC}.1.1.26.9.2.4.1.3",           # rPDU2OutletSwitchedControlName
    commands={"outlet_on": (CONTROL, 1), "outlet_off": (CONTROL, 2),
              "outlet_reboot": (CONTROL, 3)},        # immediateOn / immediateOff / immediateReboot
    outlet_state=f"{APC}.1.1.26.9.2.3.1.5",          # rPDU2OutletSwitchedStatusState: off(1) on(2)
    states={1: "off", 2: "on"},
    traps=RPDU.traps, trap_states=RPDU.trap_states, trap_outlet=RPDU.trap_outlet,
    log_note=RPDU.log_note,
)
