"""Redfish events as they happen: a server-sent event stream or a push subscription, else polling.

A Redfish service can send its events instead of waiting to be asked (DSP0266 §13.5): on the
stream it serves at the EventService's `ServerSentEventUri`, or by POSTing each Event to a
listener a client subscribed (`POST Subscriptions`, `Protocol: Redfish`). Each event received
here is bracketed by its arrival: `s_ns` when the first line of it (SSE) or the request carrying
it (push) had arrived, `e_ns` when the whole of it had. So the bench learns of an event one
delivery path after it was emitted, not up to a poll interval later. The log is still polled (its
entries carry the device's log stamp); events are reported besides them, as `pushed` rows.

Inventory keys (of the `redfish_bmc` device):
- `events`: `auto` (default: SSE when the service lists a `ServerSentEventUri`, else push when
  `event_listener` is set, else polling), `sse`, `push`, or `poll` (never subscribe);
- `event_listener`: where the bench listens for pushes, `https://ADDRESS:PORT` on a loopback or
  lab address the BMC can reach (port 0: any free port); `event_listener_cert` and
  `event_listener_key_file`: the bench's own certificate and key for it (PEM files);
  `event_verify_certificate` (default true): whether the BMC is asked to verify that certificate
  (`VerifyCertificate`; a BMC that has not been given the bench's CA needs false).
Pushes are accepted only with the subscription's `Context`, a random token sent to the BMC over
its authenticated session. A subscription the service refuses (any error answer), or a stream that
cannot be opened, leaves the driver polling as before; `events_state` says which and why. A
stream that drops is reopened with backoff while the driver is open.

SSE is parsed here (a few lines of the HTML5 event-stream format): the libraries that parse it
(sseclient, aiohttp-sse-client) hide when each line arrived, which is the point of reading it.
A reopened stream sends `Last-Event-ID` (the `id:` of the last event received), so a service
that keeps its events replays those sent while the stream was down.

As the schemas say (DMTF EventService and EventDestination): a push subscription asks for the
`RegistryPrefixes` the EventService advertises (those of the test event's MessageId where it
lists it), else the `EventTypes` it lists for subscription (`EventTypesForSubscription`), so a
service that filters by them delivers the test events; `test_event_body` fills every parameter
of SubmitTestEvent the service's EventService version defines (EventType before v1_3_0, when
it was deprecated; MessageSeverity from v1_10_0).
"""
from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import re
import secrets
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from drivers.base import DeviceError, LogEntry
from drivers.redfish_discovery import redfish_message as _redfish_message
from drivers.redfish_part import JSON, RedfishPart
from drivers.redfish_session import counted_as
from drivers.redfish_time import parse_datetime_ns

NS = 1_000_000_000
MODES = ("auto", "sse", "push", "poll")


def schema_version(odata_type: object) -> tuple[int, int, int]:
    """`#EventService.v1_8_0.EventService` -> (1, 8, 0); (1, 0, 0) when unversioned."""
    m = re.search(r"\.v(\d+)_(\d+)_(\d+)\.", odata_type if isinstance(odata_type, str) else "")
    return (int(m[1]), int(m[2]), int(m[3])) if m else (1, 0, 0)


def test_event_body(es: JSON, message_id: str, n: int, now_ns: int, origin: str | None) -> JSON:
    """SubmitTestEvent's parameters as the EventService's schema version defines them."""
    version = schema_version(es.get("@odata.type"))
    stamp = dt.datetime.fromtimestamp(now_ns // NS, dt.UTC).isoformat()
    body: JSON = {"EventId": f"rackclock-{n}", "EventTimestamp": stamp, "Severity": "OK",
                  "Message": f"rackclock test event {n}", "MessageId": message_id,
                  "MessageArgs": [], "OriginOfCondition": origin or "/redfish/v1"}
    if version < (1, 3, 0):
        body["EventType"] = "Alert"
    if version >= (1, 10, 0):
        body["MessageSeverity"] = "OK"
    return body


def subscription_filter(es: JSON, message_id: str) -> JSON:
    """What a push subscription asks for: the advertised RegistryPrefixes (the test event's own
    where listed), else the advertised EventTypesForSubscription, else nothing."""
    prefixes = [p for p in es.get("RegistryPrefixes") or [] if isinstance(p, str)]
    if prefixes:
        own = message_id.split(".", 1)[0]
        return {"RegistryPrefixes": [own] if own in prefixes else prefixes}
    types = [t for t in es.get("EventTypesForSubscription") or [] if isinstance(t, str)]
    return {"EventTypes": types} if types else {}


class EventSubscriber(RedfishPart):
    """Mixin of the Redfish driver: `_open_events` after login, `_close_events` before logout.

    Needs of the driver (declared in drivers/redfish_part.py): `config`, `name`, `now_ns`,
    `timeout_s`, `_session` (aiohttp), `_client` (redfish.aio), `_get_json(uri, what)`,
    `_service_root()`, `_exchange(method, uri, body, what)`, `_password`, and the module's
    `parse_datetime_ns`.
    """

    on_event: Callable[[LogEntry], None] | None = None

    def _init_events(self, options: Mapping[str, Any]) -> None:
        self.events_mode = str(options.get("events", "auto"))
        if self.events_mode not in MODES:
            raise self.error("error", f"events = {self.events_mode!r}: one of {', '.join(MODES)}")
        self.event_listener: str | None = options.get("event_listener")
        self.event_listener_cert: str | None = options.get("event_listener_cert")
        self.event_listener_key_file: str | None = options.get("event_listener_key_file")
        self.event_verify_certificate = bool(options.get("event_verify_certificate", True))
        self.events_state = "polling"
        self.on_event = None
        self._held: list[LogEntry] = []
        self._event_task: asyncio.Task[None] | None = None
        self._listener: web.BaseRunner | None = None
        self._subscription_uri: str | None = None
        self._context = secrets.token_hex(16)
        self._es: tuple[str, JSON] | None = None     # the EventService: (URI, body), read once
        self._last_event_id: str | None = None       # the SSE stream's last `id:`

    # -- what the runner sees ---------------------------------------------------------------------
    def pushed_events(self) -> list[LogEntry]:
        """Events received while nobody listened (`on_event` unset), oldest first; cleared."""
        out, self._held = self._held, []
        return out

    def _received(self, payload: JSON, s_ns: int, e_ns: int) -> None:
        records = payload.get("Events") if isinstance(payload, dict) else None
        for rec in records if isinstance(records, list) else []:
            if not isinstance(rec, dict):
                continue
            entry = self._event_entry(rec, payload, s_ns, e_ns)
            if self.on_event is not None:
                self.on_event(entry)
            else:
                self._held.append(entry)

    def _event_entry(self, rec: dict, payload: dict, s_ns: int, e_ns: int) -> LogEntry:
        """One event record as a log entry, stamped with its EventTimestamp when it parses."""
        stamp = rec.get("EventTimestamp")
        try:
            value = self._parse_stamp(stamp) if isinstance(stamp, str) else None
        except ValueError:
            value = None
        raw = json.dumps({k: rec.get(k) for k in ("EventId", "EventTimestamp", "MessageId",
                                                  "Message")}, separators=(",", ":"))
        return LogEntry(cursor=str(rec.get("EventId", payload.get("Id", ""))),
                        clock="datetime", value_ns=value, resolution_ns=NS, s_ns=s_ns,
                        e_ns=e_ns, message=str(rec.get("Message") or rec.get("MessageId") or ""),
                        raw=raw)

    @staticmethod
    def _parse_stamp(text: str) -> int:
        return parse_datetime_ns(text)

    # -- lifecycle --------------------------------------------------------------------------------
    @counted_as("events")
    async def _open_events(self) -> None:
        """Subscribe if the service offers it and the inventory allows; never raises."""
        if self.events_mode == "poll":
            self.events_state = "polling (events = poll)"
            return
        es = await self._offered_event_service()
        if es is None:
            return
        reasons: list[str] = []
        if self.events_mode in ("auto", "sse") and await self._try_sse(es, reasons):
            return
        if self.events_mode in ("auto", "push") and await self._try_push(es, reasons):
            return
        self.events_state = f"polling ({'; '.join(reasons)})"

    async def _offered_event_service(self) -> JSON | None:
        """The EventService's body; None (and `events_state` says why) where there is none."""
        try:
            root = await self._service_root()
            es_link = root.get("EventService")
            if not isinstance(es_link, dict) or not isinstance(es_link.get("@odata.id"), str):
                self.events_state = "polling (the service has no EventService)"
                return None
            _, es = await self._event_service()
        except DeviceError as exc:
            self.events_state = f"polling (EventService unreadable: {exc.message})"
            return None
        return es

    async def _try_sse(self, es: JSON, reasons: list[str]) -> bool:
        """Open the service's SSE stream; False (and why in `reasons`) where it cannot be."""
        sse = es.get("ServerSentEventUri")
        if not (isinstance(sse, str) and sse):
            reasons.append("no ServerSentEventUri")
            return False
        why = await self._open_sse(sse)
        if why is None:
            return True
        reasons.append(f"SSE refused: {why}")
        return False

    async def _try_push(self, es: JSON, reasons: list[str]) -> bool:
        """Subscribe for pushed events; False (and why in `reasons`) where it cannot be."""
        subs = es.get("Subscriptions")
        subs_uri = subs.get("@odata.id") if isinstance(subs, dict) else None
        if not self.event_listener:
            reasons.append("no event_listener for push")
            return False
        if not isinstance(subs_uri, str):
            reasons.append("no Subscriptions collection")
            return False
        why = await self._open_push(self.event_listener, subs_uri)
        if why is None:
            return True
        reasons.append(f"push refused: {why}")
        return False

    async def _event_service(self) -> tuple[str, JSON]:
        """(URI, body) of the EventService, read once per driver."""
        if self._es is None:
            root = await self._service_root()
            es_link = root.get("EventService")
            uri = es_link.get("@odata.id") if isinstance(es_link, dict) else None
            if not (isinstance(uri, str) and uri):     # never a guessed path
                raise self._fail("protocol", "the service root has no EventService link: no "
                                 "EventService linked (no test event can be sent)")
            es, *_ = await self._get_json(uri, "GET EventService")
            self._es = (uri, es)
        return self._es

    @counted_as("events")
    async def _close_events(self) -> None:
        task, self._event_task = self._event_task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except BaseException:
                pass
        uri, self._subscription_uri = self._subscription_uri, None
        if uri and self._client is not None:
            try:
                await self._exchange("DELETE", uri, what="DELETE subscription")
            except Exception:
                pass
        runner, self._listener = self._listener, None
        if runner is not None:
            await runner.cleanup()

    # -- server-sent events -----------------------------------------------------------------------
    def _auth_headers(self) -> dict[str, str]:
        # redfish.aio keeps its session token private; the stream is opened on that session
        token = getattr(self._client, "_session_key", None)
        if token:
            return {"X-Auth-Token": token}
        if getattr(self, "auth", None) == "none":
            return {}
        pair = f"{self.config.username}:{self._password}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}

    def _url(self, uri: str) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"{self.scheme}://{host}" + (f":{self.port}" if self.port else "") + uri

    async def _connect_sse(self, uri: str) -> tuple[aiohttp.ClientResponse | None, str | None]:
        """(open stream, None) or (None, why not)."""
        if self._session is None:
            return None, "the driver is closed"
        headers = {"Accept": "text/event-stream", **self._auth_headers()}
        if self._last_event_id is not None:
            headers["Last-Event-ID"] = self._last_event_id
        try:
            resp = await self._session.get(
                self._url(uri), headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout_s,
                                              sock_read=None))
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return None, self._clean(f"cannot open {uri}: {exc!r}")
        ctype = resp.headers.get("Content-Type", "")
        if resp.status != 200 or not ctype.startswith("text/event-stream"):
            try:
                body = await asyncio.wait_for(resp.text(), self.timeout_s)
                detail = _redfish_message(json.loads(body)) or body[:120]
            except Exception:
                detail = ""
            resp.close()
            return None, self._clean(f"HTTP {resp.status} {detail}".strip())
        return resp, None

    async def _open_sse(self, uri: str) -> str | None:
        resp, why = await self._connect_sse(uri)
        if resp is None:
            return why
        self.events_state = f"sse ({uri})"
        self._event_task = asyncio.get_running_loop().create_task(self._read_sse(uri, resp))
        return None

    async def _read_sse(self, uri: str, resp: aiohttp.ClientResponse) -> None:
        """Read events until closed; reopen a dropped stream with backoff (1 s doubling to 15 s)."""
        backoff = 1.0
        while True:
            why = await self._read_stream(resp)
            self.events_state = f"polling (SSE stream ended: {why}; reopening)"
            while True:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 15.0)
                again, refused = await self._connect_sse(uri)
                if again is not None:
                    resp = again
                    self.events_state = f"sse ({uri})"
                    backoff = 1.0
                    break
                self.events_state = f"polling (SSE reopen failed: {refused}; retrying)"

    async def _read_stream(self, resp: aiohttp.ClientResponse) -> str:
        data: list[str] = []
        first: int | None = None
        try:
            while True:
                line = await resp.content.readline()
                t = self.now_ns()
                if not line:
                    return "closed by the service"
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if not text:                                    # a blank line ends an event
                    if data and first is not None:             # `first`: set with data
                        self._received(_event_payload(data), first, t)
                    data, first = [], None
                    continue
                if text.startswith(":"):                        # a comment (keep-alive)
                    continue
                first = t if first is None else first
                self._stream_field(text, data)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return f"{type(exc).__name__}"
        finally:
            resp.close()

    def _stream_field(self, text: str, data: list[str]) -> None:
        """One `field: value` line of the stream: data kept for the event, an id for a reopen."""
        field, _, value = text.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            self._last_event_id = value

    # -- push -------------------------------------------------------------------------------------
    async def _open_push(self, listener: str, subs_uri: str) -> str | None:
        u = urlsplit(listener)
        if u.scheme not in ("https", "http") or not u.hostname:
            return f"event_listener {listener!r}: not an https:// address"
        tls, why = self._listener_tls(u.scheme)
        if why is not None:
            return why
        sock, why = _listening_socket(u.hostname, u.port, listener)
        if sock is None:
            return why
        runner = web.ServerRunner(web.Server(self._on_push, access_log=None),
                                  handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=tls).start()
        self._listener = runner
        host = u.hostname if ":" not in u.hostname else f"[{u.hostname}]"
        dest = f"{u.scheme}://{host}:{sock.getsockname()[1]}/rackclock/events/{self.name}"
        _, es = await self._event_service()
        body = {"Destination": dest, "Protocol": "Redfish", "Context": self._context,
                "EventFormatType": "Event", "SubscriptionType": "RedfishEvent",
                "VerifyCertificate": self.event_verify_certificate,
                **subscription_filter(es, self.test_message_id)}
        try:
            resp, *_ = await self._exchange("POST", subs_uri, body, "POST Subscriptions")
        except DeviceError as exc:
            self._listener = None
            await runner.cleanup()
            return exc.message
        location = resp.getheader("Location")
        self._subscription_uri = urlsplit(location).path if location else None
        self.events_state = f"push ({dest})"
        return None

    def _listener_tls(self, scheme: str) -> tuple[ssl.SSLContext | None, str | None]:
        """(the push listener's TLS context (None over http), None) or (None, why not)."""
        if scheme != "https":
            return None, None
        if not (self.event_listener_cert and self.event_listener_key_file):
            return None, "an https listener needs event_listener_cert and event_listener_key_file"
        try:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(self.event_listener_cert, self.event_listener_key_file)
        except (OSError, ssl.SSLError) as exc:
            return None, f"cannot load the listener's certificate: {exc}"
        return tls, None

    async def _on_push(self, request: web.BaseRequest) -> web.Response:
        s = self.now_ns()
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"})
        try:
            payload = await request.json()
        except ValueError:
            return web.Response(status=400)
        e = self.now_ns()
        if not isinstance(payload, dict) or payload.get("Context") != self._context:
            return web.Response(status=403)
        self._received(payload, s, e)
        return web.Response(status=204)


def _event_payload(data: list[str]) -> dict:
    """An event's data lines as its JSON payload; a malformed one is kept, said so, never
    dropped."""
    try:
        payload = json.loads("\n".join(data))
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        text = "\n".join(data)[:300]
        payload = {"Events": [{"EventId": "?", "Message": f"malformed event: {text!r}"}]}
    return payload


def _listening_socket(hostname: str, port: int | None,
                      listener: str) -> tuple[socket.socket | None, str | None]:
    """(a non-blocking TCP socket listening on hostname:port (0: any), None) or (None, why
    not)."""
    family = socket.AF_INET6 if ":" in hostname else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((hostname, port or 0))
        sock.listen(16)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        return None, f"cannot listen on {listener}: {exc}"
    return sock, None
