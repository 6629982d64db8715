"""Measured X99 per clock kind (generated; do not edit by hand): benchmarks/unseen_calibration.py
--json, converted by that script's --module. Each row: blips of one size lasting `within_s` on a
clock of tick `q_ns` read at `rate_hz` through the real probe schedule and fitted by the real
estimator; `x99_ns` is the smallest size from which every larger one on the grid showed in at
least 99 % of `trials` (None: none below the tick); `bracket_ns` and `width_ns` are the trials'
median bracket and offset width."""
# 2026-12-07, benchmarks/unseen_calibration.py --trials 150 (merged runs)
from typing import Any

FIELDS = ('q_ns', 'rate_hz', 'within_s', 'x99_ns', 'trials', 'bracket_ns', 'width_ns')
ROWS: tuple[dict[str, Any], ...] = tuple(dict(zip(FIELDS, r)) for r in (
    (1000000000, 1.0, 3.0, None, 150, 841861, 3713434),
    (1000000000, 1.0, 10.0, 1000000000, 150, 848962, 11309751),
    (1000000000, 1.0, 30.0, 50000000, 150, 834779, 4234542),
    (1000000000, 2.0, 3.0, 1000000000, 150, 839435, 3389938),
    (1000000000, 2.0, 10.0, 10000000, 150, 823810, 9063376),
    (1000000000, 2.0, 30.0, 10000000, 150, 828839, 3357962),
    (100000000, 1.0, 3.0, None, 150, 846488, 3424784),
    (100000000, 1.0, 10.0, 100000000, 150, 821910, 4053880),
    (100000000, 1.0, 30.0, 50000000, 150, 823725, 3580835),
    (100000000, 2.0, 3.0, 100000000, 150, 833403, 2065719),
    (100000000, 2.0, 10.0, 50000000, 150, 831554, 2069305),
    (100000000, 2.0, 30.0, 10000000, 150, 828014, 2055010),
    (10000000, 1.0, 3.0, None, 150, 823206, 3131640),
    (10000000, 1.0, 10.0, None, 150, 821542, 3308670),
    (10000000, 1.0, 30.0, 10000000, 150, 818654, 3165672),
    (10000000, 2.0, 3.0, 10000000, 150, 826114, 2011572),
    (10000000, 2.0, 10.0, 10000000, 150, 828288, 1997456),
    (10000000, 2.0, 30.0, 10000000, 150, 828288, 1997456),
))
