"""This host's CLOCK_MONOTONIC against CLOCK_REALTIME (the simulated rack's reference), for the
truths of the planes whose clocks are the host's (IPMI's `ipmi_sim` SEL clock, the host kernel's).

Read, not estimated, when the kernel shows it: CLOCK_REALTIME = CLOCK_MONOTONIC + `offs_real`, the
offset of the REALTIME hrtimer base in /proc/timer_list (root only), exact to the ns and constant
but for steps (both clocks advance at the timekeeper's one rate); a time namespace shifts this
process's CLOCK_MONOTONIC by its `monotonic` line in /proc/self/timens_offsets. Otherwise the
midpoint of a REALTIME/MONOTONIC/REALTIME triple, the tightest of a few, with its half width:
a stall between the reads (preemption, the GIL, a descheduled vCPU: ms, and one such sample
once put a truth outside a proven bound in a loaded run) moves the midpoint by half the stall,
so a truth must not rest on one such triple.
"""
from __future__ import annotations

import time

NS = 1_000_000_000
TIMER_LIST = "/proc/timer_list"
TIMENS_OFFSETS = "/proc/self/timens_offsets"


def realtime_minus_monotonic_ns() -> int | None:
    """The kernel's CLOCK_REALTIME - CLOCK_MONOTONIC (`offs_real`, ns), exactly: the offset of the
    REALTIME hrtimer base (index 1) in /proc/timer_list; None when not readable (root only).
    Read line by line up to it: the MONOTONIC base's active timers come first, and a busy host
    lists enough of them to push it past any fixed prefix."""
    try:
        with open(TIMER_LIST) as f:
            in_realtime = False
            for line in f:
                if line.startswith(" clock "):
                    in_realtime = line.strip() == "clock 1:"
                elif in_realtime and line.startswith("  .offset:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def timens_monotonic_ns() -> int:
    """This process's time namespace shift of CLOCK_MONOTONIC (ns; 0 outside one). The kernel's
    own figures (offs_real, the kernel log's stamps) are not shifted."""
    try:
        with open(TIMENS_OFFSETS) as f:
            for line in f:
                name, sec, nsec = line.split()
                if name == "monotonic":
                    return int(sec) * NS + int(nsec)
    except (OSError, ValueError):
        pass
    return 0


def host_clock_pair(tries: int = 5) -> tuple[int, int, int]:
    """(realtime ns, monotonic ns, uncertainty ns): the monotonic clock's value at that realtime
    instant; uncertainty 0 when the kernel's offset is readable, else the half width of the
    tightest of `tries` REALTIME/MONOTONIC/REALTIME triples (its midpoint against the middle read)."""
    for _ in range(3):                           # the offset the same before and after: no step
        real = realtime_minus_monotonic_ns()
        if real is None:
            break
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        if realtime_minus_monotonic_ns() == real:
            return r, r - real + timens_monotonic_ns(), 0

    def triple() -> tuple[int, int, int]:
        r1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        m = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        return r1, time.clock_gettime_ns(time.CLOCK_REALTIME), m
    r1, r2, m = min((triple() for _ in range(tries)), key=lambda t: t[1] - t[0])
    return (r1 + r2) // 2, m, (r2 - r1 + 1) // 2
