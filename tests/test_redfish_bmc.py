"""The Redfish BMC plane: the emulator through third-party clients (DMTF `redfish`, curl), and the
driver against the emulator over real HTTPS sockets."""
from __future__ import annotations

import asyncio
import bisect
import dataclasses
import json
import os
import shutil
import subprocess
import time

import pytest
import redfish

from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.rack import read_samples
from drivers.base import DeviceError
from drivers.redfish_bmc import RedfishBMC, parse_datetime_ns

NS = 1_000_000_000
PW_ENV = "RACKCLOCK_TEST_BMC_PASSWORD"
MANAGER = "/redfish/v1/Managers/bmc"


def bmc_toml(name: str = "bmc-t", stimuli=("test_event",), **sim) -> str:
    sim = {"offset_s": -41.27, "drift_ppm": 38.0, "local_offset_min": 60,
           "log_latency_s": [0.05, 0.15], **sim}
    lines = [f"{k} = {json.dumps(v)}" for k, v in sim.items()]
    return (f'[devices.{name}]\nplane = "bmc"\ndriver = "redfish_bmc"\n'
            f'address = "https://127.0.0.1:0"\nusername = "root"\npassword_env = "{PW_ENV}"\n'
            f"stimuli = {json.dumps(list(stimuli))}\n[devices.{name}.sim]\n" + "\n".join(lines))


@pytest.fixture
def bmc(sim_rack):
    """A running emulated BMC: (sim thread, resolved DeviceConfig, password)."""
    def make(**kw):
        sim = sim_rack(bmc_toml(**kw))
        assert not sim.failed, sim.failed
        return sim, sim.rack.devices[0], os.environ[PW_ENV]
    return make


def run(coro):
    return asyncio.run(coro)


async def with_driver(dev, fn, armed=True, now_ns=Reference.now_ns):
    drv = RedfishBMC(dev, now_ns, armed=armed)
    await drv.open()
    try:
        return await fn(drv)
    finally:
        await drv.close()


def samples(sim) -> list[tuple[int, int]]:
    return sorted(x for rows in read_samples(sim.out_dir / "sim_samples.csv").values()
                  for x in rows)


needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")


def curl(*args: str) -> tuple[int, str]:
    r = subprocess.run(["curl", "-sk", "--max-time", "10", "-w", "\n%{http_code}", *args],
                       capture_output=True, text=True, timeout=20)
    body, _, code = r.stdout.rpartition("\n")
    return int(code), body


# -- the emulator, through clients we did not write -----------------------------------------------
@needs_curl
def test_emulator_with_dmtf_sync_client(bmc):
    sim, dev, pw = bmc()
    c = redfish.redfish_client(dev.address, username="root", password=pw,
                               cafile=dev.options["ca_file"], timeout=5, max_retry=0)
    c.login(auth=redfish.AuthMethod.SESSION)
    assert c.get_session_key() and "/SessionService/Sessions/" in c.get_session_location()
    r = c.get(MANAGER)
    assert r.status == 200
    m = r.dict
    assert m["DateTimeLocalOffset"] == "+01:00" and m["DateTime"].endswith("+01:00")
    assert m["Id"] == "bmc" and m["FirmwareVersion"] == "1.0.0"
    sessions = c.get("/redfish/v1/SessionService/Sessions").dict["Members"]
    assert len(sessions) == 1
    c.logout()
    code, body = curl("-u", f"root:{pw}", dev.address + "/redfish/v1/SessionService/Sessions")
    assert code == 200 and json.loads(body)["Members"] == []


def test_emulator_with_dmtf_aio_client(bmc):
    import aiohttp
    from redfish.aio import AsyncRedfishClient, RedfishAuthenticationError
    sim, dev, pw = bmc()

    async def go():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
            async with AsyncRedfishClient(dev.address, "root", pw, session=s) as c:
                m = (await c.get(MANAGER)).dict
            with pytest.raises(RedfishAuthenticationError):
                await AsyncRedfishClient(dev.address, "root", pw + "x", session=s).login()
        return m

    assert "DateTime" in run(go())


@needs_curl
def test_emulator_with_curl(bmc):
    sim, dev, pw = bmc()
    code, body = curl(dev.address + "/redfish/v1/")
    assert code == 200 and json.loads(body)["Links"]["Sessions"]["@odata.id"]
    code, body = curl("-u", f"root:{pw}", dev.address + MANAGER)
    assert code == 200
    t = parse_datetime_ns(json.loads(body)["DateTime"])
    assert abs(t - time.time_ns() + 41.27 * NS) < 5 * NS
    code, body = curl("-u", "root:wrong", dev.address + MANAGER)
    assert code == 401 and "error" in json.loads(body)
    code, body = curl("-u", f"root:{pw}", dev.address + "/redfish/v1/NoSuchThing")
    err = json.loads(body)["error"]
    assert code == 404 and err["@Message.ExtendedInfo"][0]["MessageId"].endswith("ResourceNotFound")
    # the CA the emulator made verifies its certificate (no -k)
    r = subprocess.run(["curl", "-s", "--cacert", dev.options["ca_file"], "-u", f"root:{pw}",
                        "-o", "/dev/null", "-w", "%{http_code}", dev.address + MANAGER],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout == "200"


@needs_curl
def test_plain_http_is_served(sim_rack):
    sim = sim_rack(bmc_toml().replace("https://", "http://"))
    dev = sim.rack.devices[0]
    assert dev.address.startswith("http://") and "ca_file" not in dev.options
    code, body = curl("-u", f"root:{os.environ[PW_ENV]}", dev.address + MANAGER)
    assert code == 200 and "DateTime" in json.loads(body)
    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, lambda d: d.identity()))
    assert e.value.kind == "protocol" and "HTTPS" in e.value.message


# -- the driver ---------------------------------------------------------------------------------
def test_identity_from_manager(bmc):
    sim, dev, _ = bmc(firmware="2.14.0", manufacturer="Acme", model="X1", serial="SN42")
    ident = run(with_driver(dev, lambda d: d.identity()))
    assert (ident.vendor, ident.model, ident.serial, ident.firmware) == ("Acme", "X1", "SN42",
                                                                         "2.14.0")
    assert ident.extra["manager"] == MANAGER and ident.extra["local_offset"] == "+01:00"


@pytest.mark.usefixtures("kernel_rx_stamps")
def test_every_bracket_holds_the_sample_and_values_parse(bmc):
    """On the CLOCK_REALTIME reference `e` is the kernel's arrival stamp (stamped sockets under
    aiohttp, TLS included), on any other the loop's: either bracket holds the device's sample."""
    # claims +01:00 but really runs on UTC: the device's wrong offset shows in the value
    sim, dev, _ = bmc(true_local_offset_min=0, sample_delay_s=0.0003, jitter_s=0.0002)

    async def reads(d):
        return [await d.read_clock("datetime") for _ in range(25)]

    rs = run(with_driver(dev, reads))
    by_loop = run(with_driver(dev, reads, now_ns=lambda: Reference.now_ns()))
    assert {r.stamp for r in rs} == {"kernel"} and {r.stamp for r in by_loop} == {"user"}
    got = samples(sim)
    times = [t for t, _ in got]
    for r in rs + by_loop:
        i = bisect.bisect_left(times, r.s_ns)
        inside = [v for t, v in got[i:] if t <= r.e_ns]
        assert len(inside) == 1, (r, got)
        assert r.value_ns == inside[0]             # offset parsed back to the device's claim
        assert r.resolution_ns == NS and r.s_ns < r.e_ns
        assert json.loads(r.raw)["DateTimeLocalOffset"] == "+01:00"
        assert '+01:00"' in r.raw
    model = sim.ctx.models(dev, ("datetime",))["datetime"]
    assert model.p.tz_error_ns == -3600 * NS
    off = (rs[0].value_ns - rs[0].s_ns) / NS
    assert -3641.27 - 1.1 < off < -3641.27 + 0.1


@needs_curl
def test_session_refresh_is_said_and_bracket_is_the_last_exchange(bmc):
    sim, dev, pw = bmc()
    sessions = dev.address + "/redfish/v1/SessionService/Sessions"

    async def go(d):
        first = await d.read_clock("datetime")
        code, body = curl("-u", f"root:{pw}", sessions)
        (member,) = json.loads(body)["Members"]
        assert curl("-u", f"root:{pw}", "-X", "DELETE", dev.address + member["@odata.id"])[0] == 204
        return first, await d.read_clock("datetime")

    first, second = run(with_driver(dev, go))
    assert "re-sent" not in first.raw and "re-sent" in second.raw
    got = [t for t, _ in samples(sim)]
    assert [t for t in got if second.s_ns <= t <= second.e_ns] == [got[-1]]


def test_datetime_parsing():
    assert parse_datetime_ns("1970-01-01T01:00:05+01:00") == 5 * NS
    assert parse_datetime_ns("1970-01-01T00:00:05Z") == 5 * NS
    assert parse_datetime_ns("1969-12-31T19:00:05.25-05:00") == 5 * NS + NS // 4
    assert parse_datetime_ns("1970-01-01T05:30:07", "+05:30") == 7 * NS
    with pytest.raises(ValueError):
        parse_datetime_ns("1970-01-01T00:00:05")
    with pytest.raises(ValueError):
        parse_datetime_ns("yesterday", "+00:00")


def test_entries_newer_than_the_cursor():
    newer = RedfishBMC._newer
    ids = lambda ms: [m["Id"] for m in ms]          # noqa: E731
    numeric = [{"Id": i} for i in ("9", "10", "11")]
    assert ids(newer(numeric, None)) == ["9", "10", "11"]
    assert ids(newer(numeric, "9")) == ["10", "11"]            # 10 > 9, not "10" < "9"
    assert ids(newer(list(reversed(numeric)), "10")) == ["11"]  # newest-first services too
    bmcweb = [{"Id": "1700000000"}, {"Id": "1700000000_1"}, {"Id": "1700000005"}]
    assert ids(newer(bmcweb, "1700000000")) == ["1700000000_1", "1700000005"]
    opaque = [{"Id": "a"}, {"Id": "b"}, {"Id": "c"}]
    assert ids(newer(opaque, "b")) == ["c"]
    assert ids(newer(opaque, "gone")) == ["a", "b", "c"]       # cleared log: all are new
    links = [{"@odata.id": "/x/Entries/3"}, {"@odata.id": "/x/Entries/4"}]
    assert newer(links, "3") == links[1:]


def test_datetime_patch_conflicts_while_ntp_on_and_steps_when_off(bmc):
    sim, dev, pw = bmc(ntp=True)
    c = redfish.redfish_client(dev.address, username="root", password=pw,
                               cafile=dev.options["ca_file"], timeout=5, max_retry=0)
    c.login(auth=redfish.AuthMethod.SESSION)
    try:
        r = c.patch(MANAGER, body={"DateTime": "2030-01-01T00:00:00+00:00"})
        assert r.status == 400
        info = r.dict["error"]["@Message.ExtendedInfo"][0]
        assert info["MessageId"].endswith("PropertyValueConflict")
        assert c.get(MANAGER + "/NetworkProtocol").dict["NTP"]["ProtocolEnabled"] is True
        assert c.patch(MANAGER + "/NetworkProtocol",
                       body={"NTP": {"ProtocolEnabled": False}}).status == 204
        r = c.patch(MANAGER, body={"DateTime": "2030-01-01T01:00:00+01:00"})
        assert r.status == 204
    finally:
        c.logout()
    steps = [e for e in sim.ctx.events[dev.name] if e["kind"] == "step"]
    assert len(steps) == 1
    read = run(with_driver(dev, lambda d: d.read_clock("datetime")))
    target = parse_datetime_ns("2030-01-01T00:00:00Z")
    assert target <= read.value_ns < target + (read.e_ns - steps[0]["t_ns"]) + 2 * NS


def test_test_event_appears_in_the_log(bmc):
    sim, dev, _ = bmc(log_latency_s=[0.05, 0.15])

    async def go(d):
        _, cursor = await d.log_entries(None)
        stim = await d.stimulate("test_event")
        for _ in range(100):
            entries, new_cursor = await d.log_entries(cursor)
            if entries:
                break
            await asyncio.sleep(0.05)
        again, _ = await d.log_entries(new_cursor)
        return cursor, stim, entries, new_cursor, again

    cursor, stim, entries, new_cursor, again = run(with_driver(dev, go))
    assert cursor is None and stim.sent and stim.s_ns < stim.e_ns
    assert len(entries) == 1 and again == [] and new_cursor == entries[0].cursor
    ev = {e["kind"]: e for e in sim.ctx.events[dev.name]}
    assert stim.s_ns <= ev["test_event"]["t_ns"] <= stim.e_ns
    model = sim.ctx.models(dev, ("datetime",))["datetime"]
    entry = entries[0]
    assert entry.clock == "datetime" and entry.resolution_ns == NS
    assert entry.value_ns == ev["log"]["created_ns"]
    assert entry.value_ns >= model.read_ns(ev["test_event"]["t_ns"]) // NS * NS
    assert entry.e_ns >= ev["log"]["t_ns"] and "rackclock test event" in entry.message


def test_stimulus_not_in_inventory_is_refused(bmc):
    sim, dev, _ = bmc(stimuli=())
    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, lambda d: d.stimulate("test_event")))
    assert e.value.kind == "refused"
    assert not any(e["kind"] == "test_event" for e in sim.ctx.events[dev.name])


def test_wrong_password_is_auth_error_without_the_password(bmc):
    sim, dev, pw = bmc()
    wrong = "Wr0ng-" + pw[::-1]
    os.environ["RACKCLOCK_TEST_BMC_WRONG"] = wrong
    bad = dataclasses.replace(dev, password_env="RACKCLOCK_TEST_BMC_WRONG")
    with pytest.raises(DeviceError) as e:
        run(with_driver(bad, lambda d: d.identity()))
    assert e.value.kind == "auth"
    assert wrong not in str(e.value) and pw not in str(e.value) and dev.name in str(e.value)


def test_closed_port_is_unreachable_without_waiting_for_the_timeout(bmc):
    sim, dev, _ = bmc()
    port = free_port()
    closed = dataclasses.replace(dev, address=f"https://127.0.0.1:{port}",
                                 options={**dev.options, "timeout_s": 600.0})
    with pytest.raises(DeviceError) as e:     # kind unreachable: not the timeout's
        run(with_driver(closed, lambda d: d.identity()))
    assert e.value.kind == "unreachable" and str(port) in e.value.message


def test_slow_answer_is_a_timeout(bmc):
    sim, dev, _ = bmc(sample_delay_s=5.0)
    slow = dataclasses.replace(dev, options={**dev.options, "timeout_s": 1.0})
    with pytest.raises(DeviceError) as e:
        run(with_driver(slow, lambda d: d.read_clock("datetime")))
    assert e.value.kind == "timeout"


def test_unknown_path_and_missing_datetime(bmc):
    sim, dev, _ = bmc()
    nowhere = dataclasses.replace(dev, options={**dev.options, "manager": "/redfish/v1/Managers/x"})
    with pytest.raises(DeviceError) as e:
        run(with_driver(nowhere, lambda d: d.read_clock("datetime")))
    assert e.value.kind == "protocol" and "404" in e.value.message
    assert "ResourceNotFound" in e.value.message
    system = dataclasses.replace(dev, options={**dev.options,
                                               "manager": "/redfish/v1/Systems/system"})
    with pytest.raises(DeviceError) as e:
        run(with_driver(system, lambda d: d.read_clock("datetime")))
    assert e.value.kind == "malformed" and "DateTime" in e.value.message


def test_tls_verified_by_default(bmc):
    sim, dev, _ = bmc()
    untrusted = dataclasses.replace(dev, options={k: v for k, v in dev.options.items()
                                                  if k != "ca_file"})
    with pytest.raises(DeviceError) as e:
        run(with_driver(untrusted, lambda d: d.identity()))
    assert e.value.kind == "protocol" and "certificate" in e.value.message
    unverified = dataclasses.replace(untrusted, options={"verify_tls": False})
    assert run(with_driver(unverified, lambda d: d.identity())).firmware == "1.0.0"


# -- a real rack ----------------------------------------------------------------------------------
def test_read_clock_with_device(real_rack):
    bmcs = [d for d in real_rack.devices if d.driver == "redfish_bmc"]
    if not bmcs:
        pytest.skip("the rack file has no redfish_bmc device")
    for dev in bmcs:
        r = run(with_driver(dev, lambda d: d.read_clock("datetime"), armed=False))
        assert r.s_ns <= r.e_ns and r.value_ns > 0 and r.raw


def test_emulator_conformance_through_curl(bmc):
    """What DMTF's validator checks (tests/test_redfish_validator.py), seen through curl: OData
    documents without credentials, Allow and Link headers, 405/501/412, `$` parameters 501,
    and PATCH of an array by the specification's rules."""
    sim, dev, pw = bmc()
    base = dev.address
    code, body = curl(f"{base}/redfish/v1/odata")
    assert code == 200 and json.loads(body)["@odata.context"] == "/redfish/v1/$metadata"
    code, body = curl(f"{base}/redfish/v1/$metadata")
    assert code == 200 and "<EntityContainer" in body
    head = subprocess.run(["curl", "-skI", f"{base}/redfish/v1/"], capture_output=True,
                          text=True, timeout=20).stdout.lower()
    assert "allow: get, head" in head and "rel=describedby" in head
    assert "serviceroot.v1_15_0.json" in head
    assert curl("-X", "DELETE", f"{base}/redfish/v1/")[0] == 405
    assert curl("-X", "FAKEMETHODFORTEST", f"{base}/redfish/v1/")[0] == 501
    assert curl("-H", "OData-Version: 4.1", f"{base}/redfish/v1/")[0] == 412
    assert curl(f"{base}/redfish/v1/?$rpvunknown")[0] == 501
    assert curl(f"{base}/redfish/v1/?rpvunknown")[0] == 200
    net = f"{base}{MANAGER}/NetworkProtocol"
    auth = ("-u", f"root:{pw}", "-H", "Content-Type: application/json")
    for patch in (["a", "b", "c"], [{}, None, "d"]):
        code, _ = curl(*auth, "-X", "PATCH", "-d", json.dumps({"NTP": {"NTPServers": patch}}), net)
        assert code == 204
    code, body = curl(*auth, net)
    assert json.loads(body)["NTP"]["NTPServers"] == ["a", "d"]
    code, body = curl(*auth, f"{base}/redfish/v1/AccountService/Roles")
    assert {m["@odata.id"].rsplit("/", 1)[-1] for m in json.loads(body)["Members"]} == \
        {"Administrator", "Operator", "ReadOnly"}
