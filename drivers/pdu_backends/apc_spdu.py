"""APC MasterSwitch (AP92xx/AP79xx first generation), PowerNet-MIB sPDU branch: sPDUOutletCtl is
both command (outletOn(1) outletOff(2) outletReboot(3)) and state (1 on, 2 off). Chosen by the
inventory key `vendor = "apc_spdu"`."""
from drivers.pdu_backends import PduBackend
from drivers.pdu_backends.apc import APC
from drivers.pdu_backends.apc import BACKEND as RPDU

CONTROL = f"{APC}.1.1.4.4.2.1.3"                     # sPDUOutletCtl

BACKEND = PduBackend(
    vendor="APC", mib="PowerNet-MIB (sPDU, MasterSwitch)",
    model=f"{APC}.1.1.4.1.4.0",                      # sPDUIdentModelNumber
    serial=f"{APC}.1.1.4.1.5.0",                     # sPDUIdentSerialNumber
    firmware=f"{APC}.1.1.4.1.2.0",                   # sPDUIdentFirmwareRev
    outlet_name=f"{APC}.1.1.4.4.2.1.4",              # sPDUOutletCtlName
    commands={"outlet_on": (CONTROL, 1), "outlet_off": (CONTROL, 2), "outlet_reboot": (CONTROL, 3)},
    outlet_state=CONTROL, states={1: "on", 2: "off"},
    # MasterSwitch traps outletOn(41) / outletOff(42), the outlet in mtrapargsInteger (AP9210
    # user guide); newer firmware also sends rPDU's
    traps={f"{APC}.0.41": "outletOn", f"{APC}.0.42": "outletOff", **RPDU.traps},
    trap_states={f"{APC}.0.41": "on", f"{APC}.0.42": "off", **RPDU.trap_states},
    trap_outlet=RPDU.trap_outlet, log_note=RPDU.log_note,
)
