"""The unseen-step risk: what a clock's own steps say of the steps its reads may miss. One step
whose like could hide in one of its segments (_could_hide, _rate_unshown), or a read set aside by
less than such a step (_aside_hides), is carried as the fit's `hide_ns`; STEP_HISTORY steps or
more, breaks that show no step, a proven lag or such a step make the proven segments assumed
(_downgraded, _step_history).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace as _dc_replace
from typing import Any

import numpy as np

from bench.analysis import envelope as _envelope
from bench.analysis import segment as _seg
from bench.analysis.arrays import I64, Idx
from bench.analysis.breaks import Break
from bench.analysis.proven_segment import Segment
from bench.analysis.statuses import BoundStatus, BreakKind
from bench.analysis.unseen import unseen_step_ns


def _step_history(sp: _seg.Split, breaks: list[Break], segs: list[Segment],
                  reads: tuple[I64, I64, I64], q: int, prior: float, shown: int, refit: bool,
                  seen: int) -> tuple[list[Segment], int, int, int]:
    """What the clock's steps say of the ones that may hide (_model_breaks, _history_hides):
    (the segments, downgraded where more may hide; unknown breaks; steps seen; the least
    step that could hide)."""
    s, e, v = reads
    rate_hz = len(v) / max(1e-9, (e[-1] - s[0]) / 1e9)
    unknown, steps = _model_breaks(sp, breaks, shown)
    hide = _history_hides(breaks, sp.forced, segs, q, rate_hz, prior, refit) \
        if steps + unknown == 1 else 0
    steps += _aside_steps(sp)         # steps the reads set aside show
    if not hide and sp.outliers and steps + unknown < STEP_HISTORY:
        hide = _aside_hides(sp, segs, reads, q, rate_hz, prior)
    segs = _downgraded(segs) if seen or hide or steps + unknown >= STEP_HISTORY else segs
    return segs, unknown, steps, hide


STEP_HISTORY = 2    # steps a clock showed from which more may hide: its bounds are assumed


def _aside_steps(sp: _seg.Split) -> int:
    """Steps the reads the published split set aside show at the least: two for each burst
    that fits one line of its own apart from both sides (a step and its return; those set
    aside under the prior before a wider refit count, breaks._split_checked); STEP_HISTORY
    where reads were set aside in two places or more (runs of consecutive positions: each a bad
    answer or a blip one read caught, so more than one is a clock that may step, or answer
    wrong, anywhere; issue 39). One place alone is the model's bad answer."""
    at = sorted(i for i, _ in sp.outliers)
    places = sum(1 for k, i in enumerate(at) if k == 0 or i - at[k - 1] > 1)   # runs of them
    return STEP_HISTORY * max(sp.bursts, int(places >= 2))


def _aside_hides(sp: _seg.Split, segs: list[Segment], reads: tuple[I64, I64, I64], q: int,
                 rate_hz: float, prior: float) -> int:
    """Reads set aside in one place that miss the reads around them by less than a step that
    could hide in one of the segments (below the X it states for UNSEEN_WITHIN_S, as
    _could_hide): the least such miss, ns, else 0. A bad answer the model admits is one the
    clock could not have given; a read off by less than a step its reads would miss elsewhere
    may be the clock itself (a blip one read caught, a lag or a value updating slower than its
    tick, issue 39), and the others may be the ones that are off. A corrupted answer far off
    (more than X) stays the model's bad answer."""
    xs = [unseen_step_ns(q, sg.bracket_ns["median"], sg.offset_ns.width, rate_hz, rate_ppm=prior)
          for sg in segs if sg.bracket_ns]
    if not xs:
        return 0
    misses = [_aside_miss_ns(sp, p, reads, q, prior) for p, _ in sp.outliers]
    least = max(1, min(misses))
    return least if least < max(xs) else 0


def _aside_miss_ns(sp: _seg.Split, p: int, reads: tuple[I64, I64, I64], q: int,
                   prior: float) -> int:
    """How far read p (set aside) misses the envelope of the run around it, or of the runs on
    each side of it, under the prior, ns: the least step that explains it."""
    s, e, v = reads
    idx = _reads_around(sp, p)
    if not len(idx):
        return 1
    env = _envelope.build(s[idx], e[idx], v[idx], q, prior)
    lo, _ = env.at(int(s[p]))
    _, hi = env.at(int(e[p]))
    return int(max(int(v[p]) - int(e[p]) - hi, lo - (int(v[p]) + q - int(s[p])), 1))


def _reads_around(sp: _seg.Split, p: int) -> I64:
    """The kept reads of the run that holds position p, else of the runs next to it on each
    side."""
    around = [r for r in sp.runs if r[0] < p < r[-1]] or _runs_beside(sp.runs, p)
    idx = np.concatenate([np.asarray(r, dtype=np.int64) for r in around]) if around \
        else np.zeros(0, dtype=np.int64)
    return idx[~np.isin(idx, [i for i, _ in sp.outliers])]


def _runs_beside(runs: list[Idx], p: int) -> list[Idx]:
    """The last run before position p and the first after it (those there are)."""
    before = [r for r in runs if r[-1] < p]
    after = [r for r in runs if r[0] > p]
    return before[-1:] + after[:1]


def _history_hides(breaks: list[Break], forced: Sequence[int], segs: list[Segment], q: int,
                   rate_hz: float, prior: float, refit: bool) -> int:
    """A clock that showed one step (its own break, or one seen under the prior before a refit
    beyond it, `refit`) whose like could hide in its reads: the smallest such step, ns
    (1: no step to show), else 0 (_could_hide, _rate_unshown)."""
    hide = _could_hide(breaks, forced, segs, q, rate_hz, prior)
    return hide or (_rate_unshown(segs, prior) if refit else 0)


def _could_hide(breaks: list[Break], forced: Sequence[int], segs: list[Segment], q: int,
                rate_hz: float, prior: float) -> int:
    """The smallest step the clock's one break may have been, ns, where a step that size could
    hide in one of its segments (below the X that segment states for UNSEEN_WITHIN_S,
    unseen.unseen_step_ns); else 0. A clock that showed a step of a size its reads
    would miss elsewhere carries it into its risk: the reads cannot tell a step from a blip
    whose return went unseen, nor one step from a clock that steps again and again. A break
    whose size interval holds 0 showed no step at all (a lag, a rate beyond the model's); 1 ns
    stands for it."""
    own = _own_sized_breaks(breaks, forced)
    if len(own) != 1:
        return 0
    lo, hi = own[0].size_ns.lo, own[0].size_ns.hi      # type: ignore[union-attr]
    least = max(1, int(min(abs(lo), abs(hi)))) if lo * hi > 0 else 1
    xs = [unseen_step_ns(q, sg.bracket_ns["median"], sg.offset_ns.width, rate_hz,
                         rate_ppm=prior)
          for sg in segs if sg.bracket_ns]
    return least if xs and least < max(xs) else 0


def _own_sized_breaks(breaks: list[Break], forced: Sequence[int]) -> list[Break]:
    """The step or unknown breaks with a size that the clock showed itself (not `forced`)."""
    return [b for k, b in enumerate(breaks) if k not in forced and b.size_ns is not None
            and b.kind in (BreakKind.STEP, BreakKind.UNKNOWN)]


def _rate_unshown(segs: list[Segment], wide: float) -> int:
    """1 where a refit beyond the prior leaves a segment whose drift bound does not even tell
    its sign (it holds 0), or reaches the wider range's edge (`wide`): the reads then show no
    rate the wider range holds, so the break they showed under the prior may have been a step
    that the wider envelope now hides (a blip whose return went unseen), and a bound on the
    assumption's edge is assumed; else 0. A clock truly beyond the prior shows the sign of its
    rate, within the wider range, in every segment's drift."""
    edge = wide * (1 - 1e-9)
    return int(any(sg.drift_ppm.lo <= 0 <= sg.drift_ppm.hi or sg.drift_ppm.hi >= edge
                   or sg.drift_ppm.lo <= -edge for sg in segs))


def _model_breaks(sp: _seg.Split, breaks: list[Break], shown: int) -> tuple[int, int]:
    """(breaks of kind unknown, steps the clock showed) among the breaks its own reads made
    (not those another clock imposed); `shown`: the breaks seen under the prior before a refit
    beyond it (a refit in a wider range must not hide the steps it was asked about)."""
    own = [b for k, b in enumerate(breaks) if k not in sp.forced]
    return (sum(b.kind == BreakKind.UNKNOWN for b in own),
            max(shown, sum(b.kind == BreakKind.STEP for b in own)))


def _downgraded(segs: list[Segment]) -> list[Segment]:
    """Proven segments made assumed: the values prove a lag (only a floor on it, never a bound),
    or the clock broke STEP_HISTORY times or more, by steps or where no step shows (a break of
    kind unknown: a lag or a rate beyond the declared one, which can make the segments between
    such breaks miss too; repeated blips: more may hide, two in a segment break the
    one-unseen-step model; a burst of reads set aside together that fit one line apart from
    both sides is such a blip, its step and its return shown, _aside_steps), or the values fit
    no tick (resolution._no_tick_fits). One break alone is a step, whatever its size shows. The
    mean drift is made of the same offsets (_mean_drift took the segment's status before this): a proven
    one is made assumed with them (a blip inside its window moved the offset at its ends)."""
    return [_dc_replace(sg, offset_status=BoundStatus.ASSUMED, mean_drift=_assumed_md(sg))
            if sg.offset_status == BoundStatus.PROVEN else sg for sg in segs]


def _assumed_md(sg: Segment) -> dict[str, Any] | None:
    """The segment's mean drift with its status at best assumed."""
    md = sg.mean_drift
    if md is None or md.get("status") != BoundStatus.PROVEN:
        return md
    return {**md, "status": BoundStatus.ASSUMED}
