"""The watch fits a clock as the summary does (bench.model.summary.fit_clocks): with the lag its
driver or the rack file declares, the device's claim of a free-running clock, and a declared rate
bound standing. Before, the watch fitted every clock without them: a 10 ms clock whose reading
lags 8-9.5 ms, declared by the rack file, was published proven 5.8 ms away from the truth."""
from __future__ import annotations

import numpy as np

from bench.watch.estimator import current_bounds
from bench.watch.state import WatchState

T0, OFF = 1_800_000_000 * 10**9, 7_654_321_987
NTP_OFF = "Redfish NTP.ProtocolEnabled=false"


def _state() -> WatchState:
    st = WatchState(lambda: 0, {"pdu-1": {"tick_lag_ms": 10.0}, "bmc-2": {},
                                "cdu-2": {"drift_prior_ppm": 600.0}})
    st.define("pdu-1", "pdu", [{"name": "hrsystemdate", "resolution_ns": 10**7},
                               {"name": "sysuptime", "resolution_ns": 10**7, "counter": True}])
    st.define("bmc-2", "bmc", [{"name": "datetime", "resolution_ns": 10**9,
                                "free_running": NTP_OFF}])
    st.define("cdu-2", "cdu", [{"name": "rtc", "resolution_ns": 10**9}])
    return st


def test_a_declared_lag_widens_the_watchs_bound_to_the_truth():
    st = _state()
    clocks = st.devices["pdu-1"].clocks
    assert clocks["hrsystemdate"].window.meta.lag_ns == 10**7
    assert clocks["sysuptime"].window.meta.lag_ns == 0       # a counter computed when asked
    w = clocks["hrsystemdate"].window
    rng = np.random.default_rng(3)
    for k in range(600):
        s = T0 + k * 10**9 + int(rng.integers(0, 10**9))
        lag = int(rng.uniform(8e6, 9.5e6))
        w.add(s, s + 10**6, (s + 5 * 10**5 + OFF - lag) // 10**7 * 10**7)
    b = current_bounds(w.fit())
    assert b is not None and b["offset_status"] == "proven"
    assert b["offset_lo_ns"] <= OFF <= b["offset_hi_ns"], (b["offset_lo_ns"] - OFF,
                                                           b["offset_hi_ns"] - OFF)


def test_the_devices_claim_and_a_declared_rate_reach_the_watchs_fit():
    """A 1 s clock read every 5 s cannot check 600 ppm: with the device's "NTP off" it is fitted
    under 600 ppm on the device's word; with 600 ppm declared in the rack file, that stands;
    with neither (the summary's fallback) it is fitted under a disciplined clock's rate."""
    st = _state()
    st.define("bmc-9", "bmc", [{"name": "datetime", "resolution_ns": 10**9}])
    rng = np.random.default_rng(4)
    fits = {}
    for dev, clk in (("bmc-2", "datetime"), ("cdu-2", "rtc"), ("bmc-9", "datetime")):
        w = st.devices[dev].clocks[clk].window
        for k in range(120):
            s = T0 + k * 5 * 10**9 + int(rng.integers(0, 10**9))
            w.add(s, s + 2 * 10**6, (s + 10**6 + OFF) // 10**9 * 10**9)
        fits[dev] = w.fit()
    assert fits["bmc-2"].drift_prior_ppm == 600 and fits["bmc-2"].rate_basis == NTP_OFF
    assert fits["cdu-2"].drift_prior_ppm == 600 and fits["cdu-2"].rate_assumed
    assert fits["bmc-9"].drift_prior_ppm > 600 and not fits["bmc-9"].rate_basis


def _rows(st: WatchState, rng, reboot_s: float = 150.0, down_s: float = 4.0) -> None:
    """pdu-1 read once a second for 300 s, both clocks: its agent restarts at `reboot_s`
    (sysUpTime back to 0) and answers nothing for `down_s`; hrSystemDate shows no step."""
    boot = T0 - 10**12
    for k in range(300):
        for clock in ("sysuptime", "hrsystemdate"):
            s = T0 + k * 10**9 + int(rng.integers(0, 5 * 10**8))
            e, at = s + 10**6, s + 5 * 10**5
            if reboot_s <= k < reboot_s + down_s:
                st.row("pdu-1", "read", clock, s, e, None, "timeout")
                continue
            since = T0 + int(reboot_s * 1e9) if k >= reboot_s else boot
            v = (at - since) // 10**7 * 10**7 if clock == "sysuptime" else \
                (at + OFF) // 10**7 * 10**7
            st.row("pdu-1", "read", clock, s, e, v, "ok")


def test_a_reboot_on_one_clock_splits_the_devices_other_clocks_in_the_watch():
    """As the summary does (bench.analysis.device_breaks): the agent's restart that sysUpTime
    shows, and the outage around it, end hrSystemDate's segment too, though its own reads show
    no step (a wall clock may come back from a restart wrong and be stepped back unseen)."""
    st = WatchState(lambda: 0, {"pdu-1": {}})
    st.define("pdu-1", "pdu", [{"name": "sysuptime", "resolution_ns": 10**7, "counter": True},
                               {"name": "hrsystemdate", "resolution_ns": 10**7}])
    _rows(st, np.random.default_rng(5))
    d = st.devices["pdu-1"]
    assert len(d.outages) == 1
    (after, before), = d.outages
    assert T0 + 149 * 10**9 < after < T0 + 150 * 10**9 < T0 + 154 * 10**9 <= before
    for clock in ("sysuptime", "hrsystemdate"):
        st.refit("pdu-1", clock, d.clocks[clock])
    up, date = d.clocks["sysuptime"].fit, d.clocks["hrsystemdate"].fit
    assert [str(b.kind) for b in up.breaks] == ["reboot"]
    assert len(date.segments) == 2, [(sg.start_ns - T0, sg.end_ns - T0) for sg in date.segments]
    assert date.segments[0].end_ns <= before and date.segments[1].start_ns >= after
