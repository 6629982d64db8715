"""Redfish BMC emulator: one aiohttp.web server per BMC on loopback, answering from the clock model.

Written by hand on aiohttp.web because no Redfish mock serves a *moving* clock (DMTF's
Redfish-Mockup-Server replays static JSON from `http.server`, which adds tens of ms to each
keep-alive request, see docs/protocol_floors.md). It speaks what the DMTF `redfish` clients and curl need,
as bmcweb does:

- service root `/redfish/v1/`, the OData service document `/redfish/v1/odata` and `$metadata`
  (all three unauthenticated), session login (POST Sessions or Sessions/Members -> 201 with
  `X-Auth-Token` and `Location`, DELETE to log out) and HTTP basic auth; 401 otherwise;
- Manager `/redfish/v1/Managers/bmc`: `DateTime` sampled from the clock model inside the request
  (sample delay, then sample, then reply delay), rendered in the device's claimed local offset;
  PATCH of `DateTime` steps the model (204), or 400 PropertyValueConflict while NTP is on;
- `NetworkProtocol` with NTP `ProtocolEnabled` (PATCH toggles it) and `NTPServers` (PATCH with
  the specification's array rules: `{}` keeps an element, `null` removes it, the rest truncated);
- `EventService` `SubmitTestEvent` (204): the event goes to every subscriber at once (as bmcweb
  does, after the delivery latency of bench/sim/redfish_event_service.py), and after the model's log
  latency an entry appears in `/redfish/v1/Systems/system/LogServices/EventLog/Entries`, `Created`
  stamped by the model then; subscriptions by push (POST Subscriptions) and server-sent events
  (GET `ServerSentEventUri`);
- `AccountService` with the one account the rack file names (role Administrator, with an ETag)
  and the standard roles Administrator, Operator, ReadOnly; accounts cannot be created;
- every answer carries `OData-Version: 4.0`; GET/HEAD answers `Allow` and
  `Link: <schema>; rel=describedby`; a method a resource does not support 405 with `Allow`, a
  method HTTP parsers do not know 501; an `OData-Version` other than 4.0 412; a `$` query
  parameter 501 (none is supported), other unknown parameters ignored; unknown paths 404 with a
  Redfish error body.

DMTF's Redfish Protocol Validator (tests/test_redfish_validator.py) against the default rack's
bmc-1: before this file followed it PASS 150, WARN 1, FAIL 35, NOT_TESTED 57; now PASS 263,
WARN 0, FAIL 0, NOT_TESTED 50. What it leaves NOT_TESTED, and why:
- ETag write semantics, If-Match, PATCH of accounts by other users, PasswordChangeRequired,
  role assignment at creation (17): they need a second account, and accounts here are fixed by
  the rack file (POST Accounts is 405), so the validator cannot create one;
- server-sent events (14): validator 1.3.2 switches its SSE tests off in the code ("Temporarily
  turn off SSE tests"); the stream itself is tested in tests/test_redfish_events.py;
- SSDP (7): the emulator does not announce itself by multicast;
- `openapi.yaml` (2), certificates (1), HTTP redirect (1): not served, none held, HTTPS only;
- the bodies of 400 and 500 answers (2): none of the validator's requests provokes either;
- PATCH with only read-only/unknown properties, partial success, only annotations, Content-Type
  of a successful write, failed POST leaving nothing created (5): the validator only tries these
  on resources it created itself (accounts);
- `only`/`excerpt` query parameters (1): not supported, as ProtocolFeaturesSupported says.

The URIs above are the default profile's (`openbmc`); `profile = "idrac" | "ilo" | "supermicro"`
lays the Manager, System and LogServices out as that vendor does, with its DateTime rendering,
session table and timeout, rate limit (429 with Retry-After) and EventService filters
(bench/sim/redfish_profiles.py, bench/sim/redfish_limits.py). Every request is counted in a
`traffic` record of `ctx.events[device]`.

Sim keys beyond the clock model's: `profile` and its overrides (bench/sim/redfish_profiles.py),
`ntp` (bool), `ntp_servers`, `manufacturer`, `model`,
`serial`, `log_capacity` (entries kept, oldest dropped first), and the EventService's
(`event_subscriptions`, `event_delivery_s`, `event_retry_s`, `event_ca_file`: see
bench/sim/redfish_event_service.py), `ntp_model` (the NTP client's
model, bench/sim/ntp.py, running from the first NetworkProtocol PATCH on), `power` ("PDU:OUTLET"
feeding it, bench/sim/power.py) with `boot_s` and `power_clock` (rtc | epoch | image, with
`image_date`): where its clock comes back after a power cycle.
Every DateTime sample goes to `ctx.record_sample`; every test event (`test_event`, the reference
instant it was received), log stamp (`log`, the instant its `Created` was taken), clock set
(`step`) and event delivery (`event_sent`) goes to `ctx.record_event`.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import logging
import os
import secrets
import socket
import uuid as uuidlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod
from aiohttp.web_protocol import RequestHandler

from bench.config.inventory import DeviceConfig
from bench.config.keys import Key
from bench.config.schema import FLAG, TEXT, choice, iso_instant, num, span
from bench.config.schema import key as key_check
from bench.sim import redfish_payloads as P
from bench.sim.clock_model import NS, ClockModel
from bench.sim.ntp import NTP_KEYS, SERVERS, NtpDiscipline, NtpParams
from bench.sim.rack import SimContext
from bench.sim.redfish_event_service import EventService
from bench.sim.redfish_limits import Limits
from bench.sim.redfish_profiles import LogSpec, Profile, profile_of
from bench.sim.timing import hold, sample_clock
from bench.sim.tls import make_certificates, server_context

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
POWER = key_check(Key("str", pattern=r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}:\d{1,3}", hint="'PDU:OUTLET'"))
SIM_KEYS = {
    "ntp": FLAG, "ntp_servers": SERVERS, "manufacturer": TEXT, "model": TEXT, "serial": TEXT,
    "log_capacity": num(1, 100_000, kind="int"), "ntp_model": NTP_KEYS,
    "boot_s": num(0.0, 600.0, "s"), "power_clock": choice("rtc", "epoch", "image"),
    "image_date": iso_instant, "power": POWER, "event_subscriptions": FLAG,
    "event_delivery_s": span(0.0, 60.0), "event_retry_s": num(0.01, 3600.0, "s"),
    "event_ca_file": TEXT,
    # vendor-shaped layouts and their session rules (bench/sim/redfish_profiles.py)
    "profile": choice("openbmc", "idrac", "ilo", "supermicro", "bladed"),
    "max_sessions": num(1, 1024, kind="int"), "session_timeout_s": num(1, 86400, "s", "int"),
    "rate_limit_hz": num(0.0, 10_000.0, "Hz"), "retry_after_s": num(0, 3600, "s", "int"),
    "session_service": FLAG, "auth_required": FLAG, "logs": FLAG, "test_event_log": TEXT,
    "managers_linked": FLAG, "manager_datetime": FLAG}

log = logging.getLogger(__name__)
JSON_HEADERS = {"OData-Version": "4.0", "Cache-Control": "no-store"}
Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]   # a route's, per method
UNAUTHENTICATED = ("/redfish", P.ROOT, P.ODATA, P.METADATA)    # DSP0266 §13.3.4


class _Reply(web.Response):
    odata_type: str | None = None       # what the `Link: rel=describedby` header points at


def _reply(body: dict | None, status: int = 200, headers: dict | None = None) -> web.Response:
    h = {**JSON_HEADERS, **(headers or {})}
    if body is None:
        return _Reply(status=status, headers=h)
    resp = _Reply(text=json.dumps(body), status=status, headers=h, content_type="application/json")
    resp.odata_type = body.get("@odata.type")
    return resp


def _not_allowed(method: str, allow: str) -> web.Response:
    return _error(405, "ActionNotSupported", f"The action {method} is not supported by the "
                  "resource.", [method], {"Allow": allow})


def _error(status: int, message_id: str, message: str, args=(), headers=None) -> web.Response:
    return _reply(P.error(message_id, message, args), status, headers)


def patch_array(current: list, patch) -> list | None:
    """DSP0266 §9.5.3 array PATCH: element i of the request sets element i, `{}` leaves it as it
    is, `null` removes it; elements past the request's length are removed. None: not an array."""
    if not isinstance(patch, list):
        return None
    out = []
    for i, x in enumerate(patch):
        if x is None:
            continue
        if x == {}:
            if i < len(current):
                out.append(current[i])
            continue
        out.append(x)
    return out


def _parse_datetime_ns(text: str) -> int:
    """An ISO 8601 date-time with its UTC offset -> Unix-epoch ns (ValueError if it has none)."""
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        raise ValueError("no UTC offset")
    d = t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000



def _dropped(request: web.BaseRequest) -> web.Response:
    """The connection aborted (the 503 is never sent): what a powered-off BMC answers."""
    if request.transport is not None:
        request.transport.abort()
    return web.Response(status=503)


def _access_denied(path: str) -> web.Response:
    """401 for a request without valid credentials."""
    return _error(401, "AccessDenied", f"While attempting to establish a connection to "
                  f"'{path}', the service denied access.", [path],
                  {"WWW-Authenticate": 'Basic realm="Redfish"'})


def _describe_resource(resp: web.StreamResponse, method: str, allow: str | None) -> None:
    """A resource read (GET or HEAD answered 200, not streamed) gets its Allow header and a
    Link to its schema."""
    if method not in ("GET", "HEAD") or resp.status != 200 or resp.prepared:
        return
    resp.headers["Allow"] = allow or ""
    link = P.described_by(getattr(resp, "odata_type", None))
    if link:
        resp.headers["Link"] = f"<{link}>; rel=describedby"

class EmulatedBMC:
    """One BMC: its credentials, sessions, NTP switch, event log, and the HTTP handler."""

    def __init__(self, device: DeviceConfig, model: ClockModel, ctx: SimContext):
        sim = dict(device.sim or {})
        self.device = device
        self.name = device.name
        self.model = model
        self.ctx = ctx
        self.username = device.username or "root"
        self.password = os.environ.get(device.password_env) if device.password_env else None
        if not self.password:
            log.warning("redfish emulator: %s: password variable %r is unset; nobody can log in",
                        self.name, device.password_env)
        self.ntp = bool(sim.get("ntp", False))
        self.ntp_servers = list(sim.get("ntp_servers", ["pool.ntp.org"] if self.ntp else []))
        self._identity(sim)
        self.offset_min = int(model.p.local_offset_min)
        self.log_capacity = int(sim.get("log_capacity", 1000))
        self.profile = self.make_profile(sim)
        self.manager_uri = self.profile.manager_uri()
        self.network_uri = f"{self.manager_uri}/NetworkProtocol"
        self.sessions: dict[str, tuple[str, str]] = {}     # token -> (session id, user)
        self.limits = Limits(self.profile, ctx, self.name, _error)
        self.logs = {self.profile.log_uri(x): _Log(x) for x in self.profile.logs}
        self.event_log = next((lg for lg in self.logs.values() if lg.spec.test_events), None)
        self.pending: set[asyncio.TimerHandle] = set()
        self.events = EventService(self.name, sim, ctx, _error, _reply, self.profile)
        self._routes, self._items = self.routes(), self.item_routes()
        self.ntp_table = sim.get("ntp_model") or {}     # bench.sim.ntp: the NTP client's model
        self.discipline: NtpDiscipline | None = None     # made at the first NTP command
        self._power(sim, ctx)

    def _power(self, sim: dict, ctx: SimContext) -> None:
        """Powered, its boot time and what its clock does at a power cycle; fed by the PDU
        outlet named by `power` (bench.sim.power)."""
        self.powered = True
        self.boot_s = float(sim.get("boot_s", 8.0))
        self.power_clock = str(sim.get("power_clock", "rtc"))   # rtc | epoch | image
        self.image_date = str(sim.get("image_date", "2024-06-01T00:00:00+00:00"))
        if sim.get("power"):
            from bench.sim import power
            power.bus(ctx).feed(sim["power"], self.power_switch)

    def _identity(self, sim: dict) -> None:
        """UUID (from the name), manufacturer, model and serial: the sim table's, else defaults."""
        self.uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{self.name}.rackclock.sim"))
        self.manufacturer = str(sim.get("manufacturer", "rackclock-sim"))
        self.model_name = str(sim.get("model", "OpenBMC emulated BMC"))
        self.serial = str(sim.get("serial", f"SIM{self.uuid[:8].upper()}"))

    def make_profile(self, sim: dict) -> Profile:
        """The service's layout (bench/sim/redfish_equipment_emu.py lays out other equipment)."""
        return profile_of(sim)

    # -- the clock -------------------------------------------------------------------------------
    async def sample(self) -> int:
        """Sample the model at the modelled instant inside this request; record it."""
        _, v = await sample_clock(self.ctx, self.name, "datetime", self.model)
        return v

    async def reply_delay(self) -> None:
        await hold(self.model.p.reply_delay_s)

    def now_rendered(self) -> str:
        return self.render(self.model.read_ns(self.ctx.now_ns()))

    def render(self, value_ns: int) -> str:
        """A reading as the profile's vendor renders DateTime: in the claimed local offset, or
        in UTC (`Z` or `+00:00`) with the offset in DateTimeLocalOffset only."""
        utc = self.profile.datetime_utc
        if not utc:
            return P.render_datetime(value_ns, self.offset_min)
        text = P.render_datetime(value_ns, 0)
        return text[:-6] + "Z" if utc == "Z" else text

    def seed_logs(self) -> None:
        """The entries a profile's logs hold at start (SEL and OEM records, older events)."""
        t = self.ctx.now_ns()
        for lg in self.logs.values():
            for i in range(lg.spec.seeded):
                at = t - (lg.spec.seeded - i) * 3600 * NS
                self._append(lg, at, "Seeded record", [], "OK", seeded=True)

    # -- authentication --------------------------------------------------------------------------
    def _password_ok(self, user: str, password: str) -> bool:
        return (self.password is not None and hmac.compare_digest(user, self.username)
                and hmac.compare_digest(password.encode(), self.password.encode()))

    def authorized(self, request: web.BaseRequest) -> bool:
        if not self.profile.auth_required:
            return True
        token = request.headers.get("X-Auth-Token")
        if token is not None:
            return token in self.sessions and self.limits.touch(token, self.sessions)
        auth = request.headers.get("Authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                user, _, password = base64.b64decode(auth[6:], validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            return self._password_ok(user, password)
        return False

    async def login(self, request: web.BaseRequest) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        user, password = body.get("UserName"), body.get("Password")
        if not isinstance(user, str) or not isinstance(password, str):
            return _error(400, "PropertyMissing", "The property UserName or Password is a required "
                          "property and must be included in the request.", ["UserName/Password"])
        if not self._password_ok(user, password):
            self.limits.count("failed_logins")
            return _error(401, "ResourceAtUriUnauthorized",
                          f"While accessing the resource at '{P.SESSIONS}', the service received "
                          f"an authorization error 'Invalid username or password'.",
                          [P.SESSIONS, "Invalid username or password"])
        full = self.limits.session_full(self.sessions)
        if full is not None:
            return full
        sid, token = secrets.token_hex(5), secrets.token_hex(16)
        self.sessions[token] = (sid, user)
        self.limits.count("logins")
        self.limits.touch(token, self.sessions)
        return _reply(P.session(sid, user), 201,
                      {"X-Auth-Token": token, "Location": f"{P.SESSIONS}/{sid}"})

    def _session_by_id(self, sid: str) -> str | None:
        return next((tok for tok, (s, _) in self.sessions.items() if s == sid), None)

    # -- dispatch --------------------------------------------------------------------------------
    def _precondition(self, request: web.BaseRequest) -> web.Response | None:
        """412 for an OData-Version other than 4.0, 501 for a `$` query parameter (none is
        supported; ProtocolFeaturesSupported says so); other unknown parameters are ignored."""
        version = request.headers.get("OData-Version")
        if version is not None and version.strip() != "4.0":
            return _error(412, "PreconditionFailed", f"OData-Version {version.strip()!r} is not "
                          "supported; this service speaks OData 4.0.", [], {"OData-Version": "4.0"})
        dollar = [k for k in request.query if k.startswith("$")]
        if dollar:
            return _error(501, "QueryNotSupported", "Querying is not supported by the "
                          f"implementation: {dollar[0]}.", [dollar[0]])
        return None

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if not self.powered:           # off or booting: nothing answers (the connection drops)
            return _dropped(request)
        early = self.limits.request(request) or self._precondition(request)
        if early is not None:
            return early
        path = request.path.rstrip("/") or "/"
        method = request.method
        if self._is_login(path, method):
            return await self.login(request)
        if path not in UNAUTHENTICATED and not self.authorized(request):
            return _access_denied(path)
        resp, allow = await self._dispatch(request, path, method)
        _describe_resource(resp, method, allow)
        return resp

    def _is_login(self, path: str, method: str) -> bool:
        """A POST to the Sessions collection of a profile with a SessionService."""
        return path in (P.SESSIONS, f"{P.SESSIONS}/Members") and method == "POST" and \
            self.profile.session_service

    async def _dispatch(self, request: web.BaseRequest, path: str, method: str,
                        ) -> tuple[web.StreamResponse, str | None]:
        """(the answer, the resource's Allow header) of an authorized request: a route's handler,
        else an item of a collection; 404 and 405 when there is none."""
        route = self._routes.get(path)
        if route is not None:
            allow = self._allow(route)
            handler = route.get(method) or (route.get("GET") if method == "HEAD" else None)
            if handler is None:
                return _not_allowed(method, allow), allow
            return await handler(request), allow
        prefix, _, leaf = path.rpartition("/")
        item = self._items.get(prefix)
        if item is None:
            return _error(404, "ResourceNotFound", f"The requested resource of type "
                          f"'Resource' named '{path}' was not found.", ["Resource", path]), None
        allowed, fn = item
        allow = ", ".join(allowed)
        if method not in allowed:
            return _not_allowed(method, allow), allow
        return await fn(request, leaf), allow

    @staticmethod
    def _allow(route: dict) -> str:
        methods = set(route) | ({"HEAD"} if "GET" in route else set())
        return ", ".join(sorted(methods))

    def _get(self, body: Callable[[], dict[str, Any]]) -> dict[str, Handler]:
        """A resource answering GET with `body()`, made at each request."""
        return {"GET": lambda r: self._static(body)}

    def _collection(self, uri: str, t: str, name: str,
                    members: Callable[[], list[str]]) -> dict[str, Handler]:
        return self._get(lambda: P.collection(uri, f"{t}.{t}", name, [P.link(m) for m in members()]))

    def routes(self) -> dict[str, dict[str, Any]]:      # subclasses add handlers of their own
        static, coll, pr = self._get, self._collection, self.profile
        out: dict[str, dict[str, Handler]] = {
            "/redfish": static(lambda: {"v1": P.ROOT + "/"}),
            P.ROOT: static(lambda: P.service_root(self.uuid, pr.session_service,
                                                  pr.managers_linked)),
            P.ODATA: static(lambda: P.odata_service_document(pr.session_service)),
            P.METADATA: {"GET": self.get_metadata},
            f"{P.ROOT}/Managers": coll(f"{P.ROOT}/Managers", "ManagerCollection",
                                       "Manager Collection", lambda: [
                                           *(f"{P.ROOT}/Managers/{m}" for m in pr.chassis_managers),
                                           self.manager_uri]),
            **{f"{P.ROOT}/Managers/{m}": static(partial(P.enclosure_manager, m))
               for m in pr.chassis_managers},
            self.manager_uri: {"GET": self.get_manager, "PATCH": self.patch_manager},
            self.network_uri: {"GET": lambda r: self._static(lambda: P.network_protocol(
                self.network_uri, self.ntp, self.ntp_servers)), "PATCH": self.patch_network},
            f"{P.ROOT}/Systems": coll(f"{P.ROOT}/Systems", "ComputerSystemCollection",
                                      "Computer System Collection", lambda: [pr.system_uri()]),
            pr.system_uri(): static(lambda: P.system(self.uuid, pr)),
            P.EVENT_SERVICE: static(lambda: P.event_service(pr, self.events.enabled)),
            P.SUBMIT_TEST_EVENT: {"POST": self.submit_test_event},
            P.SUBSCRIPTIONS: {"GET": lambda r: self._static(self.events.collection),
                              "POST": self.post_subscription},
            P.ACCOUNT_SERVICE: static(P.account_service),
            P.ACCOUNTS: coll(P.ACCOUNTS, "ManagerAccountCollection", "Accounts Collection",
                             lambda: [f"{P.ACCOUNTS}/{self.username}"]),
            P.ROLES: coll(P.ROLES, "RoleCollection", "Roles Collection",
                          lambda: [f"{P.ROLES}/{r}" for r in P.ROLE_PRIVILEGES]),
        }
        if pr.sse:
            out[P.SSE] = {"GET": self.events.stream}
        if pr.session_service:
            out[f"{P.ROOT}/SessionService"] = static(lambda: P.session_service(
                pr.session_timeout_s))
            out[P.SESSIONS] = {"GET": lambda r: self._static(lambda: P.collection(
                P.SESSIONS, "SessionCollection.SessionCollection", "Session Collection",
                [P.link(f"{P.SESSIONS}/{sid}") for sid, _ in self.sessions.values()])),
                "POST": self.login}
        for parent in ("Managers", "Systems"):
            out.update(self._log_services(parent))
        for uri, lg in self.logs.items():
            out.update(self._log_routes(uri, lg))
        return out

    def _log_services(self, parent: str) -> dict[str, dict[str, Handler]]:
        """The LogServices collection under Managers or Systems (none without logs there)."""
        pr = self.profile
        specs = pr.logs_under(parent)
        if not specs:
            return {}
        uri = f"{pr.parent_uri(parent)}/LogServices"
        return {uri: self._collection(uri, "LogServiceCollection", "Log Service Collection",
                                      lambda: [pr.log_uri(x) for x in specs])}

    def _log_routes(self, uri: str, lg: _Log) -> dict[str, dict[str, Handler]]:
        """A log service, its entries and its ClearLog action."""
        async def clear(r: web.BaseRequest) -> web.StreamResponse:
            return await self.clear_log(r, lg)
        return {uri: self._get(lambda: P.log_service(uri, lg.spec, self.now_rendered(),
                                                     self.offset_min)),
                f"{uri}/Entries": self._get(lambda: P.collection(
                    f"{uri}/Entries", "LogEntryCollection.LogEntryCollection",
                    f"{lg.spec.id} Entries", list(lg.entries))),
                f"{uri}/Actions/LogService.ClearLog": {"POST": clear}}

    def item_routes(self) -> dict[str, tuple[tuple[str, ...], Any]]:
        """Members of collections: (methods allowed, handler(request, id))."""
        out = {P.SUBSCRIPTIONS: (("DELETE", "GET", "HEAD"),
                                 lambda r, i: self._sync(self.events.item(i, r.method))),
               P.ACCOUNTS: (("GET", "HEAD"), self.account_item),
               P.ROLES: (("GET", "HEAD"), self.role_item)}
        if self.profile.session_service:
            out[P.SESSIONS] = (("DELETE", "GET", "HEAD"), self.session_item)
        for uri, lg in self.logs.items():
            out[f"{uri}/Entries"] = (("GET", "HEAD"), partial(self.entry_item, lg=lg))
        return out

    @staticmethod
    async def _sync(resp: web.Response) -> web.Response:
        return resp

    async def get_metadata(self, request: web.BaseRequest) -> web.Response:
        resp = web.Response(text=P.metadata_xml({"EventService": self.profile.es_version}),
                            content_type="application/xml",
                            charset="utf-8", headers=JSON_HEADERS)
        return resp

    async def post_subscription(self, request: web.BaseRequest) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        return await self.events.subscribe(request, body)

    async def account_item(self, request: web.BaseRequest, user: str) -> web.Response:
        if user != self.username:
            return _error(404, "ResourceNotFound", f"The requested resource of type "
                          f"'ManagerAccount' named '{user}' was not found.",
                          ["ManagerAccount", user])
        body = P.account(self.username)
        etag = f'W/"{hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]}"'
        return _reply({**body, "@odata.etag": etag}, headers={"ETag": etag})

    async def role_item(self, request: web.BaseRequest, role_id: str) -> web.Response:
        if role_id not in P.ROLE_PRIVILEGES:
            return _error(404, "ResourceNotFound", f"The requested resource of type 'Role' "
                          f"named '{role_id}' was not found.", ["Role", role_id])
        return _reply(P.role(role_id))

    async def _static(self, body: Callable[[], dict[str, Any]]) -> web.Response:
        return _reply(body())

    @staticmethod
    async def _json(request: web.BaseRequest) -> dict | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "MalformedJSON", "The request body submitted was malformed JSON "
                          "and could not be parsed by the receiving service.")
        if not isinstance(body, dict):
            return _error(400, "MalformedJSON", "The request body submitted was malformed JSON "
                          "and could not be parsed by the receiving service.")
        return body

    # -- resources -------------------------------------------------------------------------------
    async def get_manager(self, request: web.BaseRequest) -> web.Response:
        v = await self.sample()
        body = P.manager(self.profile, datetime=self.render(v), offset_min=self.offset_min,
                         firmware=self.model.p.firmware, manufacturer=self.manufacturer,
                         model=self.model_name, serial=self.serial, uuid=self.uuid)
        await self.reply_delay()
        return _reply(body)

    async def patch_manager(self, request: web.BaseRequest) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        for key in body:
            if key != "DateTime":
                return _error(400, "PropertyNotWritable", f"The property {key} is a read only "
                              f"property and cannot be assigned a value.", [key])
        if "DateTime" not in body:
            return _reply(None, 204)
        text = body["DateTime"]
        if self.ntp and self.ntp_table.get("manual_set", "refuse") != "accept":
            return _error(400, "PropertyValueConflict", "The property 'DateTime' could not be "
                          "written because its value would conflict with the value of the "
                          "'NTP/ProtocolEnabled' property.", ["DateTime", "NTP/ProtocolEnabled"])
        try:
            target = _parse_datetime_ns(str(text))
        except ValueError:
            return _error(400, "PropertyValueFormatError", f"The value '{text}' for the property "
                          f"DateTime is not a format that the property can accept.",
                          [text, "DateTime"])
        t = self.ctx.now_ns()
        # The device stores the UTC time it was given; its wrong local offset (if any) stays.
        size = target + self.model.p.tz_error_ns - self.model.true_ns(t)
        self.model.add_step(t, size)
        self.ctx.record_event(self.name, "step", t, size_ns=size, set_to=str(text),
                              source="PATCH Manager DateTime")
        return _reply(None, 204)

    async def patch_network(self, request: web.BaseRequest) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        ntp = body.get("NTP", {})
        if set(body) - {"NTP"} or not isinstance(ntp, dict) or set(ntp) - {"ProtocolEnabled",
                                                                           "NTPServers"}:
            return _error(400, "PropertyNotWritable", "Only NTP/ProtocolEnabled and NTP/NTPServers "
                          "can be written here.", ["NetworkProtocol"])
        for key, setter in (("ProtocolEnabled", self._set_ntp_enabled),
                            ("NTPServers", self._set_ntp_servers)):
            refused = setter(ntp[key]) if key in ntp else None
            if refused is not None:
                return refused
        self._ntp_command()
        return _reply(None, 204)

    def _set_ntp_enabled(self, value: Any) -> web.Response | None:
        if not isinstance(value, bool):
            return _error(400, "PropertyValueTypeError", "The value for the property "
                          "ProtocolEnabled is of a different type than the property can "
                          "accept.", [value, "ProtocolEnabled"])
        self.ntp = value
        self.ctx.record_event(self.name, "ntp", self.ctx.now_ns(), enabled=self.ntp)
        return None

    def _set_ntp_servers(self, value: Any) -> web.Response | None:
        servers = patch_array(self.ntp_servers, value)
        if servers is None or not all(isinstance(x, str) for x in servers):
            return _error(400, "PropertyValueTypeError", "The value for the property "
                          "NTPServers is of a different type than the property can accept.",
                          [json.dumps(value), "NTPServers"])
        self.ntp_servers = servers
        self.ctx.record_event(self.name, "ntp_servers", self.ctx.now_ns(),
                              servers=self.ntp_servers)
        return None

    def power_switch(self, on: bool, t: int) -> None:
        """Its outlet switched: off, it stops answering and its NTP client stops; on, it boots
        for `boot_s`, its clock comes back as `power_clock` says (rtc: kept by the RTC; epoch:
        1970 plus the boot time; image: `image_date` plus the boot time) and NTP starts again."""
        if not on:
            self.powered = False
            self.cancel_pending()
            self.ctx.record_event(self.name, "power_off", t)
            if self.discipline is not None:
                self.discipline.set_enabled(t, False, self.ntp_servers)
            return
        self.ctx.record_event(self.name, "power_on", t)
        asyncio.get_running_loop().call_later(self.boot_s, self._booted)

    def _booted(self) -> None:
        t = self.ctx.now_ns()
        boot = round(self.boot_s * NS)
        base = {"epoch": 0, "image": _parse_datetime_ns(self.image_date)}.get(self.power_clock)
        if base is not None:
            size = base + boot + self.model.p.tz_error_ns - self.model.true_ns(t)
            self.model.add_step(t, size)
        self.ctx.record_event(self.name, "up", t, clock=self.power_clock,
                              reading_ns=self.model.read_ns(t))
        self.powered = True
        if self.ntp:
            self._ntp_command()

    def _ntp_command(self) -> None:
        """The NTP client's model (bench.sim.ntp) runs from the first NTP command on; until then
        the clock model's own parameters are the disciplined clock (no polls are modelled)."""
        t = self.ctx.now_ns()
        if self.discipline is None:
            self.discipline = NtpDiscipline(
                self.model, NtpParams.from_table(self.ntp_table), self.ntp, self.ntp_servers, t,
                record=lambda kind, at, **d: self.ctx.record_event(self.name, kind, at, **d))
        else:
            self.discipline.set_enabled(t, self.ntp, self.ntp_servers)

    async def session_item(self, request: web.BaseRequest, sid: str) -> web.Response:
        token = self._session_by_id(sid)
        if token is None:
            return _error(404, "ResourceNotFound", f"The requested resource of type 'Session' "
                          f"named '{sid}' was not found.", ["Session", sid])
        if request.method == "DELETE":
            del self.sessions[token]
            self.limits.forget(token)
            return _reply(None, 204)
        return _reply(P.session(sid, self.sessions[token][1]))

    async def entry_item(self, request: web.BaseRequest, entry_id: str, lg: _Log) -> web.Response:
        entry = next((e for e in lg.entries if e["Id"] == entry_id), None)
        if entry is None:
            return _error(404, "ResourceNotFound", f"The requested resource of type 'LogEntry' "
                          f"named '{entry_id}' was not found.", ["LogEntry", entry_id])
        return _reply(entry)

    # -- events and the log ----------------------------------------------------------------------
    async def submit_test_event(self, request: web.BaseRequest) -> web.Response:
        t = self.ctx.now_ns()
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        bad = P.test_event_problem(body, self.profile)
        if bad is not None:
            return _error(400, *bad)
        message_id = body["MessageId"]
        message = str(body.get("Message") or f"Test event {message_id}")
        args = [str(a) for a in body.get("MessageArgs", []) or []]
        severity = str(body.get("Severity") or "OK")
        self.ctx.record_event(self.name, "test_event", t, message_id=message_id, message=message)
        # bmcweb hands a test event to the subscribers at once; the log entry comes later
        self.events.emit(t, self.render((self.model.read_ns(t) // NS) * NS), message_id,
                         message, args, severity, str(body.get("OriginOfCondition")
                                                       or P.EVENT_SERVICE),
                         str(body.get("EventType") or "Alert"))
        t_log = t + self.model.log_latency_ns()
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def create() -> None:
            self.pending.discard(handle)
            self.append_entry(t_log, message_id, message, args, severity, t)

        handle = loop.call_later(max(0.0, (t_log - self.ctx.now_ns()) / NS), create)
        self.pending.add(handle)
        return _reply(None, 204)

    def append_entry(self, t_log: int, message_id: str, message: str, args: list, severity: str,
                     t_event: int) -> None:
        """The test event's log entry, stamped by the model at `t_log`; visible from now on."""
        if self.event_log is None:
            return
        created, entry_id = self._append(self.event_log, t_log, message, args, severity,
                                         message_id=message_id)
        self.ctx.record_event(self.name, "log", t_log, created_ns=created, entry_id=entry_id,
                              message_id=message_id, latency_ns=t_log - t_event)

    def _append(self, lg: _Log, t: int, message: str, args: list, severity: str,
                message_id: str = "", seeded: bool = False) -> tuple[int, str]:
        spec = lg.spec
        created = (self.model.read_ns(t) // NS) * NS
        entry_id = str(lg.next)
        lg.next += 1
        kind = spec.seed_type if seeded else "Event"
        if seeded and spec.message_ids:
            message_id = "Base.1.18.1.Success"
        lg.entries.append(P.log_entry(f"{self.profile.log_uri(spec)}/Entries", entry_id,
                                      self.render(created), message_id, message, args, severity,
                                      kind, spec.oem_format))
        del lg.entries[:-self.log_capacity]
        return created, entry_id

    async def clear_log(self, request: web.BaseRequest, lg: _Log) -> web.Response:
        lg.entries.clear()
        self.ctx.record_event(self.name, "log_cleared", self.ctx.now_ns(), log=lg.spec.id)
        return _reply(None, 204)

    def cancel_pending(self) -> None:
        for h in self.pending:
            h.cancel()
        self.pending.clear()


class _Log:
    """One LogService's entries."""

    def __init__(self, spec: LogSpec):
        self.spec = spec
        self.entries: list[dict] = []
        self.next = 1


class _Handler(RequestHandler):
    """aiohttp's protocol handler, answering a method its parser does not know (llhttp knows a
    fixed list) with 501 and a Redfish error body, as DSP0266 §7.3 asks, instead of 400."""

    def handle_error(self, request, status=500, exc=None, message=None):
        if isinstance(exc, BadHttpMethod):
            resp = _error(501, "OperationNotAllowed", "The HTTP method is not implemented by "
                          "this service.", [])
            resp.force_close()
            return resp
        return super().handle_error(request, status, exc, message)


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


def _bind(address: str) -> tuple[socket.socket, str, str]:
    """A listening socket for `scheme://host:port` (port 0: ephemeral); (socket, scheme, host)."""
    from urllib.parse import urlsplit

    u = urlsplit(address)
    if u.scheme not in ("http", "https"):
        raise ValueError(f"address {address!r}: scheme must be http or https")
    host = u.hostname or "127.0.0.1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, u.port or 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock, u.scheme, host


async def serve(devices: list[DeviceConfig], ctx: SimContext, make: type[EmulatedBMC] = EmulatedBMC,
                tls_name: str = "redfish") -> dict[str, dict]:
    """Serve each device; `make` and `tls_name` (its certificates' file names in the workdir,
    one CA per emulator module) for services on this core (bench/sim/redfish_equipment_emu.py)."""
    certs = None
    out: dict[str, dict] = {}
    for device in devices:
        models = ctx.models(device, ("datetime",))
        model = models.get("datetime") or next(iter(models.values()))
        bmc = make(device, model, ctx)
        bmc.seed_logs()
        sock, scheme, host = _bind(device.address)
        ssl_ctx = None
        if scheme == "https":
            certs = certs or make_certificates(ctx.workdir, tls_name)
            ssl_ctx = server_context(certs)
        runner = web.ServerRunner(_Server(bmc.handle, handler_cancellation=True, access_log=None),
                                  handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=ssl_ctx).start()
        ctx.add_cleanup(runner.cleanup)
        ctx.add_cleanup(bmc.cancel_pending)
        ctx.add_cleanup(bmc.events.close)
        port = sock.getsockname()[1]
        hostpart = f"[{host}]" if ":" in host else host
        out[device.name] = {"address": f"{scheme}://{hostpart}:{port}"}
        if certs is not None and scheme == "https":
            out[device.name]["ca_file"] = str(certs.ca)
    return out
