"""`rackclock timeline RUN [DEVICE[:CLOCK]=LOG ...]`: merge a run's device events, stimuli and
clock breaks, and any log files of the rack's planes, into one timeline in reference time.

A log line's leading timestamp (ISO 8601, or seconds as a number for counter clocks) is taken in
the named device clock and mapped through that clock's proven bounds; its resolution is the
precision the stamp is written with (or the clock's, if coarser). `--widen-latency` turns stamps
into event instants using the logging latency the run measured for that device.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from bench.health_monitor import bound_from_manifest
from bench.rundata import load_run
from bench.summary import device_meta, fit_clocks, map_stamp, segment_for
from bench.timeline import Entry, order, widen
from bench.units import fmt_ns

ISO = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
NUM = re.compile(r"^\s*\[?\s*(\d+)(\.\d+)?\]?")


def parse_stamp(line: str) -> tuple[int, int, str] | None:
    """(value_ns, resolution_ns, rest of line) from a line's leading timestamp, or None.
    ISO stamps without a zone are read as UTC."""
    m = ISO.match(line)
    if m:
        base = datetime.fromisoformat(m.group(1).replace(" ", "T"))
        tz = m.group(3)
        if tz and tz != "Z":
            tz = tz if ":" in tz else tz[:3] + ":" + tz[3:]
            base = datetime.fromisoformat(m.group(1).replace(" ", "T") + tz)
        else:
            base = base.replace(tzinfo=timezone.utc)
        frac = m.group(2) or ""
        digits = len(frac) - 1 if frac else 0
        ns = int(base.timestamp()) * 1_000_000_000 + (int(frac[1:].ljust(9, "0")[:9]) if frac else 0)
        return ns, 10 ** (9 - min(digits, 9)), line[m.end():].strip()
    m = NUM.match(line)
    if m:
        frac = m.group(2) or ""
        digits = len(frac) - 1 if frac else 0
        ns = int(m.group(1)) * 1_000_000_000 + (int(frac[1:].ljust(9, "0")[:9]) if frac else 0)
        return ns, 10 ** (9 - min(digits, 9)), line[m.end():].strip()
    return None


def run_entries(run, fits: dict) -> list[Entry]:
    """Stimuli, device log events and clock breaks of a run folder."""
    out = []
    for name in run.devices:
        smp = run.samples(name)
        plane = run.manifest.get("devices", {}).get(name, {}).get("plane", "")
        res = fits.get(name, {})
        for i in range(len(smp)):
            if smp.status[i] != "ok":
                continue
            s, e = int(smp.s_ns[i]), int(smp.e_ns[i])
            if smp.kind[i] == "stimulus":
                out.append(Entry(name, plane, f"stimulus {smp.clock[i]}", s, e, "reference"))
            elif smp.kind[i] == "event":
                r = res.get(smp.clock[i])
                iv = map_stamp(r, int(smp.value_ns[i]), int(smp.resolution_ns[i]), e) \
                    if smp.has_value[i] else None
                if iv is None:       # no device stamp: what is proven is when the bench saw it
                    out.append(Entry(name, plane, f"seen: {smp.raw[i]}", s, e, "observed"))
                    continue
                k = r.fit.segments.index(segment_for(r.fit.segments, e))
                out.append(Entry(name, plane, smp.raw[i], iv[0], min(iv[1], e), "stamp",
                                 f"{name}/{smp.clock[i]}/{k}", int(smp.value_ns[i]),
                                 int(smp.resolution_ns[i])))
        for clock, r in res.items():
            for b in (r.fit.breaks if r.fit else []):
                size = f" of {fmt_ns(b.size_ns.point)}" if b.size_ns is not None else ""
                out.append(Entry(name, plane, f"{clock} {b.kind}{size}", int(b.after_ns),
                                 int(b.before_ns), "break"))
    return out


def log_entries(run, fits: dict, spec: str) -> list[Entry]:
    target, _, path = spec.partition("=")
    device, _, clock = target.partition(":")
    res = fits.get(device, {})
    if not path or device not in fits:
        raise SystemExit(f"{spec!r}: expected DEVICE[:CLOCK]=FILE with a device of this run "
                         f"(devices: {', '.join(sorted(fits))})")
    clock = clock or next(iter(res), "")
    r = res.get(clock)
    if r is None or r.fit is None or not r.fit.segments:
        raise SystemExit(f"{device}: clock {clock!r} has no fit in this run")
    plane = run.manifest.get("devices", {}).get(device, {}).get("plane", "")
    near = r.fit.segments[-1].end_ns
    out = []
    for n, line in enumerate(Path(path).read_text(errors="replace").splitlines(), 1):
        p = parse_stamp(line)
        if p is None:
            continue
        v, q, text = p
        q = max(q, r.fit.resolution_ns if r.fit.resolution_ns <= q * 1000 else q)
        lo, hi = map_stamp(r, v, q, near)
        out.append(Entry(device, plane, f"{Path(path).name}:{n} {text}"[:160], lo, hi, "stamp",
                         f"{device}/{clock}/log", v, q))
    return out


def build_timeline(run, logs: list[str] = (), widen_latency: bool = False) -> list[dict]:
    """The ordered timeline of a run folder (see bench.timeline.order), with any log files."""
    uncertainty = bound_from_manifest(run.manifest)
    fits = {n: fit_clocks(run.samples(n), device_meta(run.manifest, n), uncertainty)
            for n in run.devices}
    entries = run_entries(run, fits)
    for spec in logs:
        entries += log_entries(run, fits, spec)
    if widen_latency:
        lat = {}
        for name, d in run.summary.get("devices", {}).items():
            b = [x["logged_ns"] for x in d.get("latency", {}).values() if "logged_ns" in x]
            if b:
                lat[name] = (min(x["lo"] for x in b), max(x["hi"] for x in b))
        entries = [widen(en, *lat[en.source]) if en.basis == "stamp" and en.source in lat else en
                   for en in entries]
    return order(entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock timeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("logs", nargs="*", metavar="DEVICE[:CLOCK]=LOG", help="a log file of a device")
    ap.add_argument("--widen-latency", action="store_true",
                    help="bound event instants, not stamps, with the run's measured log latency")
    a = ap.parse_args(argv)
    run = load_run(a.run)
    rows = build_timeline(run, a.logs, a.widen_latency)
    t0 = run.manifest.get("started_ns") or (rows[0]["entry"].lo_ns if rows else 0)
    print(f"{'#':>4}  {'from (s)':>12}  {'to (s)':>12}  {'width':>9}  {'basis':<9} "
          f"{'device':<10} {'order':<22} what")
    for r in rows:
        en = r["entry"]
        un = r["unordered_with"]
        ordtxt = "proven" if not un else "unordered with " + ",".join(map(str, un[:4])) + \
            ("…" if len(un) > 4 else "")
        print(f"{r['index']:>4}  {(en.lo_ns - t0) / 1e9:>12.6f}  {(en.hi_ns - t0) / 1e9:>12.6f}  "
              f"{fmt_ns(en.width_ns):>9}  {en.basis:<9} {en.source:<10} {ordtxt:<22} {en.label[:70]}")
    data = [{"index": r["index"], "block": r["block"], "unordered_with": r["unordered_with"],
             **{k: getattr(r["entry"], k) for k in ("source", "plane", "label", "lo_ns", "hi_ns",
                                                     "basis")}} for r in rows]
    (run.path / "timeline.json").write_text(json.dumps({"schema": 1, "entries": data}, indent=1))
    with open(run.path / "timeline.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0]) if data else ["index"])
        w.writeheader()
        w.writerows(data)
    blocks = len({r["block"] for r in rows})
    print(f"{len(rows)} entries in {blocks} proven-ordered blocks; "
          f"{sum(1 for r in rows if r['unordered_with'])} entries unordered against another; "
          f"written to {run.path / 'timeline.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
