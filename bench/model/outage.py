"""Devices that stopped answering for a share of the run (results/README.md, "Run status").

A device is lost when, from its first usable clock read (a `read` row with status `ok` and a
value) to the end of probing (the manifest's `probed_until_ns`), its stretches without one, each
longer than max(5 s, 3 of its read periods), add up to more than 25 % of the probing window
(from `started_ns`). A slow start is not counted (a device found late did not stop answering),
nor a device that never answered (`rackclock run` already exits 1 for it: no usable read). The
samples are read as a stream: memory holds one int64 per usable read.
"""
from __future__ import annotations

import csv
from array import array
from pathlib import Path

NS = 1_000_000_000

LOST_SHARE = 0.25              # more than this share of the window without usable reads: lost
MIN_GAP_NS = 5 * NS            # shorter stretches without a read are a device's normal pace
GAP_PERIODS = 3                # ... and so are those under 3 of its read periods


def _usable_reads(path: Path) -> array:
    times = array("q")
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if (row.get("kind") == "read" and row.get("status") == "ok"
                        and row.get("value_ns") and (row.get("s_ns") or "").lstrip("-").isdigit()):
                    times.append(int(row["s_ns"]))
    except (OSError, csv.Error, OverflowError):
        pass                               # what was read counts; the rest is silence
    return times


def silent_ns(times, start_ns: int, end_ns: int, gap_ns: int) -> int:
    """The time from the first read in [start_ns, end_ns] to `end_ns` within stretches longer
    than `gap_ns` without a read (0 without any read)."""
    points = sorted(t for t in times if start_ns <= t < end_ns)
    points.append(end_ns)
    return sum(b - a for a, b in zip(points, points[1:]) if b - a > gap_ns)


def lost_devices(run_dir: Path, manifest: dict) -> dict[str, dict]:
    """{device: {"silent_s", "share", "last_read_ns"}} of the devices lost (see the module)."""
    start, end = manifest.get("started_ns"), manifest.get("probed_until_ns")
    if not isinstance(start, int) or not isinstance(end, int) or end <= start:
        return {}                          # nothing was probed
    inventory = (manifest.get("inventory") or {}).get("devices") or {}
    lost = {}
    for name, entry in (manifest.get("devices") or {}).items():
        if not isinstance(entry, dict) or entry.get("state") is None:
            continue                       # never probed (not started, or no probing loop)
        rate = float((inventory.get(name) or {}).get("rate_hz") or 1.0)
        gap = max(MIN_GAP_NS, int(GAP_PERIODS * NS / rate))
        times = _usable_reads(Path(run_dir) / "samples" / f"{name}.csv")
        silent = silent_ns(times, start, end, gap)
        if silent > LOST_SHARE * (end - start):
            lost[name] = {"silent_s": round(silent / NS, 1), "share": round(silent / (end - start), 3),
                          "last_read_ns": max(times)}
    return lost


def lost_line(lost: dict[str, dict], devices: int) -> str:
    """One line: how many devices were lost, the worst first."""
    worst = sorted(lost.items(), key=lambda kv: -kv[1]["share"])
    names = ", ".join(f"{n} ({100 * d['share']:.0f} %)" for n, d in worst[:6])
    more = f" and {len(worst) - 6} more" if len(worst) > 6 else ""
    return (f"{len(lost)} of {devices} devices had no usable read for more than "
            f"{100 * LOST_SHARE:.0f} % of the run: {names}{more}")
