"""What the terminal shows: a progress bar with a live line per device, and the closing table."""
from __future__ import annotations

import sys
import time
from datetime import datetime, timezone

from bench.model.statuses import Verdict
from bench.units import fmt_interval_ns, fmt_ns, fmt_ppm


class Progress:
    """Callable given to the runner: redraws twice a second on a terminal, one line per device
    every 10 s elsewhere (CI logs)."""

    def __init__(self, duration_s: float, stream=None, live=None):
        self.duration = duration_s
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.bars = None
        self._last_plain = 0.0
        self._final_done = False
        self.live = live                  # bench.output.live.LiveBounds: each clock's offset width

    def line(self, st) -> str:
        br = fmt_ns(st.last_bracket_ns) if st.last_bracket_ns is not None else "—"
        err = f" last error: {st.last_error}" if st.last_error else ""
        bounds = self.live.text(st) if self.live is not None else ""
        return (f"{st.name:<12} {st.plane:<8} {st.state:<12} reads {st.reads:>5}  "
                f"bracket {br:>9}  stimuli {st.stimuli:>2}  events {st.events:>3}  "
                f"errors {st.errors:>3}" + (f"  | {bounds}" if bounds else "") + err)[:220]

    def __call__(self, statuses, elapsed_s: float) -> None:
        if self.tty:
            from tqdm import tqdm
            if self.bars is None:
                self.bars = [tqdm(total=round(self.duration), unit="s", desc="run", position=0,
                                  file=self.stream, leave=True, bar_format=
                                  "{desc} {bar} {n:.0f}/{total:.0f} s  [{elapsed}<{remaining}]")]
                self.bars += [tqdm(total=1, position=i + 1, file=self.stream, leave=True,
                                   bar_format="{desc}") for i in range(len(statuses))]
            self.bars[0].n = min(round(elapsed_s), round(self.duration))
            self.bars[0].refresh()
            for bar, st in zip(self.bars[1:], statuses):
                bar.set_description_str(self.line(st))
        else:
            final = all(s.state in ("done", "failed", "hung", "stopped") for s in statuses)
            if self._final_done or not (final or time.monotonic() - self._last_plain >= 10):
                return
            self._final_done = final       # the closing block once, however often it is asked
            self._last_plain = time.monotonic()
            print(f"-- {elapsed_s:5.0f} / {self.duration:.0f} s", file=self.stream)
            for st in statuses:
                print("   " + self.line(st), file=self.stream)
            self.stream.flush()

    def close(self) -> None:
        if self.bars:
            for b in self.bars:
                b.close()
            self.bars = None


def _iso(ns: float) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def offset_cell(o, counter: bool) -> str:
    """An offset Bound (ns) as a table cell."""
    width = o.hi - o.lo
    if counter:          # a counter's offset is minus its zero instant: show the boot instant
        return f"zero at {_iso(-o.point)} ±{fmt_ns(width / 2)}"
    return f"{fmt_interval_ns(o.lo, o.hi)} (width {fmt_ns(width)})"


def table(summary, manifest=None) -> str:
    """The closing table: one row per device clock, its last segment's bounds; then the stimulus
    latencies and (when the rack file has [limits] and `manifest` is given) the limit checks.
    `summary`, `manifest`: dicts as written, or bench.model.documents records."""
    from bench.model.documents import Manifest, Summary
    summary = Summary.of(summary)
    manifest = Manifest.of(manifest) if manifest else None
    head = ["device", "plane", "clock", "reads", "offset (status)", "drift (status)",
            "bracket p50", "breaks", "errors", "truth"]
    from bench.output.live import calibrated_cell
    if manifest and manifest.calibration:
        head.append("calibrated after")
    rows, notes = [], []
    for name, d in summary.devices.items():
        for part in d.no_clock:
            notes.append(f"{name} {part}: has no clock; its events are bounded only by when the "
                         f"bench saw them")
        errs = d.errors_text()
        if not d.clocks:
            rows.append([name, d.plane, "—", "0", "no clock", "", "", "", errs, ""]
                        + [""] * (len(head) - 10))
        for clock, c in d.clocks.items():
            segs = c.segments
            if not segs:
                rows.append([name, d.plane, clock, str(c.reads), c.note or "no fit",
                             "", "", "", errs, ""] + [""] * (len(head) - 10))
                continue
            s = segs[-1]
            truth = ""
            if s.truth is not None:
                truth = "inside" if s.truth.inside else "OUTSIDE"
                if len(segs) > 1:
                    allin = all(x.truth is not None and x.truth.inside for x in segs)
                    truth = "inside" if allin else "OUTSIDE"
            dr = s.drift_ppm
            rows.append([name, d.plane, clock, str(c.reads or s.reads),
                         offset_cell(s.offset_ns, c.counter)
                         + f" {s.offset_status or 'proven'}",
                         f"[{fmt_ppm(dr.lo)}, {fmt_ppm(dr.hi)}] {s.drift_status or 'proven'}",
                         fmt_ns(s.bracket_median_ns),
                         str(len(c.breaks)) + (f" +{len(c.wraps)} wrap" if c.wraps else ""),
                         errs, truth])
            if len(head) > len(rows[-1]):
                rows[-1].append(calibrated_cell(manifest, name, clock))
            if c.verdict == Verdict.BEYOND_PRIOR:
                notes.append(f"{name} {clock}: DRIFT BEYOND THE PRIOR: {c.beyond_prior_note}")
            for o in c.outliers:
                notes.append(f"{name} {clock}: read at {_iso(o.t_ns)} set aside: {o.reason}")
            if c.zone_note:
                notes.append(f"{name} {clock}: {c.zone_note}")
            if c.resolution_note:
                notes.append(f"{name} {clock}: {c.resolution_note}")
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r).rstrip() for r in rows]
    lines += [f"note: {n}" for n in notes]
    lat = latency_table(summary)
    out = "\n".join(lines) + ("\n\n" + lat if lat else "")
    if manifest:
        from bench.model.limits import check_run, text_table
        lim = text_table(check_run(summary, manifest))
        out += "\n\n" + lim if lim else ""
    return out


def latency_table(summary) -> str:
    """Stimulus to log latency per device and stimulus: proven bounds over all events."""
    from bench.model.documents import Summary
    rows = []
    for name, d in Summary.of(summary).devices.items():
        for stim, x in d.latency.items():
            cells = [f"[{fmt_ns(b.lo)}, {fmt_ns(b.hi)}] (n={b.n})" if b else "—"
                     for b in (x.logged_ns, x.observed_ns)]
            rows.append([name, stim, str(x.sent), *cells])
    if not rows:
        return ""
    head = ["device", "stimulus", "sent", "stamped in log after (proven)", "seen by the bench after"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)),
                      *(fmt.format(*r).rstrip() for r in rows)])
