"""The statuses the estimator writes into summary.json, as str-valued enums: a member is its
string (`BoundStatus.PROVEN == "proven"`, json.dumps writes "proven"), so the files stay as
results/README.md documents them. Run and error statuses: bench/model/run_statuses.py."""
from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class BoundStatus(StrEnum):
    """A segment's `offset_status` / `drift_status`."""
    PROVEN = "proven"
    ASSUMED = "assumed"          # on an assumption's edge (the drift prior)
    UNDECIDED = "undecided"


class Verdict(StrEnum):
    """A clock's `verdict`."""
    PROVEN = "proven"
    ASSUMED = "assumed"
    BEYOND_PRIOR = "beyond_prior"   # the reads asked for a drift beyond the prior
    UNDECIDED = "undecided"
    STUCK = "stuck"                 # the clock did not advance over its reads: nothing published


class BreakKind(StrEnum):
    """A break's `kind` (summary) and a simulated clock's true break (truth.json)."""
    STEP = "step"
    REBOOT = "reboot"
    WRAP = "wrap"
    UNKNOWN = "unknown"


class ResolutionBasis(StrEnum):
    """`assumptions.resolution_basis`: where the tick the fit used comes from."""
    DECLARED = "declared"
    OBSERVED = "observed"
    EDGES = "edges"           # the value updates slower than its tick: found from the edges
    UNPROVEN = "unproven"


def worst(statuses: Iterable[str]) -> BoundStatus:
    """undecided over assumed over proven."""
    s = set(statuses)
    return (BoundStatus.UNDECIDED if BoundStatus.UNDECIDED in s else
            BoundStatus.ASSUMED if BoundStatus.ASSUMED in s else BoundStatus.PROVEN)
