"""Device stamps to reference intervals through the right clock segment (DESIGN.md, "The
measurement model"); vectorised over numpy arrays so a million lines map in seconds.

A clock's calibrations are its fitted segments, from one run or several, in time order. Segment k
holds (its model D(t) = t + θ + ρ·(t − t0) is valid) over a *window* of reference time: from the
break before it to the break after it (open-ended at the ends; between two runs the whole gap is
in both neighbours' windows, since the clock may have been set in between). A stamp is a
*candidate* of segment k when its interval mapped through k meets k's window and does not lie
after the log was read (nor before the request that caused the line, where one did: a stimulus's
entry, whose interval is then also cut to the window; bench/model/stamps.py). Exactly one candidate: that
segment. Several (a stamp in device time that the clock showed twice, around a backward step or a reboot): the
log's own order decides where it
has one (entry ids, sequence numbers, file order: a log's order is time order, so its segment
index cannot go down), and otherwise the line gets the union of the candidates' intervals and is
flagged. None: a device time the clock never showed (skipped by a forward step), or a stamp
taken before the clock was set (1970, the firmware image date): recognised and said, no interval.

A line outside a segment's calibrated span is extrapolated. Its interval holds under the model
alone: from the offset bound at the span's nearer end the offset moves at most the model's rate
bound R (the fit's drift prior, 600 ppm by default) over the gap; its status is "extrapolated"
(it rests on no break between the line and its calibration), never "proven", and it says how far
it is from its calibration. The run's own rate continuing (the segment's drift range, the wander
allowance widened to the distance) gives a narrower interval that is only assumed
(`Mapped.assumed_lo_ns`/`assumed_hi_ns`): a post-run slew inside R breaks it. A segment whose
own `offset_status` is not "proven" passes its status on to every line mapped through it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from bench.analysis.arrays import I64, Mask
from bench.analysis.estimate import ClockFit, wander_allowance_ns_per_s
from bench.analysis.polygon import PPM, TOL_NS
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM, Segment

NS = 1_000_000_000
PRESYNC_BEFORE_NS = 946_684_800 * NS          # 2000-01-01: a wall clock earlier was never set
STATUS = ("proven", "assumed", "extrapolated", "ambiguous", "presync", "unplaceable")
CELLS = 2_000_000           # float64 cells of one mapping step's temporaries (16 MB each)


@dataclass(frozen=True)
class SegmentWindow:
    """One segment of one clock, from one run, and the reference window where its model holds."""
    name: str                 # "RUN:DEVICE/CLOCK#k", said beside every line mapped through it
    segment: Segment
    window_lo: int | None     # reference ns (None: open)
    window_hi: int | None
    status: str = "proven"    # the segment's own offset status
    wander_ppm: float = 0.0   # the inventory's wander strength (ppm per sqrt hour)
    modulus_ns: int = 0       # counter wrap

    @property
    def span(self) -> tuple[int, int]:
        return int(self.segment.start_ns), int(self.segment.end_ns)


class Fitted(Protocol):
    """A clock's fit as `calibrations` reads it (bench.model.summary.ClockResult)."""
    @property
    def name(self) -> str: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def fit(self) -> ClockFit | None: ...


def calibrations(fits: Sequence[tuple[str, Fitted | None, dict[str, Any]]]) -> list[SegmentWindow]:
    """Calibrations of one device clock from (run id, ClockResult, device meta) of one or more
    runs, in time order, with the windows described above."""
    segs = _clock_segments(fits)
    out = []
    for i, (_start, run_id, clock, k, sg, lo, hi, wander, mod) in enumerate(segs):
        if lo is None and i > 0:               # another run before: the gap belongs to both
            lo = int(segs[i - 1][4].end_ns)
        if hi is None and i + 1 < len(segs):
            hi = int(segs[i + 1][4].start_ns)
        out.append(SegmentWindow(f"{run_id}:{clock}#{k}", sg, lo, hi,
                               str(getattr(sg, "offset_status", "proven") or "proven"), wander, mod))
    return out


def _clock_segments(fits: Sequence[tuple[str, Fitted | None, dict[str, Any]]]
                    ) -> list[tuple[Any, ...]]:
    """The segments of every fitted clock among `fits` (_segment_rows), by start."""
    segs = []
    for run_id, res, meta in fits:
        if res is None or res.fit is None or not res.fit.segments:
            continue
        segs += _segment_rows(run_id, res, res.fit, meta)
    segs.sort(key=lambda s: s[0])
    return segs


def _segment_rows(run_id: str, res: Fitted, fit: ClockFit, meta: dict[str, Any]
                  ) -> list[tuple[Any, ...]]:
    """(start, run id, clock, index, segment, window lo, window hi, wander, modulus) of each
    segment of one fitted clock; a window's end is None where the run has no break there."""
    rows = []
    for k, sg in enumerate(fit.segments):
        lo = int(fit.breaks[k - 1].after_ns) if k > 0 else None
        hi = int(fit.breaks[k].before_ns) if k < len(fit.breaks) else None
        rows.append((int(sg.start_ns), run_id, res.name, k, sg, lo, hi,
                     float(meta.get("wander_ppm", 0.0)),
                     int(res.meta.get("modulus_ns") or 0)))
    return rows


def to_reference_many(seg: Segment, value_ns: npt.ArrayLike, resolution_ns: npt.ArrayLike
                      ) -> tuple[I64, I64]:
    """`Segment.to_reference` over arrays (same vertices, same outward rounding)."""
    value_ns = np.asarray(value_ns, dtype=np.int64)
    resolution_ns = np.broadcast_to(np.asarray(resolution_ns, dtype=np.int64), value_ns.shape)
    try:
        xs, gs, hs, th0, w = seg._x, seg._g, seg._h, seg._theta0, seg._w
    except AttributeError:       # an estimator without exposed vertices: the scalar path
        pairs = [seg.to_reference(int(v), int(q)) for v, q in zip(value_ns, resolution_ns)]
        ab = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        return ab[:, 0], ab[:, 1]
    x = np.concatenate((xs, xs))
    y = np.concatenate((gs, hs))
    den = 1.0 + x * PPM
    f = w / max(1e-12, 1.0 - w - float(np.max(np.abs(x))) * PPM)
    lo = np.empty(len(value_ns), dtype=np.int64)
    hi = np.empty(len(value_ns), dtype=np.int64)
    step = max(1024, CELLS // max(len(y), 1))     # (step, vertices) float64 temporaries
    for a in range(0, len(value_ns), step):
        base = (value_ns[a:a + step] - (seg.epoch_ns + th0)).astype(np.float64)
        t_lo = np.min((base[:, None] - y[None, :]) / den[None, :], axis=1)
        t_hi = np.max(((base + resolution_ns[a:a + step])[:, None] - y[None, :]) / den[None, :],
                      axis=1)
        t_lo -= f * np.abs(t_lo) + TOL_NS
        t_hi += f * np.abs(t_hi) + TOL_NS
        lo[a:a + step] = seg.epoch_ns + np.floor(t_lo).astype(np.int64)
        hi[a:a + step] = seg.epoch_ns + np.ceil(t_hi).astype(np.int64)
    return lo, hi


@dataclass
class Mapped:
    """Reference intervals of n stamps (arrays), with how each was obtained."""
    lo_ns: I64
    hi_ns: I64
    status: npt.NDArray[np.int8]  # index into STATUS
    calibration: npt.NDArray[np.int32]   # index into `names` (-1: none); a union: the first
    candidates: Mask              # (calibrations, n) bool: the calibrations whose union it is
    distance_ns: I64              # from the calibrated span of its segment (0 inside)
    names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assumed_lo_ns: I64 | None = None   # extrapolated at the run's own rate (assumed); else lo/hi
    assumed_hi_ns: I64 | None = None
    rate_ppm: float = 0.0              # the model's rate bound an extrapolated interval allows

    def __len__(self) -> int:
        return len(self.lo_ns)

    def status_of(self, i: int) -> str:
        return STATUS[int(self.status[i])]

    def calibration_of(self, i: int) -> str:
        names = [self.names[k] for k in np.flatnonzero(self.candidates[:, i])]
        return " | ".join(names) if names else "none"


def map_stamps(cals: list[SegmentWindow], value_ns: npt.ArrayLike, resolution_ns: npt.ArrayLike,
               order_key: npt.ArrayLike | None = None, *, wall: bool = True,
               not_after_ns: npt.ArrayLike | None = None, not_before_ns: npt.ArrayLike | None = None,
               presync_before_ns: int = PRESYNC_BEFORE_NS, proven: bool = True,
               clip: bool = False) -> Mapped:
    """Map stamps (arrays in the device's timescale) through the calibrations of their clock.

    `order_key`: the log's own order (entry id, sequence, line number) or None when the log has
    none to trust (then the value alone decides). `not_after_ns`: when the log was read (no line
    can be later; one instant or one per line); `not_before_ns`: no line can be earlier (e.g. the
    request that caused it; one instant or one per line). `wall`: stamps are wall-clock (then a
    stamp before `presync_before_ns` was written before the clock was set).
    `proven` (the default): each calibration maps the stamps by its proven bound, which holds
    with one break the reads did not reveal inside the segment (`proven_many`: vectorised, a
    million log lines in seconds); the line's interval, which holds only with no unseen step
    inside the segment, is kept beside it as `assumed_lo_ns`/`assumed_hi_ns` (inside the proven
    one). Where a segment has no proven span (no instant with a read on each side), and for
    every stamp with `proven=False`, the line's interval is the answer, labelled `assumed`.
    `clip`: each calibration's interval is cut to its window and
    to [not_before, not_after] before the union; a calibration whose cut is empty is no
    candidate."""
    v = np.asarray(value_ns, dtype=np.int64)
    q = _at_least_1ns(resolution_ns, v)
    n, K = len(v), len(cals)
    after = _per_stamp(_BIG if not_after_ns is None else not_after_ns, v)
    before = _per_stamp(-_BIG if not_before_ns is None else not_before_ns, v)
    # each stamp maps alone unless the log's order narrows across calibrations: then in
    # MAP_CHUNK slices (the temporaries of a million stamps at once cost ~200 MB), else at once
    step = MAP_CHUNK if order_key is None or K <= 1 else max(n, 1)
    out = _Out.empty(n, K)
    notes: list[str] = []
    for a in range(0, max(n, 1), step):
        b = min(n, a + step)
        presync = (v[a:b] < presync_before_ns) if wall else np.zeros(b - a, dtype=bool)
        notes += out.fill(a, b, _map_part(cals, v[a:b], q[a:b], presync, before[a:b],
                                          after[a:b], proven, clip, _slice(order_key, a, b)))
    rate = max((_rate_bound(c) for c in cals), default=0.0)
    notes += _extrapolated_note(out.dist, rate)
    return Mapped(out.lo, out.hi, out.status, out.first, out.cand, out.dist,
                  [c.name for c in cals], notes, out.alo, out.ahi, rate)


def _at_least_1ns(resolution_ns: npt.ArrayLike, v: I64) -> I64:
    """The resolutions as one int64 per stamp, raised to 1 ns (a copy only where one is below:
    a million stamps' copy is 8 MB)."""
    q = np.broadcast_to(np.asarray(resolution_ns, dtype=np.int64), v.shape)
    return np.maximum(1, q) if len(q) and int(q.min()) < 1 else q


def _slice(order_key: npt.ArrayLike | None, a: int, b: int) -> npt.NDArray[Any] | None:
    return None if order_key is None else np.asarray(order_key)[a:b]


def _per_stamp(limit: npt.ArrayLike, v: I64) -> I64:
    """A limit (one instant or one per stamp) as one int64 per stamp."""
    return np.broadcast_to(np.asarray(limit, dtype=np.int64), v.shape)


def _extrapolated_note(dist: I64, rate: float) -> list[str]:
    """The note on the lines mapped beyond their calibration (distance > 0), if any."""
    if not np.any(dist > 0):
        return []
    return [f"{int(np.sum(dist > 0))} lines extrapolated beyond their calibration: "
            f"each interval allows the model's rate bound (±{rate:g} ppm) over the gap "
            f"and rests on no break in between; the run's own rate continuing "
            f"(assumed) gives the narrower assumed_lo_ns/assumed_hi_ns"]


MAP_CHUNK = 1 << 17      # stamps mapped at once where each maps alone (map_stamps)


@dataclass
class _Out:
    """map_stamps' columns, filled a slice at a time."""
    lo: I64
    hi: I64
    alo: I64
    ahi: I64
    dist: I64
    first: npt.NDArray[np.int32]
    status: npt.NDArray[np.int8]
    cand: Mask

    @classmethod
    def empty(cls, n: int, K: int) -> _Out:
        def z() -> I64:
            return np.zeros(n, dtype=np.int64)
        return cls(z(), z(), z(), z(), z(), np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int8),
                   np.zeros((K, n), dtype=bool))

    def fill(self, a: int, b: int, part: tuple[list[I64], Mask, list[str]]) -> list[str]:
        cols, cand, notes = part
        dsts: list[npt.NDArray[Any]] = [self.lo, self.hi, self.alo, self.ahi, self.dist,
                                        self.first, self.status]
        for dst, src in zip(dsts, cols):
            dst[a:b] = src
        self.cand[:, a:b] = cand
        return notes


def _map_part(cals: list[SegmentWindow], v: I64, q: I64, presync: Mask, before: I64,
              after: I64, proven: bool, clip: bool, order_key: npt.NDArray[Any] | None
              ) -> tuple[list[I64], Mask, list[str]]:
    """map_stamps over stamps that map together: ([lo, hi, alo, ahi, dist, first, status],
    candidates, the order's notes)."""
    n, K = len(v), len(cals)
    los = np.zeros((K, n), dtype=np.int64)
    his = np.zeros((K, n), dtype=np.int64)
    alos = np.zeros((K, n), dtype=np.int64)
    ahis = np.zeros((K, n), dtype=np.int64)
    dists = np.zeros((K, n), dtype=np.int64)
    cand = np.zeros((K, n), dtype=bool)
    line = np.zeros((K, n), dtype=bool)         # through the line alone: assumed
    for k, c in enumerate(cals):
        (los[k], his[k], dists[k], cand[k]), (alos[k], ahis[k]), line[k] = _map_through(
            c, v, q, presync, before, after, proven, clip)
    notes: list[str] = []
    if order_key is not None and K > 1:
        drops = not any(c.modulus_ns for c in cals)
        cand, outliers, broken = _by_order(cand, los, his, order_key, v if drops else None)
        notes += _order_notes(outliers, broken)
    count = cand.sum(axis=0)
    first = np.where(count > 0, np.argmax(cand, axis=0), -1) if K else np.full(n, -1)
    lo, hi, alo, ahi, dist = _united(cand, count, los, his, alos, ahis, dists)
    status = _statuses(cals, cand, first, dist, count, presync, line)
    return [lo, hi, alo, ahi, dist, first.astype(np.int64), status.astype(np.int8)], cand, notes


_BIG = np.iinfo(np.int64).max


def _united(cand: Mask, count: I64, los: I64, his: I64, alos: I64, ahis: I64,
            dists: I64) -> tuple[I64, I64, I64, I64, I64]:
    """Per stamp, the union over its candidate calibrations (rows): proven lo, hi, assumed lo,
    hi, and the largest extrapolation distance; zeros where no calibration is a candidate."""
    n = cand.shape[1]
    if not cand.shape[0]:
        z = np.zeros(n, dtype=np.int64)
        return z, z, z, z, z
    some = count > 0

    def cut(a: I64, fill: int, pick: Callable[..., I64]) -> I64:
        return np.where(some, pick(np.where(cand, a, fill), axis=0), 0)
    return (cut(los, _BIG, np.min), cut(his, -_BIG, np.max), cut(alos, _BIG, np.min),
            cut(ahis, -_BIG, np.max), np.where(cand, dists, 0).max(axis=0))


def _order_notes(outliers: int, broken: int) -> list[str]:
    """What the log's order could not be trusted for, counted."""
    notes = []
    if outliers:
        notes.append(f"{outliers} lines out of order in the log (not confirmed as a clock set "
                     f"back by the lines around them): each keeps every segment it can be in "
                     f"and narrows no other line")
    if broken:
        notes.append(f"{broken} lines' candidates contradict the log's own order: their "
                     f"candidates were kept, unnarrowed")
    return notes


def _map_through(c: SegmentWindow, v: I64, q: I64, presync: Mask, before: I64, after: I64,
                 proven: bool, clip: bool
                 ) -> tuple[tuple[I64, I64, I64, Mask], tuple[I64, I64], Mask]:
    """One calibration's (lo, hi, distance from its span, candidate) for every stamp, the
    (lo, hi) through the line (assumed: no unseen step inside the segment; at the run's own
    rate beyond the span), and which stamps only the line maps (no proven bound: assumed)."""
    vk = v
    if c.modulus_ns:             # a wrapped counter: the turn nearest the segment
        mid = (c.span[0] + c.span[1]) // 2
        expect = mid + c.segment.offset_at(mid).point
        vk = v + np.round((expect - v) / c.modulus_ns).astype(np.int64) * c.modulus_ns
    lo, hi = to_reference_many(c.segment, vk, q)
    w_lo = -_BIG if c.window_lo is None else int(c.window_lo)
    w_hi = _BIG if c.window_hi is None else int(c.window_hi)
    s0, s1 = c.span
    # the line's interval, and at the run's own rate (the wander allowance grown to the
    # distance) beyond the calibrated span: assumed (no unseen step inside the segment)
    d_line = np.maximum(0, np.maximum(s0 - hi, lo - s1))
    alo, ahi = lo.copy(), hi.copy()
    if c.wander_ppm and np.any(d_line > 0):
        _widen_for_wander(c, alo, ahi, d_line > 0)
    ok = np.zeros(len(v), dtype=bool)
    if proven:                   # the proven bound (one unseen break inside the segment)
        plo, phi, xd, ok = proven_many(c, vk, q)
        ok &= ~presync
        lo, hi = np.where(ok, plo, lo), np.where(ok, phi, hi)
        d = np.where(ok, np.maximum(xd, np.maximum(0, np.maximum(s0 - hi, lo - s1))), d_line)
        far = d > 0
        if far.any():            # joined with the line's edge carried at the rate bound
            lo, hi = _rate_widened(c, vk, q, lo, hi, far)
        # the assumed interval: the line's where it meets the proven one, inside it
        meet = (alo <= hi) & (ahi >= lo)
        alo = np.where(meet, np.maximum(alo, lo), lo)
        ahi = np.where(meet, np.minimum(ahi, hi), hi)
    else:
        d = d_line
        far = d > 0
        if far.any():
            lo, hi = _rate_widened(c, vk, q, alo, ahi, far)
    if clip:
        lo = np.maximum(lo, np.maximum(before, w_lo))
        hi = np.minimum(hi, np.minimum(after, w_hi))
        alo, ahi = np.maximum(alo, lo), np.minimum(ahi, hi)
    cand = ~presync & (hi >= w_lo) & (lo <= w_hi) & (lo <= after) & (hi >= before) & (lo <= hi)
    return (lo, hi, d, cand), (alo, ahi), ~ok


def proven_many(c: SegmentWindow, v: I64, q: I64) -> tuple[I64, I64, I64, Mask]:
    """Stamps' intervals through segment c with one unseen break inside it (vectorised:
    Segment.proven_sides_many), how far an end of each rests on extrapolation (0: neither;
    then it is proven), and whether the segment bounds them at all (False: no proven span,
    the caller keeps the line). Each end is the tightest instant of the segment's proven span
    shown before (after) the stamp; where the stamp may lie beyond the span, that end is the
    proven offset at the span's edge carried at the model's rate bound (no break in between:
    extrapolated), never the line, which an unseen step inside the segment puts off by up to
    the step."""
    n = len(v)
    z = np.zeros(n, dtype=np.int64)
    sg = c.segment
    span = sg.proven_span()
    if span is None:
        return z, z.copy(), z.copy(), np.zeros(n, dtype=bool)
    a0, a1 = span
    o0, o1 = sg.proven_offset_at(a0), sg.proven_offset_at(a1)
    if o0 is None or o1 is None:
        return z, z.copy(), z.copy(), np.zeros(n, dtype=bool)
    r = _rate_bound(c) * 1e-6
    lim = 2 ** 61                # int64 room for the differences below
    vv = np.clip(np.asarray(v, dtype=np.int64), a0 - lim, a1 + lim)
    vq = vv + np.maximum(1, np.asarray(q, dtype=np.int64))
    lo, hi, has_lo, has_hi = sg.proven_sides_many(vv, vq - vv)
    far = z.copy()
    # the stamp after the span: from its last instant
    late = a1 + o1.hi < vv
    x = a1 + np.floor((vv - a1 - o1.hi) / (1 + r)).astype(np.int64) - 1
    use = late & (~has_lo | (x > lo))
    lo, far = np.where(use, x, lo), np.where(use, np.maximum(x - a1, 1), far)
    has_lo = has_lo | use
    # nothing proven before it: it may be before the span
    x = a0 - np.ceil((a0 + o0.hi - vv) / (1 - r)).astype(np.int64) - 1
    lo = np.where(has_lo, lo, x)
    far = np.where(has_lo, far, np.maximum(far, np.maximum(a0 - x, 1)))
    # the stamp before the span: from its first instant
    early = a0 + o0.lo >= vq
    y = a0 - np.floor((a0 + o0.lo - vq) / (1 + r)).astype(np.int64) + 1
    use = early & (~has_hi | (y < hi))
    hi, far = np.where(use, y, hi), np.where(use, np.maximum(far, np.maximum(a0 - y, 1)), far)
    has_hi = has_hi | use
    # nothing proven after it: it may be after the span
    y = a1 + np.ceil((vq - a1 - o1.lo) / (1 - r)).astype(np.int64) + 1
    hi = np.where(has_hi, hi, y)
    far = np.where(has_hi, far, np.maximum(far, np.maximum(y - a1, 1)))
    return lo, hi, far, np.ones(n, dtype=bool)


def _rate_bound(c: SegmentWindow) -> float:
    """The model's bound on the clock's rate error (ppm): the fit's drift prior."""
    return float(getattr(c.segment, "_prior", DEFAULT_DRIFT_PRIOR_PPM) or DEFAULT_DRIFT_PRIOR_PPM)


def _rate_widened(c: SegmentWindow, v: I64, q: I64, lo: I64, hi: I64, far: Mask
                  ) -> tuple[I64, I64]:
    """Intervals of the stamps `far` outside the calibrated span that hold under the model
    alone: from the offset bound at the span's nearer end, the offset moves at most the rate
    bound R over the gap (no break in between); joined with the run-rate interval (lo, hi)."""
    s0, s1 = c.span
    r = _rate_bound(c) * 1e-6
    o0, o1 = c.segment.offset_at(s0), c.segment.offset_at(s1)
    vf, qf = v.astype(np.float64), q.astype(np.float64)
    after = far & (lo > s1)                        # else before the span
    # after: D(t) = t + off, off in [o1.lo - R x, o1.hi + R x], x = t - s1 >= 0
    a_lo = s1 + (vf - s1 - o1.hi) / (1 + r)
    a_hi = s1 + (vf + qf - s1 - o1.lo) / (1 - r)
    # before: off in [o0.lo - R x, o0.hi + R x], x = s0 - t >= 0
    b_lo = s0 - (s0 + o0.hi - vf) / (1 - r)
    b_hi = s0 - (s0 + o0.lo - vf - qf) / (1 + r)
    rlo = np.where(after, a_lo, b_lo)
    rhi = np.where(after, a_hi, b_hi)
    out_lo = np.where(far, np.minimum(lo, np.floor(rlo).astype(np.int64) - 1), lo)
    out_hi = np.where(far, np.maximum(hi, np.ceil(rhi).astype(np.int64) + 1), hi)
    return out_lo, out_hi


def _widen_for_wander(c: SegmentWindow, lo: I64, hi: I64, far: Mask) -> None:
    """Widen (in place) the stamps mapped outside the calibrated span by the wander allowance,
    which grows as the square root of the span it must cover."""
    s0, s1 = c.span
    span_s = max((s1 - s0) / NS, 1.0)
    w_fit = wander_allowance_ns_per_s(c.wander_ppm, span_s)
    ep = int(c.segment.epoch_ns)
    gap = np.maximum(np.abs(lo[far] - ep), np.abs(hi[far] - ep)).astype(np.float64)
    w_far = w_fit * np.sqrt((span_s + gap / NS) / span_s)
    extra = np.ceil((w_far - w_fit) * gap / NS).astype(np.int64)
    lo[far] -= extra
    hi[far] += extra


def _statuses(cals: list[SegmentWindow], cand: Mask, first: I64, dist: I64, count: I64,
              presync: Mask, line: Mask) -> npt.NDArray[np.int8]:
    """Each stamp's STATUS index: presync, unplaceable, ambiguous, extrapolated, assumed (its
    segment's own status, or mapped through its line alone), proven (the first that
    applies)."""
    status = np.zeros(len(count), dtype=np.int8)
    for k, c in enumerate(cals):
        weak = line[k] if c.status == "proven" else True
        status = np.where(cand[k] & (first == k) & weak, STATUS.index("assumed"), status)
    status = np.where((dist > 0) & (status == 0), STATUS.index("extrapolated"), status)
    status = np.where(count > 1, STATUS.index("ambiguous"), status)
    status = np.where(count == 0, STATUS.index("unplaceable"), status)
    return np.where(presync, STATUS.index("presync"), status)


def _by_order(cand: Mask, los: I64, his: I64, key: npt.ArrayLike, value: I64 | None = None
              ) -> tuple[Mask, int, int]:
    """Narrow each line's candidates by the log's order, which is evidence of time order: a
    later line's segment is not earlier, and its instant is not before the earliest instant
    every candidate of an earlier line allows (nor after the latest a later line allows). Where
    the stamps go down and the lines around confirm it, a monotone clock was set back in
    between: a later segment. A line out of order that its neighbours do not confirm as a
    set-back is an outlier (`order_outliers`): it keeps every candidate and narrows no other
    line. (candidates, outliers, lines whose candidates still contradict the order: kept)."""
    K, n = cand.shape
    idx = np.argsort(key, kind="stable")
    c0 = cand[:, idx]
    lo, hi = los[:, idx], his[:, idx]
    ks = np.arange(K)[:, None]
    big = np.iinfo(np.int64).max
    up = np.zeros(n, dtype=np.int64)
    out = np.zeros(n, dtype=bool)
    if value is not None and n > 1:
        out, up = order_outliers(np.asarray(value, dtype=np.int64)[idx])
    c = c0.copy()
    for _ in range(3):
        has = c.any(axis=0) & ~out
        kmin = np.where(has, np.where(c, ks, K).min(axis=0) - up, -K - 1)
        kmax = np.where(has, np.where(c, ks, -1).max(axis=0) - up, K + 1)
        earliest = np.where(has, np.where(c, lo, big).min(axis=0), -big)
        latest = np.where(has, np.where(c, hi, -big).max(axis=0), big)
        k_lo = np.maximum.accumulate(kmin) + up
        k_hi = np.minimum.accumulate(kmax[::-1])[::-1] + up
        t_lo = np.maximum.accumulate(earliest)
        t_hi = np.minimum.accumulate(latest[::-1])[::-1]
        nxt = c & (ks >= k_lo) & (ks <= k_hi) & (hi >= t_lo) & (lo <= t_hi)
        nxt[:, out] = c0[:, out]
        if np.array_equal(nxt, c):
            break
        c = nxt
    broken = c0.any(axis=0) & ~c.any(axis=0)
    c[:, broken] = c0[:, broken]
    res = np.empty_like(cand)
    res[:, idx] = c
    return res, int(out.sum()), int(broken.sum())


def order_outliers(v: I64, rounds: int = 4) -> tuple[Mask, I64]:
    """Over a log's stamps in its own order: (the lines out of order that are outliers, the
    set-backs entered up to each line). A drop between lines i and i+1 is a set-back when the
    two lines before it are both above the two after it (no one line explains it); otherwise
    the line that, left out, restores the order is the outlier (i above both its neighbours, or
    i+1 below both), else both. Repeated on the lines left until none is out of order."""
    n = len(v)
    out = np.zeros(n, dtype=bool)
    setback = np.zeros(n, dtype=bool)          # a confirmed set-back just before this line
    big = np.iinfo(np.int64).max
    for r in range(rounds):
        keep = np.flatnonzero(~out)
        w = v[keep]
        i = np.flatnonzero(w[1:] < w[:-1])
        if not len(i):
            break
        pad = np.concatenate(([-big, -big], w, [big, big]))
        a, b, c, d = pad[i + 1], pad[i + 2], pad[i + 3], pad[i + 4]
        confirmed = np.minimum(a, b) > np.maximum(c, d)
        setback[keep[i[confirmed] + 1]] = True
        i, a, b, c, d = i[~confirmed], a[~confirmed], b[~confirmed], c[~confirmed], d[~confirmed]
        if not len(i):
            break
        spike = a <= c
        dip = ~spike & (d >= b)
        both = (~spike & ~dip) | (r == rounds - 1)
        out[keep[i[spike | both]]] = True
        out[keep[i[dip | both] + 1]] = True
        setback[:] = False                     # found again on the lines left
    return out, np.cumsum(setback).astype(np.int64)


def describe(m: Mapped, i: int) -> str:
    """What a mapped line rests on, in words."""
    st = m.status_of(i)
    d = int(m.distance_ns[i])
    away = f", {d / NS:.3g} s from its calibration" if d else ""
    if st == "presync":
        return "stamped before the clock was set (pre-sync): no reference time"
    if st == "unplaceable":
        return "no segment of this clock ever showed this time: not placed"
    if st == "ambiguous":
        return f"segment undecidable: union of {m.calibration_of(i)}{away}"
    if st == "extrapolated":
        return (f"extrapolated via {m.calibration_of(i)}{away}: the model's ±{m.rate_ppm:g} ppm "
                f"over the gap, no break in between (the run's rate continuing, assumed: "
                f"[{int(m.assumed_lo_ns[i])}, {int(m.assumed_hi_ns[i])}] ns)"
                if m.assumed_lo_ns is not None and m.assumed_hi_ns is not None else
                f"extrapolated via {m.calibration_of(i)}{away}")
    return f"{st} via {m.calibration_of(i)}{away}"
