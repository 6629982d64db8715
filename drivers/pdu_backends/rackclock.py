"""The simulated "rackclock" PDU (bench/sim, `[sim] vendor = "rackclock"`): APC's rPDU outlet
objects plus the project's experimental outlet event log (OUTLET_LOG), whose rows carry a
sysUpTime stamp. No real PDU serves that table."""
from dataclasses import replace

from drivers.pdu_backends import PduBackend  # noqa: F401  (the type of BACKEND)
from drivers.pdu_backends.apc import BACKEND as RPDU

BACKEND = replace(RPDU, vendor="rackclock", mib="PowerNet-MIB (rPDU) + rackclock outlet log",
                  sys_object_ids=("1.3.6.1.3.7070",), log="rackclock",
                  log_note="the experimental outlet log table (simulated PDUs only) and traps")
