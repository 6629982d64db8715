"""The Redfish driver against vendor-shaped services (bench/sim/redfish_profiles.py): the log is
found by the service's links with no per-device path keys, the clock read holds the emulator's
sample, a test event reaches the chosen log; authentication as the service offers it; the
request budget, 429 with Retry-After, and the once-a-minute retry of a failed log discovery,
counted at the emulator. Real HTTPS sockets on loopback; waits are conditions with deadlines."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time

import pytest
from test_redfish_bmc import PW_ENV, bmc_toml, curl, needs_curl
from test_redfish_events import bmc  # noqa: F401  (the fixture: a running emulated BMC)

from bench.reference.clock import Reference
from bench.sim.rack import read_samples
from drivers.base import DeviceError
from drivers.redfish_bmc import RedfishBMC
from drivers.redfish_session import Budget, Skipped

NS = 1_000_000_000
EXPECTED = {   # profile: (Manager URI, the LogService the test events land in)
    "openbmc": ("/redfish/v1/Managers/bmc", "/redfish/v1/Systems/system/LogServices/EventLog"),
    "idrac": ("/redfish/v1/Managers/iDRAC.Embedded.1",
              "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Lclog"),
    "ilo": ("/redfish/v1/Managers/1", "/redfish/v1/Managers/1/LogServices/IEL"),
    "supermicro": ("/redfish/v1/Managers/1", "/redfish/v1/Systems/1/LogServices/Log1"),
    # the enclosure's Manager (listed first) has no DateTime: the blade's is read, no key needed
    "bladed": ("/redfish/v1/Managers/Blade1BMC",
               "/redfish/v1/Systems/Blade1/LogServices/EventLog"),
}


def traffic(sim) -> dict:
    return next(e for e in sim.ctx.events["bmc-t"] if e["kind"] == "traffic")


def with_options(dev, **options):
    return dataclasses.replace(dev, options={**dev.options, **options})


async def cycle(dev):
    """Open, identify, read the clock, read the log's backlog, send a test event and poll the
    log until its entry appears (deadline 10 s)."""
    drv = RedfishBMC(dev, Reference.now_ns, armed=True)
    await drv.open()
    try:
        ident = await drv.identity()
        read = await drv.read_clock("datetime")
        _, cursor = await drv.log_entries(None)
        stim = await drv.stimulate("test_event")
        end = time.monotonic() + 10
        entries: list = []
        while not entries:
            assert time.monotonic() < end, "the test event's entry never appeared"
            got, cursor = await drv.log_entries(cursor)
            entries += [e for e in got if "rackclock test event" in e.message]
            await asyncio.sleep(0.05)
        return ident, read, stim, entries
    finally:
        await drv.close()


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_each_vendor_layout_without_path_keys(bmc, profile):
    sim, dev = bmc(profile=profile)
    assert not {"manager", "log_service", "log_entries"} & set(dev.options)
    ident, read, stim, entries = asyncio.run(cycle(dev))
    manager, log = EXPECTED[profile]
    assert ident.extra["manager"] == manager and ident.extra["log_service"] == log
    assert ident.extra["log_choice"].startswith(f"chose {log} ")
    # the read's value is the emulator's sample taken inside its bracket
    got = [(t, v) for rows in read_samples(sim.out_dir / "sim_samples.csv").values()
           for t, v in rows if read.s_ns <= t <= read.e_ns]
    assert [v for _, v in got] == [read.value_ns]
    ev = {e["kind"]: e for e in sim.ctx.events["bmc-t"]}
    (entry,) = entries
    assert entry.value_ns == ev["log"]["created_ns"] and stim.s_ns <= ev["test_event"]["t_ns"]


def test_the_choice_is_recorded_and_the_rack_file_overrides_it(bmc):
    sim, dev = bmc(profile="idrac")
    sel = "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel"

    async def go(d):
        drv = RedfishBMC(d, Reference.now_ns, armed=True)
        await drv.open()
        try:
            ident = await drv.identity()
            entries, _ = await drv.log_entries(None)
            return ident, entries
        finally:
            await drv.close()
    ident, _ = asyncio.run(go(dev))
    # the Lifecycle log (registry MessageIds) beats the SEL, and the SEL is named as passed over
    assert "over " + sel in ident.extra["log_choice"] and "LogEntryType SEL" in \
        ident.extra["log_choice"]
    ident, entries = asyncio.run(go(with_options(dev, log_service=sel)))
    assert ident.extra["log_service"] == sel
    assert ident.extra["log_choice"] == "log_service set in the rack file"
    assert len(entries) == 8                  # the SEL's 8 records (the Lifecycle log has 3)


@needs_curl
def test_a_strict_service_refuses_the_old_three_field_test_event(bmc):
    """What the driver sent before (MessageId, Severity, Message) is refused by a service that
    wants the schema's parameters; the driver's event is accepted (the cycle above)."""
    sim, dev = bmc(profile="idrac")
    code, body = curl("--cacert", dev.options["ca_file"], "-u", f"root:{os.environ[PW_ENV]}",
                      "-H", "Content-Type: application/json", "-d",
                      json.dumps({"MessageId": "Base.1.0.Success", "Severity": "OK",
                                  "Message": "old"}),
                      dev.address + "/redfish/v1/EventService/Actions/"
                                    "EventService.SubmitTestEvent")
    assert code == 400 and "ActionParameterMissing" in body


# -- authentication ------------------------------------------------------------------------------
def test_no_session_service_is_basic_auth_said_once(bmc, caplog):
    sim, dev = bmc(session_service=False)
    ident, read, _, entries = asyncio.run(cycle(dev))
    assert ident.extra["auth"] == "basic" and "no SessionService" in ident.extra["auth_note"]
    assert traffic(sim)["logins"] == 0 and entries
    said = [r for r in caplog.records if "no SessionService" in r.getMessage()]
    assert len(said) == 1


def test_session_auth_on_a_service_without_sessions_names_the_uri(bmc):
    sim, dev = bmc(session_service=False)
    with pytest.raises(DeviceError) as e:
        asyncio.run(cycle(with_options(dev, auth="session")))
    msg = e.value.message
    assert "/redfish/v1/SessionService/Sessions" in msg and 'auth = "basic"' in msg
    assert os.environ[PW_ENV] not in str(e.value)


def test_no_auth_over_plain_http(sim_rack):
    sim = sim_rack(bmc_toml(auth_required=False).replace("https://", "http://"))
    dev = with_options(sim.rack.devices[0], auth="none")
    ident, read, _, entries = asyncio.run(cycle(dev))
    assert ident.extra["auth"] == "none" and read.value_ns > 0 and entries
    assert traffic(sim)["logins"] == 0
    # credentials are never sent in the clear
    with pytest.raises(DeviceError) as e:
        asyncio.run(cycle(sim.rack.devices[0]))
    assert e.value.kind == "protocol" and "HTTPS" in e.value.message


# -- politeness ------------------------------------------------------------------------------------
def test_budget_holds_rate_and_concurrency():
    t = [0.0]
    b = Budget(rate_hz=4, concurrent=2, clock=lambda: t[0])
    inflight, peak = [0], [0]

    async def one():
        async with b.slot():
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
            await asyncio.sleep(0)
            inflight[0] -= 1

    async def main():
        await asyncio.gather(*(one() for _ in range(4)))     # the bucket's one second's worth
        with pytest.raises(Skipped):                         # a fifth cannot wait: not urgent
            async with b.slot(urgent=False):
                pass
        t[0] += 0.25                                         # a quarter second: one more
        async with b.slot(urgent=False):
            pass
        b.hold(5.0)
        with pytest.raises(Skipped):                         # Retry-After beyond max_wait
            async with b.slot(max_wait_s=1.0):
                pass
    asyncio.run(main())
    assert peak[0] == 2 and b.skipped == 2


def test_429_holds_every_request_for_retry_after(bmc):
    sim, dev = bmc(rate_limit_hz=3, retry_after_s=2)
    slow = with_options(dev, request_rate_hz=1.0, events="poll")

    async def go():
        drv = RedfishBMC(slow, Reference.now_ns, armed=True)
        await drv.open()                     # within the service's limit ...
        drv.budget = Budget(100.0, 2)        # ... then a budget far over it
        try:
            errors = []
            for _ in range(50):
                try:
                    await drv.read_clock("datetime")
                except DeviceError as exc:
                    errors.append(exc)
                    break
            (first,) = errors
            sent = traffic(sim)["requests"]
            with pytest.raises(DeviceError) as held:        # inside Retry-After: nothing sent
                await drv.read_clock("datetime")
            assert traffic(sim)["requests"] == sent
            end = time.monotonic() + 10
            while drv.budget.held_until > drv.budget.clock():
                assert time.monotonic() < end
                await asyncio.sleep(0.05)
            ok = await drv.read_clock("datetime")
            return first, held.value, ok, drv.meter.counts
        finally:
            await drv.close()

    first, held, ok, counts = asyncio.run(go())
    assert first.kind == "refused" and "429" in first.message and "Retry-After '2'" in \
        first.message
    assert held.kind == "refused" and "not sent" in held.message and ok.value_ns > 0
    assert counts["throttled"] >= 1


def test_default_budget_stays_under_a_bmc_limit(bmc):
    sim, dev = bmc(rate_limit_hz=25, retry_after_s=2)

    async def go():
        drv = RedfishBMC(with_options(dev, events="poll"), Reference.now_ns, armed=True)
        await drv.open()
        try:
            for _ in range(40):
                await drv.read_clock("datetime")
        finally:
            await drv.close()
    asyncio.run(go())
    assert traffic(sim)["throttled"] == 0 and traffic(sim)["requests"] > 40


def test_failed_log_discovery_is_retried_at_most_once_a_minute(bmc):
    sim, dev = bmc(logs=False)

    async def go():
        drv = RedfishBMC(dev, Reference.now_ns, armed=True)
        await drv.open()
        try:
            assert drv.log_choice.startswith("none: no LogService")
            before = traffic(sim)["requests"]
            for _ in range(20):                       # within the minute: no request at all
                assert await drv.log_entries(None) == ([], None)
            assert traffic(sim)["requests"] == before
            drv.LOG_RETRY_NS = 0                      # the minute has passed: asked once more
            with pytest.raises(DeviceError) as e:
                await drv.log_entries(None)
            asked = traffic(sim)["requests"] - before
            drv.LOG_RETRY_NS = 60 * NS                # and then not again within the minute
            assert await drv.log_entries(None) == ([], None)
            assert traffic(sim)["requests"] - before == asked
            return e.value, asked
        finally:
            await drv.close()
    err, asked = asyncio.run(go())
    assert err.kind == "protocol" and "no LogService" in err.message and 0 < asked < 10


def test_a_log_that_never_records_the_test_events_is_left_for_one_that_does(bmc):
    """The SEL records the test events here, though the Lifecycle log ranks first: once a test
    event has gone unseen in the chosen log, the driver looks at the other logs (once a minute;
    here at once) and switches to the one that holds it."""
    sim, dev = bmc(profile="idrac", test_event_log="Sel")
    sel = "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel"

    async def go():
        drv = RedfishBMC(dev, Reference.now_ns, armed=True)
        drv.SWITCH_AFTER_NS = drv.LOG_RETRY_NS = 0
        await drv.open()
        try:
            first = drv.log_service_uri
            _, cursor = await drv.log_entries(None)
            await drv.stimulate("test_event")
            end, found = time.monotonic() + 10, []
            while not found:
                assert time.monotonic() < end, "no switch to the log holding the test event"
                got, cursor = await drv.log_entries(cursor)
                found = [e for e in got if "rackclock test event 1" in e.message]
                await asyncio.sleep(0.05)
            return first, drv.log_service_uri, drv.log_choice, found
        finally:
            await drv.close()
    first, now, choice, found = asyncio.run(go())
    assert first.endswith("/Lclog") and now == sel
    assert choice.startswith(f"switched to {sel} ") and "/Lclog showed none" in choice
    (ev,) = [e for e in sim.ctx.events["bmc-t"] if e["kind"] == "log"]
    assert found[0].value_ns == ev["created_ns"]


def _login_args(dev) -> list[str]:
    return ["--cacert", dev.options["ca_file"], "-H", "Content-Type: application/json", "-d",
            json.dumps({"UserName": "root", "Password": os.environ[PW_ENV]}),
            dev.address + "/redfish/v1/SessionService/Sessions"]


def _header(response: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in response.splitlines()
                if line.lower().startswith(name.lower() + ":"))


@needs_curl
def test_session_table_full_refuses_until_a_session_logs_out(bmc):
    """iDRAC's table of 8 sessions: a ninth login is 503 SessionLimitExceeded with Retry-After;
    the driver is refused (counted throttled) until one session logs out (DELETE), then logs in.
    The sessions never expire here (an hour's timeout), so the table stays full whatever the load."""
    sim, dev = bmc(profile="idrac", session_timeout_s=3600)
    logins = [curl("-D", "-", *_login_args(dev)) for _ in range(8)]
    assert [code for code, _ in logins] == [201] * 8
    code, body = curl("-D", "-", *_login_args(dev))
    assert code == 503 and "SessionLimitExceeded" in body and "retry-after: 2" in body.lower()

    async def go():
        drv = RedfishBMC(with_options(dev, events="poll"), Reference.now_ns, armed=True)
        with pytest.raises(DeviceError) as refused:
            await drv.open()
        assert refused.value.kind == "refused", refused.value
        first = logins[0][1]                # the test's fault: one session logs out
        out = curl("-X", "DELETE", "--cacert", dev.options["ca_file"], "-H",
                   f"X-Auth-Token: {_header(first, 'X-Auth-Token')}",
                   dev.address + _header(first, "Location"))
        assert out[0] == 204, out
        end = time.monotonic() + 10
        while True:                          # an open inside the Retry-After pause sends nothing
            try:
                await drv.open()
                break
            except DeviceError as exc:
                assert exc.kind == "refused" and time.monotonic() < end, exc
                await asyncio.sleep(0.2)
        try:
            await drv.read_clock("datetime")
            return dict(drv.meter.counts)
        finally:
            await drv.close()
    counts = asyncio.run(go())
    # login attempts: the refused one (503, counted throttled) and the one that made a session
    assert counts["throttled"] >= 1 and counts["logins"] == counts["throttled"] + 1


def test_session_idle_past_the_timeout_is_gone_and_the_driver_logs_in_again(bmc):
    """A session idle past the service's timeout (1 s) gets 401; the driver logs in again and
    re-sends the read (counted). The idle wait is the test's fault, at least 1.5 s of it."""
    sim, dev = bmc(profile="idrac", session_timeout_s=1)

    async def go():
        drv = RedfishBMC(with_options(dev, events="poll"), Reference.now_ns, armed=True)
        await drv.open()
        try:
            first = await drv.read_clock("datetime")
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.5:     # idle past the session timeout
                await asyncio.sleep(0.1)
            second = await drv.read_clock("datetime")
            return first, second, dict(drv.meter.counts)
        finally:
            await drv.close()
    first, second, counts = asyncio.run(go())
    assert "re-sent" not in first.raw and "re-sent" in second.raw
    assert counts["logins"] == 2
