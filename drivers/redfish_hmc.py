"""GPU baseboard management controller driver (an HGX-style HMC, OCP UBB profile), over HTTPS.

A GPU baseboard's controller is a Redfish service: its Manager's `DateTime` is read inside
brackets exactly as a BMC's (drivers/redfish_bmc.py: the same session, tick-edge reads, budget,
event log found by links and read incrementally, test events, SSE), and beside its event log
(GPU events: Xid errors, thermal events) its TelemetryService's MetricReports are read as the
GPU telemetry: each new report, and each change of a throttle-reason metric, is a log entry
stamped by the report's own `Timestamp` (drivers/redfish_metrics.py) in the controller's clock
(`datetime`), so the timeline maps it through that clock's segments into reference time like
any other device stamp (bench/analysis/timeline_map.py; no mapping of its own).

The reports are found by links (service root -> TelemetryService -> MetricReports), once at
the open (a service without them is said so in the identity, `telemetry`); at most
`metric_reports` (default 8) are read, each at most once every `metric_poll_s` (default 1 s),
within the log poll's budget and deadline: a report the budget has no room for is not sent now
(`log_backlog`, read at the next poll). A failing report GET costs that report's entries of that
poll only; a failing event log read does not lose the reports' entries of the same poll.

Inventory keys beyond the BMC driver's: `telemetry` (false: no reports read), `metric_reports`,
`metric_poll_s`.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from bench.config.inventory import DeviceConfig, Key
from drivers.base import DeviceError, Identity, LogEntry
from drivers.redfish_bmc import RedfishBMC
from drivers.redfish_discovery import link as _link
from drivers.redfish_discovery import members as _members
from drivers.redfish_log import NotSent
from drivers.redfish_metrics import ReportState, report_entries
from drivers.redfish_session import counted_as

log = logging.getLogger(__name__)
NS = 1_000_000_000


class RedfishHMC(RedfishBMC):
    OPTIONS = {**RedfishBMC.OPTIONS, "telemetry": Key("bool"),
               "metric_reports": Key("int", 0, 64),
               "metric_poll_s": Key("float", 0.1, 3600.0, unit="s")}

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.telemetry = bool(o.get("telemetry", True))
        self.max_reports = int(o.get("metric_reports", 8))
        self.metric_poll_ns = round(float(o.get("metric_poll_s", 1.0)) * NS)
        self.reports: dict[str, ReportState] = {}       # report URI -> what it showed last
        self._report_due: dict[str, int] = {}
        self.telemetry_note = "not looked for" if self.telemetry else "off (telemetry = false)"

    async def open(self) -> None:
        await super().open()
        if self.telemetry:
            await self._discover_reports()

    async def _discover_reports(self) -> None:
        """The MetricReports the service links to (never raises: the reason goes to the note)."""
        try:
            root = await self._service_root()
            ts_uri = _link(root, "TelemetryService")
            if not ts_uri:
                self.telemetry_note = "the service root links no TelemetryService"
                return
            ts, *_ = await self._get_json(ts_uri, f"GET {ts_uri}")
            reports_uri = _link(ts, "MetricReports")
            if not reports_uri:
                self.telemetry_note = f"{ts_uri} links no MetricReports"
                return
            coll, *_ = await self._get_json(reports_uri, f"GET {reports_uri}")
        except DeviceError as exc:
            self.telemetry_note = f"telemetry not read: {exc.message}"
            log.warning("%s: %s", self.name, self.telemetry_note)
            return
        found = _members(coll)
        self.reports = {u: ReportState() for u in found[:self.max_reports]}
        self.telemetry_note = (f"{len(self.reports)} metric report(s) of {len(found)} at "
                               f"{reports_uri}")
        log.info("%s: telemetry: %s", self.name, self.telemetry_note)

    async def identity(self) -> Identity:
        ident = await super().identity()
        return Identity(ident.vendor, ident.model, ident.serial, ident.firmware,
                        {**ident.extra, "telemetry": self.telemetry_note,
                         "metric_reports": sorted(self.reports)})

    @counted_as("log")
    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """The event log's new entries (drivers/redfish_log.py), then the metric reports'."""
        failure = None
        try:
            entries, new_cursor = await super().log_entries(cursor)
        except DeviceError as exc:
            entries, new_cursor, failure = [], cursor, exc
        backlog = self.log_backlog
        metrics = await self._metric_entries()
        self.log_backlog = self.log_backlog or backlog
        if failure is not None:
            if not metrics:
                raise failure
            log.warning("%s: %s (the metric reports were read)", self.name, failure.message)
        return entries + metrics, new_cursor

    async def _metric_entries(self) -> list[LogEntry]:
        """Each report that is due, within the poll's budget; entries of the new ones."""
        now = self.now_ns()
        deadline = now + self.log_budget_ns
        if self.log_until_ns is not None:
            deadline = min(deadline, self.log_until_ns)
        out: list[LogEntry] = []
        for uri, state in self.reports.items():
            if self._report_due.get(uri, 0) > now:
                continue
            try:
                body, s, e, _ = await self._get_json(uri, f"GET {uri}", urgent=False,
                                                     max_wait_s=max(0, deadline - now) / NS)
            except NotSent:
                self.log_backlog = True          # no room in the budget: the next poll
                break
            except DeviceError as exc:
                self._report_due[uri] = now + self.metric_poll_ns
                log.warning("%s: metric report: %s", self.name, exc.message)
                continue
            self._report_due[uri] = now + self.metric_poll_ns
            rid = str(body.get("Id") or uri.rstrip("/").rsplit("/", 1)[-1])
            out += report_entries(rid, body, state, s, e)
        return out


DRIVER = RedfishHMC
