"""Emulated switched PDUs on SNMP v2c and v3 (USM, SHA + AES-128), one pysnmp engine each, on
UDP loopback in the rack's asyncio loop.

Each device answers from its clock models: `sysUpTime.0` (TimeTicks, 10 ms, modulo 2^32) from
`[sim.clocks.sysuptime]` and, where the rack file gives `[sim.clocks.hrsystemdate]`,
`hrSystemDate.0` (DateAndTime with deciseconds and the UTC offset the device claims,
`local_offset_min`). An outlet command is carried out after `actuation_latency_s` (default
0.05 s), logged in the outlet event log after the model's `log_latency_s`, and announced by an
SNMPv2 trap (sysUpTime.0, snmpTrapOID.0, outlet number) to every receiver. While the model says
the device is rebooting (`reboots`, `reboot_down_s`) it answers nothing.

Emulator keys (in `[devices.X.sim]` unless said otherwise):
  outlets = 8 or ["name", ...]         actuation_latency_s = 0.05     outlet_reboot_s = 5.0
  model, serial, sys_descr             trap_receivers = ["udp://127.0.0.1:PORT", ...]
  community / write_community / trap_community: used when the inventory's `community_env` /
  `write_community_env` / `trap_community_env` variable is unset (defaults public / private /
  the read community; a v2c device without `community_env` uses its `password_env` value as
  the read community). v3: inventory `username`, `password_env` (SHA auth key) and `privacy_env`
  (AES key; the auth key when absent).
  vendor = "rackclock" (default) | "apc" | "apc_rpdu2" | "apc_spdu" | "raritan" | "eaton" |
  "sentry4": the MIB the agent answers, with that vendor's sysObjectID, outlet objects and trap
  (bench/sim/snmp_pdu_vendors); only "rackclock" serves the experimental outlet event log.
  drop_traps = N: the agent loses its first N outlet traps (sent to no receiver: a lost trap).
  Inventory `trap_listen = "udp://127.0.0.1:0"` gets a free port here, returned in the overrides
  (the driver listens there) and used as a trap receiver.
A wrong community gets no answer (pysnmp drops it, as a real agent does).
SNMPv2c GET and GETNEXT from the agent's read or write community, the requests of every clock
read and log poll, are answered by bench/sim/snmp_v2c_agent (about a tenth of the engine's CPU
per request; the clock sampled as late as before, after the request is read); every other
message (v1, v3, SET, GETBULK, another community) goes to the engine. The model's
`sample_delay_s`/`jitter_s`/`reply_delay_s` are served with loop timers, which fire about 1 ms
late at best (docs/protocol_floors.md): below that, leave them 0 and let pysnmp's own processing
(about 0.5 ms a request) be the agent's delay.
"""
from __future__ import annotations

import asyncio
import os
import socket
import zlib
from dataclasses import replace
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.carrier.asyncio.dispatch import AsyncioDispatcher
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context, ntforg
from pysnmp.proto import rfc1902
from pysnmp.proto.api import v2c

from bench.config.inventory import DeviceConfig
from bench.config.keys import Key
from bench.config.schema import TEXT, Check, choice, key, list_of, num, says
from bench.ports import free_port
from bench.sim import power
from bench.sim.clock_model import NS
from bench.sim.snmp_pdu_mib import SNMP_TRAP_OID, SYS_UPTIME, TICK_NS, PduObjects
from bench.sim.snmp_pdu_vendors import LAYOUTS
from bench.sim.snmp_v2c_agent import V2cAnswers

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
UDP_PEER = key(Key("str", pattern=r"(udp://)?[A-Za-z0-9.-]*:\d{1,5}/?", hint="'udp://HOST:PORT'"))
_OUTLET_NAMES, _OUTLET_COUNT = list_of(TEXT, 256), num(1, 256, kind="int")


@says(f"{_OUTLET_COUNT.accepted}, or {_OUTLET_NAMES.accepted}")
def _outlets(value, path: str) -> None:
    (_OUTLET_NAMES if isinstance(value, list) else _OUTLET_COUNT)(value, path)


SIM_KEYS: dict[str, Check] = {
    "outlets": _outlets,
    "trap_receivers": list_of(UDP_PEER, 16), "model": TEXT, "sys_descr": TEXT, "serial": TEXT,
    "actuation_latency_s": num(0.0, 60.0, "s"), "outlet_reboot_s": num(0.0, 3600.0, "s"),
    "community": TEXT, "write_community": TEXT, "privacy": TEXT, "trap_community": TEXT,
    # the vendor MIB the agent answers: one of the vendor table's (bench/sim/snmp_pdu_vendors.py)
    "vendor": choice(*LAYOUTS),
    "drop_traps": num(0, 10**6, kind="int")}

SYSUPTIME_DEFAULTS = {"counter": True, "resolution_s": 0.01, "wrap_ticks": 2 ** 32}
HRSYSTEMDATE_DEFAULTS = {"resolution_s": 0.1}
AGENT_TICK_S = 0.5


def _udp_hostport(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[-1].strip("/")
    host, _, port = rest.rpartition(":")
    return host or "127.0.0.1", int(port)


def with_clock_defaults(device: DeviceConfig) -> DeviceConfig:
    """The device with its SNMP clocks' fixed properties filled in under what the rack file says."""
    sim = dict(device.sim or {})
    clocks = {k: dict(v) for k, v in dict(sim.get("clocks", {})).items()}
    clocks["sysuptime"] = {**SYSUPTIME_DEFAULTS, **clocks.get("sysuptime", {})}
    if "hrsystemdate" in clocks:
        clocks["hrsystemdate"] = {**HRSYSTEMDATE_DEFAULTS, **clocks["hrsystemdate"]}
    sim["clocks"] = clocks
    return replace(device, sim=sim)


class _AgentUdp(udp.UdpAsyncioTransport):
    """The agent's socket: a device that is rebooting receives nothing; what the fast path
    answers does not reach the engine."""

    def __init__(self, down, *a, **kw):
        super().__init__(*a, **kw)
        self._down = down
        self.fast = None

    def datagram_received(self, datagram, transportAddress):
        if self._down():
            return
        if self.fast is not None and self.fast.answer(self, datagram, transportAddress):
            return
        super().datagram_received(datagram, transportAddress)


class _DelayedGet(cmdrsp.GetCommandResponder):
    """GET responder that samples after the model's sample delay and answers after its reply
    delay, without blocking the loop (no delay: answered at once, as pysnmp does)."""

    def __init__(self, snmp_engine, snmp_context, delays):
        super().__init__(snmp_engine, snmp_context)
        self._delays = delays
        self._held: set = set()

    def handle_management_operation(self, snmpEngine, stateReference, contextName, PDU):
        sample_s, reply_s = self._delays()
        if sample_s <= 0 and reply_s <= 0:
            return super().handle_management_operation(snmpEngine, stateReference, contextName, PDU)
        self._held.add(stateReference)
        loop = asyncio.get_running_loop()
        loop.call_later(sample_s, self._sample, snmpEngine, stateReference, contextName, PDU, reply_s)

    def _sample(self, snmpEngine, stateReference, contextName, PDU, reply_s):
        if snmpEngine.transport_dispatcher is None:     # the agent stopped meanwhile
            return
        mib = self.snmpContext.get_mib_instrum(contextName)
        rsp = mib.read_variables(*v2c.apiPDU.get_varbinds(PDU))
        asyncio.get_running_loop().call_later(reply_s, self._answer, snmpEngine, stateReference, rsp)

    def _answer(self, snmpEngine, stateReference, rsp):
        self._held.discard(stateReference)
        if snmpEngine.transport_dispatcher is None:
            return
        self.send_varbinds(snmpEngine, stateReference, 0, 0, rsp)
        self.release_state_information(stateReference)

    def release_state_information(self, stateReference):
        if stateReference not in self._held:
            super().release_state_information(stateReference)


class PduAgent:
    """One emulated PDU."""

    def __init__(self, device: DeviceConfig, ctx):
        self.device = with_clock_defaults(device)
        self.name = device.name
        self.ctx = ctx
        self.sim: dict[str, Any] = dict(self.device.sim or {})
        self.opts = dict(device.options)
        vendor = str(self.sim.get("vendor", "rackclock")).lower()
        if vendor not in LAYOUTS:
            raise ValueError(f"{self.name}: [sim] vendor {vendor!r}: one of {', '.join(LAYOUTS)}")
        self.layout = LAYOUTS[vendor]
        self._traps_to_drop = int(self.sim.get("drop_traps", 0))
        self.models = ctx.models(self.device, ("sysuptime",))
        self.uptime = self.models["sysuptime"]
        self.engine: engine.SnmpEngine | None = None
        self.receivers: list[tuple[str, int]] = []
        self.overrides: dict[str, Any] = {}
        self._timers: list[asyncio.TimerHandle] = []

    # -- configuration -----------------------------------------------------------------------
    def _secret(self, env_key: str, sim_key: str, default: str | None) -> str | None:
        var = self.opts.get(env_key)
        if var and os.environ.get(var):
            return os.environ[var]
        return str(self.sim.get(sim_key, default)) if self.sim.get(sim_key, default) is not None \
            else None

    def _identity(self) -> dict:
        fw = self.uptime.p.firmware
        crc = zlib.crc32(self.name.encode())
        model = str(self.sim.get("model", self.layout.model_name))
        serial = str(self.sim.get("serial", f"ZA{crc % 10**10:010d}"))
        descr = self.sim.get("sys_descr") or self.layout.descr.format(fw=fw, model=model,
                                                                      serial=serial)
        return {"descr": descr, "name": self.name, "model": model, "serial": serial,
                "firmware": fw}

    def _outlets(self) -> list[str]:
        o = self.sim.get("outlets", 8)
        return [str(x) for x in o] if isinstance(o, (list, tuple)) else \
            [f"Outlet {i}" for i in range(1, int(o) + 1)]

    def _trap_receivers(self) -> list[str]:
        out = [str(a) for a in self.sim.get("trap_receivers", [])]
        r = self.opts.get("trap_receiver")
        out += [str(x) for x in r] if isinstance(r, (list, tuple)) else ([str(r)] if r else [])
        listen = self.opts.get("trap_listen")
        if listen:
            host, port = _udp_hostport(str(listen))
            if port == 0:
                port = free_port(socket.SOCK_DGRAM, host)
            listen = f"udp://{host}:{port}"
            self.overrides["trap_listen"] = listen
            out.append(listen)
        out = list(dict.fromkeys(out))       # a resolved rack names its trap_listen twice
        if out:
            self.overrides["trap_receiver"] = out[-1] if len(out) == 1 else out
        return out

    # -- start / stop ------------------------------------------------------------------------
    async def start(self) -> dict[str, Any]:
        host, port = _udp_hostport(self.device.address)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((host, port))
        port = sock.getsockname()[1]
        sock.setblocking(False)

        e = self.engine = engine.SnmpEngine()
        # the engine's timers (request state expiry) tick every 0.5 s, not pysnmp's 0.1 s: a
        # hundred agents in one process woke it 1,000 times a second for nothing
        e.register_transport_dispatcher(AsyncioDispatcher(loop=asyncio.get_running_loop(),
                                                          timeout=AGENT_TICK_S))
        transport = _AgentUdp(lambda: self.uptime.down(self.ctx.now_ns())).open_server_mode(sock=sock)
        config.add_transport(e, udp.DOMAIN_NAME, transport)

        read, write, writers = self._credentials(e)

        self.objects = PduObjects(
            self.layout, self.models, self.ctx.now_ns, self._identity(), self._outlets(),
            int(self.models.get("hrsystemdate", self.uptime).p.local_offset_min),
            sample=lambda clock, t, v: self.ctx.record_sample(self.name, clock, t, v),
            command=self._command, engine_time=lambda: int(self._engine_time.syntax.clone()),
            writers=lambda sec: sec in writers)
        self.objects.set_date = self._set_date
        (self._engine_time,) = e.get_mib_builder().import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineTime")
        # loaded now, not by the engine's first request (a SET: every agent's first stimulus
        # in one round): about 4 ms of CPU each
        e.get_mib_builder().import_symbols("__SNMPv2-MIB", "snmpInPkts")
        snmp_context = context.SnmpContext(e)
        snmp_context.unregister_context_name(b"")
        snmp_context.register_context_name(b"", self.objects)

        def delays():
            return self.uptime.sample_delay_s(), self.uptime.p.reply_delay_s
        transport.fast = V2cAnswers(self.objects, {str(c).encode() for c in (read, write) if c},
                                    delays, lambda: self.engine is not None)
        self._responders = [_DelayedGet(e, snmp_context, delays),
                            cmdrsp.SetCommandResponder(e, snmp_context),
                            cmdrsp.NextCommandResponder(e, snmp_context),
                            cmdrsp.BulkCommandResponder(e, snmp_context)]

        self._trap_targets(e, read)
        await asyncio.sleep(0)           # let the datagram endpoint come up
        return {"address": f"udp://{host}:{port}", **self.overrides}

    def _credentials(self, e: engine.SnmpEngine) -> tuple[str | None, str | None, set[str]]:
        """The communities (read, write) and v3 user configured in the engine; the security
        names that may SET."""
        read = self._secret("community_env", "community", "public")
        if not self.opts.get("community_env") and not self.device.username and self.device.secret():
            read = self.device.secret()          # v2c: the device's password is its community
        write = self._secret("write_community_env", "write_community", "private")
        config.add_v1_system(e, "read-area", read)
        writers = {"write-area"}
        if write and write != read:
            config.add_v1_system(e, "write-area", write)
        elif write == read:
            writers.add("read-area")             # one read-write community
        if self.device.username:
            auth = self.device.secret()
            if auth:
                priv = self._secret("privacy_env", "privacy", None) or auth
                config.add_v3_user(e, self.device.username, config.USM_AUTH_HMAC96_SHA, auth,
                                   config.USM_PRIV_CFB128_AES, priv)
                writers.add(self.device.username)
        return read, write, writers

    def _trap_targets(self, e: engine.SnmpEngine, read: str | None) -> None:
        """The trap receivers the rack names, configured in the engine as notification targets."""
        self.receivers = [_udp_hostport(a) for a in self._trap_receivers()]
        if self.receivers:
            trap_comm = self._secret("trap_community_env", "trap_community", read)
            config.add_v1_system(e, "trap-area", trap_comm, transportTag="pdu-trap-receivers")
            config.add_target_parameters(e, "trap-params", "trap-area", "noAuthNoPriv", 1)
            for i, addr in enumerate(self.receivers):
                config.add_target_address(e, f"trap-receiver-{i}", udp.DOMAIN_NAME, addr,
                                          "trap-params", tagList="pdu-trap-receivers")
            config.add_notification_target(e, "pdu-traps", "pdu-trap-filter",
                                           "pdu-trap-receivers", "trap")
            config.add_context(e, "")
            config.add_vacm_user(e, 2, "trap-area", "noAuthNoPriv", (), (), (1, 3, 6))
            self.notifier = ntforg.NotificationOriginator()

    async def stop(self) -> None:
        for h in self._timers:
            h.cancel()
        if self.engine is not None:
            self.engine.close_dispatcher()
            self.engine = None

    # -- outlets -----------------------------------------------------------------------------
    def _later(self, delay_s: float, fn, *args) -> None:
        self._timers = [h for h in self._timers if not h.cancelled() and h.when() >
                        asyncio.get_running_loop().time()]
        self._timers.append(asyncio.get_running_loop().call_later(max(0.0, delay_s), fn, *args))

    def _command(self, outlet: int, what: str) -> None:
        t = self.ctx.now_ns()
        self.ctx.record_event(self.name, "outlet_command", t, outlet=outlet, command=what)
        lat = float(self.sim.get("actuation_latency_s", 0.05))
        if what == "reboot":
            self._later(lat, self._actuate, outlet, False)
            self._later(lat + float(self.sim.get("outlet_reboot_s", 5.0)), self._actuate, outlet, True)
        else:
            self._later(lat, self._actuate, outlet, what == "on")

    def _set_date(self, utc_ns: int) -> None:
        """hrSystemDate SET: from now on the date clock shows `utc_ns` (its claimed offset and
        any zone error stay)."""
        model = self.models.get("hrsystemdate")
        if model is None:
            return
        t = self.ctx.now_ns()
        size = utc_ns + model.p.tz_error_ns - model.true_ns(t)
        model.add_step(t, size)
        self.ctx.record_event(self.name, "step", t, size_ns=size, set_to_ns=utc_ns,
                              source="SET hrSystemDate.0")

    def _actuate(self, outlet: int, on: bool) -> None:
        if self.engine is None:
            return
        t = self.ctx.now_ns()
        L = self.layout
        self.objects.state[outlet] = L.state_on if on else L.state_off
        self.ctx.record_event(self.name, "outlet_on" if on else "outlet_off", t, outlet=outlet)
        power.bus(self.ctx).switch(self.name, outlet, on, t)      # the devices it feeds
        self._later(self.uptime.log_latency_ns() / NS, self._log, outlet, on, t)

    def _log(self, outlet: int, on: bool, t_event: int) -> None:
        if self.engine is None:
            return
        t = self.ctx.now_ns()
        ticks = self.objects.uptime_ticks(t)
        row = self.objects.add_log(ticks, outlet, on)
        self.ctx.record_event(self.name, "outlet_log", t, outlet=outlet, on=on, log_index=row.index,
                              stamp_ns=ticks * TICK_NS, event_t_ns=t_event)
        if self.receivers and not self.uptime.down(t):
            if self._traps_to_drop > 0:          # a lost trap: the truth says so
                self._traps_to_drop -= 1
                self.ctx.record_event(self.name, "trap_lost", t, outlet=outlet, on=on)
                return
            L = self.layout
            about = ([(L.trap_outlet, rfc1902.Integer32(outlet))] if L.trap_outlet else []) + (
                [(L.outlet_state + L.index + (outlet,),
                  rfc1902.Integer32(L.state_on if on else L.state_off))] if L.trap_state else [])
            # contextName as bytes: pysnmp 7.1's VACM does not find the str "" context
            self.notifier.send_varbinds(self.engine, "pdu-traps", None, b"", [
                (SYS_UPTIME, rfc1902.TimeTicks(ticks)),
                (SNMP_TRAP_OID, rfc1902.ObjectName(L.trap_on if on else L.trap_off)), *about])


async def serve(devices: list[DeviceConfig], ctx) -> dict[str, dict]:
    out = {}
    for d in devices:
        agent = PduAgent(d, ctx)
        out[d.name] = await agent.start()
        ctx.add_cleanup(agent.stop)
    return out
