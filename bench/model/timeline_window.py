"""The lines of a timeline's window for `rackclock timeline --first` (bench/analysis/first_break.py):
the user's log lines whose interval meets the window (the run's own device events when no log
line does), as columns. `--window FROM..TO`: each end run seconds from the run's start or an ISO
8601 time with its offset; an end left out is open."""
from __future__ import annotations

import numpy as np

from bench.analysis.first_break import Lines
from bench.logs.logfile import LogError
from bench.logs.logstamps import ISO, Context, iso_stamp
from bench.model.timeline_table import BASES, UNIX_AFTER_NS, Timeline

BIG = np.iinfo(np.int64).max
LINE_BASES = (BASES.index("stamp"), BASES.index("event"), BASES.index("observed"))


def parse_window(text: str | None, t0: int) -> tuple[int, int]:
    """FROM..TO as reference ns (open ends: the int64 limits); LogError naming what is wrong."""
    if not text:
        return -BIG, BIG
    a, sep, b = text.partition("..")
    if not sep:
        raise LogError(f"--window {text!r}: expected FROM..TO (run seconds, or ISO 8601 times "
                       f"with their offset; an end may be left out)")
    lo, hi = _end(a, t0, -BIG, text), _end(b, t0, BIG, text)
    if lo > hi:
        raise LogError(f"--window {text!r}: FROM is after TO")
    return lo, hi


def _end(s: str, t0: int, open_end: int, text: str) -> int:
    s = s.strip()
    if not s:
        return open_end
    try:
        return t0 + round(float(s) * 1e9)
    except ValueError:
        pass
    m = ISO.fullmatch(s)
    if m is None or not m.group(8):
        raise LogError(f"--window {text!r}: {s!r} is neither run seconds nor an ISO 8601 time "
                       f"with its offset (Z, +01:00)")
    return iso_stamp(m, Context(zone="UTC"))[0]


def window_lines(tl: Timeline, lo_ns: int, hi_ns: int) -> Lines:
    """The window's lines: the user's log lines meeting [lo_ns, hi_ns], else the run's events."""
    c = tl.c
    kind = np.isin(c["basis"], LINE_BASES) & (c["lo"] <= hi_ns) & (c["hi"] >= lo_ns)
    user_src = np.array([s.user for s in tl.table.sources], dtype=bool)
    user = kind & user_src[c["src"]] if len(user_src) else kind
    pick = np.flatnonzero(user if user.any() else kind)
    dev = c["dev"][pick]
    names = tl.table.devices
    labels = [f"{names[int(d)][0]}: {tl.entry(int(i)).label}" for d, i in zip(dev, pick)]
    stamp = c["stamp"][pick]
    raw = c["has_stamp"][pick] & (c["basis"][pick] == 0) & (stamp > UNIX_AFTER_NS)
    return Lines(c["lo"][pick], c["hi"][pick], c["clock"][pick], stamp, c["res"][pick],
                 [names[int(d)][1] or names[int(d)][0] for d in dev], labels, stamp, raw)
