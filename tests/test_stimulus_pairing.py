"""Which log entry answers which stimulus: an entry that comes after the next stimulus was sent is
never read as that next stimulus's prompt answer (a latency longer than the stimulus interval
made 'proven' bounds of 0.1-0.5 s for a true 0.9-1.5 s). A Redfish test event names its message
and is paired by it; a stimulus that names none (a coil, an SNMP SET) is bounded over every
earlier stimulus still without an entry."""
from __future__ import annotations

import numpy as np

from bench.model.rundata import Samples
from bench.model.summary import _latency_event, _pair_stimuli

S = 1_000_000_000


def samples(rows: list[tuple[str, str, float, str]]) -> Samples:
    """(kind, clock, instant s, raw) rows, each exchange 1 ms long."""
    n = len(rows)
    s_ns = np.array([int(t * S) for _, _, t, _ in rows], dtype=np.int64)
    return Samples(seq=np.arange(1, n + 1, dtype=np.int64), kind=[r[0] for r in rows],
                   clock=[r[1] for r in rows], s_ns=s_ns, e_ns=s_ns + 1_000_000,
                   value_ns=np.zeros(n, dtype=np.int64), has_value=np.zeros(n, dtype=bool),
                   resolution_ns=np.zeros(n, dtype=np.int64), stamp=["user"] * n,
                   status=["ok"] * n, raw=[r[3] for r in rows])


def observed(smp: Samples) -> list[tuple[int, int]]:
    out = []
    for i, j, p, cands in _pair_stimuli(smp):
        ev = _latency_event(smp, i, j, p, None, cands)
        out.append((ev.observed_ns.lo, ev.observed_ns.hi) if ev.observed_ns else None)
    return out


def test_a_redfish_test_event_is_paired_by_the_message_it_names():
    smp = samples([("stimulus", "test_event", 0.0, "HTTP 204 rackclock test event 1"),
                   ("stimulus", "test_event", 1.0, "HTTP 204 rackclock test event 2"),
                   ("event", "datetime", 1.4, "1 rackclock test event 1"),
                   ("event", "datetime", 2.3, "2 rackclock test event 2"),
                   ("stimulus", "test_event", 3.0, "HTTP 204 rackclock test event 10"),
                   ("event", "datetime", 3.5, "3 rackclock test event 10")])
    pairs = [(i, j) for i, j, _, _ in _pair_stimuli(smp)]
    assert pairs == [(0, 2), (1, 3), (4, 5)]      # event 1 is the first's, though after the second
    (lo1, hi1), (lo2, hi2), _ = observed(smp)
    assert lo1 <= 1.4 * S <= hi1 and lo2 <= 1.3 * S <= hi2


def test_an_entry_that_names_no_stimulus_is_bounded_over_every_stimulus_still_waiting():
    """Coil writes 1 s apart, each alarm logged 1.5 s later: the first entry comes after the
    second write. Whichever write it answers, the bound holds it (from the first write sent)."""
    smp = samples([("stimulus", "test_alarm", 0.0, "coil 10 := 1"),
                   ("stimulus", "test_alarm", 1.0, "coil 10 := 1"),
                   ("event", "rtc", 1.5, "1 alarm 901 (test alarm)"),
                   ("stimulus", "test_alarm", 2.0, "coil 10 := 1"),
                   ("event", "rtc", 2.5, "2 alarm 901 (test alarm)")])
    got = observed(smp)
    assert got[0] is None                          # nothing came before the second write
    lo, hi = got[1]
    assert lo <= 0.5 * S and hi >= 1.5 * S         # the second's own, or the first's 1.5 s
    lo, hi = got[2]
    assert lo <= 0.5 * S and hi >= 2.5 * S         # the first still has no entry of its own


def test_prompt_entries_keep_their_narrow_bounds():
    smp = samples([("stimulus", "test_alarm", 0.0, "coil 10 := 1"),
                   ("event", "rtc", 0.3, "1 alarm 901 (test alarm)"),
                   ("stimulus", "test_alarm", 1.0, "coil 10 := 1"),
                   ("event", "rtc", 1.3, "2 alarm 901 (test alarm)")])
    for lo, hi in observed(smp):
        assert 0.29 * S <= lo <= hi <= 0.31 * S


def test_a_kernel_log_line_is_paired_by_its_own_text_not_another_runs():
    """The kernel log is the host's: a run's kmsg test events were paired with another run's
    (written 0.44 s before the stimulus by a run beside it), whose stamp then mapped outside
    [request, answer] and the latency went unbounded. Each driver now names itself in the line."""
    smp = samples([("event", "kmsg", 0.5, "5141 rackclock test event 0c1d2e3f-17"),
                   ("stimulus", "log_line", 1.0, "kmsg rackclock test event 5f0c1a2b-1"),
                   ("event", "kmsg", 1.2, "5165 rackclock test event 0c1d2e3f-18"),
                   ("event", "kmsg", 1.2, "5166 rackclock test event 5f0c1a2b-1"),
                   ("stimulus", "log_line", 2.0, "kmsg rackclock test event 5f0c1a2b-2"),
                   ("event", "kmsg", 2.1, "5170 rackclock test event 5f0c1a2b-2")])
    assert [(i, j) for i, j, _, _ in _pair_stimuli(smp)] == [(1, 3), (4, 5)]
