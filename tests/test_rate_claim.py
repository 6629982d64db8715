"""A device's word that nothing disciplines its clock (issue 39 item 2: R justified per clock).

Where the reads cannot check 600 ppm the estimator falls back to a disciplined clock's 2,500 ppm;
a Redfish service saying NTP.ProtocolEnabled=false lets 600 ppm stand, named as that assumption
in the model line, at statuses never better than the fallback's, and refused where the reads
show corrections (bench.analysis.estimate.fit_clock, `free_running`)."""
from __future__ import annotations

import asyncio

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.analysis.rate_check import DISCIPLINED_PRIOR_PPM
from bench.model.rundata import Samples
from bench.model.summary import free_running, rate_clause
from bench.sim.clock_model import ClockModel, ClockParams
from bench.sim.probing import read_like_runner
from drivers.redfish_bmc import NTP_OFF, RedfishBMC
from tests.test_redfish_bmc import bmc  # noqa: F401  (the emulated BMC fixture)

NS = 1_000_000_000
T0 = 1_800_000_000 * NS


def _lagging(seed: int) -> tuple[ClockModel, tuple]:
    """A free-running 100 ms clock whose edges flip 2-8 ms late (a declared 10 ms lag): its
    reads pin it to 10 ms or more, too loosely to check 600 ppm."""
    rng = np.random.default_rng(seed)
    p = ClockParams(resolution_s=0.1, drift_ppm=float(rng.uniform(-100, 100)), offset_s=2.0,
                    tick_lag_ms=(2.0, 8.0))
    m = ClockModel(p, T0, seed)
    return m, read_like_runner(m, 80, 2.0, p.resolution_ns, rng)[:3]


def test_the_claim_narrows_bounds_that_hold_and_never_promotes_a_status():
    narrower = 0
    for seed in range(10):
        m, (s, e, v) = _lagging(seed)
        fallback = fit_clock(s, e, v, 100_000_000, lag_ns=10_000_000)
        claimed = fit_clock(s, e, v, 100_000_000, lag_ns=10_000_000, free_running=NTP_OFF)
        assert fallback.drift_prior_ppm == DISCIPLINED_PRIOR_PPM and not fallback.rate_basis
        assert claimed.drift_prior_ppm == 600 and claimed.rate_basis == NTP_OFF
        assert NTP_OFF in claimed.rate_assumed and NTP_OFF in rate_clause(claimed)
        assert rate_clause(claimed).startswith("assumed: free-running per")
        for a, b in zip(fallback.segments, claimed.segments, strict=True):
            assert b.offset_status == a.offset_status     # the claim costs no status, nor buys one
            assert b.offset_ns.width <= a.offset_ns.width + 1
            narrower += b.offset_ns.width < 0.8 * a.offset_ns.width
            if b.offset_status == "proven":
                for t in np.linspace(b.start_ns, b.end_ns, 20).astype(np.int64):
                    x = b.proven_offset_at(int(t))
                    assert x is None or x.lo <= m.offset_ns(int(t)) <= x.hi, (seed, int(t))
    assert narrower >= 5          # the claim buys width (a fifth or more), or it is not worth stating


def test_the_claim_is_refused_where_the_reads_show_corrections():
    """An NTP client slewing 2-10 ms corrections at 500-2,000 ppm on a 1 ms clock, read over
    sideband brackets: where no single line fits a segment, the device's word loses."""
    refused = 0
    for seed in (0, 2, 4, 6, 8, 10):
        rng = np.random.default_rng(seed)
        p = ClockParams(resolution_s=0.001, drift_ppm=float(rng.uniform(-50, 50)),
                        discipline=(20.0, 40.0, 2.0, 10.0, float(rng.uniform(500, 2000))))
        s, e, v, _, _ = read_like_runner(ClockModel(p, T0, seed), 120, 2.0, p.resolution_ns, rng,
                                         sideband=True)
        fit = fit_clock(s, e, v, p.resolution_ns, free_running=NTP_OFF)
        corrected = any(sg.offset_line is None for sg in fit.segments)
        assert not (corrected and fit.rate_basis), seed
        refused += corrected and fit.drift_prior_ppm == DISCIPLINED_PRIOR_PPM
    assert refused >= 2


def _samples(kinds: list[tuple[str, str]]) -> Samples:
    n = len(kinds)
    z = np.zeros(n, dtype=np.int64)
    return Samples(np.arange(n, dtype=np.int64), [k for k, _ in kinds], [c for _, c in kinds],
                   z, z, z, np.zeros(n, dtype=bool), z, ["user"] * n, ["ok"] * n, [""] * n)


def test_an_ntp_command_in_the_run_voids_the_claim_read_at_open():
    meta = {"name": "datetime", "free_running": NTP_OFF}
    assert free_running(meta, _samples([("read", "datetime")])) == NTP_OFF
    assert free_running(meta, _samples([("read", "datetime"), ("stimulus", "ntp")])) == ""
    assert free_running({"name": "datetime"}, _samples([])) == ""


def test_the_redfish_driver_reads_ntp_off_as_the_claim(bmc):  # noqa: F811
    async def said(dev) -> tuple[str, object]:
        drv = RedfishBMC(dev, lambda: 0, armed=False)
        await drv.open()
        try:
            ident = await drv.identity()
            return drv.clocks()[0].free_running, ident.extra.get("ntp")
        finally:
            await drv.close()

    _, off, _ = bmc(ntp=False)
    _, on, _ = bmc(ntp=True)
    assert asyncio.run(said(off)) == (NTP_OFF, "NTP.ProtocolEnabled=false")
    assert asyncio.run(said(on)) == ("", "NTP.ProtocolEnabled=true")
