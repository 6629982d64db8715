"""The step a clock states could hide (issue 39 item 3): the exploration reads' guarantee, or
where smaller the X99 measured on the simulated probe schedule for clocks like it
(bench/analysis/unseen_table.py, benchmarks/unseen_calibration.py), and that statement against
blips of that size (virtual time, the real schedule and estimator, fixed seeds)."""
import numpy as np

from bench.analysis.estimate import fit_clock
from bench.analysis.unseen import (
    CALIBRATED_MARGIN,
    calibrated_step_ns,
    stated_step_ns,
    unseen_step_ns,
)
from bench.analysis.unseen_table import ROWS
from bench.sim.clock_model import ClockModel, ClockParams
from bench.sim.probing import read_like_runner

NS = 1_000_000_000
T0 = 1_800_000_000 * NS


def _row(q_ns: int, rate: float, within: float) -> dict:
    return next(r for r in ROWS if r["q_ns"] == q_ns and r["rate_hz"] == rate
                and r["within_s"] == within)


def test_a_clock_like_the_trials_states_the_measured_x():
    r = _row(NS, 2.0, 10.0)
    x, measured = stated_step_ns(NS, r["bracket_ns"], r["width_ns"], 2.0, within_s=10.0)
    assert measured and x == int(np.ceil(CALIBRATED_MARGIN * r["x99_ns"]))
    assert x < unseen_step_ns(NS, r["bracket_ns"], r["width_ns"], 2.0, within_s=10.0)


def test_reads_worse_than_the_trials_keep_the_guarantee():
    """A sideband bracket, a wider band, a slower rate, a shorter step or a tick the table does
    not hold: the exploration reads' guarantee stands."""
    r = _row(NS, 2.0, 10.0)
    b, w = r["bracket_ns"], r["width_ns"]
    assert calibrated_step_ns(NS, 30e6, w, 2.0, 10.0) is None
    assert calibrated_step_ns(NS, b, 20 * w, 2.0, 10.0) is None
    assert calibrated_step_ns(NS, b, w, 0.5, 10.0) is None
    assert calibrated_step_ns(NS, b, w, 2.0, 1.0) is None
    assert calibrated_step_ns(7 * NS // 10, b, w, 2.0, 10.0) is None
    assert stated_step_ns(NS, 30e6, w, 2.0) == (unseen_step_ns(NS, 30e6, w, 2.0), False)


def test_blips_of_the_stated_size_show():
    """30 blips of the stated X lasting 10 s on a 1 s clock read at 2 Hz (fixed seeds): at
    least 29 show (a break, a read set aside, a step the fit names)."""
    shown, stated = 0, []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        b0 = _row(NS, 2.0, 10.0)
        x = stated_step_ns(NS, b0["bracket_ns"], b0["width_ns"], 2.0, within_s=10.0)[0]
        at = 20.0 + float(rng.uniform(0, 2))
        p = ClockParams(offset_s=float(rng.uniform(-50, 50)), drift_ppm=float(rng.uniform(-100, 100)),
                        resolution_s=1.0, blips=((at, x / NS * float(rng.choice([-1, 1])), 10.0),),
                        sample_delay_s=0.0)
        s, e, v, _a, _b = read_like_runner(ClockModel(p, T0, seed), int((at + 20) * 2), 2.0, NS, rng)
        fit = fit_clock(s, e, v, NS)
        sg = fit.segments[0]
        stated.append(stated_step_ns(NS, sg.bracket_ns["median"], sg.offset_ns.width, 2.0,
                                     within_s=10.0))
        shown += bool(fit.breaks or fit.outliers or fit.steps_seen or fit.unknown_breaks)
    assert shown >= 29, shown
    assert sum(m for _, m in stated) >= 25       # these clocks are like the trials
