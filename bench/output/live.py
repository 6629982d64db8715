"""Live bounds while a run probes: each clock's current offset width and status for the progress
display, and the "time to calibrated" the run records: the reference time of the last read in
the first fit whose offset width was at most CALIBRATED_RATIO times the clock's narrowest bracket
so far.

The fits are bench.analysis.estimate's own, on the reads the runner hands over (DeviceStatus.recent), with
the default drift prior: the live figure is a guide, the summary's fit is the result. To keep
the probing threads' brackets undisturbed the fits are rationed: one clock per tick, round
robin, each on its latest MAX_READS reads.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.model.documents import Calibration, Manifest
from bench.model.vocabulary import ASSUMED, PROVEN, STUCK, stuck_text
from bench.units import fmt_ns, fmt_ns_up

CALIBRATED_RATIO = 2.0
MAX_READS = 600
MIN_READS = 4
BUDGET_S = 0.05            # stop fitting in a tick once this much time is spent


@dataclass
class ClockLive:
    reads: int = 0                  # reads in the last fit
    width_ns: float | None = None
    min_bracket_ns: float | None = None
    status: str = "—"               # proven | assumed [(after a break)] | stuck (...) | —
    calibrated_s: float | None = None   # run time at which it first met the criterion
    calibrated_width_ns: float | None = None


def _stuck(s: np.ndarray, e: np.ndarray, v: np.ndarray, q: np.ndarray) -> bool:
    """Whether a clock's value never advanced in enough reads spanning more than 2 ticks."""
    return len(v) >= MIN_READS and int(v.min()) == int(v.max()) and \
        int(e[-1]) - int(s[0]) > 2 * int(q.max())


class LiveBounds:
    """`update(statuses, elapsed_s)` from the runner's tick; `text(status)` for a display line;
    `record()` for the manifest."""

    def __init__(self, start_ns: int, prior_ppm: float = DEFAULT_DRIFT_PRIOR_PPM):
        self.start_ns = int(start_ns)
        self.prior = float(prior_ppm)
        self.clocks: dict[tuple[str, str], ClockLive] = {}
        self._turn = 0

    def update(self, statuses, elapsed_s: float | None = None) -> None:
        todo = [(st, clock) for st in statuses for clock, rows in list(st.recent.items())
                if len(rows) >= MIN_READS and len(rows) != self.clocks.get(
                    (st.name, clock), ClockLive()).reads]
        if not todo:
            return
        t0 = time.perf_counter()
        for k in range(len(todo)):
            st, clock = todo[(self._turn + k) % len(todo)]
            self._fit(st.name, clock, st.recent[clock])
            if time.perf_counter() - t0 > BUDGET_S:
                break
        self._turn += 1

    def _fit(self, device: str, clock: str, rows: list) -> None:
        n = len(rows)
        a = np.asarray(rows[-MAX_READS:], dtype=np.int64)
        s, e, v, q = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
        live = self.clocks.setdefault((device, clock), ClockLive())
        live.reads = n
        if _stuck(s, e, v, q):
            live.status = stuck_text({"reads": len(v), "span_s": (int(e[-1]) - int(s[0])) / 1e9})
            live.width_ns = None
            return
        try:
            fit = fit_clock(s, e, v, int(max(1, q[-1])), drift_prior_ppm=self.prior)
        except Exception:          # a live guide must never stop the run
            return
        if fit.segments:
            self._update(live, fit, s, e)

    def _update(self, live: ClockLive, fit: Any, s: np.ndarray, e: np.ndarray) -> None:
        """A clock's live state from its fit: the last segment's width and status, and when
        it was first calibrated."""
        seg = fit.segments[-1]
        live.width_ns = float(seg.offset_ns.width)
        live.min_bracket_ns = float(np.min(e - s))
        d = seg.drift_ppm
        at_edge = abs(d.lo + self.prior) <= 0.01 * self.prior or \
            abs(d.hi - self.prior) <= 0.01 * self.prior
        live.status = (ASSUMED if at_edge else PROVEN) + (" (after a break)"
                                                          if len(fit.segments) > 1 else "")
        if live.calibrated_s is None and \
                live.width_ns <= CALIBRATED_RATIO * live.min_bracket_ns:
            live.calibrated_s = round((int(e[-1]) - self.start_ns) / 1e9, 1)
            live.calibrated_width_ns = live.width_ns

    def text(self, st, width: int | None = None) -> str:
        """Each clock's '±half-width status' (and 'pinned@T s' once calibrated), in at most
        `width` columns: the calibration marks go first, then the clock names are shortened;
        a bound and its status are never cut."""
        xs = [(c, x) for c in st.recent if (x := self.clocks.get((st.name, c))) is not None
              and x.width_ns is not None]
        stuck = [f"{c} {x.status}" for c in st.recent if (x := self.clocks.get((st.name, c)))
                 is not None and x.status.startswith(STUCK)]
        if not stuck:
            return self.text_of(xs, width)
        rest = self.text_of(xs, width)       # a stuck clock says so first, never with a width
        return "; ".join(stuck + ([rest] if rest else []))[:width or None]

    @staticmethod
    def text_of(xs, width: int | None) -> str:

        def render(cal: bool, name_len: int | None) -> str:
            return "; ".join(
                f"{c[:name_len] if name_len else c} ±{fmt_ns_up(x.width_ns / 2)} {x.status}"
                + (f" pinned@{x.calibrated_s:g}s" if cal and x.calibrated_s is not None else "")
                for c, x in xs)
        for cal, n in ((True, None), (False, None), (False, 4), (False, 1)):
            text = render(cal, n)
            if width is None or len(text) <= width:
                return text
        return "; ".join(f"±{fmt_ns_up(x.width_ns / 2)} {x.status}" for _, x in xs)

    def calibration(self) -> dict[str, dict[str, Calibration]]:
        """{device: {clock: Calibration}}: how narrow each clock's offset got, and when."""
        out: dict[str, dict[str, Calibration]] = {}
        for (device, clock), x in sorted(self.clocks.items()):
            out.setdefault(device, {})[clock] = Calibration(
                calibrated_after_s=x.calibrated_s, width_then_ns=x.calibrated_width_ns,
                last_width_ns=x.width_ns, min_bracket_ns=x.min_bracket_ns, last_status=x.status,
                criterion=f"offset width <= {CALIBRATED_RATIO:g} x the narrowest bracket")
        return out

    def record(self) -> dict:
        """{device: {clock: {...}}} for the manifest's `calibration`."""
        return {device: {clock: c.to_dict() for clock, c in clocks.items()}
                for device, clocks in self.calibration().items()}


def calibration_state(manifest, device: str, clock: str) -> str:
    """'pinned 1.9 ms after 5.8 s' once the offset's width met the criterion, else 'pinned
    1.9 ms; floor 1.0 ms' (the narrowest bracket: the floor a width can approach); '' for a run
    without the record. `manifest`: the dict as written or a bench.model.documents.Manifest."""
    x = Manifest.of(manifest or {}).calibration_of(device, clock)
    if x is None or not x.raw:
        return ""
    if x.calibrated_after_s is not None:
        return f"pinned {fmt_ns_up(x.width_then_ns, 2)} after {x.calibrated_after_s:g} s"
    if x.last_width_ns is None:
        return "no fit yet"
    return f"pinned {fmt_ns_up(x.last_width_ns, 2)}; floor {fmt_ns(x.min_bracket_ns, 2)}"


def calibrated_cell(manifest, device: str, clock: str) -> str:
    """'12.5 s' (when the criterion was met) or the state it reached ('pinned 1.9 ms; floor
    1.0 ms') or '—' for a run without the record."""
    x = Manifest.of(manifest or {}).calibration_of(device, clock)
    if x is not None and x.raw and x.calibrated_after_s is not None:
        return f"{x.calibrated_after_s:g} s"
    return calibration_state(manifest, device, clock) or "—"
