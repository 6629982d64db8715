"""When the processes that probe get a core: the sharded workers, and the simulator that stands in
for the devices' own CPUs.

A probe starts late (runner.LATE_NS) when its loop waits for a core, and an answer that waits for
the emulator's turn widens its bracket. Under the ordinary scheduler these processes take turns
in time slices: at 300 simulated devices (two workers and two emulator processes on two cores,
each loop busy a third of the time) whichever one woke waited behind another's slice, and
probes started 10 ms or more late (nice -5 for all; lowering the emulators instead widened the
brackets; benchmarks/README.md, "Scale"). Each of these processes is one event
loop whose callbacks are short and which waits for I/O between them, so they are run as
real-time tasks of one priority (SCHED_FIFO, the lowest real-time priority): among equals nobody
is preempted, a callback runs to its end, and a loop that wakes waits at most for the callbacks
running on the cores; every ordinary process (the bench's own parent among them) waits for them.

Each process asks once its slow start is over (the devices opened, the rack served), from its
event loop's thread, for all its threads. Real time needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at
least REALTIME_PRIORITY; refused, the process asks for nice WORKER_NICE instead, and refused that
too it stays as it is; what it got is journalled.

A real-time loop that stops waiting (a bug, or a rack beyond the host's capacity keeping it busy)
must not keep a core from the host: after RTTIME_S of CPU without a wait the kernel sends SIGXCPU
(RLIMIT_RTTIME) and the process goes back to the ordinary scheduler at its nice, and says so; if
it cannot even do that within RTTIME_KILL_S the kernel ends it (its devices are then reported
failed, as for any worker that dies).
"""
from __future__ import annotations

import asyncio
import os
import resource
import signal
from collections.abc import Callable

WORKER_NICE = -5          # the ordinary scheduler's fallback (300 simulated devices at nice 0:
                          # 0.9-1.9 % of the probes started late; at -5: 0.1-0.6 %)
REALTIME_PRIORITY = 1     # SCHED_FIFO's lowest: above every ordinary process, below the
                          # kernel's threads and a ptp4l started with chrt
RTTIME_S = 1.0            # CPU without a wait after which a real-time process leaves real time
RTTIME_KILL_S = 10.0      # ... and after which the kernel ends one that could not


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _set_policy(policy: int, priority: int) -> None:
    for tid in _threads():
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except ProcessLookupError:       # a thread that ended meanwhile
            pass


def raise_nice(nice: int = WORKER_NICE) -> str:
    """This process at `nice` where allowed; what it got, in words."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        return f"at nice {nice}"
    except OSError as exc:
        return (f"at nice {os.getpriority(os.PRIO_PROCESS, 0)}: cannot raise it "
                f"({exc.strerror}; needs CAP_SYS_NICE)")


def realtime(on_left: Callable[[str], None] | None = None) -> str:
    """Every thread of this process (called from its event loop's thread, the main one) at
    SCHED_FIFO REALTIME_PRIORITY where allowed, with the RLIMIT_RTTIME way back to the nice it
    has (the callers raise it first); else at nice WORKER_NICE where allowed. Returns what it got,
    in words; `on_left(words)` is called on the loop if the process later leaves real time."""
    if not hasattr(os, "sched_setscheduler") or not hasattr(resource, "RLIMIT_RTTIME"):
        return raise_nice() + " (no real-time scheduling here)"
    try:        # the way back first: a real-time process without it could hold a core
        resource.setrlimit(resource.RLIMIT_RTTIME,
                           (int(RTTIME_S * 1e6), int(RTTIME_KILL_S * 1e6)))
        asyncio.get_running_loop().add_signal_handler(signal.SIGXCPU, _leave, on_left)
        _set_policy(os.SCHED_FIFO, REALTIME_PRIORITY)
    except (OSError, ValueError, RuntimeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        return (raise_nice() + f" (real time refused: {why}; needs CAP_SYS_NICE or an rtprio "
                f"limit of {REALTIME_PRIORITY})")
    return f"at real-time priority {REALTIME_PRIORITY} (SCHED_FIFO)"


def _leave(on_left: Callable[[str], None] | None) -> None:
    _set_policy(os.SCHED_OTHER, 0)       # sched_setscheduler keeps the nice
    asyncio.get_running_loop().remove_signal_handler(signal.SIGXCPU)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)   # one sent before the move: not a core dump
    if on_left is not None:
        on_left(f"left real time after {RTTIME_S:g} s of CPU without a wait: back at nice "
                f"{os.getpriority(os.PRIO_PROCESS, 0)}")


def describe(pid: int) -> str:
    """Another process's scheduling, in words (the simulator's, for the journal)."""
    try:
        if os.sched_getscheduler(pid) == os.SCHED_FIFO:
            return f"at real-time priority {os.sched_getparam(pid).sched_priority} (SCHED_FIFO)"
        return f"at nice {os.getpriority(os.PRIO_PROCESS, pid)}"
    except (OSError, AttributeError):
        return "at an unknown priority"
