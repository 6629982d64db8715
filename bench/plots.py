"""Per-device figures: offset over time with the proven band, the reads, breaks and (simulated
racks) the truth. Drawn from summary.json and the samples; nothing is recomputed here."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.rundata import Run  # noqa: E402

PLANE_COLOURS = {"bmc": "#1f77b4", "pdu": "#d62728", "cooling": "#2ca02c", "optic": "#9467bd",
                 "reference": "#7f7f7f"}


def plane_colour(plane: str) -> str:
    return PLANE_COLOURS.get(plane, "#8c564b")


def _segment_lines(segs: list[dict]):
    """Per segment its fitted line (point offset and drift) as a function of reference time."""
    def make(sg):
        epoch, theta = sg["epoch_ns"], sg["offset_ns"]["point"]
        rho = sg["drift_ppm"]["point"] * 1e-6
        return lambda t: theta + rho * (np.asarray(t, dtype=float) - epoch)
    return [make(sg) for sg in segs]


def _segment_index(segs: list[dict], t: np.ndarray) -> np.ndarray:
    """Index of the segment each instant belongs to (the last one starting at or before it)."""
    starts = np.asarray([sg["start_ns"] for sg in segs], dtype=np.int64)
    return np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(segs) - 1)


def offset_figure(run: Run, device: str, clock: str, c: dict, plane: str):
    """Offset minus each segment's own fitted line, in ms, against run time in s: the proven
    band, every read's own interval, breaks, and (simulated racks) the truth."""
    segs = c.get("segments", [])
    t_start = run.manifest.get("started_ns") or segs[0]["start_ns"]
    lines = _segment_lines(segs)

    def resid(t, y):
        t = np.asarray(t, dtype=np.int64)
        k = _segment_index(segs, t)
        base = np.array([lines[j](ti) for j, ti in zip(k, t)], dtype=float)
        return (np.asarray(y, dtype=float) - base) / 1e6

    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=150)
    colour = plane_colour(plane)
    s, e, v, q = run.clock_reads(device, clock)
    if len(s):
        mid = (s + e) // 2
        ax.vlines((mid - t_start) / 1e9, resid(mid, v - e), resid(mid, v + q - s), color="0.75",
                  lw=0.6, label="reads (each one's interval)")
    widths = []
    for k, sg in enumerate(segs):
        b = sg.get("band")
        if not b:
            continue
        t = np.asarray(b["t_ns"], dtype=np.int64)
        base = lines[k](t)
        blo, bhi = np.asarray(b["lo"]) - base, np.asarray(b["hi"]) - base
        widths.append(float(np.max(bhi - blo)))
        ax.fill_between((t - t_start) / 1e9, blo / 1e6, bhi / 1e6, color=colour, alpha=0.35,
                        lw=0, label="proven band" if k == 0 else None)
    for br in c.get("breaks", []):
        a, b2 = (br["after_ns"] - t_start) / 1e9, (br["before_ns"] - t_start) / 1e9
        ax.axvspan(a, b2, color="k", alpha=0.15)
        size = br.get("size_ns") or {}
        what = f" {size['point'] / 1e6:+.1f} ms" if size.get("point") is not None else ""
        ax.axvline((a + b2) / 2, color="k", ls="--", lw=0.8,
                   label=f"break ({br['kind']}{what})" if br is c["breaks"][0] else None)
    truth = (run.truth or {}).get("devices", {}).get(device, {}).get("clocks", {}).get(clock)
    if truth and not c.get("counter"):
        tt = np.asarray(truth["t_ns"], dtype=np.int64)
        to = np.asarray(truth["offset_ns"], dtype=np.float64)
        for k, sg in enumerate(segs):      # truth inside each segment, against its own line
            keep = (tt >= sg["start_ns"]) & (tt <= sg["end_ns"])
            if keep.any():
                ax.plot((tt[keep] - t_start) / 1e9, (to[keep] - lines[k](tt[keep])) / 1e6,
                        color="k", lw=1, label="truth (simulated)" if k == 0 else None)
    span = max(widths) if widths else 1e6
    ax.set_ylim(-3 * span / 1e6, 3 * span / 1e6)
    ax.set_xlabel("run time (s)")
    ax.set_ylabel("offset − segment fit (ms)")
    ref = segs[-1]
    ax.set_title(f"{device} · {clock}: offset {ref['offset_ns']['point'] / 1e9:+.6f} s at epoch, "
                 f"drift {ref['drift_ppm']['point']:+.2f} ppm"
                 + (f", {len(segs)} segments" if len(segs) > 1 else ""), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def offset_plots(run: Run, out_dir: Path | None = None, formats=("png",)) -> list[Path]:
    """One offset figure per device clock with at least one segment; returns the files. A figure
    that fails leaves `offset_<device>_<clock>.error.txt` saying why, and the others are drawn."""
    out_dir = Path(out_dir or run.path / "plots")
    out_dir.mkdir(exist_ok=True)
    written = []
    for device, d in run.summary.get("devices", {}).items():
        for clock, c in d.get("clocks", {}).items():
            if not c.get("segments"):
                continue
            try:
                fig = offset_figure(run, device, clock, c, d.get("plane", ""))
                for fmt in formats:
                    p = out_dir / f"offset_{device}_{clock}.{fmt}"
                    fig.savefig(p)
                    written.append(p)
            except Exception as exc:   # one figure that cannot be drawn costs only itself
                (out_dir / f"offset_{device}_{clock}.error.txt").write_text(f"{exc!r}\n")
            finally:
                plt.close("all")
    return written
