"""Raritan PX2/PX3 PDUs, PDU2-MIB (single PDU: pduId 1)."""
from drivers.pdu_backends import PduBackend

BACKEND = PduBackend(
    vendor="Raritan",
    model="1.3.6.1.4.1.13742.6.3.2.1.1.3.1",             # pduModel.1
    serial="1.3.6.1.4.1.13742.6.3.2.1.1.4.1",            # pduSerialNumber.1
    firmware="1.3.6.1.4.1.13742.6.3.2.3.1.6.1.1.1",      # boardFirmwareVersion.1.mainController.1
    outlet_name="1.3.6.1.4.1.13742.6.3.5.3.1.3.1",       # outletName.1
    outlet_command="1.3.6.1.4.1.13742.6.4.1.2.1.2.1",    # switchingOperation.1
    commands={"outlet_off": 0, "outlet_on": 1, "outlet_reboot": 2},  # off / on / cycle
    outlet_state="1.3.6.1.4.1.13742.6.4.1.2.1.3.1",      # outletSwitchingState.1
    states={7: "on", 8: "off"},
    traps={"1.3.6.1.4.1.13742.6.0.63": "outletSensorStateChange"},
    trap_outlet="1.3.6.1.4.1.13742.6.3.5.3.1.2.1",       # outlet number, as the emulator sends it
)
