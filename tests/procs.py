"""Processes as /proc shows them, and conditions waited for with a deadline (never a fixed
sleep), for tests that start commands and check what they leave behind."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PPID, SESSION = 1, 3          # fields of /proc/PID/stat after the command name


def pids_where(field: int, value: int, ended: bool = True) -> list[int]:
    """The pids whose /proc/PID/stat field (PPID or SESSION) equals `value`; `ended=False`
    leaves out the zombies (ended, not yet reaped)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[field]) == value and (ended or stat[0] != "Z"):
                out.append(int(p.name))
    return out


def wait_until(cond, timeout_s: float, what: str):
    """cond()'s first true value, polled every 0.2 s; AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout_s} s")


def reap_session(sid: int, timeout_s: float) -> list[int]:
    """Wait (until the deadline) for the processes of session `sid` to end, then SIGKILL those
    left; returns the pids that had to be killed."""
    deadline = time.monotonic() + timeout_s
    while (left := pids_where(SESSION, sid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left
