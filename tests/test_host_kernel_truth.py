"""The simulated rack's truth for this host's clocks (bench.sim.host_kernel_emu.HostTruth, and
bench.sim.host_clocks.host_clock_pair under the IPMI SEL truth) under load:
a stall of the sampler between its clock reads (preemption, the GIL, a descheduled vCPU) must not
move the truth. Forced here: every CLOCK_MONOTONIC read the sampler makes is followed by a 50 ms
sleep. The truth must then still lie inside a bracket read afterwards that proves the offset; the
bracket is retried until it is narrower than a quarter of the stall (a condition with a deadline),
so a truth taken from the midpoint of a REALTIME/MONOTONIC/REALTIME triple (25 ms off) cannot
pass on any machine."""
from __future__ import annotations

import asyncio
import time

import pytest
from test_host_kernel import device

from bench.reference.clock import Reference
from bench.sim.host_clocks import host_clock_pair
from bench.sim.host_kernel_emu import HostTruth, kmsg_minus_monotonic_ns, kmsg_writable
from drivers.host_kernel import US, HostKernel

STALL_NS = 50_000_000
TIGHT_NS = STALL_NS // 4

needs_root = pytest.mark.skipif(not kmsg_writable(), reason="/dev/kmsg not writable (needs root; "
                                                            "runs in CI)")


def stalled(monkeypatch, sample):
    """`sample()` while each CLOCK_MONOTONIC read is followed by a stall."""
    real = time.clock_gettime_ns

    def late(clock):
        v = real(clock)
        if clock == time.CLOCK_MONOTONIC:
            time.sleep(STALL_NS / 1e9)                  # the clocks go on; the reader is late
        return v

    monkeypatch.setattr(time, "clock_gettime_ns", late)
    try:
        return sample()
    finally:
        monkeypatch.undo()


def tight(read, deadline_s: float = 20.0):
    """The first bracket `read()` -> (s, e, ...) narrower than TIGHT_NS, within the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        got = read()
        if got[1] - got[0] < TIGHT_NS:
            return got
        assert time.monotonic() < end, f"no bracket under {TIGHT_NS} ns within {deadline_s} s"


def mono_bracket():
    s = time.clock_gettime_ns(time.CLOCK_REALTIME)
    m = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    e = time.clock_gettime_ns(time.CLOCK_REALTIME)
    return s, e, m


@needs_root
def test_monotonic_truth_holds_when_the_sampler_stalls_between_its_reads(monkeypatch):
    truth = stalled(monkeypatch, lambda: HostTruth("monotonic"))
    assert truth.samples, truth.missing
    s, e, m = tight(mono_bracket)
    # CLOCK_MONOTONIC - CLOCK_REALTIME was m - t for some t in [s, e]; it is constant but for steps
    assert m - e <= truth.offset_ns(s) <= m - s, (m - e, truth.offset_ns(s), m - s)


def test_host_clock_pair_holds_when_stalled_between_its_reads(monkeypatch):
    """The IPMI SEL truth's sample: exact as root; otherwise its stated uncertainty covers it."""
    r, m, u = stalled(monkeypatch, host_clock_pair)
    s, e, m2 = tight(mono_bracket)
    assert m2 - e - u <= m - r <= m2 - s + u, (m2 - e, m - r, u, m2 - s)
    if kmsg_writable():                                 # root: the kernel's own figure
        assert u == 0


@needs_root
@pytest.mark.skipif(kmsg_minus_monotonic_ns() is None, reason="debugfs sched/debug not readable: "
                                                              "the kernel log's clock has no truth")
def test_kmsg_truth_holds_when_the_sampler_stalls_between_its_reads(monkeypatch):
    truth = stalled(monkeypatch, lambda: HostTruth("kmsg"))
    assert truth.samples, truth.missing

    async def marker():
        d = HostKernel(device(write_kmsg=True), Reference.now_ns, armed=True)
        await d.open()
        try:
            r = await d.read_clock("kmsg")
        finally:
            await d.close()
        return r.s_ns, r.e_ns, r.value_ns

    s, e, v = tight(lambda: asyncio.run(marker()))
    # the kernel stamped the marker at some t in [s, e] with local_clock() in [v, v + 1 us): the
    # log clock is increasing, so its truth at s is below v + 1 us and at e at or above v
    at_s, at_e = s + truth.offset_ns(s), e + truth.offset_ns(e)
    assert at_s < v + US and at_e >= v, (at_s - v, at_e - v)


def busy_timer_list(timers: int, offset_ns: int) -> str:
    """/proc/timer_list as a busy host writes it: CPU 0's MONOTONIC base lists `timers` active
    timers before the REALTIME base and its offset."""
    active = "".join(f" #{i}: <00000000{i:08x}>, hrtimer_wakeup, S:01\n"
                     f" # expires at {10**9 + i}-{10**9 + i + 50000} nsecs [in {i} to {i + 50000} "
                     f"nsecs]\n" for i in range(timers))
    base = ("  .base:       000000005781f9b4\n  .index:      {i}\n  .resolution: 1 nsecs\n"
            "  .offset:     {off} nsecs\nactive timers:\n")
    return ("Timer List Version: v0.10\nHRTIMER_MAX_CLOCK_BASES: 8\nnow at 25577230376661 nsecs\n"
            "\ncpu: 0\n clock 0:\n" + base.format(i=0, off=0) + active +
            " clock 1:\n" + base.format(i=1, off=offset_ns) +
            " clock 2:\n" + base.format(i=2, off=offset_ns + 37 * 10**9))


def test_realtime_offset_is_found_behind_many_active_timers(tmp_path, monkeypatch):
    """CI's loaded run listed enough timers ahead of the REALTIME base that a 4 KB read missed
    it, and the host planes' truth went missing."""
    from bench.sim import host_clocks
    f = tmp_path / "timer_list"
    f.write_text(busy_timer_list(600, 1764523456789012345))
    assert f.stat().st_size > 16 * 4096
    monkeypatch.setattr(host_clocks, "TIMER_LIST", str(f))
    assert host_clocks.realtime_minus_monotonic_ns() == 1764523456789012345
    f.write_text(busy_timer_list(3, 0).replace(" clock 1:", " clock 9:"))
    assert host_clocks.realtime_minus_monotonic_ns() is None


@needs_root
def test_realtime_offset_matches_the_clocks():
    """The offset read from the kernel lies inside a REALTIME/MONOTONIC/REALTIME bracket."""
    from bench.sim.host_clocks import realtime_minus_monotonic_ns
    s, e, m = tight(mono_bracket)
    real = realtime_minus_monotonic_ns()
    assert real is not None and s - m <= real <= e - m
