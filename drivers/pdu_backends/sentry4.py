"""Server Technology Sentry4 (PRO1/PRO2), Sentry4-MIB, unit A input cord A (index 1.1).
st4OutletControlAction on(1) off(2) reboot(3); st4OutletState unknown(0) on(1) off(2).
Sentry4-MIB keeps no outlet-change record: traps (st4OutletStateChangeEvent) are the log."""
from drivers.pdu_backends import PduBackend

S = "1.3.6.1.4.1.1718.4"
CONTROL = f"{S}.1.8.5.1.2"                           # st4OutletControlAction

BACKEND = PduBackend(
    vendor="Server Technology", mib="Sentry4-MIB",
    model=f"{S}.1.2.2.1.5.1",                        # st4UnitModel.1
    serial=f"{S}.1.2.2.1.4.1",                       # st4UnitProductSN.1
    firmware=f"{S}.1.1.1.3.0",                       # st4SystemFirmwareVersion.0
    outlet_name=f"{S}.1.8.2.1.3",                    # st4OutletName
    commands={"outlet_on": (CONTROL, 1), "outlet_off": (CONTROL, 2), "outlet_reboot": (CONTROL, 3)},
    outlet_state=f"{S}.1.8.3.1.1",                   # st4OutletState
    states={1: "on", 2: "off"},
    sys_object_ids=("1.3.6.1.4.1.1718",),
    index_prefix="1.1.",
    traps={f"{S}.100.0.16": "st4OutletStateChangeEvent"},
    trap_state=f"{S}.1.8.3.1.1",
    log_note="Sentry4-MIB keeps no outlet-change record: traps are the log",
)
