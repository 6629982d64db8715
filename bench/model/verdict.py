"""What the report's first screen says per device clock: its offset and drift with their status,
breaks, errors, what the bounds assume, and how finely events on two planes can be ordered.

Statuses (summary.json's own where the summary has them, issue 11's contract):
  clock    "verdict": proven | assumed | beyond_prior | undecided
  segment  "offset_status" / "drift_status": proven | assumed | undecided
Older run folders lack these keys; they are derived here: a drift bound within 1 % of the
±prior edge rests on the prior ("assumed"); a clock without a fit is "undecided"; everything else
the estimator proved. The prior is the inventory's `drift_prior_ppm` (default 200 ppm).
"""
from __future__ import annotations

from dataclasses import dataclass

from bench.analysis.estimate import DEFAULT_DRIFT_PRIOR_PPM as DEFAULT_PRIOR_PPM


def device_inventory(manifest: dict, device: str) -> dict:
    return (manifest.get("inventory") or {}).get("devices", {}).get(device, {}) or {}


def assumptions(manifest: dict, summary: dict, device: str, clock: dict) -> dict:
    """The assumptions a clock's bounds rest on: the summary's where it names them, else the
    inventory's and the reference's."""
    if clock.get("assumptions"):
        return dict(clock["assumptions"])
    inv = device_inventory(manifest, device)
    return {"drift_prior_ppm": float(inv.get("drift_prior_ppm", DEFAULT_PRIOR_PPM)),
            "wander_ppm": float(inv.get("wander_ppm", 0.0)),
            "resolution_ns": clock.get("resolution_ns") or clock.get("resolution_declared_ns"),
            "resolution_basis": "declared" if clock.get("resolution_ns") in
            (None, clock.get("resolution_declared_ns")) else "observed",
            "reference_uncertainty_ns": summary.get("reference_uncertainty_ns", 0)}


def on_prior_edge(lo: float, hi: float, prior: float) -> bool:
    return abs(lo + prior) <= 0.01 * prior or abs(hi - prior) <= 0.01 * prior


def segment_status(seg: dict, prior: float) -> tuple[str, str]:
    """(offset status, drift status) of one segment."""
    d = seg.get("drift_ppm") or {}
    drift = seg.get("drift_status") or ("assumed" if d and on_prior_edge(d["lo"], d["hi"], prior)
                                        else "proven")
    return seg.get("offset_status") or "proven", drift


def clock_verdict(clock: dict, prior: float) -> str:
    if clock.get("verdict"):
        return clock["verdict"]
    segs = clock.get("segments") or []
    if not segs:
        return "undecided"
    st = [s for sg in segs for s in segment_status(sg, prior)]
    return "undecided" if "undecided" in st else "assumed" if "assumed" in st else "proven"


@dataclass(frozen=True)
class ClockVerdict:
    device: str
    plane: str
    clock: str
    counter: bool
    verdict: str
    offset_status: str
    drift_status: str
    segment: dict | None            # the last segment (None: no fit)
    offset_range: tuple[float, float] | None   # lowest, highest offset the band allows (ns)
    width_ns: float | None          # widest the proven band gets over the run
    breaks: list
    wraps: int
    errors: dict
    assumptions: dict
    outliers: int
    note: str = ""


def band_range(seg: dict) -> tuple[float, float, float]:
    """(lowest, highest, widest) offset the segment's proven band allows over its span (ns)."""
    b = seg.get("band") or {}
    if b.get("lo"):
        lo, hi = b["lo"], b["hi"]
        return float(min(lo)), float(max(hi)), float(max(h - l for l, h in zip(lo, hi)))
    o = seg["offset_ns"]
    return float(o["lo"]), float(o["hi"]), float(o["hi"] - o["lo"])


def clock_verdicts(run) -> list[ClockVerdict]:
    """One entry per device clock in the run (and one per device that has none or failed)."""
    out = []
    summary, manifest = run.summary, run.manifest
    for device, d in sorted((summary.get("devices") or {}).items()):
        prior = float(device_inventory(manifest, device).get("drift_prior_ppm",
                                                              DEFAULT_PRIOR_PPM))
        errors = d.get("errors") or {}
        clocks = d.get("clocks") or {}
        if not clocks:
            why = "; ".join(f"{k}: {v}" for k, v in (d.get("first_errors") or {}).items())
            out.append(ClockVerdict(device, d.get("plane", ""), "—", False, "undecided",
                                    "undecided", "undecided", None, None, None, [], 0, errors,
                                    {}, 0, why or ", ".join(d.get("no_clock", [])) or
                                    "no clock"))
            continue
        for name, c in sorted(clocks.items()):
            segs = c.get("segments") or []
            a = assumptions(manifest, summary, device, c)
            if not segs:
                out.append(ClockVerdict(device, d.get("plane", ""), name, bool(c.get("counter")),
                                        clock_verdict(c, prior), "undecided", "undecided", None,
                                        None, None, c.get("breaks", []), len(c.get("wraps", [])),
                                        errors, a, len(c.get("outliers", [])),
                                        c.get("note", "no fit")))
                continue
            rng = [band_range(sg) for sg in segs]
            sts = [segment_status(sg, prior) for sg in segs]
            off_st = _worst(s[0] for s in sts)
            dr_st = _worst(s[1] for s in sts)
            out.append(ClockVerdict(
                device, d.get("plane", ""), name, bool(c.get("counter")),
                clock_verdict(c, prior), off_st, dr_st, segs[-1],
                (min(r[0] for r in rng), max(r[1] for r in rng)), max(r[2] for r in rng),
                c.get("breaks", []), len(c.get("wraps", [])), errors, a,
                len(c.get("outliers", [])), c.get("zone_note", "")))
    return out


def _worst(statuses) -> str:
    s = list(statuses)
    return "undecided" if "undecided" in s else "assumed" if "assumed" in s else "proven"


def ordering_horizons(verdicts: list[ClockVerdict]) -> dict[tuple[str, str], float]:
    """Per pair of planes, the smallest gap at which any two events stamped on those planes are
    provably ordered: a stamp maps to an interval as wide as its clock's proven band plus one
    tick, so two true instants farther apart than the sum of both planes' widest such intervals
    give disjoint intervals wherever in them the truths fall."""
    widest: dict[str, float] = {}
    for v in verdicts:
        if v.width_ns is None:
            continue
        w = v.width_ns + float(v.assumptions.get("resolution_ns") or 0)
        widest[v.plane] = max(widest.get(v.plane, 0.0), w)
    planes = sorted(widest)
    return {(p, q): widest[p] + widest[q] for i, p in enumerate(planes) for q in planes[i:]}
