"""APC (Schneider) switched rack PDUs, PowerNet-MIB (rPDU branch, AP79xx / AP86xx / AP89xx)."""
from drivers.pdu_backends import PduBackend

BACKEND = PduBackend(
    vendor="APC",
    model="1.3.6.1.4.1.318.1.1.12.1.5.0",          # rPDUIdentModelNumber
    serial="1.3.6.1.4.1.318.1.1.12.1.6.0",         # rPDUIdentSerialNumber
    firmware="1.3.6.1.4.1.318.1.1.12.1.3.0",       # rPDUIdentFirmwareRevision
    outlet_name="1.3.6.1.4.1.318.1.1.12.3.3.1.1.2",      # rPDUOutletControlOutletName
    outlet_command="1.3.6.1.4.1.318.1.1.12.3.3.1.1.4",   # rPDUOutletControlOutletCommand
    commands={"outlet_on": 1, "outlet_off": 2, "outlet_reboot": 3},  # immediateOn/Off/Reboot
    outlet_state="1.3.6.1.4.1.318.1.1.12.3.5.1.1.4",     # rPDUOutletStatusOutletState
    states={1: "on", 2: "off"},
    traps={"1.3.6.1.4.1.318.0.268": "rPDUOutletOn", "1.3.6.1.4.1.318.0.269": "rPDUOutletOff"},
    trap_outlet="1.3.6.1.4.1.318.2.3.1.0",               # mtrapargsInteger
)
