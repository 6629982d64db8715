"""A bench that never hammers a BMC, counted at the emulator: a run against a service with no
usable log makes no more requests than its clock reads, its stimuli and one open (with its log
discovery); its log failures never make it reconnect; the manifest's per-device traffic says
what was sent, per minute."""
from __future__ import annotations

import asyncio

from test_redfish_bmc import bmc_toml

from bench.model.store import RunStore
from bench.reference.clock import Reference
from bench.run.probe import run_devices
from bench.run.runner import ProbePlan
from drivers.redfish_bmc import RedfishBMC


def traffic(sim) -> dict:
    return next(e for e in sim.ctx.events["bmc-t"] if e["kind"] == "traffic")


def test_a_run_against_a_service_with_no_log_costs_only_its_reads(sim_rack, tmp_path):
    sim = sim_rack(bmc_toml(logs=False))
    assert not sim.failed, sim.failed
    dev = sim.rack.devices[0]

    async def open_close():
        drv = RedfishBMC(dev, Reference.now_ns, armed=True)
        await drv.open()
        await drv.identity()
        await drv.close()
    before = traffic(sim)["requests"]
    asyncio.run(open_close())
    one_open = traffic(sim)["requests"] - before        # login, links, discovery, logout
    logins = traffic(sim)["logins"]

    store = RunStore(tmp_path / "runs", "polite")
    plan = ProbePlan(duration_s=12.0, stimulus_every_s=2.0, first_stimulus_s=0.5)
    before = traffic(sim)["requests"]
    (st,), _ = run_devices([dev], Reference.now_ns, store, plan, armed=True)
    sent = traffic(sim)["requests"] - before
    reads = st.probes * plan.burst            # every read attempted (bursts of plan.burst)
    assert st.reads > 10 and st.stimuli >= 4
    # before: each failed poll walked the links again (every 2 s, and every 0.1 s after each
    # stimulus), counted toward a reconnect, and each reconnect logged in again
    assert sent <= reads + st.stimuli + one_open, (sent, reads, st.stimuli, one_open)
    assert traffic(sim)["logins"] == logins + 1
    assert st.traffic["requests"] == sent and st.traffic.get("reconnects", 0) == 0
    assert st.traffic["logins"] == 1 and st.traffic["per_minute"][0]["minute"] == 0
    assert st.record().to_dict()["traffic"] is st.traffic
