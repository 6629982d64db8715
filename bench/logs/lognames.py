"""What the timeline's command line names before any log is read: the line cap and the formats
(kept apart from the parsers, which import numpy, so `rackclock timeline --help` stays light;
bench/logs/formats.py checks its parsers are exactly these)."""
from __future__ import annotations

LINE_LIMIT = 65_536             # bytes of one line (its newline not counted)
FORMATS = ("journald", "redfish", "csv", "k8s-events", "rfc5424", "rfc3164", "dmesg", "ipmi-sel", "snmptrapd",
           "iso8601", "rfc2822")
