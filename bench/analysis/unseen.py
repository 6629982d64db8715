"""What a step can hide under: the exploration reads' chance of showing a step of a given size
(DESIGN.md, "Probing"), and the smallest step X that shows with probability p within a given
time. Apart from the probe schedule so that the estimator can weigh a step a clock showed against
what its own segments could hide (estimate._could_hide) without importing the schedule."""
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


def unseen_step_ns(q: int, bracket_ns: float, width_ns: float, rate_hz: float,
                   p: float = UNSEEN_P, within_s: float = UNSEEN_WITHIN_S) -> int:
    """The smallest step X such that a step of at least X in either direction, lasting at least
    `within_s`, shows with probability >= p: the exploration reads in that time (every
    EXPLORE_EVERY-th read at `rate_hz`) each see it with probability (|s| − b − w)/q
    (detection_reads), so X = b + w + q·(1 − (1 − p)^(1/n)). Flank and aimed reads only add to
    that chance, so the statement is conservative; below X a step can hide."""
    n = max(1.0, float(within_s) * float(rate_hz) / EXPLORE_EVERY)
    f = 1.0 - (1.0 - p) ** (1.0 / n)
    return int(math.ceil(bracket_ns + width_ns + f * q))
