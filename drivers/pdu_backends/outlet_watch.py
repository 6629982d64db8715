"""Outlet states as the PDU's traps announce them and as reads of its state column show them:
a change that a read shows and no trap announced within the grace period is a lost trap.
Pure bookkeeping (no I/O); drivers/snmp_pdu does the reads and receives the traps."""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_WATCHED = 64                 # outlets read per poll, at most (one GET)
ANY = "*"                        # a trap that does not say the new state


@dataclass
class Change:
    outlet: int
    state: str
    after_ns: int                # start of the read before, which showed the old state
    seen_ns: int                 # end of the read that first showed it


@dataclass
class OutletWatch:
    grace_ns: int
    traps_expected: bool         # a trap receiver is configured
    outlets: set[int] = field(default_factory=set)
    read: dict[int, tuple[str, int]] = field(default_factory=dict)   # last read: state, its s
    trapped: dict[int, tuple[str, int]] = field(default_factory=dict)   # last trap: state, t
    pending: list[Change] = field(default_factory=list)
    lost: int = 0

    def watch(self, outlet: int) -> None:
        if len(self.outlets) < MAX_WATCHED:
            self.outlets.add(outlet)

    def trap(self, outlet: int, state: str | None, t_ns: int) -> None:
        """A trap about `outlet` announcing `state` (None: a trap that does not say which)."""
        self.watch(outlet)
        self.trapped[outlet] = (state or ANY, t_ns)
        self.pending = [c for c in self.pending if not self._announced(c)]

    def _announced(self, c: Change) -> bool:
        """A trap with the new state (or not saying), received after the read that still showed
        the old one."""
        st = self.trapped.get(c.outlet)
        return st is not None and st[0] in (c.state, ANY) and st[1] >= c.after_ns

    def states_read(self, states: dict[int, str], s_ns: int, e_ns: int) -> list[Change]:
        """Record one read of the watched outlets; returns the changes it shows (the first read
        of an outlet shows none)."""
        changes = []
        for outlet, state in states.items():
            before = self.read.get(outlet)
            self.read[outlet] = (state, s_ns)
            if before is not None and before[0] != state:
                c = Change(outlet, state, before[1], e_ns)
                changes.append(c)
                if self.traps_expected and not self._announced(c):
                    self.pending.append(c)
        return changes

    def expired(self, now_ns: int) -> list[Change]:
        """Pending changes whose trap did not come within the grace period: lost traps."""
        gone = [c for c in self.pending if now_ns - c.seen_ns > self.grace_ns]
        self.pending = [c for c in self.pending if c not in gone]
        self.lost += len(gone)
        return gone
