"""Redfish events as they happen: the emulator's EventService (SSE and push) through curl and the
driver, the driver's fallback to polling when the service refuses, and the runner writing pushed
events beside the log entries. Real HTTPS sockets on loopback; waits are conditions with deadlines."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import time

import pytest
from test_redfish_bmc import PW_ENV, bmc_toml, curl

from bench.reference.clock import Reference
from bench.sim.tls import make_certificates
from drivers.redfish_bmc import RedfishBMC

SSE = "/redfish/v1/EventService/SSE"
SUBSCRIPTIONS = "/redfish/v1/EventService/Subscriptions"
SUBMIT = "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent"


@pytest.fixture
def bmc(sim_rack):
    def make(**sim):
        s = sim_rack(bmc_toml(**sim))
        assert not s.failed, s.failed
        return s, s.rack.devices[0]
    return make


def sim_events(sim, kind: str) -> list[dict]:
    return [e for e in list(sim.ctx.events["bmc-t"]) if e["kind"] == kind]


async def until(cond, deadline_s: float = 10.0, what: str = ""):
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def opened(dev, options: dict | None = None):
    """The driver, open, with the list the events it hears go to: (driver, heard)."""
    if options:
        dev = dataclasses.replace(dev, options={**dev.options, **options})
    drv = RedfishBMC(dev, Reference.now_ns, armed=True)
    await drv.open()
    try:
        heard = []
        drv.on_event = heard.append
        yield drv, heard
    finally:
        await drv.close()


async def stimulate_and_hear(dev, options: dict | None = None):
    """Send one test event, wait for it to be heard; (driver state, stimulus, events heard)."""
    async with opened(dev, options) as (drv, heard):
        state = drv.events_state
        st = await drv.stimulate("test_event")
        await until(lambda: heard, what="the pushed test event")
        return state, st, heard


def test_driver_hears_the_event_on_the_sse_stream(bmc):
    sim, dev = bmc()
    state, st, heard = asyncio.run(stimulate_and_hear(dev))
    assert state.startswith("sse"), state
    (ev,) = heard
    assert ev.message.startswith("rackclock test event") and ev.value_ns is not None
    (sent,) = sim_events(sim, "event_sent")
    (stim,) = sim_events(sim, "test_event")
    # causality on one reference clock: received after the emulator wrote it, which was after
    # the request arrived; the bench heard it after sending the stimulus
    assert stim["t_ns"] == sent["emitted_ns"] and sent["via"] == "sse"
    assert sent["t_ns"] <= ev.s_ns <= ev.e_ns and st.s_ns <= ev.s_ns
    # the stream's EventDestination is gone once the driver has closed it
    no_subscriptions_left(sim)


def _live_ids(sim) -> set:
    code, body = curl("-u", f"root:{os.environ[PW_ENV]}", f"{sim.rack.devices[0].address}"
                      f"{SUBSCRIPTIONS}")
    assert code == 200, body
    return {m["@odata.id"].rsplit("/", 1)[-1] for m in json.loads(body)["Members"]}


def no_subscriptions_left(sim, deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while _live_ids(sim):
        assert time.monotonic() < end, "an EventDestination outlived its subscriber"
        time.sleep(0.05)


def push_options(certs) -> dict:
    return {"events": "push", "event_listener": "https://127.0.0.1:0",
            "event_listener_cert": str(certs.cert), "event_listener_key_file": str(certs.key)}


def test_driver_subscribes_by_push_to_its_own_tls_listener(bmc, tmp_path):
    certs = make_certificates(tmp_path, "bench-listener")
    sim, dev = bmc(event_ca_file=str(certs.ca))      # the BMC trusts the bench's CA
    state, st, heard = asyncio.run(stimulate_and_hear(dev, push_options(certs)))
    assert state.startswith("push (https://127.0.0.1:"), state
    (ev,) = heard
    (sent,) = sim_events(sim, "event_sent")
    assert sent["via"] == "push" and sent["t_ns"] <= ev.s_ns <= ev.e_ns
    # the driver deleted its subscription when it closed
    no_subscriptions_left(sim)


def test_push_listener_takes_only_its_own_context(bmc, tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    certs = make_certificates(tmp_path, "bench-listener")
    sim, dev = bmc(event_ca_file=str(certs.ca))

    async def main():
        async with opened(dev, push_options(certs)) as (drv, heard):
            dest = drv.events_state.removeprefix("push (").removesuffix(")")
            event = {"@odata.type": "#Event.v1_8_0.Event", "Id": "x", "Name": "Event",
                     "Events": [{"EventId": "x", "EventTimestamp": "2026-11-30T12:00:00+00:00",
                                 "MessageId": "Base.1.0.Success", "Message": "forged"}]}

            def post(context):
                return subprocess.run(
                    ["curl", "-s", "--cacert", str(certs.ca), "-o", "/dev/null", "-w",
                     "%{http_code}", "-H", "Content-Type: application/json", "-d",
                     json.dumps({**event, "Context": context}), dest],
                    capture_output=True, text=True, timeout=20).stdout
            forged = await asyncio.to_thread(post, "not-the-context")
            await asyncio.sleep(0)
            assert forged == "403" and not heard
            real = await asyncio.to_thread(post, drv._context)
            assert real == "204"
            await until(lambda: heard, what="the event posted with the right Context")
            assert heard[0].message == "forged"
    asyncio.run(main())


def test_refused_subscription_leaves_the_driver_polling(bmc):
    sim, dev = bmc(event_subscriptions=False)

    async def main():
        async with opened(dev) as (drv, heard):
            state = drv.events_state
            st = await drv.stimulate("test_event")
            entries = []

            async def poll():
                while not entries:
                    got, _ = await drv.log_entries(None)
                    entries.extend(got)
                    await asyncio.sleep(0.02)
            await asyncio.wait_for(poll(), 10)
            return state, st, entries, heard
    state, st, entries, pushed = asyncio.run(main())
    assert state.startswith("polling (SSE refused: HTTP 503") and "ServiceDisabled" in state
    assert not pushed and not sim_events(sim, "event_sent")
    assert entries[0].message.startswith("rackclock test event") and entries[0].s_ns > st.e_ns


def test_events_poll_never_subscribes(bmc):
    sim, dev = bmc()

    async def main():
        async with opened(dev, {"events": "poll"}) as (drv, _):
            return drv.events_state
    assert asyncio.run(main()) == "polling (events = poll)"
    assert not sim_events(sim, "subscribed")


def test_emulator_sse_stream_through_curl(bmc):
    """curl holds the stream open; a test event arrives on it as an Event with an id, and the
    stream's EventDestination exists while it is open."""
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    sim, dev = bmc()
    auth = f"root:{os.environ[PW_ENV]}"
    p = subprocess.Popen(["curl", "-sN", "--cacert", dev.options["ca_file"], "-u", auth,
                          "-H", "Accept: text/event-stream", "--max-time", "30",
                          f"{dev.address}{SSE}"], stdout=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 15
        while not sim_events(sim, "subscribed"):
            assert time.monotonic() < end, "curl's stream never opened"
            time.sleep(0.02)
        (sub,) = sim_events(sim, "subscribed")
        assert sub["id"] in _live_ids(sim)
        code, body = curl("--cacert", dev.options["ca_file"], "-u", auth, "-H",
                          "Content-Type: application/json", "-d",
                          '{"MessageId": "Base.1.0.Success", "Message": "via curl"}',
                          f"{dev.address}{SUBMIT}")
        assert code == 204, body
        lines = []
        while not any(x.startswith("data:") for x in lines):
            line = p.stdout.readline()
            assert line, f"stream ended: {lines}"
            lines.append(line.rstrip("\n"))
        ids = [x for x in lines if x.startswith("id:")]
        data = json.loads(next(x for x in lines if x.startswith("data:"))[5:])
        assert ids and data["@odata.type"].endswith(".Event")
        assert data["Events"][0]["Message"] == "via curl"
    finally:
        p.terminate()
        p.wait(10)
    no_subscriptions_left(sim)


@pytest.mark.slow
def test_run_writes_pushed_events_and_sees_them_first(tmp_path, monkeypatch):
    """A short run of bmc-1 beside a copy whose service refuses subscriptions: bmc-1's test
    events are `pushed` rows, each after its stimulus row and after the emulator sent it, and
    the summary's first sighting is the push; the copy has only polled log entries."""
    import tomli_w
    from racks import sim_rack_dict

    from bench.model.rundata import load_run
    from bench.run.experiment import run_experiment

    monkeypatch.setenv("RACKCLOCK_SIM_BMC_PASSWORD", "sim-password-1234")
    data = sim_rack_dict(["bmc-1"])
    poll = json.loads(json.dumps(data["devices"]["bmc-1"]))
    poll["sim"]["event_subscriptions"] = False
    data["devices"]["bmc-1-poll"] = poll
    rack = tmp_path / "rack.toml"
    rack.write_bytes(tomli_w.dumps(data).encode())
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "9", "stimulus_every_s": "3"}, quiet=True))
    sent = {e["event_id"]: e for e in run.truth["devices"]["bmc-1"]["events"]
            if e["kind"] == "event_sent"}
    smp = run.samples("bmc-1")
    stim = [i for i in range(len(smp)) if smp.kind[i] == "stimulus" and smp.status[i] == "ok"]
    pushed = [i for i in range(len(smp)) if smp.kind[i] == "pushed"]
    assert stim and len(pushed) == len(stim) == len(sent)
    for i, p in zip(stim, pushed):
        assert p > i and smp.s_ns[p] >= sent[smp.raw[p].split()[0]]["t_ns"]
    lat = run.summary["devices"]["bmc-1"]["latency"]["test_event"]
    assert all("pushed" in e for e in lat["events"])
    for e, p in zip(lat["events"], pushed):
        assert e["observed_ns"] == {"lo": int(smp.s_ns[p]) - e["e_ns"],
                                    "hi": int(smp.e_ns[p]) - e["s_ns"]}
    assert "sse" in run.manifest["devices"]["bmc-1"]["identity"]["extra"]["events"]
    other = run.samples("bmc-1-poll")
    assert "pushed" not in other.kind and "event" in other.kind
    assert run.manifest["devices"]["bmc-1-poll"]["identity"]["extra"]["events"].startswith(
        "polling (SSE refused")


def test_stream_closed_by_the_service_is_reopened(bmc):
    """Deleting the stream's EventDestination makes the service close the stream (DSP0266); the
    driver says it is polling, reopens the stream, and hears the next event on the new one."""
    sim, dev = bmc()
    auth = f"root:{os.environ[PW_ENV]}"

    async def main():
        async with opened(dev) as (drv, heard):
            (first,) = await asyncio.to_thread(_live_ids, sim)
            code, _ = await asyncio.to_thread(curl, "-u", auth, "-X", "DELETE",
                                              f"{dev.address}{SUBSCRIPTIONS}/{first}")
            assert code == 204
            await until(lambda: drv.events_state.startswith("polling (SSE stream ended"),
                        what="the driver noticing the closed stream")
            await until(lambda: drv.events_state.startswith("sse"), what="the stream reopened")
            (second,) = await asyncio.to_thread(_live_ids, sim)
            assert second != first
            await drv.stimulate("test_event")
            await until(lambda: heard, what="an event on the reopened stream")
            return heard
    (ev,) = asyncio.run(main())
    (sent,) = sim_events(sim, "event_sent")
    assert sent["t_ns"] <= ev.s_ns


def test_reopened_stream_sends_last_event_id_and_the_service_replays(bmc):
    """The driver reopens a dropped stream with `Last-Event-ID` (the id of the last event it
    heard); a stream opened with it gets the events sent after that id first (curl)."""
    sim, dev = bmc()
    auth = f"root:{os.environ[PW_ENV]}"

    async def main():
        async with opened(dev) as (drv, heard):
            await drv.stimulate("test_event")
            await until(lambda: heard, what="the first event")
            (first,) = await asyncio.to_thread(_live_ids, sim)
            code, _ = await asyncio.to_thread(curl, "-u", auth, "-X", "DELETE",
                                              f"{dev.address}{SUBSCRIPTIONS}/{first}")
            assert code == 204
            await until(lambda: len(sim_events(sim, "subscribed")) == 2, what="the reopen")
    asyncio.run(main())
    opened_with = [e.get("last_event_id") for e in sim_events(sim, "subscribed")]
    assert opened_with == [None, "1"]
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    # the service keeps what it sent: a stream resuming after id 0 gets event 1 at once
    p = subprocess.Popen(["curl", "-sN", "--cacert", dev.options["ca_file"], "-u", auth,
                          "-H", "Accept: text/event-stream", "-H", "Last-Event-ID: 0",
                          "--max-time", "30", f"{dev.address}{SSE}"],
                         stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        while not any(x.startswith("data:") for x in lines):
            line = p.stdout.readline()
            assert line, f"stream ended: {lines}"
            lines.append(line.rstrip("\n"))
        assert "id: 1" in lines and "rackclock test event 1" in lines[-1]
        record = json.loads(lines[-1][5:])["Events"][0]
        assert record["MemberId"] == "0"           # DMTF's Event schema requires it
    finally:
        p.terminate()
        p.wait(10)
    resumed = {e["last_event_id"]: e["replayed"] for e in sim_events(sim, "sse_resume")}
    assert resumed == {"1": 0, "0": 1}      # the driver's (nothing missed), then curl's


@pytest.mark.parametrize("profile, asked", [
    ("openbmc", {"prefixes": ["Base"], "types": []}),
    ("supermicro", {"prefixes": [], "types": ["StatusChange", "ResourceUpdated",
                                              "ResourceAdded", "ResourceRemoved", "Alert"]})])
def test_push_subscription_asks_for_what_the_service_advertises(bmc, tmp_path, profile, asked):
    """RegistryPrefixes where the EventService lists them, else its EventTypesForSubscription;
    the service delivers only what was asked for, and the test event is among it."""
    certs = make_certificates(tmp_path, "bench-listener")
    sim, dev = bmc(event_ca_file=str(certs.ca), profile=profile)
    state, st, heard = asyncio.run(stimulate_and_hear(dev, push_options(certs)))
    assert state.startswith("push ("), state
    (sub,) = sim_events(sim, "subscribed")
    assert {"prefixes": sub["prefixes"], "types": sub["types"]} == asked
    assert heard[0].message == "rackclock test event 1"
    (ev,) = sim_events(sim, "test_event")
    assert ev["message_id"] == "Base.1.0.Success"


def test_test_event_carries_the_schema_parameters(bmc):
    """Every SubmitTestEvent parameter the EventService's version defines is sent: EventType
    only before v1_3_0 (supermicro's v1_0_6), MessageSeverity from v1_10_0 (idrac's)."""
    from drivers.redfish_events import test_event_body
    es = {"@odata.type": "#EventService.v1_0_6.EventService"}
    old = test_event_body(es, "Base.1.0.Success", 3, 1_700_000_000 * 10**9, "/redfish/v1/M")
    assert old["EventType"] == "Alert" and "MessageSeverity" not in old
    assert old["EventTimestamp"] == "2023-11-14T22:13:20+00:00"
    assert {"EventId", "Severity", "Message", "MessageId", "MessageArgs",
            "OriginOfCondition"} <= set(old)
    new = test_event_body({"@odata.type": "#EventService.v1_10_0.EventService"}, "Base.1.0.S",
                          1, 0, None)
    assert "EventType" not in new and new["MessageSeverity"] == "OK"
