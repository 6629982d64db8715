"""Devices that stopped answering for a share of the run (results/README.md, "Run status").

Within the probing window (the manifest's `started_ns` to `probed_until_ns`), after a device's
first usable clock read (a `read` row with status `ok` and a value), a device is lost when
- it was silent from its last usable read to the end for more than 25 % of the window (it
  stopped answering and did not come back: a dead simulator, a BMC gone for good), or
- its stretches without a usable read, each longer than max(5 s, 3 of its read periods), add up
  to more than 50 % of the window (it came back, but was away most of the run).
A reboot or power cycle it returns from is not a loss, nor a slow start, nor a device that never
answered (`rackclock run` already exits 1 for that: no usable read). The samples are read as a
stream: memory holds one int64 per usable read.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import saferead

NS = 1_000_000_000

LOST_SHARE = 0.25              # silent at the end for more than this share of the window: lost
AWAY_SHARE = 0.5               # silent stretches adding up to more than this share: lost
MIN_GAP_NS = 5 * NS            # shorter stretches without a read are a device's normal pace
GAP_PERIODS = 3                # ... and so are those under 3 of its read periods


def _usable_reads(path: Path) -> array[int]:
    times = array("q")
    try:
        for row in saferead.csv_rows(path):
            if (row.get("kind") == "read" and row.get("status") == "ok"
                    and row.get("value_ns") and (row.get("s_ns") or "").lstrip("-").isdigit()):
                times.append(int(row["s_ns"]))
    except (OSError, saferead.FileFault, OverflowError):
        pass                               # what was read counts; the rest is silence
    return times


def silent_ns(times: Iterable[int], start_ns: int, end_ns: int, gap_ns: int) -> int:
    """The time from the first read in [start_ns, end_ns] to `end_ns` within stretches longer
    than `gap_ns` without a read (0 without any read)."""
    points = sorted(t for t in times if start_ns <= t < end_ns)
    points.append(end_ns)
    return sum(b - a for a, b in zip(points, points[1:]) if b - a > gap_ns)


def _span(start: Any, end: Any) -> bool:
    return isinstance(start, int) and isinstance(end, int) and end > start


def _rate_hz(inventory: dict[str, Any], name: str) -> float:
    return float((inventory.get(name) or {}).get("rate_hz") or 1.0)


def _probed(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("state") is not None


def lost_devices(run_dir: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{device: {"silent_s", "share", "last_read_ns"}} of the devices lost (see the module)."""
    start, end = manifest.get("started_ns"), manifest.get("probed_until_ns")
    if not _span(start, end):
        return {}                          # nothing was probed
    assert isinstance(start, int) and isinstance(end, int)
    inventory = (manifest.get("inventory") or {}).get("devices") or {}
    lost = {}
    for name, entry in (manifest.get("devices") or {}).items():
        if not _probed(entry):
            continue                       # never probed (not started, or no probing loop)
        rate = _rate_hz(inventory, name)
        found = _loss(Path(run_dir) / "samples" / f"{name}.csv", start, end, rate)
        if found is not None:
            lost[name] = found
    return lost


def _loss(samples: Path, start: int, end: int, rate_hz: float) -> dict[str, Any] | None:
    """One device's loss over [start, end] from its samples file (None: not lost)."""
    gap = max(MIN_GAP_NS, int(GAP_PERIODS * NS / rate_hz))
    times = _usable_reads(samples)
    silent, window = silent_ns(times, start, end, gap), end - start
    last = max((t for t in times if t < end), default=None)
    tail = end - last if last is not None else 0
    if silent > AWAY_SHARE * window or (tail > gap and tail > LOST_SHARE * window):
        return {"silent_s": round(silent / NS, 1), "share": round(silent / window, 3),
                "last_read_ns": last}
    return None


def lost_line(lost: dict[str, dict[str, Any]], devices: int) -> str:
    """One line: how many devices were lost, the worst first."""
    worst = sorted(lost.items(), key=lambda kv: -kv[1]["share"])
    names = ", ".join(f"{n} ({100 * d['share']:.0f} %)" for n, d in worst[:6])
    more = f" and {len(worst) - 6} more" if len(worst) > 6 else ""
    return (f"{len(lost)} of {devices} devices stopped answering (no usable read for the last "
            f"{100 * LOST_SHARE:.0f} % of the run, or for {100 * AWAY_SHARE:.0f} % of it): "
            f"{names}{more}")
