"""Redfish BMC driver: the Manager's `DateTime`, `SubmitTestEvent`, and the event log, over HTTPS.

Client: the DMTF `redfish` library's asynchronous client (`redfish.aio.AsyncRedfishClient`) on an
aiohttp session this driver owns. Why not the sync `redfish.redfish_client` (requests):

- Its brackets are wider. Measured against our emulator (own process) over HTTPS on loopback,
  300 reads each (`benchmarks/redfish_bracket.py`): median bracket sync 927 µs, aio 425 µs
  with stamps around the call, aio 360 µs with the stamps taken by aiohttp's trace hooks (p99
  1302 / 714 / 575 µs). requests adds ~0.5 ms of client work inside the bracket; aiohttp does
  less, and only aiohttp lets us stamp at the wire.
- The stamps are taken by the request and response classes this driver gives its aiohttp session
  (`request_class`, `response_class`): `s` as the request starts to be serialised and written
  (after the connection, and any TLS handshake, is up) and `e` when the answer's headers have
  been parsed: the instants aiohttp's trace hooks (on_request_headers_sent, on_request_end)
  mark, without the trace machinery's five signal dispatches per request (about 30 µs of CPU
  per read; benchmarks/README.md, "CPU per read"). If a library re-sends (redfish.aio logs in
  again after a 401 on a GET; aiohttp re-sends a GET once on a stale keep-alive connection),
  the bracket is the one of the exchange whose answer we use, and `raw` says so; nothing is
  retried silently into a wider bracket.
- On a CLOCK_REALTIME reference the session connects through stamped sockets
  (drivers/tcp_rx_stamp.py, aiohttp's `socket_factory`) and `e` is the kernel's arrival stamp of
  the last bytes read when the headers were parsed: a busy loop does not widen the bracket, and
  such reads say `stamp = "kernel"`.
- The sync client retries failed requests `max_retry=10` times with a 1 s sleep each; the aio
  client never retries on its own, and every request here has a timeout (`timeout_s`, 3 s).

Authentication is a Redfish session (token); `redfish.aio` logs in only over HTTPS, so plain
`http://` addresses are refused. TLS is verified against `ca_file` (or the system store); a
device may set `verify_tls = false`. The password comes from `config.secret()` and never appears
in an error. Parsing of `DateTime` is written here (stdlib `datetime`), since the library does
none. Inventory keys: `ca_file`, `verify_tls`, `timeout_s`, `manager` (Manager URI),
`log_entries` (LogEntry collection URI), `test_message_id`, and those of event subscriptions
(`events`, `event_listener`...: drivers/redfish_events.py).
"""
from __future__ import annotations

import contextvars
import datetime as dt
import json
import re
import ssl
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy
from redfish.aio import (AsyncRedfishClient, RedfishAuthenticationError, RedfishConnectionError,
                         RedfishError, RedfishHTTPError, RedfishInvalidTargetError,
                         RedfishProtocolError, RedfishTimeoutError)

from bench.errors import RackclockError
from bench.model.inventory import Key
from drivers.base import (TIMEOUT_KEY, ClockSpec, DeviceError, Driver, Identity, LogEntry, Read,
                          Stimulus, split_address)
from drivers.base import ClockSetting, NtpCommanding, Stimulated
from drivers import tcp_rx_stamp
from drivers.redfish_events import EventSubscriber

NS = 1_000_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")

# Stamps of the exchanges made by the current task: [("s", ns) | ("e", ns, kernel ns or None)],
# filled by the session's request and response classes (stamped_request, capped_response).
_STAMPS: contextvars.ContextVar[list | None] = contextvars.ContextVar("redfish_stamps",
                                                                     default=None)
_RAW = json.JSONEncoder(separators=(",", ":")).encode


class BodyTooLarge(RackclockError, aiohttp.ClientPayloadError):
    """An answer over the driver's size cap (`max_body_bytes`): not read further."""


def stamped_request(now_ns) -> type[aiohttp.ClientRequest]:
    """aiohttp's request, stamping `s` (into _STAMPS of the sending task) when it starts to be
    written on a connection that is up: every send, a re-sent one included."""

    class StampedRequest(aiohttp.ClientRequest):
        async def send(self, conn):
            stamps = _STAMPS.get()
            if stamps is not None:
                stamps.append(("s", now_ns()))
            return await super().send(conn)

    return StampedRequest


def capped_response(limit: int, now_ns=None) -> type[aiohttp.ClientResponse]:
    """aiohttp's response, reading at most `limit` bytes of a body (aiohttp has no such cap):
    a 100 MB or endless answer costs one exchange and `limit` bytes, not the bench's memory.
    With `now_ns`, it stamps `e` (into _STAMPS) when the answer's headers have been parsed, with
    the kernel's arrival stamp of the bytes last read where the connection's socket keeps one."""

    class CappedResponse(aiohttp.ClientResponse):
        async def start(self, connection):
            sock = tcp_rx_stamp.stamped_socket_of(connection.transport)
            out = await super().start(connection)
            if now_ns is not None and (stamps := _STAMPS.get()) is not None:
                stamps.append(("e", now_ns(), sock.rx_ns if sock is not None else None))
            return out

        async def read(self) -> bytes:
            if self._body is None:
                n = self.content_length
                try:
                    if n is not None and n > limit:
                        raise BodyTooLarge(f"answer of {n} bytes over the {limit}-byte cap")
                    buf = bytearray()
                    while chunk := await self.content.readany():
                        buf += chunk
                        if len(buf) > limit:
                            raise BodyTooLarge(f"answer over the {limit}-byte cap (read no "
                                               f"further)")
                except BaseException:
                    self.close()
                    raise
                self._body = bytes(buf)
            return await super().read()

    return CappedResponse


def parse_offset(text: str) -> dt.timezone:
    m = _OFFSET.match(text or "")
    if not m:
        raise ValueError(f"not a UTC offset: {text!r}")
    minutes = int(m[2]) * 60 + int(m[3])
    return dt.timezone(dt.timedelta(minutes=-minutes if m[1] == "-" else minutes))


def parse_datetime_ns(text: str, local_offset: str | None = None) -> int:
    """A Redfish date-time (`2026-11-29T18:03:29+01:00`) -> Unix-epoch ns (UTC).

    Without an offset in the string, `local_offset` (`DateTimeLocalOffset`) applies; with neither,
    ValueError: the instant would be ambiguous.
    """
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        if local_offset is None:
            raise ValueError(f"date-time {text!r} has no UTC offset")
        t = t.replace(tzinfo=parse_offset(local_offset))
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000


def _id_key(entry_id: str) -> tuple[int, ...] | None:
    """Numeric log entry Ids (`17`, bmcweb's `1700000000_3`) order; others do not."""
    if re.fullmatch(r"\d+(?:[_.]\d+)*", entry_id or ""):
        return tuple(int(p) for p in re.split(r"[_.]", entry_id))
    return None


def _link(obj: Any, key: str | None = None) -> str | None:
    """The `@odata.id` of `obj[key]` (or of `obj`), None when the answer has no such link."""
    if key is not None:
        obj = obj.get(key) if isinstance(obj, dict) else None
    uri = obj.get("@odata.id") if isinstance(obj, dict) else None
    return uri if isinstance(uri, str) and uri else None


def _members(coll: dict) -> list[str]:
    return [u for u in (_link(m) for m in coll.get("Members") or [] if isinstance(m, dict)) if u]


def _redfish_message(body: Any) -> str:
    """The first message of a Redfish error body, if it is one."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        info = err.get("@Message.ExtendedInfo")
        if isinstance(info, list) and info and isinstance(info[0], dict):
            return f"{info[0].get('MessageId', '')}: {info[0].get('Message', '')}"
        return str(err.get("message") or err.get("code") or "")
    return ""


class RedfishBMC(EventSubscriber, Stimulated, ClockSetting, NtpCommanding, Driver):
    TEST_EVENT = "test_event"
    SCHEMES = ("https",)
    CREDENTIALS = (("username",), ("password_env",))      # checked at load (bench.model.rackfile)
    OPTIONS = {"verify_tls": Key("bool"), "ca_file": Key("path", exists="file"), "timeout_s": TIMEOUT_KEY,
               "manager": Key("str"), "log_entries": Key("str"), "test_message_id": Key("str"),
               "max_body_bytes": Key("int", 4096, 1 << 28, unit="bytes"),
               "log_pages_per_poll": Key("int", 1, 100), "log_budget_s": TIMEOUT_KEY,
               "events": Key("str", choices=("auto", "sse", "push", "poll")),
               "event_listener": Key("str"), "event_listener_cert": Key("path", exists="file"),
               "event_listener_key": Key("path", exists="file"), "event_verify_certificate": Key("bool")}

    def __init__(self, config, now_ns, armed: bool = False):
        super().__init__(config, now_ns, armed)
        o = config.options
        self.verify_tls = bool(o.get("verify_tls", True))
        self.stamp = "user"          # how the last exchange's answer was stamped (or "kernel")
        self.ca_file = o.get("ca_file")
        self.timeout_s = float(o.get("timeout_s", 3.0))
        self.manager_uri = o.get("manager")
        self.entries_uri = o.get("log_entries")
        self.test_message_id = str(o.get("test_message_id", "Base.1.0.Success"))
        self.max_body = int(o.get("max_body_bytes", 4 << 20))
        self.log_pages = int(o.get("log_pages_per_poll", 2))
        self.log_budget_ns = int(float(o.get("log_budget_s", 0.5)) * NS)
        self._log_page: str | None = None      # the log page to read next (the newest read)
        self._log_seen: dict[str, None] = {}   # Ids of entries returned (the last 10,000)
        self._page_ns = 0                      # how long the last log page took
        self.log_backlog = False               # pages are left to read: poll again soon
        self.scheme, self.host, self.port, _ = split_address(config.address)
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncRedfishClient | None = None
        self._password: str | None = None
        self._submit_uri: str | None = None
        self._root: dict | None = None         # the service root of this session
        self._events_sent = 0
        self._init_events(o)

    # -- errors ----------------------------------------------------------------------------------
    def _clean(self, text: str) -> str:
        if self._password:
            text = text.replace(self._password, "***")
        return text

    def _fail(self, kind: str, message: str) -> DeviceError:
        return self.error(kind, self._clean(message))

    def _map(self, exc: BaseException, what: str) -> DeviceError:
        """A library or transport exception as a DeviceError naming what we were doing."""
        cause = exc.__cause__
        if isinstance(exc, DeviceError):
            return exc
        if isinstance(exc, RedfishTimeoutError):
            return self._fail("timeout", f"{what}: no answer within {self.timeout_s:g} s")
        if isinstance(exc, RedfishConnectionError):
            if isinstance(cause, BodyTooLarge):
                return self._fail("malformed", f"{what}: {cause}")
            if isinstance(cause, aiohttp.ClientConnectorCertificateError):
                return self._fail("protocol", f"{what}: TLS certificate not trusted "
                                  f"({cause.certificate_error}); set ca_file, or verify_tls = false")
            if isinstance(cause, aiohttp.ClientSSLError):
                return self._fail("protocol", f"{what}: TLS failed: {cause}")
            if isinstance(cause, aiohttp.ClientConnectorError):
                return self._fail("unreachable", f"{what}: cannot connect to "
                                  f"{self.host}:{self.port}: {cause.os_error}")
            if isinstance(cause, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
                return self._fail("reset", f"{what}: connection dropped: {cause!r}")
            return self._fail("unreachable", f"{what}: {cause or exc!r}")
        if isinstance(exc, RedfishAuthenticationError):
            return self._fail("auth", f"{what}: the BMC rejected the credentials of user "
                              f"{self.config.username!r}")
        if isinstance(exc, RedfishProtocolError):
            return self._fail("malformed", f"{what}: {exc}")
        if isinstance(exc, RedfishHTTPError):
            return self._http_error(exc.response, what)
        if isinstance(exc, (RedfishInvalidTargetError, RedfishError)):
            return self._fail("protocol", f"{what}: {exc}")
        if isinstance(exc, ssl.SSLError):
            return self._fail("protocol", f"{what}: TLS failed: {exc}")
        return self._fail("error", f"{what}: {exc!r}")

    def _http_error(self, response, what: str) -> DeviceError:
        try:
            detail = _redfish_message(response.dict)
        except RedfishProtocolError:
            detail = response.text[:200]
        kind = "auth" if response.status in (401, 403) else "protocol"
        return self._fail(kind, f"{what}: HTTP {response.status}" + (f" ({detail})" if detail else ""))

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        if self.scheme != "https":
            raise self.error("protocol", f"address {self.config.address!r}: redfish.aio logs in "
                             f"only over HTTPS; use https://")
        self._password = self.config.secret()
        if not self.config.username or self._password is None:
            raise self.error("auth", f"no credentials: set username and the environment variable "
                             f"named by password_env ({self.config.password_env!r})")
        if not self.verify_tls:
            tls: ssl.SSLContext | bool = False
        else:
            try:
                tls = ssl.create_default_context(cafile=self.ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise self.error("error", f"cannot load ca_file {self.ca_file!r}: {exc}") from None
        # Redfish authenticates by X-Auth-Token: no cookie jar to keep or filter per request
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                ssl=tls, limit=4, socket_factory=tcp_rx_stamp.stamped_socket
                if tcp_rx_stamp.on_kernel_clock(self.now_ns) else None),
            cookie_jar=aiohttp.DummyCookieJar(),
            request_class=stamped_request(self.now_ns),
            response_class=capped_response(self.max_body, self.now_ns))
        base = f"https://{self.host if ':' not in self.host else f'[{self.host}]'}" + \
               (f":{self.port}" if self.port else "")
        self._client = _OneSessionClient(base, username=self.config.username,
                                         password=self._password, session=self._session,
                                         timeout=self.timeout_s)
        try:
            await self._client.login("session")
            if not self.manager_uri:
                self.manager_uri = await self._first_member("Managers")
            await self._open_events()
        except BaseException as exc:
            await self.close()
            if isinstance(exc, Exception):
                raise self._map(exc, "login") from None
            raise

    async def close(self) -> None:
        await self._close_events()
        client, session = self._client, self._session
        self._client = self._session = None
        self._root = None
        try:
            if client is not None:
                await client.logout()
        except Exception:
            pass
        try:
            if session is not None:
                await session.close()
        except Exception:
            pass

    # -- one bracketed exchange -------------------------------------------------------------------
    async def _exchange(self, method: str, uri: str, body: dict | None = None, what: str = ""):
        """(response, s_ns, e_ns, note): one request; the bracket is the wire-side stamps of the
        exchange that produced the answer (falls back to stamps around the call)."""
        if self._client is None:
            raise self.error("error", "not open")
        stamps: list = []
        token = _STAMPS.set(stamps)
        s0 = self.now_ns()
        try:
            if method == "GET":
                resp = await self._client.get(uri)
            elif method == "PATCH":
                resp = await self._client.patch(uri, body=body)
            else:
                resp = await self._client.post(uri, body=body)
        except Exception as exc:
            raise self._map(exc, what or f"{method} {uri}") from None
        finally:
            e0 = self.now_ns()
            _STAMPS.reset(token)
        sends = [x[1] for x in stamps if x[0] == "s"]
        s = sends[-1] if sends else s0
        answers = [x[1:] for x in stamps if x[0] == "e" and x[1] >= s]
        e, kernel = answers[-1] if answers else (e0, None)
        self.stamp = "user"
        if (k := tcp_rx_stamp.arrival(kernel, s, e)) is not None:    # bytes of this answer
            e, self.stamp = k, "kernel"
        # aiohttp re-sends a GET once on a stale keep-alive connection; redfish.aio logs in again
        # after a 401 on a GET: the bracket above is the last exchange's, and raw says so.
        note = f"(after {len(sends) - 1} re-sent request(s))" if len(sends) > 1 else ""
        if not 200 <= resp.status < 300:
            raise self._http_error(resp, what or f"{method} {uri}")
        return resp, s, e, note

    async def _get_json(self, uri: str, what: str) -> tuple[dict, int, int, str]:
        resp, s, e, note = await self._exchange("GET", uri, what=what)
        try:
            body = resp.dict
        except RedfishProtocolError:
            raise self._fail("malformed", f"{what}: not JSON: {resp.text[:120]!r}") from None
        if not isinstance(body, dict):
            raise self._fail("malformed", f"{what}: not a JSON object: {resp.text[:120]!r}")
        return body, s, e, note

    async def _service_root(self) -> dict:
        """The service root, read once per session: its links lead to the Managers, the event
        log and the EventService, each looked up once (a GET saved at each)."""
        if self._root is None:
            self._root, *_ = await self._get_json("/redfish/v1/", "GET service root")
        return self._root

    async def _first_member(self, collection: str) -> str:
        root = await self._service_root()
        uri = _link(root, collection) or f"/redfish/v1/{collection}"
        coll, *_ = await self._get_json(uri, f"GET {uri}")
        members = _members(coll)
        if not members:
            raise self._fail("malformed", f"GET {uri}: no members")
        return members[0]

    # -- the contract ----------------------------------------------------------------------------
    async def identity(self) -> Identity:
        m, *_ = await self._get_json(self.manager_uri, "GET Manager")
        return Identity(vendor=str(m.get("Manufacturer", "")), model=str(m.get("Model", "")),
                        serial=str(m.get("SerialNumber", "")),
                        firmware=str(m.get("FirmwareVersion", "")),
                        extra={"manager": self.manager_uri, "uuid": m.get("UUID", ""),
                               "local_offset": m.get("DateTimeLocalOffset", ""),
                               "events": self.events_state})

    def clocks(self) -> list[ClockSpec]:
        return [ClockSpec("datetime", NS)]

    async def read_clock(self, clock: str) -> Read:
        if clock != "datetime":
            raise self.error("error", f"no clock {clock!r} (this driver reads 'datetime')")
        m, s, e, note = await self._get_json(self.manager_uri, "GET Manager DateTime")
        stamp = self.stamp
        text, offset = m.get("DateTime"), m.get("DateTimeLocalOffset")
        raw = _RAW({"DateTime": text, "DateTimeLocalOffset": offset})
        if not isinstance(text, str):
            raise self._fail("malformed", f"Manager {self.manager_uri} has no DateTime: {raw}")
        try:
            value = parse_datetime_ns(text, offset if isinstance(offset, str) else None)
        except ValueError as exc:
            raise self._fail("malformed", f"Manager DateTime {text!r}: {exc}") from None
        return Read("datetime", s, e, value, NS, stamp=stamp, raw=raw + (f" {note}" if note else ""))

    def stimuli(self) -> list[str]:
        return [self.TEST_EVENT]

    async def _set_ntp(self, enabled: bool | None, server: str | None) -> Stimulus:
        """PATCH NetworkProtocol: NTP ProtocolEnabled and/or NTPServers = [server]."""
        ntp: dict = {}
        if enabled is not None:
            ntp["ProtocolEnabled"] = bool(enabled)
        if server:
            ntp["NTPServers"] = [server]
        m, *_ = await self._get_json(self.manager_uri, "GET Manager")
        uri = _link(m, "NetworkProtocol") or f"{self.manager_uri.rstrip('/')}/NetworkProtocol"
        resp, s, e, note = await self._exchange("PATCH", uri, {"NTP": ntp},
                                                "PATCH NetworkProtocol NTP")
        return Stimulus(self.SET_NTP, json.dumps(ntp, separators=(",", ":")), s, e, sent=True,
                        stamp="user", raw=f"HTTP {resp.status} NTP={json.dumps(ntp)}"
                                          + (f" {note}" if note else ""))

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name != self.TEST_EVENT:
            return await super()._stimulate(name, target)
        if self._submit_uri is None:
            root = await self._service_root()
            es_uri = _link(root, "EventService") or "/redfish/v1/EventService"
            es, *_ = await self._get_json(es_uri, "GET EventService")
            actions = es.get("Actions") if isinstance(es.get("Actions"), dict) else {}
            action = actions.get("#EventService.SubmitTestEvent")
            target = action.get("target") if isinstance(action, dict) else None
            self._submit_uri = target if isinstance(target, str) and target else \
                f"{es_uri.rstrip('/')}/Actions/EventService.SubmitTestEvent"
        self._events_sent += 1
        body = {"MessageId": self.test_message_id, "Severity": "OK",
                "Message": f"rackclock test event {self._events_sent}"}
        resp, s, e, note = await self._exchange("POST", self._submit_uri, body,
                                                "POST SubmitTestEvent")
        return Stimulus(name, None, s, e, sent=True, stamp="user",
                        raw=f"HTTP {resp.status} {body['Message']}" + (f" {note}" if note else ""))

    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        """PATCH the Manager's `DateTime` (UTC, microseconds); the target is taken just before
        sending when given as an offset from the reference."""
        target = value_ns if value_ns is not None else self.now_ns() + round(offset_s * NS)
        t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=target // 1000)
        body = {"DateTime": t.isoformat(timespec="microseconds")}
        resp, s, e, note = await self._exchange("PATCH", self.manager_uri, body,
                                                "PATCH Manager DateTime")
        return Stimulus(self.SET_CLOCK, body["DateTime"], s, e, sent=True, stamp="user",
                        raw=f"HTTP {resp.status} DateTime={body['DateTime']}"
                            + (f" {note}" if note else ""))

    async def _find_entries_uri(self) -> str:
        """The LogEntry collection of the `EventLog` LogService (a System's, else a Manager's)."""
        root = await self._service_root()
        for coll in ("Systems", "Managers"):
            uri = _link(root, coll)
            if not uri:
                continue
            for member in _members((await self._get_json(uri, f"GET {uri}"))[0]):
                res, *_ = await self._get_json(member, f"GET {member}")
                ls_uri = _link(res, "LogServices")
                if not ls_uri:
                    continue
                for svc in _members((await self._get_json(ls_uri, f"GET {ls_uri}"))[0]):
                    if svc.rstrip("/").endswith("/EventLog"):
                        ls, *_ = await self._get_json(svc, f"GET {svc}")
                        if _link(ls, "Entries"):
                            return _link(ls, "Entries")
        raise self.error("protocol", "no EventLog LogService found; set log_entries to the URI "
                                     "of the LogEntry collection")

    async def _log_start(self) -> str:
        """Where a first poll starts: the newest page where the service pages by `$skip`
        (ProtocolFeaturesSupported.TopSkipQuery), else the first page."""
        root = await self._service_root()
        features = root.get("ProtocolFeaturesSupported")
        if not (isinstance(features, dict) and features.get("TopSkipQuery") is True):
            return self.entries_uri
        first, *_ = await self._get_json(self.entries_uri, "GET log entries")
        count, per_page = first.get("Members@odata.count"), len(first.get("Members") or [])
        if not isinstance(count, int) or not first.get("Members@odata.nextLink") or not per_page:
            return self.entries_uri
        sep = "&" if "?" in self.entries_uri else "?"
        return f"{self.entries_uri}{sep}$skip={max(0, count - per_page)}"

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Entries newer than `cursor` (the last entry Id seen), read incrementally: from the
        page where the last poll ended (the newest page on a first poll, where the service
        pages by $skip), at most `log_pages_per_poll` pages and `log_budget_s` per call, so a
        long, slow log never holds the clock reads; `log_backlog` says pages are left."""
        if self.entries_uri is None:
            self.entries_uri = await self._find_entries_uri()
        if self._log_page is None:
            self._log_page = await self._log_start()
        deadline = self.now_ns() + self.log_budget_ns
        if self.log_until_ns is not None:
            deadline = min(deadline, self.log_until_ns)
        members: list = []
        start = uri = self._log_page
        s, e, pages = None, None, 0
        self.log_backlog = False
        while True:
            t0 = self.now_ns()
            try:
                page, ps, e, _ = await self._get_json(uri, "GET log entries")
            except DeviceError:
                self._log_page = None          # the log was cleared or moved: start again
                raise
            self._page_ns = self.now_ns() - t0
            s, pages = (ps if s is None else s), pages + 1
            members += [m for m in page.get("Members") or [] if isinstance(m, dict)]
            nxt = page.get("Members@odata.nextLink")
            if not isinstance(nxt, str) or not nxt or nxt == uri:
                self._log_page = uri           # the newest page: read again next poll
                break
            self._log_page = uri = nxt
            if pages >= self.log_pages or self.now_ns() + self._page_ns >= deadline:
                self.log_backlog = True
                break
        new = [m for m in self._newer(members, cursor) if self._entry_id(m) not in self._log_seen]
        out = []
        for m in new:
            if "Created" not in m and _link(m):                 # a collection of links only
                if self.now_ns() >= deadline:
                    self.log_backlog, self._log_page = True, start   # the rest next poll
                    break
                m, _, e, _ = await self._get_json(_link(m), "GET log entry")
            out.append(self._entry(m, s, e))
            self._log_seen[out[-1].cursor] = None
        while len(self._log_seen) > 10_000:
            del self._log_seen[next(iter(self._log_seen))]
        return out, (out[-1].cursor if out else cursor)

    @staticmethod
    def _entry_id(m: dict) -> str:
        return str(m.get("Id") or (_link(m) or "").rsplit("/", 1)[-1])

    @staticmethod
    def _newer(members: list[dict], cursor: str | None) -> list[dict]:
        ids = [str(m.get("Id") or (_link(m) or "").rsplit("/", 1)[-1]) for m in members]
        keys = [_id_key(i) for i in ids]
        if all(k is not None for k in keys) and (cursor is None or _id_key(cursor) is not None):
            order = sorted(range(len(members)), key=lambda i: keys[i])
            return [members[i] for i in order if cursor is None or keys[i] > _id_key(cursor)]
        if cursor in ids:                                   # opaque Ids: oldest first
            return members[ids.index(cursor) + 1:]
        return members

    def _entry(self, m: dict, s: int, e: int) -> LogEntry:
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


class _OneSessionClient(AsyncRedfishClient):
    """redfish.aio logs in again after a 401 on a GET without ending the session it had; a BMC
    that still counts that session would fill its session table at every re-login. Here the old
    session is deleted first (a BMC that already dropped it answers 401/404, which is fine).

    It also keeps what redfish.aio computes afresh for every request and is the same from one
    read to the next: the URL a path resolves to (checked against the origin once) and the
    request headers of the current session (rebuilt when the token changes)."""

    _URLS_KEPT = 256

    def _resolve_url(self, target):
        urls = self.__dict__.setdefault("_rc_urls", {})
        url = urls.get(target) if isinstance(target, str) else None
        if url is None:
            url = super()._resolve_url(target)
            if isinstance(target, str) and len(urls) < self._URLS_KEPT:
                urls[target] = url
        return url

    def _request_headers(self, headers, authenticated=True):
        if headers is not None:
            return super()._request_headers(headers, authenticated)
        key = (authenticated, self._session_key, self._authorization)
        kept = self.__dict__.get("_rc_headers")
        if kept is None or kept[0] != key:
            kept = self._rc_headers = (key, CIMultiDictProxy(
                super()._request_headers(None, authenticated)))
        return kept[1]

    async def _refresh_session(self, expired_session_key):
        async with self._auth_lock:
            if self._session_key != expired_session_key:
                return self._session_key is not None
            try:
                await self._logout_locked()
            except Exception:
                pass
            await self._login_session()
            return True


DRIVER = RedfishBMC
