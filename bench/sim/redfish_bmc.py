"""Redfish BMC emulator: one aiohttp.web server per BMC on loopback, answering from the clock model.

Written by hand on aiohttp.web because no Redfish mock serves a *moving* clock (DMTF's
Redfish-Mockup-Server replays static JSON from `http.server`, which adds ~44 ms per keep-alive
request, see FACTS.md). It speaks what the DMTF `redfish` clients and curl need, as bmcweb does:

- service root `/redfish/v1/` (unauthenticated), session login (POST Sessions -> 201 with
  `X-Auth-Token` and `Location`, DELETE to log out) and HTTP basic auth; 401 otherwise;
- Manager `/redfish/v1/Managers/bmc`: `DateTime` sampled from the clock model inside the request
  (sample delay, then sample, then reply delay), rendered in the device's claimed local offset;
  PATCH of `DateTime` steps the model (204), or 400 PropertyValueConflict while NTP is on;
- `NetworkProtocol` with NTP `ProtocolEnabled` (PATCH toggles it);
- `EventService` `SubmitTestEvent` (204): after the model's log latency an entry appears in
  `/redfish/v1/Systems/system/LogServices/EventLog/Entries`, `Created` stamped by the model then;
- unknown paths 404 with a Redfish error body.

Sim keys beyond the clock model's: `ntp` (bool), `ntp_servers`, `manufacturer`, `model`,
`serial`, `log_capacity` (entries kept, oldest dropped first), `ntp_model` (the NTP client's
model, bench/sim/ntp.py, running from the first NetworkProtocol PATCH on), `power` ("PDU:OUTLET"
feeding it, bench/sim/power.py) with `boot_s` and `power_clock` (rtc | epoch | image, with
`image_date`): where its clock comes back after a power cycle.
Every DateTime sample goes to `ctx.record_sample`; every test event (`test_event`, the reference
instant it was received), log stamp (`log`, the instant its `Created` was taken) and clock set
(`step`) goes to `ctx.record_event`.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import hmac
import os
import secrets
import socket
import sys
import uuid as uuidlib
from typing import Any

from aiohttp import web

from bench.inventory import DeviceConfig
from bench.sim import redfish_payloads as P
from bench.sim.clock import NS, ClockModel
from bench.sim.rack import SimContext
from bench.sim.tls import make_certificates, server_context
from bench.sim.timing import hold, sample_clock

JSON_HEADERS = {"OData-Version": "4.0", "Cache-Control": "no-store"}


def _reply(body: dict | None, status: int = 200, headers: dict | None = None) -> web.Response:
    h = {**JSON_HEADERS, **(headers or {})}
    if body is None:
        return web.Response(status=status, headers=h)
    return web.json_response(body, status=status, headers=h)


def _error(status: int, message_id: str, message: str, args=(), headers=None) -> web.Response:
    return _reply(P.error(message_id, message, args), status, headers)


def _parse_datetime_ns(text: str) -> int:
    """An ISO 8601 date-time with its UTC offset -> Unix-epoch ns (ValueError if it has none)."""
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        raise ValueError("no UTC offset")
    d = t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000


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
            print(f"redfish emulator: {self.name}: password variable {device.password_env!r} is "
                  f"unset; nobody can log in", file=sys.stderr)
        self.ntp = bool(sim.get("ntp", False))
        self.ntp_servers = list(sim.get("ntp_servers", ["pool.ntp.org"] if self.ntp else []))
        self.uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{self.name}.rackclock.sim"))
        self.manufacturer = str(sim.get("manufacturer", "rackclock-sim"))
        self.model_name = str(sim.get("model", "OpenBMC emulated BMC"))
        self.serial = str(sim.get("serial", f"SIM{self.uuid[:8].upper()}"))
        self.offset_min = int(model.p.local_offset_min)
        self.log_capacity = int(sim.get("log_capacity", 1000))
        self.sessions: dict[str, tuple[str, str]] = {}     # token -> (session id, user)
        self.entries: list[dict] = []
        self.next_entry = 1
        self.pending: set[asyncio.TimerHandle] = set()
        self._routes, self._items = self.routes(), self.item_routes()
        self.ntp_table = sim.get("ntp_model") or {}     # bench.sim.ntp: the NTP client's model
        self.discipline = None                           # made at the first NTP command
        self.powered = True                              # bench.sim.power: fed by `power`
        self.boot_s = float(sim.get("boot_s", 8.0))
        self.power_clock = str(sim.get("power_clock", "rtc"))   # rtc | epoch | image
        self.image_date = str(sim.get("image_date", "2024-06-01T00:00:00+00:00"))
        if sim.get("power"):
            from bench.sim import power
            power.bus(ctx).feed(sim["power"], self.power_switch)

    # -- the clock -------------------------------------------------------------------------------
    async def sample(self) -> int:
        """Sample the model at the modelled instant inside this request; record it."""
        _, v = await sample_clock(self.ctx, self.name, "datetime", self.model)
        return v

    async def reply_delay(self) -> None:
        await hold(self.model.p.reply_delay_s)

    def now_rendered(self) -> str:
        return P.render_datetime(self.model.read_ns(self.ctx.now_ns()), self.offset_min)

    # -- authentication --------------------------------------------------------------------------
    def _password_ok(self, user: str, password: str) -> bool:
        return (self.password is not None and hmac.compare_digest(user, self.username)
                and hmac.compare_digest(password.encode(), self.password.encode()))

    def authorized(self, request: web.Request) -> bool:
        token = request.headers.get("X-Auth-Token")
        if token is not None:
            return token in self.sessions
        auth = request.headers.get("Authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                user, _, password = base64.b64decode(auth[6:], validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            return self._password_ok(user, password)
        return False

    async def login(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        user, password = body.get("UserName"), body.get("Password")
        if not isinstance(user, str) or not isinstance(password, str):
            return _error(400, "PropertyMissing", "The property UserName or Password is a required "
                          "property and must be included in the request.", ["UserName/Password"])
        if not self._password_ok(user, password):
            return _error(401, "ResourceAtUriUnauthorized",
                          f"While accessing the resource at '{P.SESSIONS}', the service received "
                          f"an authorization error 'Invalid username or password'.",
                          [P.SESSIONS, "Invalid username or password"])
        sid, token = secrets.token_hex(5), secrets.token_urlsafe(24)
        self.sessions[token] = (sid, user)
        return _reply(P.session(sid, user), 201,
                      {"X-Auth-Token": token, "Location": f"{P.SESSIONS}/{sid}"})

    def _session_by_id(self, sid: str) -> str | None:
        return next((tok for tok, (s, _) in self.sessions.items() if s == sid), None)

    # -- dispatch --------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.Response:
        if not self.powered:           # off or booting: nothing answers (the connection drops)
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=503)
        path = request.path.rstrip("/") or "/"
        method = request.method
        if path in ("/redfish", P.ROOT) and method in ("GET", "HEAD"):
            if path == "/redfish":
                return _reply({"v1": P.ROOT + "/"})
            return _reply(P.service_root(self.uuid))
        if path == P.SESSIONS and method == "POST":
            return await self.login(request)
        if not self.authorized(request):
            return _error(401, "AccessDenied", f"While attempting to establish a connection to "
                          f"'{path}', the service denied access.", [path],
                          {"WWW-Authenticate": 'Basic realm="Redfish"'})
        route = self._routes.get(path)
        if route is None:
            prefix, _, leaf = path.rpartition("/")
            item = self._items.get(prefix)
            if item is not None:
                return await item(request, leaf)
            return _error(404, "ResourceNotFound", f"The requested resource of type "
                          f"'Resource' named '{path}' was not found.", ["Resource", path])
        handler = route.get(method) or (route.get("GET") if method == "HEAD" else None)
        if handler is None:
            return _error(405, "ActionNotSupported", f"The action {method} is not supported by "
                          f"the resource.", [method], {"Allow": ", ".join(sorted(route))})
        return await handler(request)

    def routes(self) -> dict[str, dict[str, Any]]:
        static = lambda body: {"GET": lambda r: self._static(body)}   # noqa: E731
        return {
            f"{P.ROOT}/SessionService": static(P.session_service),
            P.SESSIONS: static(lambda: P.collection(
                P.SESSIONS, "SessionCollection.SessionCollection", "Session Collection",
                [P.link(f"{P.SESSIONS}/{sid}") for sid, _ in self.sessions.values()])),
            f"{P.ROOT}/Managers": static(lambda: P.collection(
                f"{P.ROOT}/Managers", "ManagerCollection.ManagerCollection",
                "Manager Collection", [P.link(P.MANAGER)])),
            P.MANAGER: {"GET": self.get_manager, "PATCH": self.patch_manager},
            P.NETWORK: {"GET": lambda r: self._static(lambda: P.network_protocol(
                self.ntp, self.ntp_servers)), "PATCH": self.patch_network},
            f"{P.ROOT}/Systems": static(lambda: P.collection(
                f"{P.ROOT}/Systems", "ComputerSystemCollection.ComputerSystemCollection",
                "Computer System Collection", [P.link(P.SYSTEM)])),
            P.SYSTEM: static(lambda: P.system(self.uuid)),
            f"{P.SYSTEM}/LogServices": static(lambda: P.collection(
                f"{P.SYSTEM}/LogServices", "LogServiceCollection.LogServiceCollection",
                "System Log Services Collection", [P.link(P.EVENT_LOG)])),
            P.EVENT_LOG: static(lambda: P.event_log_service(self.now_rendered(), self.offset_min)),
            P.ENTRIES: static(lambda: P.collection(
                P.ENTRIES, "LogEntryCollection.LogEntryCollection", "System Event Log Entries",
                list(self.entries))),
            P.CLEAR_LOG: {"POST": self.clear_log},
            P.EVENT_SERVICE: static(P.event_service),
            P.SUBMIT_TEST_EVENT: {"POST": self.submit_test_event},
        }

    def item_routes(self) -> dict[str, Any]:
        return {P.SESSIONS: self.session_item, P.ENTRIES: self.entry_item}

    async def _static(self, body) -> web.Response:
        return _reply(body())

    @staticmethod
    async def _json(request: web.Request) -> dict | web.Response:
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
    async def get_manager(self, request: web.Request) -> web.Response:
        v = await self.sample()
        body = P.manager(datetime=P.render_datetime(v, self.offset_min), offset_min=self.offset_min,
                         firmware=self.model.p.firmware, manufacturer=self.manufacturer,
                         model=self.model_name, serial=self.serial, uuid=self.uuid)
        await self.reply_delay()
        return _reply(body)

    async def patch_manager(self, request: web.Request) -> web.Response:
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

    async def patch_network(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        ntp = body.get("NTP", {})
        if set(body) - {"NTP"} or not isinstance(ntp, dict) or set(ntp) - {"ProtocolEnabled",
                                                                           "NTPServers"}:
            return _error(400, "PropertyNotWritable", "Only NTP/ProtocolEnabled and NTP/NTPServers "
                          "can be written here.", ["NetworkProtocol"])
        if "ProtocolEnabled" in ntp:
            if not isinstance(ntp["ProtocolEnabled"], bool):
                return _error(400, "PropertyValueTypeError", "The value for the property "
                              "ProtocolEnabled is of a different type than the property can "
                              "accept.", [ntp["ProtocolEnabled"], "ProtocolEnabled"])
            self.ntp = ntp["ProtocolEnabled"]
            self.ctx.record_event(self.name, "ntp", self.ctx.now_ns(), enabled=self.ntp)
        if isinstance(ntp.get("NTPServers"), list):
            self.ntp_servers = [str(s) for s in ntp["NTPServers"]]
            self.ctx.record_event(self.name, "ntp_servers", self.ctx.now_ns(),
                                  servers=self.ntp_servers)
        self._ntp_command()
        return _reply(None, 204)

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
        from bench.sim.ntp import NtpDiscipline, NtpParams
        t = self.ctx.now_ns()
        if self.discipline is None:
            self.discipline = NtpDiscipline(
                self.model, NtpParams.from_table(self.ntp_table), self.ntp, self.ntp_servers, t,
                record=lambda kind, at, **d: self.ctx.record_event(self.name, kind, at, **d))
        else:
            self.discipline.set_enabled(t, self.ntp, self.ntp_servers)

    async def session_item(self, request: web.Request, sid: str) -> web.Response:
        token = self._session_by_id(sid)
        if token is None:
            return _error(404, "ResourceNotFound", f"The requested resource of type 'Session' "
                          f"named '{sid}' was not found.", ["Session", sid])
        if request.method == "DELETE":
            del self.sessions[token]
            return _reply(None, 204)
        if request.method in ("GET", "HEAD"):
            return _reply(P.session(sid, self.sessions[token][1]))
        return _error(405, "ActionNotSupported", f"The action {request.method} is not supported "
                      f"by the resource.", [request.method], {"Allow": "DELETE, GET"})

    async def entry_item(self, request: web.Request, entry_id: str) -> web.Response:
        entry = next((e for e in self.entries if e["Id"] == entry_id), None)
        if entry is None:
            return _error(404, "ResourceNotFound", f"The requested resource of type 'LogEntry' "
                          f"named '{entry_id}' was not found.", ["LogEntry", entry_id])
        if request.method not in ("GET", "HEAD"):
            return _error(405, "ActionNotSupported", f"The action {request.method} is not "
                          f"supported by the resource.", [request.method], {"Allow": "GET"})
        return _reply(entry)

    # -- events and the log ----------------------------------------------------------------------
    async def submit_test_event(self, request: web.Request) -> web.Response:
        t = self.ctx.now_ns()
        body = await self._json(request)
        if not isinstance(body, dict):
            return body
        message_id = body.get("MessageId")
        if not isinstance(message_id, str) or not message_id:
            return _error(400, "PropertyMissing", "The property MessageId is a required property "
                          "and must be included in the request.", ["MessageId"])
        message = str(body.get("Message") or f"Test event {message_id}")
        args = [str(a) for a in body.get("MessageArgs", []) or []]
        severity = str(body.get("Severity") or "OK")
        self.ctx.record_event(self.name, "test_event", t, message_id=message_id, message=message)
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
        """The log entry, stamped by the model at `t_log`; visible from now on."""
        created = (self.model.read_ns(t_log) // NS) * NS
        entry_id = str(self.next_entry)
        self.next_entry += 1
        self.entries.append(P.log_entry(entry_id, P.render_datetime(created, self.offset_min),
                                        message_id, message, args, severity))
        del self.entries[:-self.log_capacity]
        self.ctx.record_event(self.name, "log", t_log, created_ns=created, entry_id=entry_id,
                              message_id=message_id, latency_ns=t_log - t_event)

    async def clear_log(self, request: web.Request) -> web.Response:
        self.entries.clear()
        self.ctx.record_event(self.name, "log_cleared", self.ctx.now_ns())
        return _reply(None, 204)

    def cancel_pending(self) -> None:
        for h in self.pending:
            h.cancel()
        self.pending.clear()


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


async def serve(devices: list[DeviceConfig], ctx: SimContext) -> dict[str, dict]:
    certs = None
    out: dict[str, dict] = {}
    for device in devices:
        models = ctx.models(device, ("datetime",))
        model = models.get("datetime") or next(iter(models.values()))
        bmc = EmulatedBMC(device, model, ctx)
        sock, scheme, host = _bind(device.address)
        ssl_ctx = None
        if scheme == "https":
            certs = certs or make_certificates(ctx.workdir, "redfish")
            ssl_ctx = server_context(certs)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", bmc.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=0.5, handler_cancellation=True)
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=ssl_ctx).start()
        ctx.add_cleanup(runner.cleanup)
        ctx.add_cleanup(bmc.cancel_pending)
        port = sock.getsockname()[1]
        hostpart = f"[{host}]" if ":" in host else host
        out[device.name] = {"address": f"{scheme}://{hostpart}:{port}"}
        if certs is not None and scheme == "https":
            out[device.name]["ca_file"] = str(certs.ca)
    return out
