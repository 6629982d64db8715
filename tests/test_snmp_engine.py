"""Several SNMP PDU drivers on one event loop share one pysnmp engine (drivers/snmp_engine) for
SNMPv3 and traps, each on its own UDP socket (v2c reads go through drivers/snmp_v2c on that
socket): against the emulator over real sockets, a device whose answer the test holds back
widens no other device's bracket, and closing one driver leaves the others reading."""
from __future__ import annotations

import asyncio
import dataclasses
import select
import socket
import threading

from test_snmp_pdu import credentials, driver, pdu_toml, port_of, run, sim_samples  # noqa: F401

from bench.reference.clock import Reference
from bench.sim.rack import samples_in
from drivers import snmp_engine


class _HoldingRelay:
    """A UDP relay in front of an agent that passes requests on at once and, while holding,
    keeps the agent's answers until the test releases them."""

    def __init__(self, agent_port: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.up.connect(("127.0.0.1", agent_port))
        self.holding = False
        self.held: list[bytes] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.peer = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            ready, _, _ = select.select([self.sock, self.up], [], [], 0.05)
            if self.sock in ready:
                data, self.peer = self.sock.recvfrom(65536)
                self.up.send(data)
            if self.up in ready:
                back = self.up.recv(65536)
                with self.lock:
                    if self.holding:
                        self.held.append(back)
                        continue
                self.sock.sendto(back, self.peer)

    def release(self):
        with self.lock:
            self.holding = False
            held, self.held = self.held, []
        for back in held:
            self.sock.sendto(back, self.peer)

    def close(self):
        self.stop.set()
        self.thread.join(2)
        self.sock.close()
        self.up.close()


async def until(done, what: str, deadline_s: float = 20.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not done():
        assert loop.time() < end, f"no {what} within {deadline_s} s"
        await asyncio.sleep(0.01)


def test_pdus_on_one_loop_share_one_engine_each_stamping_its_own_datagrams(sim_rack):
    sim = sim_rack(pdu_toml("pdu-a") + pdu_toml("pdu-b")
                   + pdu_toml("pdu-slow", trap=False, hrsystemdate=False))
    a_dev, b_dev, slow_src = sim.rack.devices
    relay = _HoldingRelay(port_of(slow_src.address))
    slow_dev = dataclasses.replace(slow_src, address=f"udp://127.0.0.1:{relay.port}",
                                   options={**slow_src.options, "timeout_s": 30.0})

    async def go():
        a, b, slow = driver(a_dev), driver(b_dev), driver(slow_dev)
        await asyncio.gather(a.open(), b.open(), slow.open())
        out = {"shared": (len(snmp_engine.engines_in_use()),
                          a.engine is b.engine is not None and slow.engine is None,
                          len({id(a._client), id(b._client), id(slow._client)}),
                          len({*a._domains, *b._domains, *slow._domains}))}
        try:
            with relay.lock:
                relay.holding = True
            pending = asyncio.create_task(slow.read_clock("sysuptime"))
            await until(lambda: relay.held, "answer from the slow agent")
            fast = [(d.name, await d.read_clock("sysuptime")) for _ in range(10) for d in (a, b)]
            released = Reference.now_ns()
            relay.release()
            out.update(fast=fast, released=released, slow=await pending)
            await a.close()                       # the others go on: reads, a stimulus, its trap
            out["after"] = [(d.name, await d.read_clock("sysuptime")) for _ in range(3)
                            for d in (b, slow)]
            out["engine_after"] = (b.engine is not None and slow.engine is None,
                                   len(snmp_engine.engines_in_use()))
            await b.stimulate("outlet_reboot", 3)
            traps = []

            async def traps_seen():
                entries, _ = await b.log_entries("log=999999;trap=0")
                traps[:] = [e for e in entries if e.cursor.startswith("trap:")]
                return len(traps) >= 2
            loop = asyncio.get_running_loop()
            end = loop.time() + 20
            while not await traps_seen():
                assert loop.time() < end, "no traps from pdu-b after pdu-a closed"
                await asyncio.sleep(0.05)
            out["traps"] = traps
        finally:
            await asyncio.gather(a.close(), b.close(), slow.close())
        out["left"] = len(snmp_engine.engines_in_use())
        return out

    try:
        out = run(go())
    finally:
        relay.close()
    # one engine, for the traps of the two devices that listen for them (v2c reads do not use
    # it); 3 client sockets of their own, 2 trap transports in the engine
    assert out["shared"] == (1, True, 3, 2)
    released = out["released"]
    for name, r in out["fast"] + out["after"]:
        assert len(samples_in(sim_samples(sim, name, "sysuptime"), r.s_ns, r.e_ns)) == 1, (name, r)
    # the slow device's answer was held until `released`: no other device's bracket reaches it,
    # and its own bracket spans it
    assert all(r.e_ns < released for _, r in out["fast"])
    slow = out["slow"]
    assert slow.s_ns < released < slow.e_ns
    assert len(samples_in(sim_samples(sim, "pdu-slow", "sysuptime"), slow.s_ns, slow.e_ns)) == 1
    assert out["engine_after"] == (True, 1)
    assert ["outlet 3" in t.message for t in out["traps"]] == [True, True]
    assert out["left"] == 0


def test_v3_users_with_one_name_and_different_keys_get_engines_of_their_own(sim_rack, monkeypatch):
    """pysnmp keeps one USM entry per user name in an engine: a device whose user has another
    device's name but other keys reads through another engine; one with the same keys joins."""
    monkeypatch.setenv("RACKCLOCK_TEST_PDU_PW2", "rc-test-other-authkey")
    sim = sim_rack(pdu_toml("pdu-k1", v3=True, trap=False)
                   + pdu_toml("pdu-k2", v3=True, trap=False).replace(
                       '"RACKCLOCK_TEST_PDU_PW"', '"RACKCLOCK_TEST_PDU_PW2"')
                   + pdu_toml("pdu-k1b", v3=True, trap=False))
    k1, k2, k1b = sim.rack.devices
    assert k1.username == k2.username and k2.password_env == "RACKCLOCK_TEST_PDU_PW2"

    async def go():
        ds = [driver(d) for d in (k1, k2, k1b)]
        await asyncio.gather(*(d.open() for d in ds))
        try:
            reads = [(d.name, await d.read_clock("sysuptime")) for _ in range(3) for d in ds]
            return (len(snmp_engine.engines_in_use()), ds[0].engine is ds[2].engine,
                    ds[0].engine is not ds[1].engine, reads)
        finally:
            await asyncio.gather(*(d.close() for d in ds))

    engines, same, other, reads = run(go())
    assert (engines, same, other) == (2, True, True)
    for name, r in reads:
        assert len(samples_in(sim_samples(sim, name, "sysuptime"), r.s_ns, r.e_ns)) == 1, (name, r)


def test_loops_in_threads_get_engines_of_their_own(sim_rack):
    """The in-process runner gives each device a loop in a thread of its own: each loop has its
    own engine, and opening and closing in several threads at once is safe (SNMPv3 devices: v2c
    reads use no engine)."""
    sim = sim_rack("".join(pdu_toml(f"pdu-t{i}", v3=True, trap=False, hrsystemdate=False)
                           for i in range(4)))
    results, errors = {}, []

    async def one(devs):
        ds = [driver(d) for d in devs]
        await asyncio.gather(*(d.open() for d in ds))
        try:
            reads = [await d.read_clock("sysuptime") for d in ds for _ in range(3)]
            return len(snmp_engine.engines_in_use()), {id(d.engine) for d in ds}, reads
        finally:
            await asyncio.gather(*(d.close() for d in ds))

    def thread(k):
        try:
            results[k] = run(one(sim.rack.devices[2 * k:2 * k + 2]))
        except BaseException as exc:       # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=thread, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 2
    (n0, e0, r0), (n1, e1, r1) = results[0], results[1]
    assert (n0, n1, len(e0), len(e1)) == (1, 1, 1, 1)
    assert len(r0) == len(r1) == 6


def test_usm_expiry_queue_keeps_one_entry_per_agent_and_still_expires(sim_rack):
    """pysnmp queued every SNMPv3 answer's engine id for expiry 300 s later (one pyasn1 object
    per answer held for minutes): the shared engine's queue keeps each agent's id once, in its
    latest slot, and pysnmp's own ticks still forget the agent's time values 3,000 ticks after
    its last answer, after which a read re-synchronises and succeeds."""
    sim = sim_rack(pdu_toml("pdu-q1", v3=True, trap=False, hrsystemdate=False)
                   + pdu_toml("pdu-q2", v3=True, trap=False, hrsystemdate=False))

    async def go():
        ds = [driver(d) for d in sim.rack.devices]
        await asyncio.gather(*(d.open() for d in ds))
        try:
            reads = [await d.read_clock("sysuptime") for _ in range(10) for d in ds]
            share = snmp_engine.engines_in_use()[0]
            queue, usm = share.usm_expiry, share.engine.security_models[3]
            held = (queue.entries(), len(queue.slot_of))
            for _ in range(3001):
                usm.receive_timer_tick(share.engine, 0.0)
            forgotten = (queue.entries(), len(usm._SnmpUSMSecurityModel__timeline))
            again = [await d.read_clock("sysuptime") for d in ds]
            return reads, held, forgotten, again, queue.entries()
        finally:
            await asyncio.gather(*(d.close() for d in ds))

    reads, held, forgotten, again, after = run(go())
    assert len(reads) == 20 and len(again) == 2
    assert isinstance(held[0], int) and 1 <= held[0] == held[1] <= 2, held
    assert forgotten == (0, 0)
    assert 1 <= after <= 2


def test_latest_expiry_moves_an_id_to_its_latest_slot():
    """The queue as pysnmp's USM fills it (`if tick not in q: q[tick] = []; q[tick].append(id)`)
    and empties it (`del q[tick]` after forgetting its ids)."""
    q = snmp_engine.LatestExpiry()
    for tick, engine_id in ((10, b"a"), (11, b"b"), (12, b"a"), (12, b"a"), (13, b"b")):
        if tick not in q:
            q[tick] = []
        q[tick].append(engine_id)
    assert dict(q) == {12: [b"a"], 13: [b"b"]} and q.slot_of == {b"a": 12, b"b": 13}
    del q[12]
    assert dict(q) == {13: [b"b"]} and q.slot_of == {b"b": 13} and q.entries() == 1
