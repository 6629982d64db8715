"""What the terminal shows: a progress bar with a live line per device, and the closing table."""
from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bench.analysis.statuses import Verdict
from bench.model.decided import fmt_run, mean_drift, only_prior
from bench.model.documents import Manifest, Summary
from bench.model.limit_checks import check_run, text_table
from bench.model.run_statuses import ErrorKind
from bench.model.rundata import OLD_UNUSED
from bench.model.texttable import WIDTH, fit_columns, left_out_lines, render, terminal_width, wrap
from bench.model.verdict import has_truth, truth_word
from bench.model.vocabulary import ASSUMED, LEGEND, PROVEN, STUCK, UNDECIDED, stuck_text, word
from bench.output.live import calibration_state
from bench.units import (
    fmt_bounds_ns,
    fmt_instant_pm,
    fmt_interval_ns,
    fmt_ns,
    fmt_ns_up,
    fmt_ppm,
    ppm_interval,
)

if TYPE_CHECKING:
    from tqdm import tqdm

LIVE_WIDTH = 100     # the live line fits a 100-column terminal with its bounds and status


def live_width() -> int:
    """The live line's width: LIVE_WIDTH, or the terminal's where that is narrower."""
    return min(LIVE_WIDTH, terminal_width())


def _extras(st, rpm: float | None) -> list[str]:
    """What a device's live line shows after its bounds, where there is room, in this order."""
    br = fmt_ns(st.last_bracket_ns) if st.last_bracket_ns is not None else "—"
    return [f"bracket {br}", *([f"{rpm:.0f} req/min"] if rpm is not None else []),
            f"stimuli {st.stimuli} events {st.events}",
            f"last error: {st.last_error}" if st.last_error else ""]


class Progress:
    """Callable given to the runner: redraws twice a second on a terminal, one line per device
    every 10 s elsewhere (CI logs)."""

    def __init__(self, duration_s: float, stream=None, live=None):
        self.duration = duration_s
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.bars: list[tqdm] | None = None
        self._last_plain = 0.0
        self._final_done = False
        self.live = live                  # bench.output.live.LiveBounds: each clock's offset width
        self.elapsed_s = 0.0

    def line(self, st, width: int | None = None) -> str:
        """One device in at most `width` columns: name, state, reads, then each clock's bound
        and status (never cut: shortened first), then what room is left for the rest (default:
        LIVE_WIDTH, or the terminal's width where that is narrower)."""
        width = width or live_width()
        head = f"{st.name[:12]:<12} {st.state:<12} {st.reads:>5} reads" + (
            f" errors {st.errors}" if st.errors else "")
        bounds = self.live.text(st, width - len(head) - 2) if self.live is not None else ""
        out = head + (f"  {bounds}" if bounds else "")
        for extra in _extras(st, _requests_per_min(st, self.elapsed_s)):
            if extra and len(out) + 2 + len(extra) <= width:
                out += f"  {extra}"
        return out[:width]

    def __call__(self, statuses, elapsed_s: float) -> None:
        self.elapsed_s = elapsed_s
        if self.tty:
            from tqdm import tqdm
            if self.bars is None:
                bars = [tqdm(total=round(self.duration), unit="s", desc="run", position=0,
                             file=self.stream, leave=True, bar_format=
                             "{desc} {bar} {n:.0f}/{total:.0f} s  [{elapsed}<{remaining}]")]
                bars += [tqdm(total=1, position=i + 1, file=self.stream, leave=True,
                              bar_format="{desc}") for i in range(len(statuses))]
                self.bars = bars
            bars = self.bars
            bars[0].n = min(round(elapsed_s), round(self.duration))
            bars[0].refresh()
            for bar, st in zip(bars[1:], statuses):
                bar.set_description_str(self.line(st))
        else:
            final = all(s.state in ("done", "failed", "hung", "stopped") for s in statuses)
            if self._final_done or not (final or time.monotonic() - self._last_plain >= 10):
                return
            self._final_done = final       # the closing block once, however often it is asked
            self._last_plain = time.monotonic()
            self.stream.write(f"-- {elapsed_s:5.0f} / {self.duration:.0f} s\n")
            for st in statuses:
                self.stream.write("   " + self.line(st, live_width() - 3) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bars:
            for b in self.bars:
                b.close()
            self.bars = None


def _requests_per_min(st, elapsed_s: float) -> float | None:
    """The requests a driver counted (Redfish: drivers/redfish_session.Meter), per minute of the
    run so far; None before 10 s or without counts."""
    n = (getattr(st, "traffic", None) or {}).get("requests")
    return n * 60.0 / elapsed_s if n and elapsed_s >= 10 else None


def _iso(ns: float) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def offset_cell(o, counter: bool) -> str:
    """An offset Bound (ns) as a table cell."""
    if counter:          # a counter's offset is minus its zero instant: show the boot instant
        return f"zero at {compact_offset(o, True)}"
    return f"{fmt_interval_ns(o.lo, o.hi)} (width {fmt_ns_up(o.hi - o.lo)})"


HEAD = ["clock", "plane", "reads", "offset (counter: its zero)", "drift ppm (assumed)",
        "mean drift ppm", "bracket p50", "breaks", "errors", "truth", "calibration"]
KEEP = [0, 3, 4, 9, 10, 8, 7, 5, 2, 6, 1]     # columns in the order they are given room


def table(summary: Any, manifest: Any = None, width: int | None = WIDTH,
          limits: bool = True) -> str:
    """The closing table: one row per device clock, its last segment's bounds, fitted to `width`
    columns (None: every column); then notes, the legend of the words used, the stimulus
    latencies and (when the rack file has [limits] and `manifest` is given) the limit checks.
    `summary`, `manifest`: dicts as written, or bench.model.documents records."""
    summary = Summary.of(summary)
    manifest = Manifest.of(manifest) if manifest else None
    lines = _clock_lines(summary, manifest, width)
    lines += model_lines(summary, width)
    lat = latency_table(summary, width)
    out = "\n".join(lines) + ("\n\n" + lat if lat else "")
    unused = summary.raw.get("unused_devices") or []
    if unused:
        out += "\n" + "\n".join(wrap(f"not used by this experiment (no rows): "
                                      f"{', '.join(unused)}", width))
    if manifest and limits:
        lim = text_table(check_run(summary, manifest), width)
        out += "\n\n" + lim if lim else ""
    return out


def _clock_lines(summary: Summary, manifest: Manifest | None, width: int | None) -> list[str]:
    """The clock rows fitted to `width`, their notes and the legend of the words they use."""
    rows, notes, used = _rows(summary, manifest)
    cols, left = fit_columns(HEAD, rows, KEEP, width)
    if manifest is None or not manifest.calibration:
        cols = [i for i in cols if i != 10]
    lines = render(HEAD, rows, cols, width, clip=0)
    lines += left_out_lines(left, width)
    notes += _left_out_notes(summary, rows, cols)
    for n in notes:
        lines += wrap(f"note: {n}", width)
    for w in (x for x in (PROVEN, ASSUMED, UNDECIDED, STUCK) if x in used):
        lines += wrap(f"{w}: {LEGEND[w]}", width)
    return lines


def _rows(summary: Summary, manifest: Manifest | None) -> tuple[list[list[str]], list[str], set]:
    """The table's rows, the notes they raise, and the status words they use."""
    rows: list[list[str]] = []
    notes: list[str] = []
    used: set = set()
    known = has_truth(summary)          # a simulated run: a clock without truth says so
    for name, d in summary.devices.items():
        if d.first_errors.get(ErrorKind.NOT_STARTED) == OLD_UNUSED:
            continue                  # an older folder's device the experiment never used
        notes += [f"{name} {part}: has no clock; its events are bounded only by when the bench "
                  f"saw them" for part in d.no_clock]
        if not d.clocks:
            rows.append(_row(name, d, None, "no clock", "", d.errors_text()))
        for clock, c in d.clocks.items():
            rows.append(clock_row(name, d, clock, c, manifest, used, known))
            notes += clock_notes(name, clock, c)
    return rows, notes, used


def _left_out_notes(summary: Summary, rows: list[list[str]], cols: list[int]) -> list[str]:
    """Breaks and errors said in notes where their columns were left out and not zero."""
    notes = []
    if 7 not in cols:
        notes += [f"{r[0]}: breaks {r[7]}" for r in rows if r[7] not in ("", "0")]
    if 8 not in cols:
        notes += [f"{n}: errors {d.errors_text()}" for n, d in summary.devices.items()
                  if d.error_count and d.first_errors.get(ErrorKind.NOT_STARTED) != OLD_UNUSED]
    return notes


def _row(name, d, clock, offset, drift, errs, **kw) -> list[str]:
    cells = {"clock": f"{name} {clock}" if clock else name, "plane": d.plane,
             "offset (counter: its zero)": offset, "drift ppm (assumed)": drift, "errors": errs}
    return [kw.get(h, cells.get(h, "")) for h in HEAD]


def clock_row(name, d, clock, c, manifest, used: set, known: bool = False) -> list[str]:
    """One clock's row: its last segment (offset, drift, bracket), breaks, truth, calibration."""
    errs = d.errors_text()
    if c.verdict == STUCK:
        used.add(STUCK)
        return _row(name, d, clock, stuck_text(c.raw.get("stuck")), "—", errs, reads=str(c.reads))
    if not c.segments:
        used.add(UNDECIDED)
        return _row(name, d, clock, f"{UNDECIDED}: {c.note or 'no fit'}", "", errs,
                    reads=str(c.reads))
    s = c.segments[-1]
    ost, dst = word(s.offset_status), word(s.drift_status or ASSUMED)
    used.update({ost, dst})
    truth = truth_word(c, known)
    return _row(name, d, clock, f"{compact_offset(s.offset_ns, c.counter)} {ost}",
                ppm_interval(s.drift_ppm.lo, s.drift_ppm.hi)
                + ("" if dst == ASSUMED else f" {dst}"), errs,
                reads=str(c.reads or s.reads), **{
                    "mean drift ppm": mean_drift_cell(s), "bracket p50":
                    fmt_ns(s.bracket_median_ns), "truth": truth,
                    "breaks": str(len(c.breaks)) + (f" +{len(c.wraps)} wrap" if c.wraps else ""),
                    "calibration": calibration_state(manifest, name, clock)})


def clock_notes(name: str, clock: str, c) -> list[str]:
    out = []
    if c.verdict == Verdict.BEYOND_PRIOR:
        out.append(f"{name} {clock}: DRIFT BEYOND THE PRIOR: {c.beyond_prior_note}")
    out += [f"{name} {clock}: read at {_iso(o.t_ns)} set aside: {o.reason}" for o in c.outliers]
    out += [f"{name} {clock}: {n}" for n in (c.zone_note, c.resolution_note) if n]
    if c.note and c.resolution_ns is not None and c.stuck is None:   # why assumed (the row: why not)
        out.append(f"{name} {clock}: {c.note}")
    return out + prior_notes(name, clock, c)


def prior_notes(name: str, clock: str, c) -> list[str]:
    """A drift printed that is only the prior says so, and how long a run would decide it
    (bench.model.decided)."""
    s, a = (c.segments[-1] if c.segments else None), c.assumptions
    if s is None or a is None or not only_prior(s.drift_ppm.lo, s.drift_ppm.hi, a.drift_prior_ppm):
        return []
    after = (c.decided or {}).get("drift_decided_after_s")
    m = mean_drift(s)
    how = (f"; a run of about {fmt_run(after)} would decide its proven mean drift (run "
           f"--until-decided)" if after else
           f"; its proven mean drift {ppm_interval(*m)} ppm is decided" if m and
           (c.decided or {}).get("drift_decided") else "")
    return [f"{name} {clock}: drift {ppm_interval(s.drift_ppm.lo, s.drift_ppm.hi)} ppm is only "
            f"the prior{how}"]


STEP_CLAUSE = "a step of "      # the model's per-clock step X: said on its own line


def clock_clauses(a) -> dict[str, tuple[str, str]]:
    """Every clause a clock's bounds rest on (summary `assumptions`), keyed by what it is about,
    as (label, value): each clause of its model (but the step X, no label) and the figures
    beside it."""
    if a is None:
        return {}
    model = [x.strip() for x in str(a.raw.get("model") or "").split(";") if x.strip()]
    # a clause keyed by its words: the same clause with other figures is one clause that varies
    out = {re.sub(r"\d[\d.,]*", "#", x): ("", x) for x in model if not x.startswith(STEP_CLAUSE)}
    if a.drift_prior_ppm != a.raw.get("rate_bound_ppm", a.drift_prior_ppm):
        out["prior"] = ("drift prior", f"±{fmt_ppm(a.drift_prior_ppm)}")
    out["resolution"] = ("resolution", f"{fmt_ns(a.resolution_ns)} ({a.resolution_basis})")
    out["reference"] = ("reference allowance", fmt_ns_up(a.reference_uncertainty_ns))
    out["wander"] = ("wander allowance", f"{a.wander_ppm:g} ppm/√h")
    if a.rate_changes:
        out["rate changes"] = ("a drift at an instant assumes", str(a.rate_changes))
    return out


def model_lines(summary, width) -> list[str]:
    """Every clause of every clock's model (summary `assumptions`, issue 39): the clauses every
    clock shares on one line, then each clause the clocks differ on (a value most of them share
    said once, the others with their clocks), then the step X of each clock."""
    n, by, hide, (p, within) = _gathered_clauses(summary)
    common = _common_clauses(by, n)
    out = wrap(f"model (every clock): {'; '.join(common)}", width) if common else []
    for g in by.values():
        if not _shared_by_all(g, n):
            out += _varying(g, width)
    if hide:
        out += wrap(f"steps that show with probability >= {p:g} when they last {within:g} s: "
                    f"{', '.join(hide)}; a smaller one can hide", width)
    return out


def _gathered_clauses(summary) -> tuple[int, dict[str, dict[tuple[str, str], list[str]]],
                                        list[str], tuple[float, float]]:
    """(how many clocks have a model, what -> (label, value) -> the clocks that hold it, each
    clock's smallest step that shows, (its probability, for how long it lasts))."""
    n = 0
    by: dict[str, dict[tuple[str, str], list[str]]] = {}     # what -> (label, value) -> clocks
    hide: list[str] = []
    p, within = 0.99, 10.0
    for d, c in summary.clocks():
        a = c.assumptions
        if a is None:
            continue
        n += 1
        for what, lv in clock_clauses(a).items():
            by.setdefault(what, {}).setdefault(lv, []).append(f"{d.name} {c.name}")
        u = a.unseen_step
        if u and u.get("size_ns"):
            hide.append(f"{d.name} {c.name} {fmt_ns_up(u['size_ns'])}"
                        + (" (measured)" if u.get("basis", "").startswith("measured") else ""))
            p, within = u.get("probability", 0.99), u.get("within_s", 10.0)
    return n, by, hide, (p, within)


def _shared_by_all(group: dict[tuple[str, str], list[str]], n: int) -> bool:
    """Whether every one of the n clocks holds the clause with one value."""
    return len(group) == 1 and len(next(iter(group.values()))) == n


def _common_clauses(by: dict[str, dict[tuple[str, str], list[str]]], n: int) -> list[str]:
    """The clauses every one of the n clocks holds with one value, as text."""
    return [f"{lb} {v}".strip() for g in by.values() for (lb, v), who in g.items()
            if len(g) == 1 and len(who) == n]


def _varying(group: dict[tuple[str, str], list[str]], width) -> list[str]:
    """A clause the clocks differ on, or only some hold: the value most of them share said once
    ('the rest'), each other value with its clocks."""
    ranked = sorted(group.items(), key=lambda x: -len(x[1]))
    label = ranked[0][0][0]
    rest = len(ranked) > 1 and len(ranked[0][1]) > 2
    spliced = _spliced([v for (_, v), _ in ranked])
    if not label and spliced is not None and len(ranked) > 2:   # one clause, figures by clock
        return wrap(_spliced_text(spliced, ranked, rest), width)
    return wrap(_values_text(label, ranked, rest), width)


def _values_text(label: str, ranked: list[tuple[tuple[str, str], list[str]]],
                 rest: bool) -> str:
    """'label: clocks value; ...' (or 'value (clocks); ...' without a label), the most shared
    value first, said as '(the rest)' when `rest`."""
    parts = [f"{v} (the rest)" if rest and k == 0 else
             (f"{', '.join(who)} {v}" if label else f"{v} ({', '.join(who)})")
             for k, ((_, v), who) in enumerate(ranked)]
    return (f"{label}: " if label else "") + "; ".join(parts)


def _spliced_text(spliced: tuple[str, list[str], str],
                  ranked: list[tuple[tuple[str, str], list[str]]], rest: bool) -> str:
    """One clause with the word that differs in braces, each value with its clocks (the most
    shared one 'the rest' when `rest`)."""
    head, mids, tail = spliced
    parts = [f"{m} the rest" if rest and k == 0 else f"{m} {', '.join(who)}"
             for k, (m, (_, who)) in enumerate(zip(mids, ranked))]
    return f"{head}{{{'; '.join(parts)}}}{tail}"


def _spliced(values: list[str]) -> tuple[str, list[str], str] | None:
    """(the words all values start with, each value's middle word, the words they all end
    with), cut at spaces; None unless they differ in one word only."""
    head = os.path.commonprefix(values)
    tail = os.path.commonprefix([v[::-1] for v in values])[::-1]
    head = head[:head.rfind(" ") + 1]
    tail = tail[tail.find(" "):] if " " in tail else ""
    if not head or not tail or any(len(head) + len(tail) >= len(v) for v in values):
        return None
    mids = [v[len(head):len(v) - len(tail)] for v in values]
    return None if any(" " in m for m in mids) else (head, mids, tail)


def compact_offset(o, counter: bool) -> str:
    """An offset Bound (ns) to the precision of its width, rounded outward; a counter's as the
    instant of its zero (minus the offset) with a half width that covers the bound."""
    if counter:
        return fmt_instant_pm(-o.hi, -o.lo)
    return fmt_interval_ns(o.lo, o.hi)


def mean_drift_cell(s) -> str:
    m = s.mean_drift_ppm
    if not m or m.get("lo") is None:
        return ""
    return f"{ppm_interval(m['lo'], m['hi'])} {word(m.get('status'))}"


def latency_table(summary, width: int | None = WIDTH) -> str:
    """Stimulus to log latency per device and stimulus: proven bounds over all events; a "—"
    says why below the table."""
    rows, why = [], []
    for name, d in Summary.of(summary).devices.items():
        for stim, x in d.latency.items():
            cells = [f"{fmt_bounds_ns(b.lo, b.hi)} (n={b.n})" if b else "—"
                     for b in (x.logged_ns, x.observed_ns)]
            rows.append([name, stim, str(x.sent), *cells])
            why += [f"{name} {stim}: {w}" for w in unbounded_why(x)]
    if not rows:
        return ""
    head = ["device", "stimulus", "sent", "stamped in log after (proven)", "seen by the bench after"]
    cols, left = fit_columns(head, rows, [0, 3, 1, 2, 4], width)
    lines = render(head, rows, cols, width, clip=1)
    lines += left_out_lines(left, width)
    return "\n".join(lines + [y for w in why for y in wrap(w, width)])


def unbounded_why(x) -> list[str]:
    """Why a stimulus's latency has no bound: its events' own reasons (a log entry without a
    stamp), or that nothing followed it."""
    if not x.sent:
        return []
    if x.observed_ns is None:
        return [f"never seen: neither a log entry nor a pushed event followed it in the run "
                f"({x.sent} sent)"]
    if x.logged_ns is not None:
        return []
    return _not_stamped(x)


def _not_stamped(x) -> list[str]:
    """The events' own reasons for no log stamp, or that only a pushed event followed."""
    reasons = Counter(e.logged_unbounded for e in x.events if e.logged_unbounded)
    unseen = sum(1 for e in x.events if not e.event and not e.logged_unbounded)
    return [f"not stamped: {r} ({n} of {x.sent})" for r, n in reasons.items()] + (
        [f"not stamped: no log entry followed it, only a pushed event ({unseen} of {x.sent})"]
        if unseen and not reasons else [])
