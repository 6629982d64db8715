"""Eaton ePDU G3, EATON-EPDU-MIB (unit 0, the unit the agent runs on). A command is a delay in
seconds written to its own column (0: now); outletControlStatus reads off(0) on(1)
pendingOff(2) pendingOn(3). EATON-EPDU-MIB keeps no outlet-change record: traps
(notifyOutletControlStatus) are the log."""
from drivers.pdu_backends import PduBackend

E = "1.3.6.1.4.1.534.6.6.7"
CONTROL = f"{E}.6.6.1"                               # outletControlEntry

BACKEND = PduBackend(
    vendor="Eaton", mib="EATON-EPDU-MIB",
    model=f"{E}.1.2.1.2.0",                          # productName.0
    serial=f"{E}.1.2.1.4.0",                         # serialNumber.0
    firmware=f"{E}.1.2.1.5.0",                       # firmwareVersion.0
    outlet_name=f"{E}.6.1.1.3",                      # outletName
    commands={"outlet_off": (f"{CONTROL}.3", 0),     # outletControlOffCmd
              "outlet_on": (f"{CONTROL}.4", 0),      # outletControlOnCmd
              "outlet_reboot": (f"{CONTROL}.5", 0)},  # outletControlRebootCmd
    outlet_state=f"{CONTROL}.2",                     # outletControlStatus
    states={0: "off", 1: "on"},                      # pending states are neither yet
    sys_object_ids=("1.3.6.1.4.1.534",),
    index_prefix="0.",
    traps={f"{E}.0.33": "notifyOutletControlStatus"},
    trap_state=f"{CONTROL}.2",
    log_note="EATON-EPDU-MIB keeps no outlet-change record: traps are the log",
)
