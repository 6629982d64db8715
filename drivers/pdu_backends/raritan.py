"""Raritan PX2/PX3 PDUs, PDU2-MIB (single PDU: pduId 1). switchingOperation off(0) on(1)
cycle(2); outletSwitchingState reads on(7) off(8). PDU2-MIB keeps no outlet-change record
with a stamp: traps are the log."""
from drivers.pdu_backends import PduBackend

R = "1.3.6.1.4.1.13742.6"
CONTROL = f"{R}.4.1.2.1.2"                           # switchingOperation

BACKEND = PduBackend(
    vendor="Raritan", mib="PDU2-MIB",
    model=f"{R}.3.2.1.1.3.1",                        # pduModel.1
    serial=f"{R}.3.2.1.1.4.1",                       # pduSerialNumber.1
    firmware=f"{R}.3.2.3.1.6.1.1.1",                 # boardFirmwareVersion.1.mainController.1
    outlet_name=f"{R}.3.5.3.1.3",                    # outletName
    commands={"outlet_off": (CONTROL, 0), "outlet_on": (CONTROL, 1), "outlet_reboot": (CONTROL, 2)},
    outlet_state=f"{R}.4.1.2.1.3",                   # outletSwitchingState
    states={7: "on", 8: "off"},
    sys_object_ids=("1.3.6.1.4.1.13742",),
    index_prefix="1.",
    traps={f"{R}.0.63": "outletSensorStateChange"},
    trap_outlet=f"{R}.3.5.3.1.2.1",                  # outlet number, as the emulator sends it
    log_note="PDU2-MIB keeps no outlet-change record with a stamp: traps are the log",
)
