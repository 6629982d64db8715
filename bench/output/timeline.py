"""The timeline written out: a terminal table, timeline.json and timeline.csv (every entry, its
raw stamp beside its interval and the calibration it came from), and OpenTelemetry-style log
records (timeline.otel.json: the device's raw time as the record time, the interval bounds,
calibration and order as attributes; the OTLP/JSON shape of `resourceLogs`)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from bench.units import fmt_ns

FIELDS = ("index", "block", "source", "plane", "label", "lo_ns", "hi_ns", "basis", "raw",
          "calibration", "status", "distance_ns", "unordered_count", "unordered_with")


def rows_data(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        en = r["entry"]
        out.append({"index": r["index"], "block": r["block"], "source": en.source,
                    "plane": en.plane, "label": en.label, "lo_ns": en.lo_ns, "hi_ns": en.hi_ns,
                    "basis": en.basis, "raw": en.raw, "calibration": en.calibration,
                    "status": en.status if en.basis in ("stamp", "event") else "proven",
                    "distance_ns": en.distance_ns, "unordered_count": r["unordered_count"],
                    "unordered_with": r["unordered_with"]})
    return out


def print_table(rows: list[dict], reports: list[dict], unplaced: list[dict], t0: int,
                limit: int = 200) -> None:
    for rep in reports:
        print(f"{rep['file']} -> {rep['device']}: {rep['format']} ({rep['how']}), "
              f"{rep['lines']} lines, {rep['mapped']} mapped, order: {rep.get('order', '-')}"
              + (f", {rep['status']}" if rep.get("status") else ""))
        for nt in rep["notes"]:
            print(f"  assumed: {nt}")
        if rep["unparsed"]:
            print(f"  {len(rep['unparsed'])} lines not parsed:")
            for u in rep["unparsed"][:20]:
                print(f"    line {u['line']}: {u['why']}: {u['text'][:80]!r}")
            if len(rep["unparsed"]) > 20:
                print(f"    ... {len(rep['unparsed']) - 20} more in timeline.json")
        for u in rep["unplaced"][:20]:
            print(f"  line {u['line']} ({u['raw']}): {u['why']}")
        if len(rep["unplaced"]) > 20:
            print(f"  ... {len(rep['unplaced']) - 20} more unplaced in timeline.json")
    for u in unplaced:
        print(f"{u['source']} event {u['line']} ({u['raw']}): {u['why']}")
    print(f"{'#':>5}  {'from (s)':>12}  {'to (s)':>12}  {'width':>9}  {'status':<12} "
          f"{'device':<10} {'raw stamp':<26} {'order':<20} what")
    for r in rows[:limit]:
        en = r["entry"]
        ordtxt = "proven" if not r["unordered_count"] else f"unordered with {r['unordered_count']}"
        st = en.status if en.basis in ("stamp", "event") else en.basis
        print(f"{r['index']:>5}  {(en.lo_ns - t0) / 1e9:>12.6f}  {(en.hi_ns - t0) / 1e9:>12.6f}  "
              f"{fmt_ns(en.width_ns):>9}  {st:<12} {en.source:<10} {en.raw[:26]:<26} "
              f"{ordtxt:<20} {en.label[:60]}")
    if len(rows) > limit:
        print(f"... {len(rows) - limit} more entries (all in timeline.json and timeline.csv; "
              f"--rows N to print more)")
    blocks = len({r["block"] for r in rows})
    print(f"{len(rows)} entries in {blocks} proven-ordered blocks; "
          f"{sum(1 for r in rows if r['unordered_count'])} entries unordered against another")


def otel_records(data: list[dict]) -> dict:
    """OTLP/JSON `resourceLogs`, one resource per source: timeUnixNano is the device's own time
    as written (0 when it is not a Unix time), the reference interval an attribute."""
    by_source: dict[str, list] = {}
    for d in data:
        raw_ns = d.get("raw_ns")
        attrs = {"rackclock.interval.lo_ns": d["lo_ns"], "rackclock.interval.hi_ns": d["hi_ns"],
                 "rackclock.raw_timestamp": d["raw"], "rackclock.calibration": d["calibration"],
                 "rackclock.status": d["status"], "rackclock.basis": d["basis"],
                 "rackclock.order.block": d["block"],
                 "rackclock.order.unordered_count": d["unordered_count"],
                 "rackclock.distance_ns": d["distance_ns"], "rackclock.plane": d["plane"]}
        by_source.setdefault(d["source"], []).append({
            "timeUnixNano": str(raw_ns if raw_ns is not None else 0),
            "body": {"stringValue": d["label"]},
            "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int)
                            else {"stringValue": str(v)}} for k, v in attrs.items()]})
    return {"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": src}}]},
        "scopeLogs": [{"scope": {"name": "rackclock.timeline"}, "logRecords": recs}]}
        for src, recs in by_source.items()]}


def write_outputs(folder: Path, rows: list[dict], reports: list[dict],
                  unplaced: list[dict]) -> list[Path]:
    data = rows_data(rows)
    for d, r in zip(data, rows):
        en = r["entry"]     # a wall stamp (after 2000) is a Unix time; a counter's is not
        d["raw_ns"] = en.stamp_ns if en.basis == "stamp" and en.stamp_ns is not None \
            and en.stamp_ns > 946_684_800 * 10**9 else None
    paths = [folder / "timeline.json", folder / "timeline.csv", folder / "timeline.otel.json"]
    paths[0].write_text(json.dumps({"schema": 2, "entries": data, "logs": reports,
                                    "unplaced": unplaced}, indent=1))
    with open(paths[1], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(FIELDS), extrasaction="ignore")
        w.writeheader()
        for d in data:
            w.writerow({**d, "unordered_with": " ".join(map(str, d["unordered_with"]))})
    paths[2].write_text(json.dumps(otel_records(data)))
    return paths
