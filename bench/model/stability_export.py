"""Stability as data (issue 45 item 1): per clock, summary.json `clocks.<c>.stability` and the
flat RUN/stability.csv (one row per device, clock, segment, statistic and tau), computed from the
regular-grid phase series RUN/phase/ exports (bench.model.phase_export), segment by segment.
results/README.md documents the keys and columns; bench.analysis.stability_ci the arithmetic.

Per segment, on the grid instants inside its proven span (a break is never averaged across: the
grid interpolates across it, a step no deviation should see):

- ADEV (non-overlapping), OADEV, MDEV, TDEV at the 1-2-5 taus that are whole multiples of the grid
  interval, up to a third of the segment's span, each with its 1-sigma confidence interval
  (chi-squared, Greenhall's EDF, the noise type from the lag-1 autocorrelation; where that cannot
  be identified, the widest interval over the power-law noises) and the bound it inherits from the
  proven band: the true phase at each grid instant lies in the band there [lo, hi]
  (Segment.proven_offset_at, vectorised), so the estimate's error there is at most
  E = max(hi − x, x − lo), and the true deviation (of the true phase at the same instants) lies
  within `bound` of the estimate;
- MTIE at the 1-2-5 observation windows up to the span: the estimate, and the interval the true
  MTIE lies in from the band's lo/hi;
- max |TE| (not for counters, whose zero is arbitrary): the estimate and the interval.

The bounds rest on what the band rests on (the clock's `assumptions.model`: the rate bound, at
most one unseen step inside the segment): `bound_status` is the segment's offset status, and
`assumed` where a grid instant had no proven bound (a gap of set-aside reads) and the segment's
line bound stood in. The confidence intervals are statistical statements about the noise process
under the power-law model; the bounds are about this run's true phase at these instants."""
from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.analysis import stability_ci as sc
from bench.analysis.arrays import F64, I64
from bench.model.vocabulary import ASSUMED, PROVEN, UNDECIDED, word

if TYPE_CHECKING:
    from bench.analysis.proven_segment import Segment
    from bench.model.phase_export import Phase

FILE = "stability.csv"
COLUMNS = ["device", "clock", "segment", "statistic", "tau_s", "value", "ci_lo", "ci_hi",
           "confidence", "edf", "alpha", "bound_lo", "bound_hi", "bound_status"]
CONFIDENCE = "1-sigma"
ASSUMPTION = ("each grid instant's true time error lies in the segment's proven band there "
              "(the clock's model: the rate bound, at most one unseen step inside the segment); "
              "bounds are of this run's true phase at the grid's instants; confidence intervals "
              "are of the noise process (power-law noise, Greenhall's EDF)")
MIN_POINTS = 3
_RANK = {PROVEN: 0, ASSUMED: 1, UNDECIDED: 2}


def _num(v: float) -> float | None:
    """JSON's number: 12 significant digits; NaN and inf as null."""
    return float(f"{v:.12g}") if math.isfinite(v) else None


def _nums(a: Iterable[float]) -> list[float | None]:
    return [_num(float(v)) for v in a]


def proven_band(sg: Segment, t_ns: I64) -> tuple[I64, I64, np.ndarray]:
    """(lo, hi, has) ns of Segment.proven_offset_at at many instants (its envelope's bounds
    rounded outward as TwoSided.at rounds them); `has` False where it has none."""
    env = sg._env
    if env is None or not len(t_ns):
        z = np.zeros(len(t_ns), dtype=np.int64)
        return z, z.copy(), np.zeros(len(t_ns), dtype=bool)
    return env.at_many(t_ns)


def _band(sg: Segment, t: I64) -> tuple[I64, I64, str]:
    """The band at the grid instants with its status: the segment's offset status; assumed
    where the line's bound (Segment.offset_bounds_many) stands in for a missing proven one."""
    lo, hi, ok = proven_band(sg, t)
    status = word(sg.offset_status)
    if not np.all(ok):
        llo, lhi = sg.offset_bounds_many(t[~ok])
        lo[~ok], hi[~ok] = llo, lhi
        status = max(status, ASSUMED, key=lambda s: _RANK.get(s, 2))
    return lo, hi, status


def _error_ns(x: F64, lo: I64, hi: I64) -> F64:
    """max(hi − x, x − lo) per point, exact for epoch-scale offsets: x split into its integer
    floor and fraction before the int64 differences; a float's rounding outward."""
    xi = np.floor(x)
    xf = x - xi
    xi64 = xi.astype(np.int64)
    e = np.maximum((hi - xi64).astype(np.float64) - xf, (xi64 - lo).astype(np.float64) + xf)
    out: F64 = e * (1 + 1e-12) + 1e-6
    return out


def _deviations(phase_s: F64, err_s: F64, m: I64, tau0: float) -> dict[str, Any]:
    """ADEV, OADEV, MDEV and TDEV (ns) at each m with their CI, EDF, alpha and bound (the
    noise identified once per m, the intervals in one pass)."""
    # TDEV is MDEV scaled: the same EDF
    got = sc.edf_of(("adev", "oadev", "mdev"), len(phase_s), m, sc.noise_ids(phase_s, m))
    got["tdev"] = got["mdev"]
    vals = [sc.deviation(name, phase_s, m, tau0) for name in sc.STATISTICS]
    bounds = [sc.deviation_bound(name, err_s, m, tau0) for name in sc.STATISTICS]
    edfs = [got[name][0] for name in sc.STATISTICS]
    used = [got[name][1] for name in sc.STATISTICS]
    lo, hi = (x.reshape(len(vals), len(m)) for x in
              sc.confidence_interval(np.concatenate(vals), np.concatenate(edfs)))
    out: dict[str, Any] = {}
    for i, name in enumerate(sc.STATISTICS):
        k = 1e9 if name == "tdev" else 1.0
        out["tdev_ns" if name == "tdev" else name] = {
            "tau_s": _nums(m * tau0), "value": _nums(vals[i] * k), "ci_lo": _nums(lo[i] * k),
            "ci_hi": _nums(hi[i] * k), "edf": _nums(edfs[i]), "alpha": used[i],
            "bound": _nums(bounds[i] * k)}
    return out


COARSE_WHY = ("not given: the clock's tick is coarser than its median bracket, so its phase on "
              "the grid is the tick's quantisation, not its oscillator's noise; the MTIE and "
              "max |TE| intervals stand")


def segment_stability(ph: Phase, sg: Segment, index: int, counter: bool) -> dict[str, Any] | None:
    """One segment's record (module docstring), None with fewer than MIN_POINTS grid instants
    in its proven span."""
    span = sg.proven_span()
    if span is None:
        return None
    i0 = int(np.searchsorted(ph.grid_t_ns, span[0], side="left"))
    i1 = int(np.searchsorted(ph.grid_t_ns, span[1], side="right"))
    if i1 - i0 < MIN_POINTS:
        return None
    t, x = ph.grid_t_ns[i0:i1], ph.grid_te_ns[i0:i1]
    lo, hi, status = _band(sg, t)
    tau0 = ph.interval_s
    m = sc.standard_taus(tau0, len(t))
    out: dict[str, Any] = {"segment": index, "from_ns": int(t[0]), "to_ns": int(t[-1]),
                           "grid_from": i0, "points": len(t), "bound_status": status}
    if ph.coarse:
        out["deviations"] = COARSE_WHY
    else:
        out.update(_deviations(ph.phase_s[i0:i1], _error_ns(x, lo, hi) * 1e-9, m, tau0))
    ref = int(np.floor(x[0]))
    xr = (np.floor(x).astype(np.int64) - ref).astype(np.float64) + (x - np.floor(x))
    mw = sc.standard_taus(tau0, len(t), 1.0)
    est, mlo, mhi = sc.mtie_bounds(xr, (lo - ref).astype(np.float64),
                                   (hi - ref).astype(np.float64), mw)
    out["mtie_ns"] = {"tau_s": _nums(mw * tau0), "value": _nums(est), "lo": _nums(mlo),
                      "hi": _nums(mhi)}
    if not counter:
        v, a, b = sc.max_te_bounds(x, lo.astype(np.float64), hi.astype(np.float64))
        out["max_te_ns"] = {"value": _num(v), "lo": _num(a), "hi": _num(b)}
    return out


def clock_stability(ph: Phase, segments: Iterable[Segment], counter: bool) -> dict[str, Any]:
    """summary `clocks.<c>.stability`: every segment's record and the clock's max |TE| (the
    largest over its segments' proven spans, with the weakest status)."""
    segs = [s for k, sg in enumerate(segments)
            if (s := segment_stability(ph, sg, k, counter)) is not None]
    out: dict[str, Any] = {"interval_s": ph.interval_s, "confidence": CONFIDENCE,
                           "confidence_level": _num(sc.ONE_SIGMA), "assumption": ASSUMPTION,
                           "segments": segs}
    te = [(s["max_te_ns"], s["bound_status"]) for s in segs if s.get("max_te_ns")]
    if te:
        best = max(te, key=lambda x: x[0]["value"] or 0.0)[0]
        out["max_te_ns"] = {"value": best["value"],
                            "lo": max(x["lo"] for x, _ in te), "hi": max(x["hi"] for x, _ in te),
                            "bound_status": max((s for _, s in te), key=lambda s: _RANK.get(s, 2))}
    return out


def _rows_of(device: str, clock: str, st: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    for s in st.get("segments") or ():
        base = {"device": device, "clock": clock, "segment": s.get("segment", ""),
                "bound_status": s.get("bound_status", "")}
        for key in ("adev", "oadev", "mdev", "tdev_ns"):
            yield from _deviation_rows(base, key, s.get(key) or {}, st.get("confidence", ""))
        d = s.get("mtie_ns") or {}
        for i, tau in enumerate(d.get("tau_s") or ()):
            yield {**base, "statistic": "mtie_ns", "tau_s": tau, "value": d["value"][i],
                   "bound_lo": d["lo"][i], "bound_hi": d["hi"][i]}
        if s.get("max_te_ns"):
            d = s["max_te_ns"]
            yield {**base, "statistic": "max_te_ns", "value": d["value"], "bound_lo": d["lo"],
                   "bound_hi": d["hi"]}


def _deviation_rows(base: dict[str, Any], key: str, d: Mapping[str, Any],
                    confidence: Any) -> Iterator[dict[str, Any]]:
    """One row per tau of a deviation statistic (`key`), with its CI and its bound's ends."""
    for i, tau in enumerate(d.get("tau_s") or ()):
        v, b = d["value"][i], d["bound"][i]
        yield {**base, "statistic": key, "tau_s": tau, "value": v,
               "ci_lo": d["ci_lo"][i], "ci_hi": d["ci_hi"][i],
               "confidence": confidence, "edf": d["edf"][i],
               "alpha": d["alpha"][i], **_bound_ends(v, b)}


def _bound_ends(v: Any, b: Any) -> dict[str, Any]:
    """`bound_lo` and `bound_hi` of value v within ± b (lo not below 0); null without either."""
    if v is None or b is None:
        return {"bound_lo": None, "bound_hi": None}
    return {"bound_lo": _num(max(0.0, v - b)), "bound_hi": _num(v + b)}


def rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """stability.csv's rows from a summary (dict or bench.model.documents.Summary)."""
    from bench.model.documents import Summary
    out: list[dict[str, Any]] = []
    for d, c in Summary.of(summary).clocks():
        if c.stability:
            out.extend(_rows_of(d.name, c.name, c.stability))
    return out


def write_stability_csv(folder: str | Path, summary: Mapping[str, Any]) -> Path:
    """Write FOLDER/stability.csv atomically (bench.safeio), empty cells for null."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, restval="", lineterminator="\n")
    w.writeheader()
    w.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows(summary))
    from bench import safeio
    return safeio.write_text(Path(folder) / FILE, buf.getvalue())
