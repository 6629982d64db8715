"""Politeness by measure (issue 43 item 4), counted at the emulator: a device whose Manager has
no DateTime costs less than a healthy one (its open fails at once, its rediscovery is kept and
its reconnects back off); after a test event whose entry never shows, the log is polled at most
once a second, and only for the watch's deadline; the runner counts every request by kind and
the summary's rates come from those counts."""
from __future__ import annotations

from test_redfish_bmc import bmc_toml

from bench.model.store import RunStore
from bench.model.traffic import request_rates
from bench.reference.clock import Reference
from bench.run.probe import run_devices
from bench.run.runner import ProbePlan
from drivers import redfish_known

NS = 1_000_000_000


def traffic(sim, name: str) -> dict:
    return next(e for e in sim.ctx.events[name] if e["kind"] == "traffic")


def test_a_failing_device_costs_less_than_a_healthy_one_and_the_log_is_polled_gently(
        sim_rack, tmp_path):
    # bmc-ok hears no events pushed (events = "poll"): only its log polls can show an entry
    ok_text = bmc_toml("bmc-ok", log_latency_s=[60.0, 60.0]).replace(
        "stimuli = ", 'events = "poll"\nstimuli = ', 1)
    sim = sim_rack(ok_text + "\n" + bmc_toml("bmc-nodt", manager_datetime=False))
    assert not sim.failed, sim.failed
    devs = {d.name: d for d in sim.rack.devices}
    for d in devs.values():
        redfish_known.forget(d.name, d.address)
    plan = ProbePlan(duration_s=20.0, stimulus_every_s=5.0, first_stimulus_s=0.5)
    t0 = Reference.now_ns()
    sts, _ = run_devices(list(devs.values()), Reference.now_ns, RunStore(tmp_path / "r", "p"),
                         plan, armed=True)
    t1 = Reference.now_ns()
    st = {s.name: s for s in sts}
    ok, bad = traffic(sim, "bmc-ok"), traffic(sim, "bmc-nodt")
    assert st["bmc-ok"].reads > 20 and st["bmc-ok"].stimuli >= 3
    assert st["bmc-nodt"].reads == 0 and st["bmc-nodt"].errors
    # the Manager without DateTime draws fewer requests than the healthy device
    assert bad["requests"] < ok["requests"], (bad["requests"], ok["requests"], bad["by_path"])
    assert bad["by_path"].get("GET /redfish/v1/Managers", 0) <= 1, bad["by_path"]
    # the test events' entries never show within the run: the log's Entries are polled at most
    # once a second (the watch after each stimulus) plus the regular polls, never 10 times a
    # second as before
    entries = sum(n for p, n in ok["by_path"].items() if p.endswith("/Entries"))
    assert entries <= plan.duration_s + 3, (entries, ok["by_path"])
    # the runner's counts by kind are what the emulator saw, and the summary's rates follow
    t = st["bmc-ok"].traffic
    kinds = {k: v for k, v in t.items() if k.startswith("requests_")}
    assert sum(kinds.values()) == t["requests"] == ok["requests"], (kinds, t, ok["requests"])
    assert kinds["requests_clock"] >= st["bmc-ok"].reads and kinds["requests_log"] <= entries
    n = st["bmc-ok"].stimuli                   # and the EventService, read once per session
    assert n <= kinds["requests_stimulus"] <= n + 1, kinds
    rates = request_rates(t, t0, t1)
    assert rates is not None and set(rates["by_kind"]) == {"clock", "log", "stimulus",
                                                           "discovery"}
    assert abs(rates["total"] - t["requests"] * 60 * NS / (t1 - t0)) < 1
