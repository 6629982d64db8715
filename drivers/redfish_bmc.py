"""Redfish BMC driver: the Manager's `DateTime`, `SubmitTestEvent`, and the event log, over HTTPS.

Client: the DMTF `redfish` library's asynchronous client (`redfish.aio.AsyncRedfishClient`) on an
aiohttp session this driver owns. Why not the sync `redfish.redfish_client` (requests):

- Its brackets are wider: requests adds client work inside the bracket; aiohttp does less, and
  only aiohttp lets us stamp at the wire (`benchmarks/redfish_bracket.py`; the figures:
  benchmarks/README.md, "Brackets per plane").
- The stamps are taken by the request and response classes this driver gives its aiohttp session
  (`request_class`, `response_class`): `s` as the request starts to be serialised and written
  (after the connection, and any TLS handshake, is up) and `e` when the answer's headers have
  been parsed: the instants aiohttp's trace hooks (on_request_headers_sent, on_request_end)
  mark, without the trace machinery's five signal dispatches per request (benchmarks/README.md,
  "CPU per read"). If a library re-sends (redfish.aio logs in
  again after a 401 on a GET; aiohttp re-sends a GET once on a stale keep-alive connection),
  the bracket is the one of the exchange whose answer we use, and `raw` says so; nothing is
  retried silently into a wider bracket.
- On a CLOCK_REALTIME reference the session connects through stamped sockets
  (drivers/tcp_rx_stamp.py, aiohttp's `socket_factory`) and `e` is the kernel's arrival stamp of
  the last bytes read when the headers were parsed: a busy loop does not widen the bracket, and
  such reads say `stamp = "kernel"`.
- The sync client retries failed requests `max_retry=10` times with a 1 s sleep each; the aio
  client never retries on its own, and every request here has a timeout (`timeout_s`, 3 s).

Authentication (`auth`): `session` (a Redfish session token, the default where the service root
links a SessionService), `basic` (HTTP basic on every request; chosen, and said once in the log
and the identity, where the service has no SessionService, as sushy-tools' emulator), or `none`.
Credentials go only over HTTPS (`redfish.aio` logs in only there): a plain `http://` address is
accepted only where the rack file says `auth = "none"` (no credentials then asked for).
TLS is verified against `ca_file` (or the system store); a
device may set `verify_tls = false`. The password comes from `config.secret()` and never appears
in an error or the log. Parsing of `DateTime` is written here (stdlib `datetime`).

The Manager read: every Manager the service root's `Managers` link lists is examined and the
first with a `DateTime` used (a bladed chassis's own Manager often has none); the choice is
`manager_choice` in the identity's extra, `manager` in the rack file picks another. Only linked
paths are followed (a root without a Managers link: "no Managers linked"). What discovery found
is kept across reconnects while the service root is unchanged (drivers/redfish_known.py).

The event log (drivers/redfish_log.py) is found by the service's links
(drivers/redfish_discovery.py: every LogService
with Entries under Managers and Systems, ranked by LogEntryType, OverWritePolicy and the
entries it holds), once at the open; the choice and the candidates are in the identity's
`extra` (`log_service`, `log_choice`); `log_service` in the rack file names the LogService to
use instead. A service with no usable log is asked again at most once a minute.

Politeness (drivers/redfish_session.py): at most `request_rate_hz` requests a second (default 10)
and `max_concurrent_requests` at once (default 2; the SSE stream is not counted among them);
a 429 or 503 answer holds every request for its Retry-After; a log poll waits for the budget
only until its own deadline (before the next clock read is due), else it is skipped and comes
again soon. Requests, logins and throttled answers are
counted for the runner (`on_traffic`).

Inventory keys: `ca_file`, `verify_tls`, `timeout_s`, `auth`, `manager` (Manager URI),
`log_service` (LogService URI), `log_entries` (LogEntry collection URI), `test_message_id`,
`request_rate_hz`, `max_concurrent_requests`, and those of event subscriptions (`events`,
`event_listener`...: drivers/redfish_events.py).
"""
from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import json
import logging
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.connector import Connection
from multidict import CIMultiDictProxy
from redfish.aio import (
    AsyncRedfishClient,
    RedfishAuthenticationError,
    RedfishConnectionError,
    RedfishError,
    RedfishHTTPError,
    RedfishInvalidTargetError,
    RedfishProtocolError,
    RedfishTimeoutError,
)

from bench.config.inventory import DeviceConfig, Key
from bench.errors import RackclockError
from drivers import redfish_known, tcp_rx_stamp
from drivers.base import (
    TIMEOUT_KEY,
    ClockSetting,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    NtpCommanding,
    Read,
    Stimulated,
    Stimulus,
    split_address,
)
from drivers.redfish_discovery import link as _link
from drivers.redfish_discovery import members as _members
from drivers.redfish_discovery import redfish_message as _redfish_message
from drivers.redfish_events import EventSubscriber, test_event_body
from drivers.redfish_log import LogReader, NotSent
from drivers.redfish_session import (
    AUTH_MODES,
    DEFAULT_CONCURRENT,
    DEFAULT_RATE_HZ,
    Budget,
    Meter,
    Skipped,
    auth_mode,
    counted_as,
    retry_after_s,
)
from drivers.redfish_time import parse_datetime_ns

if TYPE_CHECKING:
    from redfish.aio.response import AsyncRestResponse

log = logging.getLogger(__name__)
NS = 1_000_000_000

# Stamps of the exchanges made by the current task: [("s", ns) | ("e", ns, kernel ns or None)],
# filled by the session's request and response classes (stamped_request, capped_response).
_STAMPS: contextvars.ContextVar[list | None] = contextvars.ContextVar("redfish_stamps",
                                                                     default=None)
_RAW = json.JSONEncoder(separators=(",", ":")).encode


class BodyTooLarge(RackclockError, aiohttp.ClientPayloadError):
    """An answer over the driver's size cap (`max_body_bytes`): not read further."""


def stamped_request(now_ns: Callable[[], int],
                    meter: Meter | None = None) -> type[aiohttp.ClientRequest]:
    """aiohttp's request, stamping `s` (into _STAMPS of the sending task) when it starts to be
    written on a connection that is up: every send, a re-sent one included (each counted)."""

    class StampedRequest(aiohttp.ClientRequest):
        async def send(self, conn: Connection) -> aiohttp.ClientResponse:
            if meter is not None:
                meter.count("requests")
            stamps = _STAMPS.get()
            if stamps is not None:
                stamps.append(("s", now_ns()))
            return await super().send(conn)

    return StampedRequest


def capped_response(limit: int,
                    now_ns: Callable[[], int] | None = None) -> type[aiohttp.ClientResponse]:
    """aiohttp's response, reading at most `limit` bytes of a body (aiohttp has no such cap):
    a 100 MB or endless answer costs one exchange and `limit` bytes, not the bench's memory.
    With `now_ns`, it stamps `e` (into _STAMPS) when the answer's headers have been parsed, with
    the kernel's arrival stamp of the bytes last read where the connection's socket keeps one."""

    class CappedResponse(aiohttp.ClientResponse):
        async def start(self, connection: Connection) -> aiohttp.ClientResponse:
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


NTP_OFF = "Redfish NTP.ProtocolEnabled=false"     # ClockSpec.free_running's source


class RedfishBMC(LogReader, EventSubscriber, Stimulated, ClockSetting, NtpCommanding, Driver):
    TEST_EVENT = "test_event"
    SCHEMES = ("https", "http")  # http:// only with auth = "none" (address_problem)
    CREDENTIALS = (("username",), ("password_env",))      # checked at load (bench.config.loader)
    OPTIONS = {"verify_tls": Key("bool"), "ca_file": Key("path", exists="file"),
               "timeout_s": TIMEOUT_KEY,
               "auth": Key("str", choices=AUTH_MODES), "log_service": Key("str"),
               "request_rate_hz": Key("float", 0.1, 100.0, unit="Hz"),
               "max_concurrent_requests": Key("int", 1, 16),
               "manager": Key("str"), "log_entries": Key("str"), "test_message_id": Key("str"),
               "max_body_bytes": Key("int", 4096, 1 << 28, unit="bytes"),
               "log_pages_per_poll": Key("int", 1, 100), "log_budget_s": TIMEOUT_KEY,
               "events": Key("str", choices=("auto", "sse", "push", "poll")),
               "event_listener": Key("str"), "event_listener_cert": Key("path", exists="file"),
               "event_listener_key_file": Key("path", exists="file"),
               "event_verify_certificate": Key("bool")}

    @staticmethod
    def address_problem(scheme: str, options) -> str | None:
        """A rack file's address this driver refuses at load (bench/config/loader.py)."""
        if scheme == "http" and options.get("auth") != "none":
            return ("plain http:// only with auth = \"none\" (credentials go only over "
                    "HTTPS); use https://, or say auth = \"none\" for a service that asks "
                    "for none")
        return None

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.verify_tls = bool(o.get("verify_tls", True))
        self.stamp = "user"          # how the last exchange's answer was stamped (or "kernel")
        self.ca_file = o.get("ca_file")
        self.timeout_s = float(o.get("timeout_s", 3.0))
        self.manager_uri: str | None = o.get("manager")     # None: found at the open
        self.manager_choice = "manager set in the rack file" if self.manager_uri else ""
        self.auth = o.get("auth")                # None: discovered at the open
        self.auth_note: str | None = None
        self.meter = Meter()
        self.budget = Budget(float(o.get("request_rate_hz", DEFAULT_RATE_HZ)),
                             int(o.get("max_concurrent_requests", DEFAULT_CONCURRENT)))
        self.test_message_id = str(o.get("test_message_id", "Base.1.0.Success"))
        self.max_body = int(o.get("max_body_bytes", 4 << 20))
        self._init_log(o)
        self.scheme, self.host, self.port, _ = split_address(config.address)
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncRedfishClient | None = None
        self._password: str | None = None
        self._submit_uri: str | None = None
        self._root: dict | None = None         # the service root of this session
        self.ntp_said: bool | None = None      # NetworkProtocol NTP.ProtocolEnabled at identity
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
            return self._connection_error(exc, cause, what)
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

    def _connection_error(self, exc: BaseException, cause: BaseException | None,
                          what: str) -> DeviceError:
        """A connection that failed, by its cause: body too large, TLS, connect, dropped."""
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

    def _http_error(self, response: AsyncRestResponse, what: str) -> DeviceError:
        try:
            detail = _redfish_message(response.dict)
        except RedfishProtocolError:
            detail = response.text[:200]
        kind = "auth" if response.status in (401, 403) else "protocol"
        if response.status in (429, 503):
            kind = "refused"
            detail = (f"Retry-After {response.getheader('Retry-After')!r}; " if
                      response.getheader("Retry-After") else "") + detail
        return self._fail(kind, f"{what}: HTTP {response.status}" + (f" ({detail})" if detail else ""))

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def on_traffic(self) -> Callable[[str], None] | None:
        return self.meter.on_traffic

    @on_traffic.setter
    def on_traffic(self, fn: Callable[[str], None] | None) -> None:
        """The runner's counter of requests, logins and throttled answers (per minute)."""
        self.meter.on_traffic = fn

    def _tls(self) -> ssl.SSLContext | bool:
        if not self.verify_tls or self.scheme != "https":
            return False
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise self.error("error", f"cannot load ca_file {self.ca_file!r}: {exc}") from None

    async def open(self) -> None:
        self._check_credentials()
        tls = self._tls()
        # Redfish authenticates by X-Auth-Token: no cookie jar to keep or filter per request
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                ssl=tls, limit=4, socket_factory=tcp_rx_stamp.stamped_socket
                if tcp_rx_stamp.on_kernel_clock(self.now_ns) else None),
            cookie_jar=aiohttp.DummyCookieJar(),
            request_class=stamped_request(self.now_ns, self.meter),
            response_class=capped_response(self.max_body, self.now_ns))
        anonymous = self.auth == "none"
        self._client = _OneSessionClient(self._base_url(),
                                         username=None if anonymous else self.config.username,
                                         password=None if anonymous else self._password,
                                         session=self._session, timeout=self.timeout_s)
        self._client.meter = self.meter
        try:
            await self._first_exchanges()
        except BaseException as exc:
            await self.close()
            if isinstance(exc, Exception):
                raise self._map(exc, "login") from None
            raise

    def _check_credentials(self) -> None:
        """Credentials go only over HTTPS, and a service that asks for them needs them set."""
        if self.scheme != "https" and self.auth != "none":
            raise self.error("protocol", f"address {self.config.address!r}: credentials go only "
                             f"over HTTPS (redfish.aio logs in only there); use https://, or "
                             f"auth = \"none\" for a service that asks for none")
        self._password = self.config.secret()
        if self.auth != "none" and (not self.config.username or self._password is None):
            raise self.error("auth", f"no credentials: set username and the environment variable "
                             f"named by password_env ({self.config.password_env!r}), or "
                             f"auth = \"none\"")

    def _base_url(self) -> str:
        """scheme://host[:port], an IPv6 host in brackets."""
        return f"{self.scheme}://{self.host if ':' not in self.host else f'[{self.host}]'}" + \
               (f":{self.port}" if self.port else "")

    async def _first_exchanges(self) -> None:
        """Log in, find the manager (unless configured), open events and find the log."""
        await self._login()
        if not self.manager_uri:
            self.manager_uri = await self._find_manager()
        await self._open_events()
        await self._discover_log()

    async def _login(self) -> None:
        """Read the service root (unauthenticated, DSP0266), choose the auth mode (the rack
        file's, else what the service offers: said once) and log in."""
        root = await self._root_or_nothing()
        mode = self._choose_auth_mode(root)
        if mode == "none":
            return
        if self.scheme != "https":
            raise self.error("protocol", f"the service asks for {mode} authentication: "
                             f"credentials go only over HTTPS; use https://")
        sessions = _link(root.get("Links"), "Sessions") or "/redfish/v1/SessionService/Sessions"
        if self._client is None:
            raise self.error("error", "not open")
        await self._post_login(mode, root, sessions)

    def _choose_auth_mode(self, root: dict) -> str:
        """The auth mode (the rack file's, else what the service root offers), kept; the note
        on how it was chosen is logged once."""
        mode, note = auth_mode(self.auth or ("session" if not root else None), root)
        self.auth = mode
        if note and self.auth_note is None:
            self.auth_note = note
            log.warning("%s: %s", self.name, note)
        return mode

    async def _post_login(self, mode: str, root: dict, sessions: str) -> None:
        """The login itself, within the request budget; its refusals as DeviceErrors."""
        assert self._client is not None         # _login checked it
        try:
            async with self.budget.slot(True, self.timeout_s):
                await self._client.login(mode)
        except Skipped as exc:
            raise self._fail("refused", f"login: {exc}") from None
        except RedfishAuthenticationError:
            if mode == "session" and root and auth_mode(None, root)[0] != "session":
                raise self._fail("auth", f"login (POST {sessions}): refused, and the service root "
                                 f"links no SessionService; set auth = \"basic\"") from None
            raise
        except RedfishHTTPError as exc:
            raise self._login_refused(exc, sessions) from None

    async def _root_or_nothing(self) -> dict:
        """The service root; {} when it is behind authentication (then the configured way)."""
        try:
            return await self._service_root()
        except DeviceError as exc:
            if exc.kind != "auth":
                raise
            return {}

    def _login_refused(self, exc: RedfishHTTPError, sessions: str) -> DeviceError:
        """The DeviceError of an HTTP error answering the login (429/503 hold the budget)."""
        if exc.response.status in (429, 503):
            self._throttled(exc.response)
        why = self._http_error(exc.response, f"login (POST {sessions})")
        if exc.response.status in (404, 405, 501):
            return self._fail(why.kind, f"{why.message}: the service has no session "
                              f"login at {sessions}; set auth = \"basic\"")
        return why

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
    async def _exchange(self, method: str, uri: str, body: dict | None = None, what: str = "",
                        urgent: bool = True, max_wait_s: float | None = None,
                        ) -> tuple[AsyncRestResponse, int, int, str]:
        """(response, s_ns, e_ns, note): one request inside the budget, waiting for it up to
        `max_wait_s` (default half the timeout; 0 for a request that is not `urgent`), else
        NotSent; the bracket is the wire-side stamps of the exchange that produced the answer
        (falls back to stamps around the call)."""
        if self._client is None:
            raise self.error("error", "not open")
        label = what or f"{method} {uri}"
        stamps: list = []
        token = _STAMPS.set(stamps)
        s0 = self.now_ns()
        try:
            if max_wait_s is None:
                max_wait_s = self.timeout_s / 2 if urgent else 0.0
            async with self.budget.slot(urgent, max_wait_s):
                s0 = self.now_ns()
                resp = await self._request(method, uri, body)
        except Skipped as exc:
            raise NotSent(self.name, "refused", self._clean(f"{label}: not sent: {exc}")) from None
        except Exception as exc:
            raise self._map(exc, label) from None
        finally:
            e0 = self.now_ns()
            _STAMPS.reset(token)
        s, e, note = self._bracket(stamps, s0, e0)
        self._check_status(resp, label)
        return resp, s, e, note

    async def _request(self, method: str, uri: str, body: dict | None) -> AsyncRestResponse:
        assert self._client is not None
        if method == "GET":
            return await self._client.get(uri)
        if method == "PATCH":
            return await self._client.patch(uri, body=body)
        if method == "DELETE":
            return await self._client.delete(uri)
        return await self._client.post(uri, body=body)

    def _bracket(self, stamps: list, s0: int, e0: int) -> tuple[int, int, str]:
        """(s_ns, e_ns, note) of the exchange that produced the answer: its wire-side stamps (the
        kernel's arrival stamp of the answer when there is one), else the stamps around the call.
        aiohttp re-sends a GET once on a stale keep-alive connection; redfish.aio logs in again
        after a 401 on a GET: the bracket is the last exchange's, and the note says so."""
        sends = [x[1] for x in stamps if x[0] == "s"]
        s = sends[-1] if sends else s0
        answers = [x[1:] for x in stamps if x[0] == "e" and x[1] >= s]
        e, kernel = answers[-1] if answers else (e0, None)
        self.stamp = "user"
        if (k := tcp_rx_stamp.arrival(kernel, s, e)) is not None:    # bytes of this answer
            e, self.stamp = k, "kernel"
        note = f"(after {len(sends) - 1} re-sent request(s))" if len(sends) > 1 else ""
        return s, e, note

    def _check_status(self, resp: AsyncRestResponse, label: str) -> None:
        """A 2xx answer passes; 429/503 hold the budget, 404 forgets the layout found."""
        if resp.status in (429, 503):
            self._throttled(resp)
        if resp.status == 404:           # the layout is not what was found: look again
            redfish_known.forget(self.name, self.config.address)
        if not 200 <= resp.status < 300:
            raise self._http_error(resp, label)

    def _throttled(self, resp: AsyncRestResponse) -> None:
        """429 Too Many Requests / 503 Service Unavailable: no request until its Retry-After."""
        wait = retry_after_s(resp.getheader("Retry-After"))
        self.budget.hold(wait)
        self.meter.count("throttled")
        log.info("%s: HTTP %d: holding every request for %.1f s (Retry-After %r)", self.name,
                 resp.status, wait, resp.getheader("Retry-After"))

    async def _get_json(self, uri: str, what: str, urgent: bool = True,
                        max_wait_s: float | None = None) -> tuple[dict, int, int, str]:
        resp, s, e, note = await self._exchange("GET", uri, what=what, urgent=urgent,
                                                max_wait_s=max_wait_s)
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

    async def _members_of(self, collection: str) -> list[str]:
        """The members of a collection the service root links (never a guessed path)."""
        root = await self._service_root()
        uri = _link(root, collection)
        if not uri:
            raise self._fail("protocol", f"the service root has no {collection} link: no "
                             f"{collection} linked; set `manager` to the Manager to read")
        coll, *_ = await self._get_json(uri, f"GET {uri}")
        members = _members(coll, self.name)
        if not members:
            raise self._fail("malformed", f"GET {uri}: no members")
        return members

    def _manager(self) -> str:
        """The URI of the Manager whose DateTime is read (known once open)."""
        if not self.manager_uri:
            raise self.error("error", "not open")
        return self.manager_uri

    async def _find_manager(self) -> str:
        """The Manager whose DateTime is read: every Manager the service links is examined and
        the first with a `DateTime` chosen (a bladed chassis lists its own Manager first, often
        without one); the choice and the others go to `manager_choice`. Kept across sessions
        while the service root stays the same (drivers/redfish_known.py).
        drivers/redfish_equipment.py follows ManagedBy instead."""
        root = await self._service_root()
        k = redfish_known.known(self.name, self.config.address, root)
        if k.manager:
            if await self._still(k):
                self.manager_choice = k.manager_choice + " (kept: the service root and the " \
                                                         "Manager are unchanged)"
                return k.manager
            k = redfish_known.renew(self.name, self.config.address, root)
        if k.failed and self.now_ns() - k.failed[2] < redfish_known.RETRY_NS:
            raise self._fail(k.failed[0], k.failed[1] + " (as found at the last discovery; "
                             "looked at again a minute after it)")
        try:
            k.manager, k.manager_choice, k.manager_layout = await self._examine_managers()
        except DeviceError as exc:
            if exc.kind in ("protocol", "malformed"):      # the layout, not the transport
                k.failed = (exc.kind, exc.message, self.now_ns())
            raise
        self.manager_choice = k.manager_choice
        log.info("%s: manager: %s", self.name, k.manager_choice)
        return k.manager

    async def _still(self, k: redfish_known.Known) -> bool:
        """The kept Manager still has DateTime and the same layout (one GET)."""
        try:
            m, *_ = await self._get_json(k.manager, f"GET {k.manager}")
        except DeviceError:
            return False
        return isinstance(m.get("DateTime"), str) and redfish_known.layout(m) == k.manager_layout

    async def _examine_managers(self) -> tuple[str, str, str]:
        """(the first Manager with DateTime, how it was chosen, its layout); DeviceError naming
        each Manager examined when none has one."""
        seen: list[tuple[str, str]] = []
        layouts: dict[str, str] = {}
        failed: DeviceError | None = None
        for uri in await self._members_of("Managers"):
            try:
                m, *_ = await self._get_json(uri, f"GET {uri}")
                seen.append((uri, "DateTime" if isinstance(m.get("DateTime"), str)
                             else "no DateTime"))
                layouts[uri] = redfish_known.layout(m)
            except DeviceError as exc:
                seen.append((uri, f"{exc.kind}: {exc.message[:60]}"))
                failed = failed or exc
        said = "; ".join(f"{u} ({w})" for u, w in seen)
        chosen = next((u for u, w in seen if w == "DateTime"), None)
        if chosen is None:
            raise self._no_manager(failed, said)
        return chosen, (f"chose {chosen}, the first Manager with DateTime, of {len(seen)}: "
                        f"{said}" + ("; `manager` in the rack file picks another"
                                     if len(seen) > 1 else "")), layouts[chosen]

    def _no_manager(self, failed: DeviceError | None, said: str) -> DeviceError:
        """No Manager with DateTime: the error that stopped the look (e.g. a timeout), else
        protocol, naming what was examined."""
        if failed is not None:
            return self._fail(failed.kind, f"{failed.message} (examining the Managers: {said})")
        return self._fail("protocol", f"no Manager has DateTime: examined {said}; set "
                          f"`manager` in the rack file to a Manager URI that has one")

    # -- the contract ----------------------------------------------------------------------------
    async def identity(self) -> Identity:
        m, *_ = await self._get_json(self._manager(), "GET Manager")
        self.ntp_said = await self._ntp_enabled(m)
        return Identity(vendor=str(m.get("Manufacturer", "")), model=str(m.get("Model", "")),
                        serial=str(m.get("SerialNumber", "")),
                        firmware=str(m.get("FirmwareVersion", "")),
                        extra={"manager": self.manager_uri,
                               "manager_choice": self.manager_choice, "uuid": m.get("UUID", ""),
                               "local_offset": m.get("DateTimeLocalOffset", ""),
                               "events": self.events_state, "auth": self.auth,
                               **({"auth_note": self.auth_note} if self.auth_note else {}),
                               "log_service": self.log_service_uri or "",
                               "log_entries": self.entries_uri or "",
                               "log_choice": self.log_choice,
                               **({} if self.ntp_said is None else
                                  {"ntp": f"NTP.ProtocolEnabled={str(self.ntp_said).lower()}"}),
                               "request_budget": {"rate_hz": self.budget.rate,
                                                  "concurrent": self.budget.concurrent}})

    async def _ntp_enabled(self, manager: dict) -> bool | None:
        """The Manager's NetworkProtocol `NTP.ProtocolEnabled` (DMTF ManagerNetworkProtocol), or
        None: no NetworkProtocol link, no such property, or no answer within a quarter of the
        timeout (it never fails the open: a service that says nothing claims nothing)."""
        uri = _link(manager, "NetworkProtocol")
        if not uri:
            return None
        try:
            body, *_ = await asyncio.wait_for(self._get_json(uri, "GET NetworkProtocol"),
                                              self.timeout_s / 4)
        except (RackclockError, TimeoutError):
            return None
        ntp = body.get("NTP")
        enabled = ntp.get("ProtocolEnabled") if isinstance(ntp, dict) else None
        return enabled if isinstance(enabled, bool) else None

    def clocks(self) -> list[ClockSpec]:
        # NTP off is the device's word that nothing disciplines its clock (ClockSpec)
        return [ClockSpec("datetime", NS, free_running=NTP_OFF if self.ntp_said is False else "")]

    @counted_as("clock")
    async def read_clock(self, clock: str) -> Read:
        if clock != "datetime":
            raise self.error("error", f"no clock {clock!r} (this driver reads 'datetime')")
        m, s, e, note = await self._get_json(self._manager(), "GET Manager DateTime")
        stamp = self.stamp
        text, offset = m.get("DateTime"), m.get("DateTimeLocalOffset")
        raw = _RAW({"DateTime": text, "DateTimeLocalOffset": offset})
        if not isinstance(text, str):
            redfish_known.forget(self.name, self.config.address)   # the next session looks again
            raise self._fail("malformed", f"Manager {self.manager_uri} has no DateTime: {raw}; "
                             f"set `manager` in the rack file to a Manager that has one")
        try:
            value = parse_datetime_ns(text, offset if isinstance(offset, str) else None)
        except ValueError as exc:
            raise self._fail("malformed", f"Manager DateTime {text!r}: {exc}") from None
        return Read("datetime", s, e, value, NS, stamp=stamp, raw=raw + (f" {note}" if note else ""))

    def stimuli(self) -> list[str]:
        return [self.TEST_EVENT]

    @counted_as("stimulus")
    async def _set_ntp(self, enabled: bool | None, server: str | None) -> Stimulus:
        """PATCH NetworkProtocol: NTP ProtocolEnabled and/or NTPServers = [server]."""
        ntp: dict = {}
        if enabled is not None:
            ntp["ProtocolEnabled"] = bool(enabled)
        if server:
            ntp["NTPServers"] = [server]
        manager = self._manager()
        m, *_ = await self._get_json(manager, "GET Manager")
        uri = _link(m, "NetworkProtocol")
        if not uri:                                            # never a guessed path
            raise self._fail("refused", f"Manager {manager} links no NetworkProtocol")
        resp, s, e, note = await self._exchange("PATCH", uri, {"NTP": ntp},
                                                "PATCH NetworkProtocol NTP")
        return Stimulus(self.SET_NTP, json.dumps(ntp, separators=(",", ":")), s, e, sent=True,
                        stamp="user", raw=f"HTTP {resp.status} NTP={json.dumps(ntp)}"
                                          + (f" {note}" if note else ""))

    @counted_as("stimulus")
    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name != self.TEST_EVENT:
            return await super()._stimulate(name, target)
        es_uri, es = await self._event_service()
        if self._submit_uri is None:
            actions = es.get("Actions")
            action = actions.get("#EventService.SubmitTestEvent") if isinstance(actions, dict) else None
            target = action.get("target") if isinstance(action, dict) else None
            if not (isinstance(target, str) and target):     # never a guessed path
                raise self._fail("refused", f"EventService {es_uri} has no "
                                 f"#EventService.SubmitTestEvent action")
            self._submit_uri = target
        self._events_sent += 1
        body = test_event_body(es, self.test_message_id, self._events_sent, self.now_ns(),
                               self.manager_uri)
        resp, s, e, note = await self._exchange("POST", self._submit_uri, body,
                                                "POST SubmitTestEvent")
        self._test_event_sent(s)
        return Stimulus(name, None, s, e, sent=True, stamp="user",
                        raw=f"HTTP {resp.status} {body['Message']}" + (f" {note}" if note else ""))

    @counted_as("stimulus")
    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        """PATCH the Manager's `DateTime` (UTC, microseconds); the target is taken just before
        sending when given as an offset from the reference."""
        target = self._target_ns(value_ns, offset_s)
        t = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=target // 1000)
        body = {"DateTime": t.isoformat(timespec="microseconds")}
        resp, s, e, note = await self._exchange("PATCH", self._manager(), body,
                                                "PATCH Manager DateTime")
        return Stimulus(self.SET_CLOCK, body["DateTime"], s, e, sent=True, stamp="user",
                        raw=f"HTTP {resp.status} DateTime={body['DateTime']}"
                            + (f" {note}" if note else ""))

class _OneSessionClient(AsyncRedfishClient):
    """redfish.aio logs in again after a 401 on a GET without ending the session it had; a BMC
    that still counts that session would fill its session table at every re-login. Here the old
    session is deleted first (a BMC that already dropped it answers 401/404, which is fine).

    It also keeps what redfish.aio computes afresh for every request and is the same from one
    read to the next: the URL a path resolves to (checked against the origin once) and the
    request headers of the current session (rebuilt when the token changes)."""

    _URLS_KEPT = 256
    meter: Meter | None = None

    async def _login_session(self):
        if self.meter is not None:
            self.meter.count("logins")
        return await super()._login_session()

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
