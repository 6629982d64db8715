"""What a step can hide under: the exploration reads' chance of showing a step of a given size
(DESIGN.md, "Probing"), and the smallest step X that shows with probability p within a given
time. Apart from the probe schedule so that the estimator can weigh a step a clock showed against
what its own segments could hide (step_risk._could_hide) without importing the schedule."""
from __future__ import annotations

import math


def detection_reads(step_ns: float, q: int, bracket_ns: float, width_ns: float,
                    p: float = 0.99) -> float:
    """Exploration reads after a step of size s until one contradicts the earlier segment with
    probability p (DESIGN.md, "Probing"): a read at a uniform tick phase does when it samples in
    the part of the tick where the old line and the stepped clock read differently by more than
    the bracket and the bound's width, of length |s| − b − w per tick (every read when
    |s| ≥ q + b + w). n = ln(1 − p) / ln(1 − (|s| − b − w)/q); T = n / r_explore."""
    s, qf = abs(float(step_ns)), float(q)
    f = min(1.0, max(0.0, (s - bracket_ns - width_ns) / qf))
    if f >= 1.0:
        return 1.0
    if f <= 0.0:
        return math.inf
    return math.log(1 - p) / math.log(1 - f)


EXPLORE_EVERY = 4        # every 4th probe of a coarse clock explores (bench/run/runner.py)
UNSEEN_P = 0.99           # the probability the unseen-step statement is made at
UNSEEN_WITHIN_S = 10.0    # ... for a step (or a blip) lasting at least this long


NO_STEP_SHOWS = 2 ** 62     # unseen_step_ns where too few reads fall in the time to promise any


def unseen_step_ns(q: int, bracket_ns: float, width_ns: float, rate_hz: float,
                   p: float = UNSEEN_P, within_s: float = UNSEEN_WITHIN_S,
                   rate_ppm: float = 600.0) -> int:
    """The smallest step X such that a step of at least X in either direction, lasting at least
    `within_s`, shows with probability >= p: the n exploration reads sure to fall in that time
    (every EXPLORE_EVERY-th read at `rate_hz`, each up to max(q, 1/r)/2 off its slot's centre:
    n = floor((T − max(q, 1/r))·r/EXPLORE_EVERY)) each see it with
    probability (|s| − b − w)/q (detection_reads), w the band's width a period from a read (at
    the epoch, widened by the rate bound `rate_ppm` over one period), so X = b + w +
    q·(1 − (1 − p)^(1/n)). Aimed
    reads sit by the predicted edge, where a step in one direction reads as expected, so only
    the exploration reads count (flanks and aimed reads only add to the chance). With no
    exploration read sure to fall in the time, a step of more than q + b + w reads wrong on
    every read, and three slots in the time hold two reads; fewer promise nothing (NO_STEP_SHOWS)."""
    reads = float(within_s) * float(rate_hz)
    # between reads the band widens at the rate bound: w at the epoch is its narrowest
    width_ns = float(width_ns) + float(rate_ppm) * 1e3 / float(rate_hz)
    # an exploration read lies up to half a tick or a period off its slot's centre
    sure = (float(within_s) - max(q / 1e9, 1.0 / float(rate_hz))) * float(rate_hz)
    n = math.floor(sure / EXPLORE_EVERY + 1e-9)
    if n < 1:
        return int(math.ceil(bracket_ns + width_ns + q)) if reads >= 3 - 1e-9 else NO_STEP_SHOWS
    f = 1.0 - (1.0 - p) ** (1.0 / n)
    return int(math.ceil(bracket_ns + width_ns + f * q))


CALIBRATED_MARGIN = 1.5     # a measured X99 is stated this much larger (its trials are few)
CALIBRATED_REACH = 1.5      # ... for a clock whose bracket and width are at most this many times
                            # those of the trials (wider ones hide more: the guarantee stands)


def calibrated_step_ns(q: int, bracket_ns: float, width_ns: float, rate_hz: float,
                       within_s: float) -> int | None:
    """The measured X99 (bench/analysis/unseen_table.py) of the row that this clock's reads are
    at least as good as: the same tick, read at the row's rate or faster, for a step lasting at
    least the row's time, with brackets and width within CALIBRATED_REACH of the trials';
    CALIBRATED_MARGIN times it. None where no row applies or the row found no X99 below the
    tick."""
    from bench.analysis.unseen_table import ROWS
    fit = [r for r in ROWS if r["q_ns"] == int(q) and r["rate_hz"] <= rate_hz + 1e-9
           and r["within_s"] <= within_s and r["x99_ns"] is not None
           and bracket_ns <= CALIBRATED_REACH * r["bracket_ns"]
           and width_ns <= CALIBRATED_REACH * r["width_ns"]]
    return min((int(math.ceil(CALIBRATED_MARGIN * r["x99_ns"])) for r in fit), default=None)


def stated_step_ns(q: int, bracket_ns: float, width_ns: float, rate_hz: float,
                   within_s: float = UNSEEN_WITHIN_S, rate_ppm: float = 600.0) -> tuple[int, bool]:
    """(X, measured) the summary states for a step lasting `within_s`: the exploration reads'
    guarantee (unseen_step_ns), or where smaller, the X99 measured on the simulated probe
    schedule for clocks like this one (calibrated_step_ns): flank and aimed reads, which the
    guarantee leaves out, find most steps long before an exploration read does."""
    x = unseen_step_ns(q, bracket_ns, width_ns, rate_hz, within_s=within_s, rate_ppm=rate_ppm)
    c = calibrated_step_ns(q, bracket_ns, width_ns, rate_hz, within_s)
    return (c, True) if c is not None and c < x else (x, False)
