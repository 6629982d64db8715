"""A break seen on one clock of a device splits every clock of that device
(bench/analysis/device_breaks.py, bench/model/summary.fit_clocks): a PDU agent that restarts
twice (sysUpTime resets, 4 s without answers each time) and whose hrSystemDate comes back
0.7 s slow until NTP steps it back 3.6 s later (7 reads: a burst a fit could set aside)."""
from __future__ import annotations

import numpy as np

from bench.analysis.device_breaks import outages
from bench.model.rundata import Samples
from bench.model.summary import fit_clocks
from bench.sim.clock_model import NS, ClockModel, ClockParams

T0 = 1_800_000_000 * NS
RESTARTS = (21.3, 47.8)
DOWN_S = 4.0


def _models() -> tuple[ClockModel, ClockModel]:
    up = ClockModel(ClockParams(counter=True, uptime_s=5_000.0, resolution_s=0.01, drift_ppm=30,
                                reboots=RESTARTS, reboot_down_s=DOWN_S), T0, 3)
    steps = tuple(x for r in RESTARTS for x in ((r, -0.7), (r + DOWN_S + 3.6, 0.7)))
    date = ClockModel(ClockParams(offset_s=0.25, drift_ppm=30, resolution_s=0.1, steps=steps),
                      T0, 4)
    return up, date


def _samples(seed: int) -> Samples:
    """Both clocks read at 2 Hz, 0.3-1.5 ms brackets, the device sampling anywhere inside;
    while the agent restarts every read times out."""
    up, date = _models()
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("kind", "clock", "s", "e", "v", "ok", "q")}
    for k in range(150):
        for name, m in (("sysUpTime", up), ("hrSystemDate", date)):
            s = T0 + k * NS // 2 + int(rng.integers(0, 20_000_000))
            e = s + int(rng.integers(300_000, 1_500_000))
            at = int(rng.integers(s, e + 1))
            ok = not up.down(at)
            cols["kind"].append("read")
            cols["clock"].append(name)
            cols["s"].append(s)
            cols["e"].append(e)
            cols["v"].append(m.read_ns(at) if ok else 0)
            cols["ok"].append(ok)
            cols["q"].append(m.p.resolution_ns)
    n = len(cols["s"])
    return Samples(np.arange(n), cols["kind"], cols["clock"], np.array(cols["s"]),
                   np.array(cols["e"]), np.array(cols["v"]), np.array(cols["ok"]),
                   np.array(cols["q"]), ["user"] * n,
                   ["ok" if x else "timeout" for x in cols["ok"]], [""] * n)


META = {"clocks": [{"name": "sysUpTime", "counter": True, "resolution_ns": 10_000_000},
                   {"name": "hrSystemDate", "resolution_ns": 100_000_000}]}


def test_outages_are_runs_of_failed_reads():
    s = np.arange(10) * 10
    ok = [True, False, True, False, False, True, True, False, False, False]
    assert outages(s, s + 1, ok) == [(21, 50)]    # a lone failure is none; a run at the end none


def test_restarts_split_the_wall_clock_and_its_proven_band_holds():
    for seed in range(4):
        res = fit_clocks(_samples(seed), META)
        up_fit, fit = res["sysUpTime"].fit, res["hrSystemDate"].fit
        assert up_fit is not None and fit is not None
        assert sum(b.kind == "reboot" for b in up_fit.breaks) == 2
        _, date = _models()
        checked = 0
        for sg in fit.segments:
            # no segment spans a restart
            assert not any(sg.start_ns < T0 + r * NS < sg.end_ns for r in RESTARTS)
            if sg.offset_status != "proven":
                continue
            for t in np.linspace(sg.start_ns, sg.end_ns, 25).astype(np.int64):
                b = sg.proven_offset_at(int(t))
                if b is not None:
                    checked += 1
                    assert b.lo <= date.offset_ns(int(t)) <= b.hi, (seed, int(t) - T0)
        # it showed its two step-backs: more may hide (STEP_HISTORY), so nothing need be proven,
        # but every break it made at a restart is its own segment boundary
        assert checked > 0 or fit.steps_seen >= 2
