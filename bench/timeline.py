"""One cross-plane timeline: order proven where the bounds allow, "unordered" where they do not.

Each entry is a reference-time interval [lo_ns, hi_ns] proven to contain the instant it stands
for. Two entries are ordered when their intervals are disjoint, or when both are stamps of the
same device clock within one segment (a monotone clock orders its own stamps: a + q <= b).
Everything else is unordered, and said so. Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    source: str                     # device (or log file) the entry comes from
    plane: str
    label: str                      # the log line, stimulus or break, as it reads
    lo_ns: int
    hi_ns: int
    basis: str = "stamp"            # stamp | event | reference | break
    clock_key: str | None = None    # device/clock/segment, for the same-clock rule
    stamp_ns: int | None = None     # the device stamp and its resolution, for the same rule
    resolution_ns: int = 0

    @property
    def width_ns(self) -> int:
        return self.hi_ns - self.lo_ns


def before(a: Entry, b: Entry) -> bool:
    """Is `a` proven to precede `b`?"""
    if a.hi_ns < b.lo_ns:
        return True
    return (a.clock_key is not None and a.clock_key == b.clock_key and a.basis == b.basis == "stamp"
            and a.stamp_ns is not None and b.stamp_ns is not None
            and a.stamp_ns + a.resolution_ns <= b.stamp_ns)


def order(entries: list[Entry]) -> list[dict]:
    """Entries sorted by interval, grouped into blocks: every entry of a block is proven after
    every entry of the blocks before it; within a block, `unordered_with` lists (by index in the
    returned order) the entries whose order against this one is not proven."""
    ents = sorted(entries, key=lambda x: (x.lo_ns, x.hi_ns))
    out: list[dict] = []
    block, reach = -1, None
    for i, en in enumerate(ents):
        if reach is None or en.lo_ns > reach:
            block += 1
            reach = en.hi_ns
        else:
            reach = max(reach, en.hi_ns)
        out.append({"index": i, "block": block, "entry": en, "unordered_with": []})
    by_block: dict[int, list[dict]] = {}
    for r in out:
        by_block.setdefault(r["block"], []).append(r)
    for rows in by_block.values():
        for x in rows:
            for y in rows:
                if x is not y and not before(x["entry"], y["entry"]) and not before(y["entry"], x["entry"]):
                    x["unordered_with"].append(y["index"])
    return out


def widen(entry: Entry, latency_lo_ns: int, latency_hi_ns: int) -> Entry:
    """From the instant a device stamped a line to the instant of the event it logs:
    event = stamp - latency, latency in [lo, hi]."""
    return Entry(entry.source, entry.plane, entry.label, entry.lo_ns - latency_hi_ns,
                 entry.hi_ns - latency_lo_ns, "event", None, None, 0)
