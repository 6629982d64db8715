"""The emulated BMC's EventService: subscriptions, server-sent events and HTTP push delivery.

DSP0266 §13.5: a client subscribes either by POSTing an EventDestination (`Protocol: Redfish`,
`Destination: https://...`) to the Subscriptions collection, and the service POSTs each Event to
that URL; or by GETting `ServerSentEventUri`, and the service keeps the connection open, creates
an EventDestination (`SubscriptionType: SSE`) for it, deletes it when the connection closes, and
closes the connection when the EventDestination is deleted.

Delivery latency model (sim keys): each event reaches each subscriber `event_delivery_s` after it
was emitted (uniform in [lo, hi], default [0.001, 0.003] s; the emulator's own queueing and send
path, drawn per event and subscriber); push retries `DeliveryRetryAttempts` times,
`event_retry_s` apart. `event_subscriptions = false` makes the service refuse every subscription
(503 `ServiceDisabled`, EventService `ServiceEnabled: false`), as a BMC with eventing switched off
does. Every delivery goes to `ctx.record_event` (`event_sent`: emitted and delivered instants).

Push delivery uses aiohttp's client. Its TLS check follows the subscription's `VerifyCertificate`
(default true): the destination's certificate must chain to the system store or to a CA the
sim table names (`event_ca_file`), or to a certificate given in the subscription's
`Certificates` (not supported here: a subscriber with its own CA sets `VerifyCertificate: false`
or the rack names its CA).

Filters, as a strict service applies them: a subscription's `RegistryPrefixes` (or
`EventTypes`) must be among those the EventService advertises (else 400), and a subscriber gets
only the events whose MessageId prefix (or EventType) it asked for; one that asked for neither
gets all. The last 100 events are kept: a stream opened with `Last-Event-ID` first gets those
sent after that id (HTML5 server-sent events), and the header is recorded (`sse_resume`).
"""
from __future__ import annotations

import asyncio
import json
import random
import secrets
import ssl
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from bench.sim import redfish_payloads as P
from bench.sim.clock_model import NS, seed_for
from bench.sim.timing import hold

PROTOCOLS = ("Redfish",)


@dataclass
class Subscription:
    sub_id: str
    destination: str
    context: str
    protocol: str
    kind: str                              # "RedfishEvent" (push) | "SSE"
    verify: bool = True
    queue: asyncio.Queue | None = None     # SSE: payloads to write; None closes the stream
    body: dict = field(default_factory=dict)
    tls: ssl.SSLContext | bool | None = None   # push: made once, so the connection is kept
    prefixes: tuple[str, ...] = ()         # RegistryPrefixes asked for (empty: all)
    types: tuple[str, ...] = ()            # EventTypes asked for (empty: all)

    def wants(self, message_id: str, event_type: str) -> bool:
        if self.prefixes and message_id.split(".", 1)[0] not in self.prefixes:
            return False
        return not self.types or event_type in self.types


class EventService:
    """One BMC's subscriptions and delivery. `emit` hands an Event to every subscriber."""

    def __init__(self, name: str, sim: dict, ctx, error, reply, profile=None):
        self.name = name
        self.profile = profile
        self.kept: deque[tuple[int, str, str, dict]] = deque(maxlen=100)   # id, mid, type, event
        self.ctx = ctx
        self._error, self._reply = error, reply
        self.enabled = bool(sim.get("event_subscriptions", True))
        lat = sim.get("event_delivery_s", [0.001, 0.003])
        self.delivery_s = (float(lat), float(lat)) if isinstance(lat, (int, float)) \
            else (float(lat[0]), float(lat[1]))
        self.retry_s = float(sim.get("event_retry_s", 1.0))
        self.retries = 3
        self.ca_file = sim.get("event_ca_file")
        self.rng = random.Random(seed_for(ctx.seed, name, "events"))
        self.subs: dict[str, Subscription] = {}
        self.next_event = 1
        self.tasks: set[asyncio.Task] = set()
        self._client: aiohttp.ClientSession | None = None

    # -- resources --------------------------------------------------------------------------------
    def collection(self) -> dict:
        return P.collection(P.SUBSCRIPTIONS, "EventDestinationCollection.EventDestinationCollection",
                            "Event Subscriptions Collection",
                            [P.link(f"{P.SUBSCRIPTIONS}/{s}") for s in self.subs])

    def refused(self) -> web.Response:
        return self._error(503, "ServiceDisabled", "The operation failed because the service at "
                           f"{P.EVENT_SERVICE} is disabled and cannot accept requests.",
                           [P.EVENT_SERVICE])

    async def subscribe(self, request: web.BaseRequest, body: dict) -> web.Response:
        """POST Subscriptions: a push subscription (201 with Location) or 400 saying why not."""
        if not self.enabled:
            return self.refused()
        dest, protocol = body.get("Destination"), body.get("Protocol")
        if not isinstance(dest, str) or not isinstance(protocol, str):
            return self._error(400, "PropertyMissing", "The property Destination or Protocol is a "
                               "required property and must be included in the request.",
                               ["Destination/Protocol"])
        if protocol not in PROTOCOLS:
            return self._error(400, "PropertyValueNotInList", f"The value '{protocol}' for the "
                               "property Protocol is not in the list of acceptable values.",
                               [protocol, "Protocol"])
        u = urlsplit(dest)
        if u.scheme not in ("http", "https") or not u.hostname:
            return self._error(400, "PropertyValueFormatError", f"The value '{dest}' for the "
                               "property Destination is not a format that the property can "
                               "accept.", [dest, "Destination"])
        context = body.get("Context", "")
        verify = body.get("VerifyCertificate", True)
        if not isinstance(context, str) or not isinstance(verify, bool):
            return self._error(400, "PropertyValueTypeError", "The value for the property "
                               "Context or VerifyCertificate is of a different type than the "
                               "property can accept.", ["Context/VerifyCertificate"])
        filters = self._filters(body)
        if isinstance(filters, web.Response):
            return filters
        sub = self._add(dest, context, protocol, "RedfishEvent", verify)
        sub.prefixes, sub.types = filters
        self.ctx.record_event(self.name, "subscribed", self.ctx.now_ns(), via="push",
                              destination=dest, id=sub.sub_id, prefixes=list(sub.prefixes),
                              types=list(sub.types))
        return self._reply(sub.body, 201, {"Location": f"{P.SUBSCRIPTIONS}/{sub.sub_id}"})

    def _filters(self, body: dict) -> tuple[tuple, tuple] | web.Response:
        """(RegistryPrefixes, EventTypes) asked for, each among those advertised, or a 400."""
        p = self.profile
        out = []
        for key, offered in (("RegistryPrefixes", p.registry_prefixes if p else ("Base",)),
                             ("EventTypes", p.event_types if p else ())):
            asked = body.get(key, [])
            if not isinstance(asked, list) or not all(isinstance(x, str) for x in asked):
                return self._error(400, "PropertyValueTypeError", f"The value for the property "
                                   f"{key} is of a different type than the property can accept.",
                                   [json.dumps(asked), key])
            bad = [x for x in asked if x not in offered]
            if bad:
                return self._error(400, "PropertyValueNotInList", f"The value '{bad[0]}' for the "
                                   f"property {key} is not in the list of acceptable values.",
                                   [bad[0], key])
            out.append(tuple(asked))
        return out[0], out[1]

    def _add(self, dest: str, context: str, protocol: str, kind: str, verify: bool) -> Subscription:
        sub_id = secrets.token_hex(4)
        sub = Subscription(sub_id, dest, context, protocol, kind, verify)
        sub.body = P.event_destination(sub_id, dest, context, protocol, kind, verify)
        self.subs[sub_id] = sub
        return sub

    def item(self, sub_id: str, method: str) -> web.Response:
        sub = self.subs.get(sub_id)
        if sub is None:
            return self._error(404, "ResourceNotFound", f"The requested resource of type "
                               f"'EventDestination' named '{sub_id}' was not found.",
                               ["EventDestination", sub_id])
        if method == "DELETE":
            del self.subs[sub_id]
            if sub.queue is not None:
                sub.queue.put_nowait(None)          # the service closes the stream
            return self._reply(None, 204)
        return self._reply(sub.body)

    async def stream(self, request: web.BaseRequest) -> web.StreamResponse:
        """GET ServerSentEventUri: an SSE stream (`text/event-stream`) until either side ends it."""
        if not self.enabled:
            return self.refused()
        accept = request.headers.get("Accept", "*/*")
        if not any(a.split(";")[0].strip() in ("text/event-stream", "text/*", "*/*")
                   for a in accept.split(",")):
            return self._error(406, "GeneralError", "The server-sent event stream is only "
                               "available as text/event-stream.", [])
        sub = self._add(f"{request.scheme}://{request.host}{P.SSE}", secrets.token_hex(8),
                        "Redfish", "SSE", False)
        sub.queue = asyncio.Queue()
        self._resume(sub, request.headers.get("Last-Event-ID"))
        resp = web.StreamResponse(status=200, headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "OData-Version": "4.0"})
        try:
            await resp.prepare(request)
            await resp.write(b": stream open\n\n")
            while True:
                payload = await sub.queue.get()
                if payload is None:
                    break
                await resp.write(f"id: {payload['Id']}\ndata: {json.dumps(payload)}\n\n".encode())
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.subs.pop(sub.sub_id, None)          # the connection closed: so does the subscription
        return resp

    def _resume(self, sub, last: str | None) -> None:
        """A new stream: recorded, and given the events kept after `Last-Event-ID` if any."""
        self.ctx.record_event(self.name, "subscribed", self.ctx.now_ns(), via="sse",
                              id=sub.sub_id, last_event_id=last)
        if last is None or not last.isdigit():
            return
        replay = [ev for n, _, _, ev in self.kept if n > int(last)]
        self.ctx.record_event(self.name, "sse_resume", self.ctx.now_ns(),
                              last_event_id=last, replayed=len(replay))
        for ev in replay:
            sub.queue.put_nowait({**ev, "Context": sub.context})

    # -- delivery ---------------------------------------------------------------------------------
    def emit(self, t_ns: int, timestamp: str, message_id: str, message: str, args: list,
             severity: str, origin: str, event_type: str = "Alert") -> None:
        """An event emitted at reference instant `t_ns`, to every current subscriber that
        asked for its kind; kept for a stream that resumes."""
        event_id = str(self.next_event)
        self.next_event += 1
        self.kept.append((int(event_id), message_id, event_type, P.event(
            event_id, timestamp, message_id, message, args, severity, "", origin, event_type)))
        for sub in list(self.subs.values()):
            if not sub.wants(message_id, event_type):
                continue
            payload = P.event(event_id, timestamp, message_id, message, args, severity,
                              sub.context, origin, event_type)
            lo, hi = self.delivery_s
            delay_ns = round(self.rng.uniform(lo, hi) * NS) if hi > lo else round(lo * NS)
            task = asyncio.get_running_loop().create_task(
                self._deliver(sub, payload, t_ns + delay_ns, t_ns))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _deliver(self, sub: Subscription, payload: dict, t_due: int, t_emit: int) -> None:
        await hold(max(0, t_due - self.ctx.now_ns()) / NS)
        if sub.queue is not None:
            sub.queue.put_nowait(payload)
            self.ctx.record_event(self.name, "event_sent", self.ctx.now_ns(), via="sse",
                                  event_id=payload["Id"], emitted_ns=t_emit, id=sub.sub_id)
            return
        for attempt in range(self.retries + 1):
            if sub.sub_id not in self.subs:
                return
            t_send = self.ctx.now_ns()
            try:
                if sub.tls is None:
                    sub.tls = self._tls(sub)
                async with self.client().post(sub.destination, json=payload, ssl=sub.tls,
                                              timeout=aiohttp.ClientTimeout(total=5)) as r:
                    ok = 200 <= r.status < 300
            except (TimeoutError, aiohttp.ClientError, OSError):
                ok = False
            self.ctx.record_event(self.name, "event_sent" if ok else "event_push_failed", t_send,
                                  via="push", event_id=payload["Id"], emitted_ns=t_emit,
                                  id=sub.sub_id, attempt=attempt)
            if ok:
                return
            await asyncio.sleep(self.retry_s)

    def _tls(self, sub: Subscription) -> ssl.SSLContext | bool:
        if not sub.destination.startswith("https:"):
            return False
        if not sub.verify:
            return False
        return ssl.create_default_context(cafile=self.ca_file) if self.ca_file \
            else ssl.create_default_context()

    def client(self) -> aiohttp.ClientSession:
        if self._client is None:
            self._client = aiohttp.ClientSession()
        return self._client

    async def close(self) -> None:
        for sub in self.subs.values():
            if sub.queue is not None:
                sub.queue.put_nowait(None)
        for t in list(self.tasks):
            t.cancel()
        if self._client is not None:
            await self._client.close()
