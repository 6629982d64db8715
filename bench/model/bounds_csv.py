"""RUN/bounds.csv: the bounds a lab scripts against, flat: one row per device clock and segment,
written beside summary.json whenever it is (results/README.md documents the columns).

Offsets in integer ns, drifts in ppm; each bound with its status in the one vocabulary
(proven / assumed / undecided; a stuck clock's row has status `stuck` and empty bounds), the
segment's calibrated span (first to last read) and the model its proven bounds rest on."""
from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.model.vocabulary import STUCK, word
from bench.units import fmt_end

if TYPE_CHECKING:
    from bench.model.clock_records import ClockSummary

FILE = "bounds.csv"
COLUMNS = ["device", "clock", "segment", "counter", "verdict", "span_from_ns", "span_to_ns",
           "span_s", "reads", "epoch_ns", "offset_lo_ns", "offset_hi_ns", "offset_status",
           "drift_lo_ppm", "drift_hi_ppm", "drift_status", "mean_drift_lo_ppm",
           "mean_drift_hi_ppm", "mean_drift_status", "mean_drift_from_ns", "mean_drift_to_ns",
           "model"]


def _model(c: ClockSummary) -> str:
    a = c.assumptions
    if a is None:
        return ""
    return str(a.raw.get("model") or f"drift prior ±{a.drift_prior_ppm:g} ppm; "
               f"{a.rate_changes or 'at most one unseen break per segment'}")


def rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of bounds.csv from a summary (dict or bench.model.summary_records.Summary)."""
    from bench.model.summary_records import Summary
    out: list[dict[str, Any]] = []
    for d, c in Summary.of(summary).clocks():
        base = {"device": d.name, "clock": c.name, "counter": int(c.counter),
                "verdict": word(c.verdict) if c.verdict else "", "model": _model(c)}
        if c.verdict == STUCK:
            st = c.raw.get("stuck") or {}
            out.append({**base, "segment": "", "reads": st.get("reads", c.reads),
                        "span_s": st.get("span_s", ""), "offset_status": STUCK,
                        "drift_status": STUCK})
            continue
        out += [_segment_row(base, i, sg) for i, sg in enumerate(c.segments)]
        if not c.segments:
            out.append({**base, "segment": "", "reads": c.reads,
                        "offset_status": "undecided", "drift_status": "undecided"})
    return out


def _segment_row(base: dict[str, Any], i: int, s: Any) -> dict[str, Any]:
    """One segment's row: its span, offset and drift bounds, each with its status."""
    m = s.mean_drift_ppm or {}
    return {**base, "segment": i, "span_from_ns": s.start_ns, "span_to_ns": s.end_ns,
            "span_s": f"{s.span_s:.3f}", "reads": s.reads, "epoch_ns": s.epoch_ns,
            "offset_lo_ns": math.floor(s.offset_ns.lo),
            "offset_hi_ns": math.ceil(s.offset_ns.hi),
            "offset_status": word(s.offset_status),
            "drift_lo_ppm": fmt_end(s.drift_ppm.lo, "", False, 6),
            "drift_hi_ppm": fmt_end(s.drift_ppm.hi, "", True, 6),
            "drift_status": word(s.drift_status or "assumed"),
            "mean_drift_lo_ppm": "" if not m else fmt_end(m["lo"], "", False, 6),
            "mean_drift_hi_ppm": "" if not m else fmt_end(m["hi"], "", True, 6),
            "mean_drift_status": "" if not m else word(m.get("status")),
            "mean_drift_from_ns": m.get("from_ns", ""),
            "mean_drift_to_ns": m.get("to_ns", "")}


def write_bounds_csv(folder: str | Path, summary: Mapping[str, Any]) -> Path:
    """Write FOLDER/bounds.csv atomically (a reader never sees half a file)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(rows(summary))
    from bench import safeio
    return safeio.write_text(Path(folder) / FILE, buf.getvalue())
