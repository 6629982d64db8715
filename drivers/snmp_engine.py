"""One pysnmp SnmpEngine per event loop, shared by the SNMP PDU drivers that run on that loop
for SNMPv3 exchanges and for traps (SNMPv2c reads and sets go through drivers/snmp_v2c).

Why: an SnmpEngine loads pysnmp's MIB tables on its first exchange and its dispatcher wakes
every 0.1 s, so an engine per device made opening hundreds of PDUs cost minutes of CPU and
thousands of timer wake-ups a second (benchmarks/README.md, "One SNMP engine per event
loop"). Shared, a device still owns what makes its exchanges its own:
  - its UDP transport, registered under its own transport domain (udp.DOMAIN_NAME + (n,)), so the
    send and arrival stamps on it are of its own datagrams only; pysnmp's LCD keys a target by
    (domain, address), so each device's requests leave through its own socket;
  - its target and credentials; pysnmp matches an answer to its request by request-id and
    refuses one whose community or USM user differs from the request's.
SNMPv3: pysnmp holds one USM user entry per user name and engine (its keys localised per agent
as discovered); two devices with one user name but different keys would overwrite each other's,
so such a device gets another engine of the pool. A user name stays bound to its keys for the
life of an engine.
Traps: pysnmp allows one notification receiver per engine; it routes each trap, by the
transport domain it arrived on, to the driver listening there, with the community it came with.
The dispatcher is reference-counted: a driver's release removes only its own transports, the
last one closes the engine.
USM timeline expiry: pysnmp (7.1) queues the authoritative engine id of every authenticated
answer (a decoded pyasn1 object) for expiry 3,000 timer ticks later (300 s at its 0.1 s tick,
longer as a loaded loop lags) and removes none earlier, so a watch held one object per SNMPv3
answer for 5-7 minutes (about 700 for one PDU, growing RSS through a watch's first minutes;
benchmarks/README.md). Each engine's queue keeps an engine id in its latest slot only
(`LatestExpiry`): at most one entry per agent, and an agent's time values are forgotten 300 s
after its last answer, not its first.
"""
from __future__ import annotations

import asyncio
import itertools
import threading
import weakref
from collections.abc import Callable

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.carrier.asyncio.dispatch import AsyncioDispatcher
from pysnmp.entity import config
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413 import ntfrcv
from pysnmp.hlapi.v3arch.asyncio.lcd import CommandGeneratorLcdConfigurator

_DOMAINS = itertools.count(1)
# a trap handler: (source address, community, varbinds)
TrapSink = Callable[[tuple, str, list], None]


def new_domain() -> tuple[int, ...]:
    """A UDP transport domain of its own (pysnmp treats any suffix of udp.DOMAIN_NAME as UDP)."""
    return udp.DOMAIN_NAME + (next(_DOMAINS),)


_USM_QUEUE = "_SnmpUSMSecurityModel__timelineExpQueue"     # pysnmp 7.1's name (rfc3414/service)


class LatestExpiry(dict):
    """pysnmp's USM expiry queue (tick -> the engine ids to forget at that tick) that holds each
    engine id in its latest slot only: queued again, an id leaves its earlier slot."""

    def __init__(self) -> None:
        super().__init__()
        self.slot_of: dict = {}                     # engine id -> its tick

    def __setitem__(self, tick, ids) -> None:
        slot = _Slot(self, tick)
        super().__setitem__(tick, slot)
        for engine_id in ids:
            slot.append(engine_id)

    def __delitem__(self, tick) -> None:
        for engine_id in self.get(tick, ()):
            if self.slot_of.get(engine_id) == tick:
                del self.slot_of[engine_id]
        super().__delitem__(tick)

    def entries(self) -> int:
        return sum(map(len, self.values()))


class _Slot(list):
    """One tick's engine ids: an id appended here leaves the slot it was in."""

    def __init__(self, queue: LatestExpiry, tick) -> None:
        super().__init__()
        self.queue, self.tick = queue, tick

    def append(self, engine_id) -> None:
        old = self.queue.slot_of.get(engine_id)
        if old == self.tick:
            return
        if old is not None and old in self.queue:
            before = dict.__getitem__(self.queue, old)
            list.remove(before, engine_id)
            if not before:
                dict.__delitem__(self.queue, old)
        self.queue.slot_of[engine_id] = self.tick
        super().append(engine_id)


def bound_usm_expiry(engine: SnmpEngine) -> LatestExpiry | None:
    """The engine's USM expiry queue made a LatestExpiry (None, left alone, when this pysnmp
    keeps no such queue or has already queued something)."""
    usm = engine.security_models.get(3)
    if type(getattr(usm, _USM_QUEUE, None)) is not dict or getattr(usm, _USM_QUEUE):
        return None
    queue = LatestExpiry()
    setattr(usm, _USM_QUEUE, queue)
    return queue


class SharedEngine:
    """An SnmpEngine, its dispatcher and who uses it."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.engine = SnmpEngine()
        self.engine.register_transport_dispatcher(AsyncioDispatcher(loop=self.loop))
        self.usm_expiry = bound_usm_expiry(self.engine)
        self.members = 0
        self.users: dict[str, tuple] = {}           # v3 user name -> its keys, for this engine's life
        self.domains: dict[tuple, udp.UdpAsyncioTransport] = {}   # domain -> transport (open ones)
        self.trap_sinks: dict[tuple, TrapSink] = {}
        self._receiver: ntfrcv.NotificationReceiver | None = None
        self._community = ""                        # of the message being processed

    def fits(self, user: tuple | None) -> bool:
        return user is None or self.users.get(user[0], user[1:]) == user[1:]

    # -- transports ----------------------------------------------------------------------------
    def add_transport(self, transport: udp.UdpAsyncioTransport) -> tuple[int, ...]:
        domain = new_domain()
        config.add_transport(self.engine, domain, transport)
        self.domains[domain] = transport
        return domain

    def remove_transport(self, domain: tuple) -> None:
        """Unregister and close one transport, and drop the LCD's target rows on its domain
        (the LCD has no per-target release: it releases by credentials, which devices share)."""
        transport = self.domains.pop(domain, None)
        self.trap_sinks.pop(domain, None)
        if transport is None:
            return
        if self.engine.transport_dispatcher is not None:
            config.delete_transport(self.engine, domain)
        transport.close_transport()
        cache = self.engine.get_user_context(CommandGeneratorLcdConfigurator.__name__) or {}
        addr = cache.get("addr", {})
        for key in [k for k in addr if tuple(k[1]) == domain]:
            config.delete_target_address(self.engine, addr.pop(key)[0])

    # -- traps ---------------------------------------------------------------------------------
    def listen(self, transport: udp.UdpAsyncioTransport, sink: TrapSink) -> tuple[int, ...]:
        domain = self.add_transport(transport)
        self.trap_sinks[domain] = sink
        if self._receiver is None:
            self.engine.observer.register_observer(self._seen, "rfc2576.processIncomingMsg")
            self._receiver = ntfrcv.NotificationReceiver(self.engine, self._on_notification)
        return domain

    def _seen(self, snmpEngine, execpoint, variables, cbCtx):
        self._community = str(variables.get("communityName", ""))

    def _on_notification(self, snmpEngine, stateReference, contextEngineId, contextName, varBinds,
                         cbCtx):
        ectx = snmpEngine.observer.get_execution_context("rfc3412.receiveMessage:request") or {}
        sink = self.trap_sinks.get(tuple(ectx.get("transportDomain") or ()))
        if sink is not None:
            sink(ectx.get("transportAddress"), self._community, varBinds)

    def close(self) -> None:
        self.engine.close_dispatcher()
        self.domains.clear()
        self.trap_sinks.clear()


_POOL: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[SharedEngine]] = \
    weakref.WeakKeyDictionary()
_POOL_LOCK = threading.Lock()       # loops in several threads (the in-process runner) share _POOL


def acquire(user: tuple | None = None) -> SharedEngine:
    """The running loop's shared engine (one that holds `user` = (name, auth key, privacy key)
    with these keys or not at all), counted as used once more."""
    with _POOL_LOCK:
        shares = _POOL.setdefault(asyncio.get_running_loop(), [])
        share = next((s for s in shares if s.fits(user)), None)
        if share is None:
            share = SharedEngine()
            shares.append(share)
        if user is not None:
            share.users[user[0]] = user[1:]
        share.members += 1
        return share


def release(share: SharedEngine, *domains: tuple) -> None:
    """Close one user's transports; the last user closes the engine."""
    for domain in domains:
        share.remove_transport(domain)
    with _POOL_LOCK:
        share.members -= 1
        if share.members > 0:
            return
        shares = _POOL.get(share.loop, [])
        if share in shares:
            shares.remove(share)
    share.close()


def engines_in_use() -> list[SharedEngine]:
    """The running loop's shared engines."""
    with _POOL_LOCK:
        return list(_POOL.get(asyncio.get_running_loop(), []))
