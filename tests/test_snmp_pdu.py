"""The PDU plane over SNMP: the emulated agent through net-snmp's own tools (snmpget, snmpwalk,
snmpset, snmptrapd) and through the driver, over real UDP sockets on loopback."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from bench.analysis.counters import split_reboots
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.rack import read_samples
from drivers.base import DeviceError, StimulusRefused
from drivers.snmp_pdu import SnmpPdu, decode_date_and_time

NS = 1_000_000_000
TICK = 10_000_000
RC, WC, PW = "RACKCLOCK_TEST_PDU_RC", "RACKCLOCK_TEST_PDU_WC", "RACKCLOCK_TEST_PDU_PW"
UPTIME = "1.3.6.1.2.1.1.3.0"
APC_CMD = "1.3.6.1.4.1.318.1.1.12.3.3.1.1.4"
NETSNMP = shutil.which("snmpget") is not None
needs_netsnmp = pytest.mark.skipif(not NETSNMP, reason="net-snmp tools (apt: snmp) not installed")


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    monkeypatch.setenv(RC, "rc-test-ro")
    monkeypatch.setenv(WC, "rc-test-rw")
    monkeypatch.setenv(PW, "rc-test-authkey")


def pdu_toml(name="pdu-t", *, v3=False, vendor="rackclock", hrsystemdate=True,
             stimuli=("outlet_off:3", "outlet_reboot:3"), trap=True, sim="", clocks_sim="",
             uptime_s=42949600.0, write_env=True, override=""):
    """A PDU whose emulator answers `vendor`'s MIB; `override`: the inventory's vendor key."""
    auth = (f'username = "rackclock"\npassword_env = "{PW}"\n' if v3 else
            f'community_env = "{RC}"\n' + (f'write_community_env = "{WC}"\n' if write_env else ""))
    return (f'[devices.{name}]\nplane = "pdu"\ndriver = "snmp_pdu"\naddress = "udp://127.0.0.1:0"\n'
            + (f'vendor = "{override}"\n' if override else "")
            + f'{auth}stimuli = {list(stimuli)!r}\n'.replace("'", '"')
            + ('trap_listen = "udp://127.0.0.1:0"\n' if trap else "")
            + f'[devices.{name}.sim]\nvendor = "{vendor}"\nuptime_s = {uptime_s}\n'
              f"actuation_latency_s = 0.02\n"
              f"outlet_reboot_s = 0.2\n{sim}\n"
            + f"[devices.{name}.sim.clocks.sysuptime]\n{clocks_sim}\n"
            + (f"[devices.{name}.sim.clocks.hrsystemdate]\noffset_s = 0.25\nlocal_offset_min = 60\n"
               f"true_local_offset_min = 0\n" if hrsystemdate else ""))


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def driver(dev) -> SnmpPdu:
    return SnmpPdu(dev, Reference.now_ns, armed=True)


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def netsnmp(*args, timeout=10):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "MIBS": ""})


def sim_samples(sim, device, clock):
    return read_samples(sim.out_dir / "sim_samples.csv").get((device, clock), [])


# -- the agent through net-snmp --------------------------------------------------------------------
@needs_netsnmp
def test_netsnmp_get_walk_set_v2c_and_v3(sim_rack):
    sim = sim_rack(pdu_toml() + pdu_toml("pdu-v3", v3=True, hrsystemdate=False, trap=False))
    a, b = (f"127.0.0.1:{port_of(d.address)}" for d in sim.rack.devices)
    r = netsnmp("snmpget", "-v2c", "-c", "rc-test-ro", "-On", a, UPTIME, "1.3.6.1.2.1.25.1.2.0",
                "1.3.6.1.2.1.1.2.0", "1.3.6.1.4.1.318.1.1.12.1.3.0")
    assert r.returncode == 0, r.stderr
    assert "Timeticks: (42949" in r.stdout and ".1.3.6.1.3.7070.2" in r.stdout     # rackclock
    assert "Hex-STRING: 07 EA" in r.stdout or "Hex-STRING: 07 E" in r.stdout   # DateAndTime
    walk = netsnmp("snmpwalk", "-v2c", "-c", "rc-test-ro", "-On", a, "1.3.6.1.4.1.318.1.1.12.3.3")
    assert walk.returncode == 0 and walk.stdout.count(f"{APC_CMD}.") == 8, walk.stdout
    # read-only community may not switch an outlet; the write community may
    ro = netsnmp("snmpset", "-v2c", "-c", "rc-test-ro", a, f"{APC_CMD}.5", "i", "2")
    assert ro.returncode != 0 and "noAccess" in ro.stderr
    rw = netsnmp("snmpset", "-v2c", "-c", "rc-test-rw", a, f"{APC_CMD}.5", "i", "2")
    assert rw.returncode == 0, rw.stderr
    bad = netsnmp("snmpset", "-v2c", "-c", "rc-test-rw", a, f"{APC_CMD}.5", "i", "9")
    assert bad.returncode != 0 and "wrongValue" in bad.stderr
    time.sleep(0.3)
    state = netsnmp("snmpget", "-v2c", "-c", "rc-test-rw", "-Oqv", a, f"{APC_CMD}.5")
    assert state.stdout.strip() == "2"
    assert [e["kind"] for e in sim.ctx.events["pdu-t"]][:2] == ["outlet_command", "outlet_off"]
    v3 = netsnmp("snmpget", "-v3", "-l", "authPriv", "-u", "rackclock", "-a", "SHA", "-A",
                 "rc-test-authkey", "-x", "AES", "-X", "rc-test-authkey", "-On", b, UPTIME,
                 "1.3.6.1.6.3.10.2.1.3.0")
    assert v3.returncode == 0 and "Timeticks" in v3.stdout and ".1.3.6.1.6.3.10.2.1.3.0 = INTEGER" \
        in v3.stdout, v3.stderr
    wrong = netsnmp("snmpget", "-v3", "-l", "authPriv", "-u", "rackclock", "-a", "SHA", "-A",
                    "not-the-key", "-x", "AES", "-X", "not-the-key", "-t", "0.5", "-r", "0", b, UPTIME)
    assert wrong.returncode != 0
    nocomm = netsnmp("snmpget", "-v2c", "-c", "guess", "-t", "0.3", "-r", "0", a, UPTIME)
    assert nocomm.returncode != 0 and "Timeout" in nocomm.stderr


# -- the driver ----------------------------------------------------------------------------------
def test_driver_brackets_contain_every_emulator_sample(sim_rack):
    """On the CLOCK_REALTIME reference the answer's arrival is the kernel's stamp (SIOCGSTAMPNS),
    on any other the loop's: either bracket holds the emulator's sampling instant."""
    sim = sim_rack(pdu_toml(clocks_sim="sample_delay_s = 0.0003\njitter_s = 0.0002"))
    dev = sim.rack.devices[0]

    async def go(now_ns):
        d = SnmpPdu(dev, now_ns, armed=True)
        await d.open()
        try:
            ident = await d.identity()
            reads = {}
            for c in d.clocks():
                reads[c.name] = []
                for _ in range(25):
                    reads[c.name].append(await d.read_clock(c.name))
                    assert reads[c.name][-1].e_ns <= now_ns()
            return ident, d.clocks(), reads
        finally:
            await d.close()

    _, _, by_loop = run(go(lambda: Reference.now_ns()))      # not CLOCK_REALTIME's own function
    assert {r.stamp for rs in by_loop.values() for r in rs} == {"socket"}
    ident, clocks, reads = run(go(Reference.now_ns))
    assert ident.vendor == "rackclock" and ident.model == "AP8641" and ident.firmware == "1.0.0"
    assert ident.extra["sysObjectID"] == "1.3.6.1.3.7070.2"
    assert ident.extra["mib_chosen_by"] == "sysObjectID 1.3.6.1.3.7070.2"
    assert [c.name for c in clocks] == ["sysuptime", "hrsystemdate"]
    assert clocks[0].counter and clocks[0].modulus_ns == 2 ** 32 * TICK
    for clock, rs in reads.items():
        samples = sim_samples(sim, dev.name, clock)
        for r in rs:
            inside = [(t, v) for t, v in samples if r.s_ns <= t <= r.e_ns]
            assert len(inside) == 1, (clock, r)
            assert inside[0][1] == r.value_ns and r.stamp == "kernel"
    # hrSystemDate: device clock 0.25 s ahead, its local time claims +01:00 but is UTC: the
    # decoded UTC is an hour behind, and shows as such
    r = reads["hrsystemdate"][-1]
    assert abs(r.value_ns - r.s_ns - (0.25 * NS - 3600 * NS)) < 0.2 * NS
    assert decode_date_and_time(bytes.fromhex(r.raw))[1] == 60
    up = reads["sysuptime"]
    assert all(0 <= x.value_ns < 2 ** 32 * TICK for x in up)


def read_until(d, clock: str, done, deadline_s: float = 30.0, pause_s: float = 0.05):
    """Read `clock` until `done(ok_reads, error_kinds)` holds; a generous deadline, no timing margin."""
    async def go():
        ok, errors = [], []
        end = time.monotonic() + deadline_s
        while not done(ok, errors):
            assert time.monotonic() < end, f"condition not met within {deadline_s} s: {ok} {errors}"
            try:
                ok.append(await d.read_clock(clock))
            except DeviceError as exc:
                errors.append(exc.kind)
            await asyncio.sleep(pause_s)
        return ok, errors
    return go()


def test_driver_v3_and_uptime_wrap_through_counters(sim_rack):
    """The counter is placed 0.5 s short of its 2^32 wrap at the driver's first read (after the
    v3 engine set-up, however long that took): reads until three come after the wrap."""
    sim = sim_rack(pdu_toml(v3=True, hrsystemdate=False, trap=False))
    dev = sim.rack.devices[0]

    async def go():
        d = driver(dev)
        await d.open()
        sim.fault(dev.name, "wrap", clock="sysuptime", lead_s=0.5).result(10)
        try:
            ok, _ = await read_until(d, "sysuptime", lambda ok, err: sum(
                r.value_ns < ok[0].value_ns for r in ok) >= 3, pause_s=0.1)
            return ok
        finally:
            await d.close()

    rs = run(go())
    s, e, v = ([getattr(r, k) for r in rs] for k in ("s_ns", "e_ns", "value_ns"))
    assert v[0] == (2 ** 32 - 50) * TICK                        # 0.5 s short of the wrap
    assert min(v) < 20 * NS and max(v) > 42949672 * NS          # it wrapped
    seg = split_reboots(s, e, v, 2 ** 32 * TICK, TICK)
    assert len(seg) == 1 and seg[0]["wraps"] == 1


def test_wrap_is_refused_once_the_counter_was_read(sim_rack):
    sim = sim_rack(pdu_toml(trap=False, hrsystemdate=False))
    dev = sim.rack.devices[0]

    async def go():
        d = driver(dev)
        await d.open()
        try:
            await d.read_clock("sysuptime")
        finally:
            await d.close()

    run(go())
    with pytest.raises(RuntimeError, match="read already"):
        sim.fault(dev.name, "wrap", clock="sysuptime")


def test_outlet_stimulus_trap_and_event_log(sim_rack):
    sim = sim_rack(pdu_toml())
    dev = sim.rack.devices[0]

    async def go():
        d = driver(dev)
        await d.open()
        try:
            with pytest.raises(StimulusRefused):
                await d.stimulate("outlet_off", 4)               # not allowed by the inventory
            with pytest.raises(StimulusRefused):
                await d.stimulate("outlet_on", 3)
            st = await d.stimulate("outlet_reboot", 3)
            await asyncio.sleep(0.6)
            entries, cursor = await d.log_entries(None)
            again, cursor2 = await d.log_entries(cursor)
            return st, entries, again, cursor2
        finally:
            await d.close()

    st, entries, again, cursor = run(go())
    events = sim.ctx.events[dev.name]
    command = [x for x in events if x["kind"] == "outlet_command"]
    assert len(command) == 1 and command[0]["outlet"] == 3          # outlet 4 was never touched
    assert st.s_ns <= command[0]["t_ns"] <= st.e_ns and st.sent
    logged = [x for x in events if x["kind"] == "outlet_log"]
    assert [x["on"] for x in logged] == [False, True]
    traps = [x for x in entries if x.cursor.startswith("trap:")]
    rows = [x for x in entries if x.cursor.startswith("log:")]
    assert [t.value_ns for t in traps] == [x["stamp_ns"] for x in logged]
    assert [t.value_ns for t in rows] == [x["stamp_ns"] for x in logged]
    assert "rPDUOutletOff outlet 3" in traps[0].message and "outlet 3 on" in rows[1].message
    for t, x in zip(traps, logged):                       # a trap arrives after it was sent
        assert t.clock == "sysuptime" and x["t_ns"] <= t.e_ns
    assert again == [] and cursor == "log=2;trap=2"


@needs_netsnmp
@pytest.mark.skipif(shutil.which("snmptrapd") is None, reason="snmptrapd not installed")
def test_trap_reaches_snmptrapd(sim_rack, tmp_path):
    port = free_port(socket.SOCK_DGRAM)
    conf = tmp_path / "snmptrapd.conf"
    conf.write_text("authCommunity log rc-test-ro\n")
    trapd = subprocess.Popen(["snmptrapd", "-f", "-Lo", "-On", "-C", "-c", str(conf),
                              "-p", str(tmp_path / "pid"), f"udp:127.0.0.1:{port}"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "MIBS": "", "SNMP_PERSISTENT_DIR": str(tmp_path)})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(trapd.stdout.readline, "")),
                              daemon=True)
    reader.start()

    def wait_for(text, timeout_s=10.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not any(text in x for x in lines):
            time.sleep(0.05)
        return "".join(lines)

    try:
        assert "NET-SNMP version" in wait_for("NET-SNMP version")      # snmptrapd is listening
        sim = sim_rack(pdu_toml(trap=False, sim=f'trap_receivers = ["udp://127.0.0.1:{port}"]'))
        a = f"127.0.0.1:{port_of(sim.rack.devices[0].address)}"
        assert netsnmp("snmpset", "-v2c", "-c", "rc-test-rw", a, f"{APC_CMD}.3", "i", "2").returncode == 0
        out = wait_for(".1.3.6.1.4.1.318.2.3.1.0")
    finally:
        trapd.terminate()
        trapd.wait(5)
    assert ".1.3.6.1.4.1.318.0.269" in out, out
    assert ".1.3.6.1.2.1.1.3.0 = Timeticks" in out and ".1.3.6.1.4.1.318.2.3.1.0 = INTEGER: 3" in out


# -- errors ------------------------------------------------------------------------------------
def test_wrong_community_is_a_quick_timeout(sim_rack, monkeypatch):
    """The agent drops a request with a wrong community (as agents do): the driver's open is a
    timeout after one request of `timeout_s`, not retried (a relay counts what reaches the agent)."""
    sim = sim_rack(pdu_toml(trap=False))
    monkeypatch.setenv(RC, "not-the-community")
    agent = sim.rack.devices[0]
    relay = _Relay(port_of(agent.address))
    dev = dataclasses.replace(agent, address=f"udp://127.0.0.1:{relay.port}",
                              options={**agent.options, "timeout_s": 0.3})
    try:
        with pytest.raises(DeviceError) as err:
            run(driver(dev).open())
    finally:
        relay.close()
    assert err.value.kind == "timeout" and "within 0.3 s" in err.value.message
    assert relay.requests == 1 and relay.answers == 0
    assert "not-the-community" not in str(err.value)


def test_wrong_v3_key_is_an_auth_error(sim_rack, monkeypatch):
    sim = sim_rack(pdu_toml(v3=True, trap=False, hrsystemdate=False))
    monkeypatch.setenv(PW, "not-the-key-at-all")
    with pytest.raises(DeviceError) as err:
        run(driver(sim.rack.devices[0]).open())
    assert err.value.kind == "auth" and "not-the-key" not in str(err.value)


def test_unset_credential_variable_is_an_auth_error(sim_rack, monkeypatch):
    sim = sim_rack(pdu_toml(trap=False))
    monkeypatch.delenv(RC)
    with pytest.raises(DeviceError) as err:
        run(driver(sim.rack.devices[0]).open())
    assert err.value.kind == "auth" and RC in err.value.message


def test_set_refused_by_the_agent_is_a_protocol_error(sim_rack):
    sim = sim_rack(pdu_toml(trap=False, hrsystemdate=False, write_env=False))   # read community

    async def go():
        d = driver(sim.rack.devices[0])
        await d.open()
        try:
            await d.stimulate("outlet_off", 3)
        finally:
            await d.close()

    with pytest.raises(DeviceError) as err:
        run(go())
    assert err.value.kind == "protocol" and "noAccess" in err.value.message
    assert "rc-test-ro" not in str(err.value)
    assert sim.ctx.events.get("pdu-t", []) == []


def test_date_and_time_decoding():
    assert decode_date_and_time(bytes.fromhex("07ea0b1d110a3705") + b"+\x01\x00") == \
        (1795972255 * NS + 5 * NS // 10 - 3600 * NS, 60)
    assert decode_date_and_time(bytes.fromhex("07ea0b1d110a3705") + b"-\x05\x1e")[1] == -330
    assert decode_date_and_time(bytes.fromhex("07ea0b1d110a3705"))[1] is None
    for bad in ("07ea0d1d110a3705", "07ea0b1d110a370a", "07ea0b1d110a3705"+"2a0100", "07ea0b"):
        with pytest.raises(ValueError):
            decode_date_and_time(bytes.fromhex(bad))


class _BadAgent:
    """A UDP socket that answers every datagram with garbage, or not at all."""

    def __init__(self, answer: bytes | None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.answer = answer
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                _, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            if self.answer is not None:
                self.sock.sendto(self.answer, peer)

    def close(self):
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


class _Relay(_BadAgent):
    """A UDP relay in front of the agent that counts the requests it passes on and the answers
    it passes back."""

    def __init__(self, agent_port: int):
        self.up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.up.connect(("127.0.0.1", agent_port))
        self.up.setblocking(False)
        self.requests = self.answers = 0
        super().__init__(None)

    def _serve(self):
        peer = None
        while not self.stop.is_set():
            try:
                data, peer = self.sock.recvfrom(65536)
                self.requests += 1
                self.up.send(data)
            except TimeoutError:
                pass
            try:
                back = self.up.recv(65536)
            except BlockingIOError:
                continue
            self.answers += 1
            self.sock.sendto(back, peer)

    def close(self):
        super().close()
        self.up.close()


@pytest.mark.parametrize("answer,kind", [(b"\x30\x03\x02\x01\x07garbage", "malformed"),
                                         (None, "timeout")])
def test_bad_agent_is_a_clear_error_while_another_device_answers(sim_rack, answer, kind):
    sim = sim_rack(pdu_toml(trap=False, hrsystemdate=False))
    good = sim.rack.devices[0]
    bad_agent = _BadAgent(answer)
    bad = dataclasses.replace(good, name="pdu-bad", address=f"udp://127.0.0.1:{bad_agent.port}",
                              options={**good.options, "timeout_s": 0.3})

    async def try_bad():
        with pytest.raises(DeviceError) as err:
            await driver(bad).open()
        return err.value

    async def keep_reading():
        d = driver(good)
        await d.open()
        try:
            out = []
            for _ in range(10):
                out.append(await d.read_clock("sysuptime"))
                await asyncio.sleep(0.03)
            return out
        finally:
            await d.close()

    async def both():
        return await asyncio.gather(try_bad(), keep_reading())

    try:
        err, reads = run(both())
    finally:
        bad_agent.close()
    assert err.kind == kind and err.device == "pdu-bad" and f"{bad_agent.port}" in err.message
    assert len(reads) == 10 and all(r.e_ns >= r.s_ns for r in reads)


def test_reboot_no_answer_then_uptime_restarts(sim_rack):
    """The agent reboots after the driver's first read: reads time out while it is down (0.6 s),
    then its uptime restarts; the reboot's instant lies inside the bounds split_reboots gives."""
    sim = sim_rack(pdu_toml(trap=False, hrsystemdate=False,
                            sim="reboot_down_s = 0.6", uptime_s=5000.0))
    dev = dataclasses.replace(sim.rack.devices[0], options={**sim.rack.devices[0].options,
                                                            "timeout_s": 0.2})

    async def go():
        d = driver(dev)
        await d.open()
        try:
            first = await d.read_clock("sysuptime")
            reboot = sim.fault(dev.name, "reboot").result(10)
            ok, errors = await read_until(d, "sysuptime", lambda ok, err: err and len(ok) >= 3)
        finally:
            await d.close()
        return [first] + ok, errors, reboot

    ok, errors, reboot = run(go())
    assert errors and set(errors) == {"timeout"}
    seg = split_reboots([r.s_ns for r in ok], [r.e_ns for r in ok], [r.value_ns for r in ok],
                        2 ** 32 * TICK, TICK)
    assert [x["kind"] for x in seg] == ["first", "reboot"]
    assert seg[1]["zero_lo_ns"] < reboot <= seg[1]["zero_hi_ns"]
    assert {"t_ns": reboot, "kind": "reboot", "size_ns": None} in \
        sim.ctx._models[dev.name]["sysuptime"].breaks()


# -- a real rack -------------------------------------------------------------------------------
def test_snmp_pdu_with_device(real_rack):
    devices = [d for d in real_rack.devices if d.driver == "snmp_pdu"]
    if not devices:
        pytest.skip("the rack file has no snmp_pdu device")

    async def go(dev):
        d = SnmpPdu(dev, Reference.now_ns, armed=False)
        await d.open()
        try:
            ident = await d.identity()
            reads = [await d.read_clock(c.name) for c in d.clocks() for _ in range(3)]
            return ident, reads
        finally:
            await d.close()

    for dev in devices:
        ident, reads = run(go(dev))
        assert ident.extra["sysObjectID"]
        assert all(r.s_ns <= r.e_ns and r.value_ns >= 0 for r in reads)


def test_default_rack_pdus(tmp_path, monkeypatch):
    """The PDUs of the embedded simulated rack: pdu-1 v3 with hrSystemDate under a wrong offset,
    pdu-2 v2c without it and within 40 s of the sysUpTime wrap; each switches its allowed outlet."""
    from bench.config.inventory import load_rack
    from bench.sim.serve import DEFAULT_RACK
    from bench.sim.thread import SimRackThread

    rack = load_rack(DEFAULT_RACK)
    rack = dataclasses.replace(rack, devices=tuple(d for d in rack.devices if d.driver == "snmp_pdu"))
    assert [d.name for d in rack.devices] == ["pdu-1", "pdu-2"]
    for dev in rack.devices:
        monkeypatch.setenv(dev.password_env, f"test-{dev.name}-secret")
    with SimRackThread(rack, tmp_path) as sim:
        async def go(dev):
            d = driver(dev)
            await d.open()
            try:
                reads = {c.name: await d.read_clock(c.name) for c in d.clocks()}
                name, target = dev.stimuli[0].split(":")
                st = await d.stimulate(name, target)
                return reads, st
            finally:
                await d.close()

        out = {dev.name: run(go(dev)) for dev in sim.rack.devices}
    (r1, s1), (r2, s2) = out["pdu-1"], out["pdu-2"]
    assert sorted(r1) == ["hrsystemdate", "sysuptime"] and sorted(r2) == ["sysuptime"]
    assert abs(r1["hrsystemdate"].value_ns - r1["hrsystemdate"].s_ns + 3600 * NS) < 5 * NS
    assert 2 ** 32 * TICK - 40 * NS < r2["sysuptime"].value_ns < 2 ** 32 * TICK
    assert s1.sent and s2.sent
