"""The read calendar of one event loop: when its devices' probes start, and what they cost it.

All devices of a worker process share one loop (bench/run/shards.py). Reads aimed at tick edges
crowd: clocks set by NTP tick within milliseconds of each other, so every BMC of a rack wants the
same instant of every second. Started together they queue on the loop; each starts late, misses
its aim, and its answer waits behind the others' (the bracket, stamped on the loop, widens),
while the loop is busy only part of the time (at 300 simulated devices: benchmarks/README.md,
"Scale").

So a probe is booked before it is planned. The loop's time is cut into slots; a slot holds
probes whose CPU cost adds up to at most `share` of it (the cost per read is measured on the loop
as it runs: CPU time of the loop's thread over the reads taken). An aimed probe takes its slot
or a neighbour within its tolerance, else it yields: the device reads at an exploration instant
instead (the aim is a refinement; a late aim is a wide bracket). Exploration reads keep their
instant whatever the slots hold: their uniform tick phase is what the detection guarantee
(DESIGN.md, "Probing that can see steps") rests on, and they are one probe in `explore_every`.
Other reads (fine clocks, a clock's first reads) move to the next slot with room.

A periodic stimulus costs both ends far more than its exchange: the device writes a log entry and
pushes an event, and the bench polls the log every 100 ms until the entry shows (0.2-0.6 s on the
simulated rack: about five reads' worth in all). Every device's first stimulus falls due at one
instant (300 devices: the simulator went from 0.4 to 1.2 cores in that second, and the probes
then started late). So stimuli take a lane of their own, one per STIMULUS_SLOTS slots.
"""
from __future__ import annotations

import time

SLOT_NS = 20_000_000          # the calendar's grain
SHARE = 0.4                   # of a slot's time the loop may spend on the probes booked in it
                              # (0.6 left 2-3 % of probes late at 300 devices, 2 workers and
                              # the emulators on 2 cores; 0.4: 0.5-1.3 %)
STIMULUS_SLOTS = 2            # the stimulus lane's spacing: 25 per second per loop
DEFAULT_COST_NS = 3_000_000   # per read until measured (bench/run/exchange_cost.json's order)


class ReadCalendar:
    """Bookings per slot, in ns of the loop's CPU; one per event loop, used from its thread."""

    def __init__(self, slot_ns: int = SLOT_NS, share: float = SHARE,
                 cost_ns: int = DEFAULT_COST_NS):
        self.slot_ns = int(slot_ns)
        self.cap_ns = int(slot_ns * share)
        self.cost_per_read_ns = int(cost_ns)
        self.booked: dict[int, int] = {}
        self.lane: set[int] = set()       # slots holding a stimulus
        self.yielded = 0          # aimed probes that gave way to an exploration read
        self.moved = 0            # probes moved to a later slot
        self._cpu0: float | None = None
        self._reads0 = 0
        self._pruned_to = 0

    def cost(self, reads: int) -> int:
        return reads * self.cost_per_read_ns

    def _room(self, slot: int, cost: int) -> bool:
        used = self.booked.get(slot, 0)
        return used == 0 or used + cost <= self.cap_ns

    def _take(self, slot: int, cost: int) -> None:
        self.booked[slot] = self.booked.get(slot, 0) + cost

    def force(self, t_ns: int, reads: int) -> int:
        """Book a probe at t_ns whatever the slot holds (an exploration read)."""
        self._take(t_ns // self.slot_ns, self.cost(reads))
        return t_ns

    def aim(self, t_ns: int, reads: int, tolerance_ns: int) -> int | None:
        """Book a probe at t_ns if its slot has room, else the nearest slot within
        ±tolerance_ns (the instant moved by the same amount); None: nothing near has room."""
        cost, slot = self.cost(reads), t_ns // self.slot_ns
        reach = max(0, tolerance_ns) // self.slot_ns
        for d in sorted(range(-reach, reach + 1), key=abs):
            if self._room(slot + d, cost):
                self._take(slot + d, cost)
                return t_ns + d * self.slot_ns
        self.yielded += 1
        return None

    def later(self, t_ns: int, reads: int, limit_ns: int) -> int:
        """Book a probe at t_ns or at the start of the first later slot with room, up to
        t_ns + limit_ns (then at t_ns + limit_ns whatever it holds)."""
        cost, slot = self.cost(reads), t_ns // self.slot_ns
        last = (t_ns + max(0, limit_ns)) // self.slot_ns
        for s in range(slot, last + 1):
            if self._room(s, cost):
                self._take(s, cost)
                if s == slot:
                    return t_ns
                self.moved += 1
                return s * self.slot_ns
        return self.force(t_ns + max(0, limit_ns), reads)

    def stimulus(self, t_ns: int, limit_ns: int) -> int:
        """Book a stimulus at t_ns or at the start of the first later slot with the lane free for
        STIMULUS_SLOTS slots, up to t_ns + limit_ns (then there whatever the lane holds); it
        costs its slot a read."""
        slot, last = t_ns // self.slot_ns, (t_ns + max(0, limit_ns)) // self.slot_ns
        s = next((s for s in range(slot, last + 1)
                  if not any(x in self.lane for x in range(s, s + STIMULUS_SLOTS))), None)
        if s is None:
            return self.force(t_ns + max(0, limit_ns), 1)
        self.lane.update(range(s, s + STIMULUS_SLOTS))
        self._take(s, self.cost(1))
        if s == slot:
            return t_ns
        self.moved += 1
        return s * self.slot_ns

    def measure(self, reads_total: int, now_ns: int) -> None:
        """Update the cost per read from the loop thread's CPU time since the last call (call
        it every second or so from the loop), and forget the slots already past."""
        cpu = time.thread_time()
        if self._cpu0 is not None and reads_total - self._reads0 >= 20:
            per = (cpu - self._cpu0) * 1e9 / (reads_total - self._reads0)
            self.cost_per_read_ns = int(0.5 * self.cost_per_read_ns + 0.5 * per)
        if self._cpu0 is None or reads_total - self._reads0 >= 20:
            self._cpu0, self._reads0 = cpu, reads_total
        now_slot = now_ns // self.slot_ns
        if now_slot - self._pruned_to > 50:
            self._prune(now_slot)

    def _prune(self, now_slot: int) -> None:
        """Forget the slots already past."""
        for s in [s for s in self.booked if s < now_slot]:
            del self.booked[s]
        self.lane = {s for s in self.lane if s >= now_slot}
        self._pruned_to = now_slot
