"""APC (Schneider) switched rack PDUs, PowerNet-MIB rPDU branch (AP78xx/79xx, and the rPDU objects
that AP86xx/89xx/7900B firmware keeps answering): the default for APC's enterprise arc. Reading
rPDUOutletControlOutletCommand gives immediateOn(1) / immediateOff(2), the outlet's state.
PowerNet-MIB keeps no outlet-change record readable over SNMP (the event log is the web UI's):
traps are the log."""
from drivers.pdu_backends import PduBackend

APC = "1.3.6.1.4.1.318"
CONTROL = f"{APC}.1.1.12.3.3.1.1.4"                  # rPDUOutletControlOutletCommand

BACKEND = PduBackend(
    vendor="APC", mib="PowerNet-MIB (rPDU)",
    model=f"{APC}.1.1.12.1.5.0",                     # rPDUIdentModelNumber
    serial=f"{APC}.1.1.12.1.6.0",                    # rPDUIdentSerialNumber
    firmware=f"{APC}.1.1.12.1.3.0",                  # rPDUIdentFirmwareRevision
    outlet_name=f"{APC}.1.1.12.3.3.1.1.2",           # rPDUOutletControlOutletName
    commands={"outlet_on": (CONTROL, 1), "outlet_off": (CONTROL, 2),
              "outlet_reboot": (CONTROL, 3)},        # immediateOn / immediateOff / immediateReboot
    # the state as the command column reads it ("Getting this variable will return the outlet
    # state": immediateOn(1) / immediateOff(2)); rPDUOutletStatusOutletState (.12.3.5.1.1.4)
    # says the same in on(1) off(2)
    outlet_state=CONTROL, states={1: "on", 2: "off"},
    sys_object_ids=(APC,),
    traps={f"{APC}.0.268": "rPDUOutletOn", f"{APC}.0.269": "rPDUOutletOff"},
    trap_states={f"{APC}.0.268": "on", f"{APC}.0.269": "off"},
    trap_outlet=f"{APC}.2.3.1.0",                    # mtrapargsInteger: the outlet number
    log_note="PowerNet-MIB keeps no outlet-change record over SNMP: traps are the log",
)
