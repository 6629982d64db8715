"""The operators' logs read into device stamps: each line's raw timestamp, its value in the
device's own timescale (Unix-epoch ns as the device wrote it, or ns since boot), the resolution it
was written with, the log's own order key where the format has one, and every assumption made
(year taken from the run, zone taken from the file's declared zone, a DST fold). Nothing is
guessed from "any leading number": a format is given (`--format`) or detected from a sample of
lines with the share that matched it, and every line that does not parse is kept, counted and
reported with its number.

Library use: datetime/zoneinfo for calendar and zone arithmetic (DST folds and gaps included),
json for journald and Redfish, csv for CSV, email.utils for RFC 2822-style dates. The line
patterns themselves are hand-written regular expressions because no well-kept library parses
RFC 3164/5424 headers, dmesg, `ipmitool sel` or snmptrapd output into stamps and positions:
syslog libraries on PyPI emit, not parse, and python-dateutil's fuzzy parser would accept
exactly the "404 not a timestamp" lines this module must refuse.

The modules: `logstamps` (the stamp records and the zone arithmetic), one per family of formats
(`syslog_formats`, `device_formats`, `json_formats`, `csv_format`), `formats` (which parser reads
which format, and detection), `logparse` (a log read whole), `logfile` (a log read bounded, regular
files only), `lognames` (the formats' names and the line limit), `logsources` (which clock stamped
a line), `rfc3339` (RFC 3339 stamps of a batch at once). Imports only the base layer and numpy.
"""
