"""The Redfish driver's event log (a mixin of `RedfishBMC`): which LogService to read, chosen
by the service's links (drivers/redfish_discovery.py) or named in the rack file, and its entries
read incrementally within a per-poll budget.

A service with no usable log is asked again at most once a minute (`LOG_RETRY_NS`); in between
a poll costs no request. Where the chosen log has shown none of the test events sent over
`SWITCH_AFTER_NS`, the other logs found are looked at (once a minute, one GET each) and the
driver switches to one that holds a test event; `log_choice` says so.

Needs of the driver (declared in drivers/redfish_part.py): `name`, `now_ns`, `log_until_ns`,
`_get_json(uri, what, urgent, max_wait_s)`, `_service_root()`, `_fail(kind, message)`.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Mapping
from typing import Any

from drivers import redfish_discovery as discovery
from drivers import redfish_known
from drivers.base import DeviceError, LogEntry
from drivers.redfish_discovery import LogCandidate
from drivers.redfish_discovery import link as _link
from drivers.redfish_part import JSON, RedfishPart
from drivers.redfish_session import counted_as
from drivers.redfish_time import parse_datetime_ns

log = logging.getLogger("drivers.redfish_bmc")
NS = 1_000_000_000


def _id_key(entry_id: str) -> tuple[int, ...] | None:
    """Numeric log entry Ids (`17`, bmcweb's `1700000000_3`) order; others do not."""
    if re.fullmatch(r"\d+(?:[_.]\d+)*", entry_id or ""):
        return tuple(int(p) for p in re.split(r"[_.]", entry_id))
    return None


def _next_link(page: JSON, uri: str) -> str | None:
    """The page's nextLink; None on the newest page (no link, or one to the page itself)."""
    nxt = page.get("Members@odata.nextLink")
    if not isinstance(nxt, str) or not nxt or nxt == uri:
        return None
    return nxt


def _in_id_order(members: list[JSON], keys: list[tuple[int, ...]],
                 after: tuple[int, ...] | None) -> list[JSON]:
    """The members in the order of their numeric Ids (`keys`), only those after `after`."""
    order = sorted(range(len(members)), key=lambda i: keys[i])
    return [members[i] for i in order if after is None or keys[i] > after]


class NotSent(DeviceError):
    """A request the budget held back (drivers/redfish_session.py): nothing was sent."""


class LogReader(RedfishPart):
    LOG_RETRY_NS = 60 * NS       # a service with no usable log is asked again after this
    SWITCH_AFTER_NS = 15 * NS    # test events unseen in the chosen log this long: look elsewhere
    MARK = "rackclock test event"

    def _init_log(self, o: Mapping[str, Any]) -> None:
        self.entries_uri: str | None = o.get("log_entries")
        self.log_service_uri: str | None = o.get("log_service")
        self.log_choice = ""                     # how the log was chosen (or why there is none)
        self.log_pages = int(o.get("log_pages_per_poll", 2))
        self.log_budget_ns = int(float(o.get("log_budget_s", 0.5)) * NS)
        self._log_page: str | None = None      # the log page to read next (the newest read)
        self._log_seen: dict[str, None] = {}   # Ids of entries returned (the last 10,000)
        self._page_ns = 0                      # how long the last log page took
        self.log_backlog = False               # pages are left to read: poll again soon
        self._log_failed_ns: int | None = None   # when log discovery last failed
        self._log_others: list[LogCandidate] = []   # the other logs found (a switch's candidates)
        self._marks_seen = False                 # a test event's entry came from the chosen log
        self._unseen_since: int | None = None    # first test event sent while none was seen
        self._others_checked: int | None = None  # when the other logs were last looked at

    def _test_event_sent(self, s_ns: int) -> None:
        if not self._marks_seen and self._unseen_since is None:
            self._unseen_since = s_ns

    async def _discover_log(self) -> None:
        """Choose the event log (never raises): the rack file's `log_service` or `log_entries`,
        else the best LogService the service's links lead to. The choice, or why there is none,
        goes to `log_choice` (the identity's extra); a failure is retried at most once a
        minute (log_entries)."""
        if self.entries_uri is not None:
            self.log_choice = self.log_choice or "log_entries set in the rack file"
            return
        self._log_failed_ns = None
        try:
            if self.log_service_uri:
                await self._use_configured_service(self.log_service_uri)
                return
            known = redfish_known.known(self.name, self.config.address,
                                        await self._service_root())
            if known.log:                            # found by an earlier session, root unchanged
                self._use_known_log(known.log)
                return
            cands = await discovery.find_logs(
                lambda uri, what: self._first_of(self._get_json(uri, what)),
                await self._service_root())
        except DeviceError as exc:
            self._log_failed_ns = self.now_ns()
            self.log_choice = f"none: {exc.message}"
            return
        best = discovery.choose(cands)
        if best is None:
            self._log_failed_ns = self.now_ns()
            self.log_choice = ("none: no LogService with Entries under the service's Managers "
                               "and Systems; set log_service to one")
            return
        self._use_best_log(best, cands)
        known.log = {"service": best.service, "entries": best.entries,
                     "others": list(self._log_others), "choice": self.log_choice}
        log.info("%s: event log: %s", self.name, self.log_choice)

    async def _use_configured_service(self, uri: str) -> None:
        """The LogService named in the rack file: its Entries link, or a DeviceError."""
        ls, *_ = await self._get_json(uri, f"GET {uri}")
        if not _link(ls, "Entries"):
            raise self._fail("protocol", f"LogService {uri} (log_service "
                             f"in the rack file) has no Entries link")
        self.entries_uri = _link(ls, "Entries")
        self.log_choice = "log_service set in the rack file"

    def _use_known_log(self, known: dict) -> None:
        """The log an earlier session chose, kept while the service root is unchanged."""
        self.log_service_uri, self.entries_uri = known["service"], known["entries"]
        self._log_others = list(known["others"])
        self.log_choice = known["choice"] + " (kept: the service root is unchanged)"

    def _use_best_log(self, best: LogCandidate, cands: list[LogCandidate]) -> None:
        """The best candidate chosen; the other enabled ones kept for a switch; `log_choice`
        says which it is and what it was preferred to."""
        self.log_service_uri, self.entries_uri = best.service, best.entries
        self._log_others = [c for c in cands if c is not best and c.enabled]
        others = [c.describe() for c in cands if c is not best]
        self.log_choice = f"chose {best.describe()}" + (f" over {'; '.join(others)}" if others
                                                        else "")

    @staticmethod
    async def _first_of(coro: Awaitable[tuple[JSON, int, int, str]]) -> JSON:
        return (await coro)[0]

    async def _log_start(self) -> str:
        """Where a first poll starts: the newest page where the service pages by `$skip`
        (ProtocolFeaturesSupported.TopSkipQuery), else the first page."""
        entries = self.entries_uri
        assert entries is not None               # log_entries found the log first
        root = await self._service_root()
        features = root.get("ProtocolFeaturesSupported")
        if not (isinstance(features, dict) and features.get("TopSkipQuery") is True):
            return entries
        first, *_ = await self._get_json(entries, "GET log entries")
        count, per_page = first.get("Members@odata.count"), len(first.get("Members") or [])
        if not isinstance(count, int) or not first.get("Members@odata.nextLink") or not per_page:
            return entries
        sep = "&" if "?" in entries else "?"
        return f"{entries}{sep}$skip={max(0, count - per_page)}"

    @counted_as("log")
    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Entries newer than `cursor` (the last entry Id seen), read incrementally: from the
        page where the last poll ended (the newest page on a first poll, where the service
        pages by $skip), at most `log_pages_per_poll` pages and `log_budget_s` per call, so a
        long, slow log never holds the clock reads; `log_backlog` says pages are left."""
        if not await self._ensure_log():
            return [], cursor                        # asked less than a minute ago: no request
        deadline = self._log_deadline()
        if await self._switch_log(deadline):
            cursor = None                            # another log: its Ids are its own
        if self._log_page is None:
            self._log_page = await self._log_start()
        start = self._log_page
        members, s, e = await self._read_pages(start, deadline)
        if s is None or e is None:                   # no page read: nothing new
            return [], cursor
        new = [m for m in self._newer(members, cursor) if self._entry_id(m) not in self._log_seen]
        out = await self._fetch_new(new, s, e, deadline, start)
        self._forget_oldest_seen(10_000)
        self._marks_seen |= any(self.MARK in en.message for en in out)
        return out, (out[-1].cursor if out else cursor)

    def _log_deadline(self) -> int:
        """Now plus the poll's budget, and never past `log_until_ns` when it is set."""
        deadline = self.now_ns() + self.log_budget_ns
        return deadline if self.log_until_ns is None else min(deadline, self.log_until_ns)

    def _forget_oldest_seen(self, keep: int) -> None:
        while len(self._log_seen) > keep:
            del self._log_seen[next(iter(self._log_seen))]

    async def _ensure_log(self) -> bool:
        """Whether an event log is known (found now if not); False while a failed search is
        younger than LOG_RETRY_NS; a search that finds none raises."""
        if self.entries_uri is not None:
            return True
        if self._log_failed_ns is not None and \
                self.now_ns() - self._log_failed_ns < self.LOG_RETRY_NS:
            return False
        await self._discover_log()
        if self.entries_uri is None:
            raise self._fail("protocol", f"no event log: {self.log_choice[6:]} (asked again "
                             f"in {self.LOG_RETRY_NS // NS} s)")
        return True

    async def _read_pages(self, uri: str, deadline: int) -> tuple[list[JSON], int | None, int | None]:
        """The members of the pages from `uri` (`_log_page`) on, within the page count and the
        deadline, with the first page's bracket start and the last one's end (None: no page)."""
        members: list[JSON] = []
        s, e, pages = None, None, 0
        self.log_backlog = False
        while True:
            t0 = self.now_ns()
            got = await self._read_page(uri, deadline)
            if got is None:
                self.log_backlog = True        # the budget is spent: poll again soon
                break
            page, ps, e = got
            self._page_ns = self.now_ns() - t0
            s, pages = (ps if s is None else s), pages + 1
            members += [m for m in page.get("Members") or [] if isinstance(m, dict)]
            nxt = _next_link(page, uri)
            if nxt is None:
                self._log_page = uri           # the newest page: read again next poll
                break
            self._log_page = uri = nxt
            if self._no_room_for_a_page(pages, deadline):
                self.log_backlog = True
                break
        return members, s, e

    def _no_room_for_a_page(self, pages: int, deadline: int) -> bool:
        """Whether the poll has read its pages, or another (as long as the last) would end
        past the deadline."""
        return pages >= self.log_pages or self.now_ns() + self._page_ns >= deadline

    async def _read_page(self, uri: str, deadline: int) -> tuple[JSON, int, int] | None:
        """One page of the log and its bracket, no later than the deadline (None: the budget
        held it back)."""
        try:
            wait = max(0, deadline - self.now_ns()) / NS     # no later than the budget
            page, ps, e, _ = await self._get_json(uri, "GET log entries", urgent=False,
                                                  max_wait_s=wait)
        except NotSent:
            return None
        except DeviceError:
            self._log_page = None              # the log was cleared or moved: start again
            raise
        return page, ps, e

    async def _fetch_new(self, new: list[JSON], s: int, e: int, deadline: int,
                         start: str) -> list[LogEntry]:
        """The new members as entries; a member that is only a link is fetched while the
        deadline allows (the rest next poll, from `start`)."""
        out: list[LogEntry] = []
        for m in new:
            if "Created" not in m and (uri := _link(m)):       # a collection of links only
                if self.now_ns() >= deadline:
                    self.log_backlog, self._log_page = True, start   # the rest next poll
                    break
                m, _, e, _ = await self._get_json(uri, "GET log entry")
            out.append(self._entry(m, s, e))
            self._log_seen[out[-1].cursor] = None
        return out

    async def _switch_log(self, deadline: int) -> bool:
        """Where the chosen log has shown none of the test events sent over SWITCH_AFTER_NS,
        look (at most once a minute, one GET per other log) for a log whose first page holds
        one, and switch to it; said in `log_choice` and the log."""
        t = self.now_ns()
        if not self._time_to_look_elsewhere(t):
            return False
        for c in self._log_others:
            try:
                page, *_ = await self._get_json(c.entries, f"GET {c.entries}", urgent=False,
                                                max_wait_s=max(0, deadline - t) / NS)
            except NotSent:
                return False                         # no room now: looked at next poll
            except DeviceError:
                continue
            self._others_checked = t
            if self._holds_a_mark(page):
                self._switch_to(c, t)
                return True
        self._others_checked = t
        return False

    def _time_to_look_elsewhere(self, t: int) -> bool:
        """Test events sent over SWITCH_AFTER_NS and none seen, other logs to look at, and
        none looked at in the last LOG_RETRY_NS."""
        if self._marks_seen or self._unseen_since is None or not self._log_others:
            return False
        if t - self._unseen_since < self.SWITCH_AFTER_NS:
            return False
        return self._others_checked is None or t - self._others_checked >= self.LOG_RETRY_NS

    def _holds_a_mark(self, page: JSON) -> bool:
        """Whether a log page holds a test event's entry."""
        return any(self.MARK in str(m.get("Message", "")) for m in page.get("Members") or []
                   if isinstance(m, dict))

    def _switch_to(self, c: LogCandidate, t: int) -> None:
        """Read log `c` from now on (from its start); said in `log_choice` and the log."""
        assert self._unseen_since is not None    # _time_to_look_elsewhere checked it
        self.log_choice = (f"switched to {c.describe()}: it records the test events; "
                           f"{self.log_service_uri} showed none in "
                           f"{(t - self._unseen_since) // NS} s")
        log.warning("%s: event log: %s", self.name, self.log_choice)
        self._log_others = [x for x in self._log_others if x is not c]
        self.log_service_uri, self.entries_uri = c.service, c.entries
        self._log_page, self._log_seen, self._marks_seen = None, {}, True

    @staticmethod
    def _entry_id(m: JSON) -> str:
        return str(m.get("Id") or (_link(m) or "").rsplit("/", 1)[-1])

    @staticmethod
    def _newer(members: list[JSON], cursor: str | None) -> list[JSON]:
        ids = [LogReader._entry_id(m) for m in members]
        keys = [k for k in map(_id_key, ids) if k is not None]
        after = None if cursor is None else _id_key(cursor)
        if len(keys) == len(ids) and (cursor is None or after is not None):
            return _in_id_order(members, keys, after)
        if cursor in ids:                                   # opaque Ids: oldest first
            return members[ids.index(cursor) + 1:]
        return members

    def _entry(self, m: JSON, s: int, e: int) -> LogEntry:
        entry_id = str(m.get("Id") or (_link(m) or "").rsplit("/", 1)[-1])
        created = m.get("Created")
        try:
            value = parse_datetime_ns(created) if isinstance(created, str) else None
        except ValueError:
            value = None
        raw = json.dumps({k: m.get(k) for k in ("Id", "Created", "MessageId", "Message")},
                         separators=(",", ":"))
        return LogEntry(cursor=entry_id, clock="datetime", value_ns=value, resolution_ns=NS,
                        s_ns=s, e_ns=e, message=str(m.get("Message") or m.get("MessageId") or ""),
                        raw=raw)
