"""The timeline written out: a terminal table, timeline.json and timeline.csv (every entry, its
raw stamp beside its interval and the calibration it came from), OpenTelemetry-style log
records (timeline.otel.json: the device's raw time as the record time, the interval bounds,
calibration and order as attributes; the OTLP/JSON shape of `resourceLogs`), and timeline.html
(one lane per plane, the user's own log lines marked). The three entry files are written by
bench/output/timeline_files.py, a chunk of rows at a time: memory does not grow with the number
of entries."""
from __future__ import annotations

from pathlib import Path

from bench.model.timeline_table import utc_text
from bench.output.timeline_files import Vocabulary, chunks, write_files
from bench.units import fmt_ns

HTML_ROWS = 2000


def print_table(tl, t0: int, limit: int = 200) -> None:
    for rep in tl.reports:
        _print_report(rep)
    for u in tl.unplaced:
        print(f"{u['source']} event {u['line']} ({u['raw']}): {u['why']}")
    print(f"{'#':>5}  {'from (UTC)':<27} {'from (s)':>11} {'to (s)':>11} {'width':>9}  "
          f"{'status':<12} {'device':<10} {'device time':<27} {'order':<16} what")
    n = min(limit, len(tl))
    utc = utc_text(tl.c["lo"][:n]).tolist()
    voc = Vocabulary(tl)
    rows = [r for ch in chunks(tl, voc, n) for r in zip(
        ch.ix, ch.dev.tolist(), ch.label, ch.lo, ch.hi, ch.basis, ch.status, ch.count, ch.dtime,
        ch.src.tolist())]
    for (i, dev, label, lo, hi, basis, status, cnt, dtime, src), u in zip(rows, utc):
        lo, hi = int(lo), int(hi)
        ordtxt = "proven" if not cnt else f"unordered with {cnt}"
        st = status if basis in ("stamp", "event") else basis
        mark = "*" if tl.table.sources[src].log else " "
        print(f"{i:>5}{mark} {u:<27} {(lo - t0) / 1e9:>11.6f} {(hi - t0) / 1e9:>11.6f} "
              f"{fmt_ns(hi - lo):>9}  {st:<12} {tl.table.devices[dev][0][:10]:<10} "
              f"{dtime[:27]:<27} {ordtxt:<16} {label[:60]}")
    if len(tl) > limit:
        print(f"... {len(tl) - limit} more entries (all in timeline.json and timeline.csv; "
              f"--rows N to print more)")
    if any(rep.get("mapped") for rep in tl.reports):
        print("* a line of your log files")
    print(f"{len(tl)} entries in {tl.blocks} proven-ordered blocks; {tl.unordered} entries "
          f"unordered against another")


def _print_report(rep: dict) -> None:
    if "error" in rep:
        return                 # said once on stderr by the command
    print(f"{rep['file']} -> {rep['device']}: {rep['format']} ({rep['how']}), "
          f"{rep['lines']} lines, {rep['mapped']} mapped, order: {rep.get('order', '-')}"
          + (f", {rep['status']}" if rep.get("status") else ""))
    for nt in rep["notes"]:
        print(f"  assumed: {nt}" if not nt.startswith("lines over") else f"  {nt}")
    if rep["unparsed_count"]:
        print(f"  {rep['unparsed_count']} lines not parsed:")
        for u in rep["unparsed"][:20]:
            print(f"    line {u['line']}: {u['why']}: {u['text'][:80]!r}")
        if rep["unparsed_count"] > 20:
            print(f"    ... {rep['unparsed_count'] - 20} more (the first "
                  f"{len(rep['unparsed'])} in timeline.json)")
    for u in rep["unplaced"][:20]:
        print(f"  line {u['line']} ({u['device_time']}): {u['why']}")
    if rep["unplaced_count"] > 20:
        print(f"  ... {rep['unplaced_count'] - 20} more unplaced (the first "
              f"{len(rep['unplaced'])} in timeline.json)")


def write_html(tl, path: Path, t0: int, limit: int = HTML_ROWS) -> None:
    from bench.output.timeline_page import timeline_html
    rows = tl.rows(0, limit)
    head = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>rackclock timeline"
            "</title></head><body><h1>Cross-plane timeline</h1>")
    cut = (f"<p>The first {len(rows)} of {len(tl)} entries in proven order; all are in "
           f"timeline.json and timeline.csv.</p>" if len(tl) > len(rows) else "")
    path.write_text(head + cut + timeline_html(rows, t0) + "</body></html>", encoding="utf-8")


def write_outputs(folder: Path, tl, t0: int) -> list[Path]:
    """The four files, each written under a fresh temporary name (O_EXCL) and renamed into
    place: a name planted in the folder (a symlink) is replaced, never written through, and a
    reader never sees half a file."""
    import os
    import tempfile
    paths = [folder / "timeline.json", folder / "timeline.csv", folder / "timeline.otel.json",
             folder / "timeline.html"]
    parts = []
    try:
        for p in paths:
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=folder)
            os.close(fd)
            parts.append(Path(tmp))
        write_files(tl, *parts[:3])
        write_html(tl, parts[3], t0)
        for tmp, p in zip(parts, paths):
            os.chmod(tmp, 0o644)
            os.replace(tmp, p)
    finally:
        for tmp in parts:
            tmp.unlink(missing_ok=True)
    return paths
