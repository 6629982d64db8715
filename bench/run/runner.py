"""Probe every device concurrently, one asyncio task per device (`DeviceWorker`), so a slow or
hung device never delays another's brackets. A large rack (SHARD_MIN_DEVICES or more) is sharded
over worker processes, one event loop each with all its devices' tasks (bench/run/shards.py); a
small one runs in the bench's process, each task on a loop of its own in a thread of its own.
Every exchange is written as it completes; a driver's blocking calls run off the loop (to_thread).

Per device: open and identify, read the log's backlog, wait at the loop's start line
(bench/run/startline.py); read each clock once per slot of the plan's grid at the device's rate,
dithered in the slot (or at the instant the tick-edge scheduler picks); send the allowed stimuli
on the plan's schedule; poll the device log. Errors become rows with their error class and
journal lines; after repeated clock-read failures (log polls and stimuli never count) the driver
is reopened, with a backoff that doubles up to RECONNECT_CAP_S. A run never stops for one device.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bench.config.inventory import DeviceConfig
from bench.model.documents import DeviceEntry
from bench.model.manifest import DeviceProbed
from bench.model.run_statuses import ErrorKind, RowStatus, parse
from bench.model.rundata import in_int64
from bench.model.store import SampleWriter
from bench.run.calendar import ReadCalendar
from bench.run.readring import ReadRing
from bench.run.startline import Peers, StartLine
from drivers import driver_class
from drivers.base import ClockSpec, DeviceError, Driver, LogEntry, LogSource, StimulusTarget

if TYPE_CHECKING:
    from bench.analysis.probe_schedule import ProvenTick

NS = 1_000_000_000
LATE_NS = 10_000_000           # a probe that starts this long after its planned instant is late
LEAD_PROBES = 16               # probes whose start latency sets the lead (Runner._lead_ns) ...
LEAD_CAP_NS = 50_000_000       # ... at most this: a loop that late is not aiming anything
BURST_WAIT_NS = 40_000_000     # a burst's last read waits at most this long after the one before
SHARD_MIN_DEVICES = 32         # fewer devices: one process (one core is more than enough)
RECONNECT_CAP_S = 60.0         # the longest wait between reconnects (doubling from 1 s)
OPENS_AT_ONCE = 16             # per loop: an open costs CPU (a TLS login, an SNMP engine's
                               # tables: 5-15 ms), and many at once starve the answers of the
                               # devices already open; 4 left the last of 150 devices 5-17 s
                               # from their first read
READS_KEPT = 2000              # per clock, the reads the schedule keeps (it looks at the last
                               # 400): a long run (rackclock watch) keeps its memory flat
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbePlan:
    duration_s: float = 60.0
    stimulus_every_s: float | None = 15.0     # each allowed stimulus in turn; None: no stimuli
    first_stimulus_s: float = 5.0
    log_poll_s: float = 2.0
    watch_poll_s: float = 1.0                 # after a stimulus, poll the log this often (at
                                              # most once a second: the log is a BMC's slowest
    watch_s: float = 5.0                      # resource) for this long or until an entry
                                              # appears
    timeout_s: float = 5.0                    # per exchange
    reopen_after: int = 3                     # consecutive failures before reconnecting
    tick_edge: bool = True                    # aim reads of coarse clocks at predicted tick edges
    dither: float = 0.5                       # a read at its slot's centre + period * U(-d/2, d/2)
    explore_every: int = 4                    # every n-th read of an aimed clock stays random
    burst: int = 2                            # reads back to back at each probe: the first wakes
                                              # the path (an idle path widens a bracket ~3-6x)
    schedule: tuple = ()                      # (device, at_s, "NAME[:TARGET]"): stimuli at set
                                              # instants (an incident cascade), besides the above


@dataclass
class DeviceStatus:
    """Live state of one device, read by the progress display."""
    name: str
    plane: str
    state: str = "starting"
    reads: int = 0
    errors: int = 0
    stimuli: int = 0
    events: int = 0
    last_bracket_ns: int | None = None
    last_error: str = ""
    probes: int = 0                       # probes started (a burst of reads each) ...
    late: int = 0                         # ... of which started LATE_NS or more after their plan
    late_max_ns: int = 0
    aims_yielded: int = 0                 # aimed probes read at an exploration instant instead:
                                          # the loop's calendar had no room at the aim
    identity: dict = field(default_factory=dict)
    clocks: list = field(default_factory=list)
    recent: dict = field(default_factory=dict)    # clock -> [(s, e, v, q)] for bench.output.live
    traffic: dict = field(default_factory=dict)   # what was sent: totals and per minute (count)

    def count(self, kind: str, minute: int) -> None:
        """One request, login, throttled answer or reconnect in minute `minute` of the run."""
        t = self.traffic
        t[kind] = t.get(kind, 0) + 1
        rows = t.setdefault("per_minute", [])
        if not rows or rows[-1]["minute"] != minute:
            rows.append({"minute": minute})
        rows[-1][kind] = rows[-1].get(kind, 0) + 1

    def record(self, before: DeviceEntry | None = None) -> DeviceProbed:
        """The manifest's fields for this device after a probing loop; counts add to those of
        `before` (its manifest entry), so a procedure that probes twice keeps both."""
        b = before or DeviceEntry(self.name)
        return DeviceProbed(self.identity, self.clocks, self.state, self.plane,
                            b.reads + self.reads, b.probes + self.probes, b.late_probes + self.late,
                            max(b.late_max_ns, self.late_max_ns),
                            b.aims_yielded + self.aims_yielded, self.traffic)


PHASE_STEP = (5 ** 0.5 - 1) / 2      # the golden ratio's fraction: k * it mod 1 fills [0, 1) evenly


def stimulus_phase(t_ns: int, k: int, period_s: float) -> int:
    """The instant in [t_ns, t_ns + 1 s) at phase frac(k * PHASE_STEP) of the reference second,
    for the k-th periodic stimulus when the period is 2 s or more (else t_ns); t_ns is the
    k-th period of the first stimulus's instant, so the shifts do not add up over a run. A log that stamps
    whole seconds cuts each stimulus's latency at a different phase of its tick, so the latency
    quantiles narrow as stimuli add up; at one fixed phase every stimulus would cut it the same
    way and the bounds would stay a tick wide however many were sent."""
    if period_s < 2.0:
        return t_ns
    want = int((k * PHASE_STEP) % 1.0 * NS)
    return t_ns + (want - t_ns % NS) % NS


def _kind_of(exc: BaseException) -> str:
    if isinstance(exc, DeviceError):
        return parse(ErrorKind, exc.kind)
    if isinstance(exc, asyncio.TimeoutError):
        return ErrorKind.TIMEOUT
    if isinstance(exc, (ConnectionError, OSError)):
        return ErrorKind.UNREACHABLE
    return ErrorKind.ERROR


def _message(exc: BaseException) -> str:
    if isinstance(exc, DeviceError):
        return exc.message
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer within the timeout"
    return f"{type(exc).__name__}: {exc}"


class WorkerStore(Protocol):
    """Where a device's worker writes: the run's RunStore (bench/model/store.py), or in a worker
    process its ShardStore (bench/run/shards.py)."""

    def samples(self, device: str) -> SampleWriter: ...

    def journal(self, device: str, level: str, kind: str, message: str) -> None: ...

    def update_device(self, name: str, **fields: Any) -> None: ...


@runtime_checkable
class _EventPusher(Protocol):
    """A driver that hears events as they happen (drivers/redfish_events.py)."""
    on_event: Callable[[LogEntry], None] | None

    def pushed_events(self) -> list[LogEntry]: ...


@dataclass
class _Schedule:
    """A device's probing schedule while it measures: when each event falls due next."""
    specs: list                     # the driver's clocks (ClockSpec)
    reads: dict[str, ReadRing]      # per clock: its recent reads (s, e, value)
    due: dict[str, int]             # per clock: its next read
    stimuli: list                   # the periodic stimuli, taken in turn
    stim_due: int                   # the next periodic stimulus
    planned: list                   # (at_ns, "NAME[:TARGET]"): stimuli at set instants
    poll_due: int                   # the next log poll
    stim_i: int = 0
    stim_base: int = 0              # the first periodic stimulus's instant: the k-th is due a
                                    # k periods after it (no delay accumulates)
    watch_until: int = 0            # until then the log is polled often (a stimulus's entry)
    failures: int = 0               # clock reads failed in a row


def _due_clocks(sched: _Schedule, now: int) -> list:
    """The clocks (ClockSpec) whose read is due at `now`."""
    return [c for c in sched.specs if sched.due[c.name] <= now]


class DeviceWorker:
    """One device's probing, an asyncio task (`await worker.run()`) that never raises."""

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], store: WorkerStore,
                 plan: ProbePlan, armed: bool, stop: threading.Event, seed: int = 0):
        self.config = config
        self.now_ns = now_ns
        self.store = store
        self.plan = plan
        self.armed = armed
        self.stop_event = stop
        self.rng = random.Random(seed)
        self._aim_state: dict[str, dict] = {}      # per clock: where its current segment starts
        self._leads: dict[tuple[str, str], deque[int]] = {}   # (clock, read): start − plan
        self._then: dict[str, int | None] = {}     # per clock: its next probe's last read's plan
        self._grid: dict[str, list] = {}           # per clock: the plan's grid (origin, slot)
        self._ticks: dict[str, ProvenTick] = {}        # per clock: probe_schedule.ProvenTick
        self.status = DeviceStatus(config.name, config.plane)
        self.out: SampleWriter | None = None
        self.cursor: str | None = None
        self.logged = 0                           # log entries seen (pushed events not counted)
        self._pushed_held: list | None = None     # pushed events held while a stimulus is in flight
        self._poll_ns = 0                    # how long the last log poll took
        self._log_wanted: int | None = None  # since when a due log poll waits for clock reads
        self.open_gate: asyncio.Semaphore | None = None   # set by run_workers: opens at once
        self.calendar: ReadCalendar | None = None         # set by run_workers: the loop's probes
        self.start_line: StartLine | None = None          # set by run_workers: start together
        self._end = 2**63 - 1                             # the run's end for this device
        self._start = 0                                   # the run's start for this device
        self._reconnect_s = 1.0                           # the wait before the next reconnect

    # -- task ---------------------------------------------------------------------------------
    async def run(self) -> None:
        self.out = self.store.samples(self.config.name)
        try:
            await self._main()
        except asyncio.CancelledError:            # still running when the run's deadline passed
            self.status.state = "hung"
            self.store.journal(self.config.name, "error", "hung", "worker did not stop in time")
        except Exception as exc:  # last resort: the worker must record, never take the run down
            self._error("worker", exc)
            self._row("worker", "", exc)
            self.status.state = "failed"
        finally:
            self._at_start_line()
            self.out.close()

    def _samples(self) -> SampleWriter:
        """The device's sample writer, opened by run()."""
        if self.out is None:
            raise RuntimeError(f"{self.config.name}: the worker is not running")
        return self.out

    def _row(self, kind: str, clock: str, exc: BaseException, s_ns: int | None = None) -> None:
        """An error as a sample row, so the summary's table counts it with the reads' errors."""
        try:
            t = self.now_ns()
            self._samples().write(kind, clock, t if s_ns is None else s_ns, t, None, None, "user",
                           _kind_of(exc), f"{kind}: {_message(exc)}")
        except Exception:          # the run folder itself failing is recorded by the run
            pass

    def _error(self, what: str, exc: BaseException) -> None:
        kind, msg = _kind_of(exc), _message(exc)
        self.status.errors += 1
        self.status.last_error = f"{kind}: {msg}"[:120]
        self.store.journal(self.config.name, "error", kind, f"{what}: {msg}")
        log.info("%s: %s: %s: %s", self.config.name, what, kind, msg)

    async def _sleep_until(self, t_ns: int) -> bool:
        """Sleep until reference time t_ns or the stop; False when stopped."""
        while not self.stop_event.is_set():
            d = (t_ns - self.now_ns()) / NS
            if d <= 0:
                return True
            await asyncio.sleep(min(d, 0.25))
        return False

    async def _open(self) -> Driver | None:
        if self.open_gate is None:
            return await self._open_now()
        async with self.open_gate:          # the open's timeout runs from its turn on
            if self.stop_event.is_set() or self.now_ns() >= self._end:
                return None                 # its turn came after the run's end
            return await self._open_now()

    async def _open_now(self) -> Driver | None:
        drv = driver_class(self.config.driver)(self.config, self.now_ns, armed=self.armed)
        if hasattr(drv, "on_traffic"):            # a driver that counts what it sends
            drv.on_traffic = self._count
        try:
            await asyncio.wait_for(drv.open(), self.plan.timeout_s * 2)
            ident = await asyncio.wait_for(drv.identity(), self.plan.timeout_s)
        except Exception as exc:
            self._error("open", exc)
            self._samples().write("read", "", self.now_ns(), self.now_ns(), None, None, "user",
                           _kind_of(exc), f"open: {_message(exc)}")
            try:
                await drv.close()
            except Exception:
                pass
            return None
        self.status.identity = {"vendor": ident.vendor, "model": ident.model,
                                "serial": ident.serial, "firmware": ident.firmware,
                                **({"extra": ident.extra} if ident.extra else {})}
        self.status.clocks = [c.__dict__ for c in drv.clocks()]
        self.store.update_device(self.config.name, identity=self.status.identity,
                                 clocks=self.status.clocks, plane=self.config.plane)
        self.store.journal(self.config.name, "info", "identity",
                           f"{ident.vendor} {ident.model} serial {ident.serial} fw {ident.firmware}")
        if isinstance(drv, _EventPusher):         # a driver that hears events as they happen
            drv.on_event = self._pushed
            for en in drv.pushed_events():
                self._pushed(en)
        return drv

    # -- schedule -----------------------------------------------------------------------------
    def _next_read(self, spec: ClockSpec, reads: ReadRing, now: int) -> int:
        """The probe of the clock's next slot on the plan's grid (probe_schedule.grid_slot: one
        probe per period, so the rate read is the plan's). Dithered inside the slot by default;
        for coarse clocks, aimed at the predicted tick edge in it, except every
        `explore_every`-th probe, which reads at a uniform tick phase so that a step the aimed
        reads would straddle unseen is still found. Booked on the loop's calendar
        (bench/run/calendar.py) when it has one: an aim without room there explores instead."""
        from bench.analysis.probe_schedule import ProvenTick, explore_instant_ns, grid_slot
        self._then[spec.name] = None
        period = NS / self.config.rate_hz
        d = self.plan.dither
        grid = self._grid[spec.name]
        grid[1], centre = grid_slot(grid[0], grid[1], period, now)
        # the tick the values prove as soon as they prove it (a 1 s clock declared 100 ms)
        q = self._ticks.setdefault(spec.name, ProvenTick(spec.resolution_ns)).update(reads)
        t = max(now, explore_instant_ns(self.rng.random(), q, centre, period, d))
        coarse = (self.plan.tick_edge and q >= 1_000_000 and len(reads) >= 4
                  and not spec.modulus_ns)
        exploring = coarse and (len(reads) // max(1, self.plan.burst)) % self.plan.explore_every == 0
        if not coarse:
            jitter = (self.rng.random() - 0.5) * d * period
            return self._book_later(max(now, int(centre + jitter)), int(period * d / 2))
        if exploring:
            return self._book_explore(t)
        return self._aimed(spec, reads, now, centre, q, t)

    def _aimed(self, spec: ClockSpec, reads: ReadRing, now: int, centre: int, q: int, t: int) -> int:
        """The aimed probe of this slot (probe_schedule.next_probe_pair), planned its measured
        lead earlier; booked on the calendar; else an exploration read at `t`."""
        from bench.analysis.probe_schedule import AIM_REACH, aim_from_ns, next_probe_pair, paired_slots
        period = NS / self.config.rate_hz
        s, e, v = (list(x) for x in zip(*reads[-400:]))
        bracket = sorted(b - a for a, b in zip(s[-20:], e[-20:]))[len(s[-20:]) // 2]
        burst, paired = max(1, self.plan.burst), paired_slots(q, period)
        lead = self._lead_ns(spec.name, "last", bracket * (burst - 1))
        first = self._lead_ns(spec.name, "first", 0)
        first_aims = paired and burst > 1
        try:                # the edge nearest the slot's centre
            aimed, then = next_probe_pair(
                s, e, v, q, aim_from_ns(now, centre, q, period), bracket,
                first if first_aims else lead,
                state=self._aim_state.setdefault(spec.name, {}), paired=paired, burst=burst)
        except Exception as exc:   # the scheduler failing must never stop the reads
            self.store.journal(self.config.name, "warn", "schedule", f"tick-edge: {exc!r}")
            return self._book_explore(t)
        if aimed is None:
            return self._book_explore(t)
        aimed, then = self._planned_from_aim(spec.name, int(aimed), then, first_aims, lead, first)
        if not now <= aimed < centre + AIM_REACH * period:   # no edge to aim at from this slot
            return self._book_explore(t)
        return self._book_aimed(spec.name, aimed, then, bracket, t)

    def _planned_from_aim(self, clock: str, aimed: int, then: int | None, first_aims: bool,
                          lead: int, first: int) -> tuple[int, int | None]:
        """The instants to plan the probe's reads at, each its measured lead before its aim:
        the burst's last read aims (`lead`), or, with `first_aims`, the first read (a flank
        or a bisecting read, `first`) and the last waits for its own (`then`)."""
        if not first_aims:
            return aimed - lead, then
        return aimed - first, None if then is None else int(then) - self._lead_ns(clock, "then", 0)

    def _book_aimed(self, clock: str, aimed: int, then: int | None, bracket: int, t: int) -> int:
        """The aimed probe booked on the calendar (its burst's last read moved with it); an
        exploration read at `t` where the calendar yields the aim."""
        booked = (aimed if self.calendar is None
                  else self.calendar.aim(aimed, max(1, self.plan.burst), bracket // 2))
        if booked is None:
            self.status.aims_yielded += 1
            return self._book_explore(t)
        self._then[clock] = None if then is None else then + booked - aimed
        return booked

    def _lead_seen(self, clock: str, read: str, late_ns: int) -> None:
        self._leads.setdefault((clock, read), deque(maxlen=LEAD_PROBES)).append(late_ns)

    def _lead_ns(self, clock: str, read: str, default: int) -> int:
        """How long before its aim a read is planned: the median, over the clock's last
        LEAD_PROBES probes, of how long after its planned instant that read of the probe started
        ("first", "last" of a burst sent back to back, "then": a burst's last read planned apart;
        the loop's wake-up, the driver's work before the wire, the reads before it); `default`
        until measured. The flank reads rest on it: one that starts late lies inside what the
        model allows and contradicts nothing."""
        got = sorted(self._leads.get((clock, read), ()))
        if len(got) < 4:
            return default
        return min(max(0, got[len(got) // 2]), LEAD_CAP_NS)

    def _at_start_line(self) -> None:
        if self.start_line is not None:
            self.start_line.opened(self)

    def _book_stimulus(self, t: int) -> int:
        """A periodic stimulus is not aimed (its instant is stamped as sent): it takes the
        calendar's stimulus lane, up to half its period later."""
        if self.calendar is None:
            return t
        return self.calendar.stimulus(t, int((self.plan.stimulus_every_s or 0) * NS / 2))

    def _book_poll(self, t: int, every_s: float) -> int:
        """A log poll costs the loop about a read: booked like one, up to half its interval
        later."""
        return self._book_later(t, int(every_s * NS / 2), 1)

    def _book_explore(self, t: int) -> int:
        if self.calendar is not None:
            self.calendar.force(t, max(1, self.plan.burst))
        return t

    def _book_later(self, t: int, limit_ns: int, reads: int | None = None) -> int:
        if self.calendar is None:
            return t
        return self.calendar.later(t, reads or max(1, self.plan.burst), limit_ns)

    def _stimulus_plan(self, drv: Driver) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        if not isinstance(drv, StimulusTarget):
            return out
        for entry in self.config.stimuli:
            name, _, target = entry.partition(":")
            if name in drv.stimuli():
                out.append((name, target or None))
        return out

    async def _main(self) -> None:
        """Connect, wait at the start line, probe until the run's end, a last log poll."""
        start = self._start = self.now_ns()
        end = self._end = start + int(self.plan.duration_s * NS)
        drv = await self._connect(start, end)
        if drv is None or not await self._ready(drv, start, end):
            return
        sched = self._schedule(drv, start)
        drv = await self._probe(drv, sched, end)
        await self._finish(drv, sched.specs, start)

    async def _connect(self, start: int, end: int) -> Driver | None:
        """Open the device, retrying with a backoff until the run's end; None (and the device's
        state said) when it never opened."""
        drv = None
        backoff = 1.0
        while drv is None and not self.stop_event.is_set() and self.now_ns() < end:
            self.status.state = "connecting"
            drv = await self._open()
            self._at_start_line()
            if drv is None:
                self.status.state = "unreachable"
                await self._sleep_until(min(end, self.now_ns() + int(backoff * NS)))
                backoff = min(backoff * 2, 15.0)
        if drv is None:
            self.status.state = "failed" if self.status.errors else "stopped"
            if self.status.state == "stopped" and not self.stop_event.is_set():
                self._no_reads(start)             # the run ended before the device answered
        return drv

    async def _ready(self, drv: Driver, start: int, end: int) -> bool:
        """The log's backlog read, then the start line; False when the device opened only
        after the run's end (a slow login: closed, an error)."""
        if isinstance(drv, LogSource):
            # the log's backlog (a first poll reads it all) before the start line, not in
            # every device's first second of reads
            drv.log_until_ns = None
            await self._poll_log(drv)
        if self.start_line is not None:
            await self.start_line.event.wait()
        self.status.state = "measuring"
        if self.now_ns() >= end:                  # opened only after the run's end (a slow login)
            await drv.close()
            self._no_reads(start)
            return False
        return True

    def _schedule(self, drv: Driver, start: int) -> _Schedule:
        """The first instants of every clock's reads, the stimuli and the log polls."""
        specs = drv.clocks()
        rate_ns = NS / self.config.rate_hz
        due = {c.name: self._book_later(self.now_ns() + int(self.rng.uniform(0, rate_ns)),
                                        int(rate_ns)) for c in specs}
        self._grid = {c: [t, 0] for c, t in due.items()}     # per clock: origin, slot
        stimuli = self._stimulus_plan(drv) if self.plan.stimulus_every_s else []
        stim_due = self._book_stimulus(start + int(self.plan.first_stimulus_s * NS))
        planned = sorted((start + int(at * NS), what) for dev, at, what in self.plan.schedule
                         if dev == self.config.name)
        # the backlog was read at the open: the next poll at a random phase of the interval, so
        # that the devices starting together do not poll together
        poll_due = self._book_poll(self.now_ns() + int(self.rng.uniform(0, self.plan.log_poll_s)
                                                       * NS), self.plan.log_poll_s)
        reads = {c.name: ReadRing(READS_KEPT + 1) for c in specs}
        return _Schedule(specs, reads, due, stimuli, stim_due, planned, poll_due,
                         stim_base=stim_due)

    async def _probe(self, drv: Driver, sched: _Schedule, end: int) -> Driver | None:
        """Take each event as it falls due until the run's end or the stop; reopen the driver
        after `reopen_after` clock-read failures in a row. The driver at the end (None: a
        reopen failed)."""
        while not self.stop_event.is_set():
            now = self.now_ns()
            if now >= end:
                break
            nxt = min([*sched.due.values(), sched.poll_due,
                       sched.stim_due if sched.stimuli else end, end,
                       *(t for t, _ in sched.planned[:1])])
            if nxt > now:
                if not await self._sleep_until(nxt):
                    break
                continue
            self._outcome(sched, await self._step(drv, sched, now))
            if sched.failures >= self.plan.reopen_after:
                new = await self._reconnect(drv, sched.failures, end)
                if new is None:
                    return None
                drv = new
                self.status.state = "measuring"
                sched.failures = 0
        return drv

    def _outcome(self, sched: _Schedule, ok: bool | None) -> None:
        """Count a clock read's outcome (only clock reads count, `ok` None for other events):
        the failures in a row; a good read starts the reconnect backoff again."""
        if ok is not None:
            sched.failures = 0 if ok else sched.failures + 1
            if ok:
                self._reconnect_s = 1.0

    async def _step(self, drv: Driver, sched: _Schedule, now: int) -> bool | None:
        """The one event due first: a planned stimulus (it keeps its instant), else a clock read
        (ahead of the rest), a periodic stimulus, a log poll. A clock read's outcome, if one was
        taken."""
        if sched.planned and now >= sched.planned[0][0]:
            await self._planned_stimulus(drv, sched, now)
        elif ready := _due_clocks(sched, now):
            return await self._clock_read(drv, sched, min(ready, key=lambda c: sched.due[c.name]))
        elif sched.stimuli and now >= sched.stim_due:
            await self._periodic_stimulus(drv, sched, now)
        elif now >= sched.poll_due:
            await self._poll_or_defer(drv, sched, now)
        return None

    async def _planned_stimulus(self, drv: Driver, sched: _Schedule, now: int) -> None:
        """The stimulus planned first (it never counts toward a reopen); the log is then watched
        closely."""
        name, _, target = sched.planned.pop(0)[1].partition(":")
        await self._stimulus(drv, name, target or None)   # never counts toward a reopen
        sched.watch_until = now + int(self.plan.watch_s * NS)
        sched.poll_due = now + int(self.plan.watch_poll_s * NS)

    async def _clock_read(self, drv: Driver, sched: _Schedule, spec: ClockSpec) -> bool:
        """The clock's due read (_read), how late its reads started (_lead_seen), its next
        read planned; whether it was ok."""
        reads, due, then = sched.reads[spec.name], sched.due[spec.name], self._then.get(spec.name)
        n0 = len(reads)
        ok = await self._read(drv, spec, reads, due, then)
        if ok and len(reads) > n0:
            self._leads_of(spec.name, reads, n0, due, then)
        sched.due[spec.name] = self._next_read(spec, reads, self.now_ns())
        return ok

    def _leads_of(self, clock: str, reads: ReadRing, n0: int, due: int, then: int | None
                  ) -> None:
        """How late the probe's reads (from reads[n0]) started after their plan: its first
        read after `due`, and its last after `due` (a burst back to back) or after `then` (a
        burst's last read planned apart)."""
        self._lead_seen(clock, "first", reads[n0][0] - due)
        if then is None:
            self._lead_seen(clock, "last", reads[-1][0] - due)
        elif len(reads) > n0 + 1:
            self._lead_seen(clock, "then", reads[-1][0] - then)

    async def _poll_or_defer(self, drv: Driver, sched: _Schedule, now: int) -> None:
        """The due log poll, or, where it would delay a read (_defer_log), after the read that
        comes first."""
        if self._defer_log(now, min(sched.due.values())):
            sched.poll_due = min(sched.due.values()) + 1     # after the read that comes first
        else:
            await self._due_poll(drv, sched, now)

    async def _periodic_stimulus(self, drv: Driver, sched: _Schedule, now: int) -> None:
        """The next allowed stimulus in turn; the log is then watched closely."""
        await self._stimulus(drv, *sched.stimuli[sched.stim_i % len(sched.stimuli)])
        sched.stim_i += 1
        every = self.plan.stimulus_every_s or 0
        period = int(every * NS)
        due = stimulus_phase(sched.stim_base + sched.stim_i * period, sched.stim_i, every)
        sched.stim_due = self._book_stimulus(max(due, now + period // 2))
        sched.watch_until = now + int(self.plan.watch_s * NS)
        sched.poll_due = self._book_poll(now + int(self.plan.watch_poll_s * NS),
                                         self.plan.watch_poll_s)

    async def _due_poll(self, drv: Driver, sched: _Schedule, now: int) -> None:
        """A log poll (failures never count toward a reopen); the next one soon while a
        stimulus's entry is awaited or the log has a backlog."""
        self._log_wanted = None
        seen = self.logged
        drv.log_until_ns = min(sched.due.values())       # the next clock read comes first
        await self._poll_log(drv)
        watching = now < sched.watch_until and self.logged == seen
        soon = watching or getattr(drv, "log_backlog", False)
        every = self.plan.watch_poll_s if soon else self.plan.log_poll_s
        sched.poll_due = self._book_poll(now + int(every * NS), every)
        if not watching:
            sched.watch_until = 0

    async def _finish(self, drv: Driver | None, specs: list, start: int) -> None:
        """A last log poll catches entries of late stimuli; a device with clocks and no read is
        an error."""
        if drv is not None:
            drv.log_until_ns = None
            await self._poll_log(drv)
            await drv.close()
        self.status.state = "done"
        if specs and self.status.reads == 0:
            self._no_reads(start)

    def _count(self, kind: str) -> None:
        self.status.count(kind, max(0, (self.now_ns() - self._start) // (60 * NS)))

    async def _reconnect(self, drv: Driver, failures: int, end: int) -> Driver | None:
        """Close and reopen after `failures` consecutive clock-read failures, waiting
        `self._reconnect_s` first (doubling at each reconnect until a read succeeds, capped)."""
        self.status.state = "reconnecting"
        wait = self._reconnect_s
        self._reconnect_s = min(wait * 2, RECONNECT_CAP_S)
        self.store.journal(self.config.name, "warn", "reopen",
                           f"{failures} consecutive failures: reconnecting in {wait:g} s")
        log.info("%s: %d consecutive failures: reconnecting in %g s", self.config.name, failures,
                 wait)
        self._count("reconnects")
        await drv.close()
        new: Driver | None = None
        while not self.stop_event.is_set() and self.now_ns() < end:
            if not await self._sleep_until(min(end, self.now_ns() + int(wait * NS))):
                break
            new = await self._open()
            if new is not None:
                break
            wait = min(wait * 2, RECONNECT_CAP_S)
        return new

    def _no_reads(self, start: int) -> None:
        took = (self.now_ns() - start) / NS
        exc = DeviceError(self.config.name, "timeout",
                          f"no clock read in the run ({took:.1f} s; {self.status.errors} errors "
                          f"before; state {self.status.state})")
        self._error("reads", exc)
        self._row("read", "", exc)
        self.status.state = "failed"

    # -- exchanges ----------------------------------------------------------------------------
    async def _read(self, drv: Driver, spec: ClockSpec, reads: ReadRing,
                    planned_ns: int | None = None, then_ns: int | None = None) -> bool:
        """One probe (a burst of reads). A malformed answer costs only itself: the device did
        answer, so the burst goes on; a read that got no answer ends the probe. The first read's
        row carries how late the probe started after its planned instant (`late_ns`). `then_ns`:
        the burst's last read waits until then (at most BURST_WAIT_NS), else they go back to
        back."""
        answered = True
        n = max(1, self.plan.burst)
        for i in range(n):
            if i == n - 1 and i and then_ns is not None:
                await self._sleep_until(min(then_ns, self.now_ns() + BURST_WAIT_NS))
            kind = await self._read_once(drv, spec, reads, planned_ns if i == 0 else None)
            if kind == "refused":          # the device asked for a pause (429/503): it answered
                return True
            if kind not in (None, "malformed"):
                return False
            answered &= kind is None
        return answered

    async def _read_once(self, drv: Driver, spec: ClockSpec, reads: ReadRing,
                         planned_ns: int | None = None) -> str | None:
        """None when the read is good, else its error class."""
        s0 = self.now_ns()
        late = None
        if planned_ns is not None:
            late = max(0, s0 - planned_ns)
            self.status.probes += 1
            self.status.late += late >= LATE_NS
            self.status.late_max_ns = max(self.status.late_max_ns, late)
        try:
            async with asyncio.timeout(self.plan.timeout_s):   # no task per read (wait_for's)
                r = await drv.read_clock(spec.name)
        except Exception as exc:
            self._error(f"read {spec.name}", exc)
            self._samples().write("read", spec.name, s0, self.now_ns(), None, spec.resolution_ns, "user",
                           _kind_of(exc), _message(exc), late_ns=late)
            return _kind_of(exc)
        if not in_int64(r.value_ns):          # e.g. an RTC in year 1 or 9999
            self._error(f"read {spec.name}", DeviceError(self.config.name, "malformed",
                                                         f"value {r.value_ns} ns out of range"))
            self._samples().write("read", r.clock, r.s_ns, r.e_ns, None, r.resolution_ns, r.stamp,
                           "malformed", f"value out of range: {r.value_ns} ns; {r.raw}",
                           late_ns=late)
            return "malformed"
        self._samples().write("read", r.clock, r.s_ns, r.e_ns, r.value_ns, r.resolution_ns, r.stamp,
                       "ok", r.raw, late_ns=late)
        reads.append((r.s_ns, r.e_ns, r.value_ns))
        if len(reads) > READS_KEPT:   # whole bursts of explore cycles: the aim/explore phase stays
            cycle = max(1, self.plan.burst) * self.plan.explore_every
            del reads[:READS_KEPT // 2 // cycle * cycle]
        self.status.recent.setdefault(r.clock, []).append((r.s_ns, r.e_ns, r.value_ns,
                                                           r.resolution_ns))
        self.status.reads += 1
        self.status.last_bracket_ns = r.e_ns - r.s_ns
        return None

    async def _stimulus(self, drv: Driver, name: str, target: str | None) -> bool:
        s0 = self.now_ns()
        label = name if target is None else f"{name}:{target}"
        self._pushed_held = []        # an event pushed before the answer is written after it
        try:
            if not isinstance(drv, StimulusTarget):     # a planned stimulus of any device
                raise DeviceError(self.config.name, "error",
                                  f"the {self.config.driver} driver performs no stimuli")
            st = await asyncio.wait_for(drv.stimulate(name, target), self.plan.timeout_s)
        except Exception as exc:
            self._error(f"stimulus {label}", exc)
            self._samples().write("stimulus", label, s0, self.now_ns(), None, None, "user",
                           _kind_of(exc), _message(exc))
            self._release_pushed()
            return _kind_of(exc) == "refused"
        status = RowStatus.OK if st.sent else RowStatus.UNARMED
        self._samples().write("stimulus", label, st.s_ns, st.e_ns, None, None, st.stamp, status, st.raw)
        self._release_pushed()
        self.store.journal(self.config.name, "info", "stimulus", f"{label} {status}")
        self.status.stimuli += 1
        return True

    def _defer_log(self, now: int, next_read: int) -> bool:
        """Whether to put a due log poll after the next clock read: when the read is due sooner
        than the last poll took, for at most 5 poll intervals (the log is never starved)."""
        if self._log_wanted is None:
            self._log_wanted = now
        if now - self._log_wanted > 5 * self.plan.log_poll_s * NS:
            return False
        return next_read - now < self._poll_ns

    async def _poll_log(self, drv: Driver) -> bool:
        if not isinstance(drv, LogSource):         # a plane without a log: nothing to poll
            return True
        s0 = self.now_ns()
        try:
            entries, cursor = await asyncio.wait_for(drv.log_entries(self.cursor),
                                                     self.plan.timeout_s)
        except Exception as exc:
            self._error("log", exc)
            self._row("log", "", exc, s0)
            return False
        finally:
            self._poll_ns = self.now_ns() - s0
        self.cursor = cursor
        for en in entries:
            if not in_int64(en.value_ns):
                self._samples().write("event", en.clock, en.s_ns, en.e_ns, None, en.resolution_ns,
                               "user", "malformed", f"stamp out of range: {en.value_ns} ns; "
                               f"{en.cursor} {en.message}".strip())
                self.status.errors += 1
                continue
            self._samples().write("event", en.clock, en.s_ns, en.e_ns, en.value_ns, en.resolution_ns,
                           "user", "ok", f"{en.cursor} {en.message}".strip())
            self.status.events += 1
            self.logged += 1
        return True

    def _pushed(self, en: LogEntry) -> None:
        """An event the device pushed (drivers/redfish_events.py), written as it arrives."""
        if self._pushed_held is not None:
            self._pushed_held.append(en)
            return
        self._samples().write("pushed", en.clock, en.s_ns, en.e_ns, en.value_ns, en.resolution_ns,
                       "user", "ok", f"{en.cursor} {en.message}".strip())
        self.status.events += 1

    def _release_pushed(self) -> None:
        held, self._pushed_held = self._pushed_held or [], None
        for en in held:
            self._pushed(en)


def processes_for(n_devices: int, processes: int | None = None) -> int:
    """Worker processes for a rack: as given (or RACKCLOCK_PROCESSES), else one per core the
    bench may use, and one alone below SHARD_MIN_DEVICES devices."""
    if processes is None and os.environ.get("RACKCLOCK_PROCESSES", "").strip():
        processes = int(os.environ["RACKCLOCK_PROCESSES"])
    if processes is None:
        processes = 1 if n_devices < SHARD_MIN_DEVICES else len(os.sched_getaffinity(0))
    return max(1, min(int(processes), max(1, n_devices)))


async def run_workers(workers: list[DeviceWorker], deadline_s: float,
                      peers: Peers | None = None,
                      on_start: Callable[[], None] | None = None) -> None:
    """Every device's task on this loop until all end or `deadline_s` (monotonic) passes; a task
    still running then is cancelled and reported hung. Blocking driver calls (to_thread) get a
    thread each, up to one per device. Several devices start together (bench/run/startline.py),
    with the loops of `peers` when given; `on_start()` is called on the loop when they start."""
    from concurrent.futures import ThreadPoolExecutor
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max(8, min(64, len(workers))),
                                                 thread_name_prefix="driver"))
    calendar, line = _share_loop(workers, peers)
    tasks = [asyncio.create_task(w.run(), name=f"dev-{w.config.name}") for w in workers]
    lags: Counter[int] = Counter()     # the loop's lag in 0.1 ms bins: bounded in a long run
    meter, watch, started = _loop_helpers(workers, calendar, line, lags, on_start)
    _, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline_s - time.monotonic()))
    for t in (watch, started):
        if t:
            t.cancel()
    if meter and calendar and line:                # all three: more than one worker
        meter.cancel()
        _journal_calendar(workers, calendar, line, lags)
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending, timeout=5)


def _share_loop(workers: list[DeviceWorker], peers: Peers | None
                ) -> tuple[ReadCalendar | None, StartLine | None]:
    """What the devices on one loop share, set on each: the gate on opens at once and, for
    more than one device, the read calendar and the start line (with `peers`' loops)."""
    gate = asyncio.Semaphore(OPENS_AT_ONCE)
    calendar = ReadCalendar() if len(workers) > 1 else None
    line = (StartLine(len(workers), min(1.0, workers[0].plan.timeout_s), peers,
                      workers[0].plan.timeout_s) if len(workers) > 1 else None)
    for w in workers:
        w.open_gate = gate
        w.calendar = calendar
        w.start_line = line
    return calendar, line


def _loop_helpers(workers: list[DeviceWorker], calendar: ReadCalendar | None,
                  line: StartLine | None, lags: Counter[int],
                  on_start: Callable[[], None] | None) -> tuple[asyncio.Task | None, ...]:
    """The loop's helper tasks, each where it has a use: (the meter of lag and CPU per read,
    the start line's watch, the call of `on_start` when the devices start)."""
    meter = asyncio.create_task(_meter(calendar, workers, lags)) if calendar else None
    watch = asyncio.create_task(line.watch(workers[0].stop_event)) if line else None
    started = asyncio.create_task(_when_started(line, on_start)) if on_start else None
    return meter, watch, started


def _journal_calendar(workers: list[DeviceWorker], calendar: ReadCalendar, line: StartLine,
                      lags: Counter[int]) -> None:
    """The journal's line on the loop: devices, when they started, its lag, the calendar's
    CPU per read and what it yielded and moved."""
    lag = (f"loop lag p50 {_bin_quantile(lags, 0.5) / 10:.1f} ms, p99 "
           f"{_bin_quantile(lags, 0.99) / 10:.1f} ms, max {max(lags) / 10:.1f} ms; "
           if lags else "")
    workers[0].store.journal("", "info", "calendar",
                             f"{len(workers)} devices on one loop, started together "
                             f"{line.crossed_after_s or 0:.1f} s in: {lag}"
                             f"{calendar.cost_per_read_ns / 1e6:.2f} ms of CPU per read, "
                             f"{calendar.yielded} aims yielded, {calendar.moved} reads moved")


async def _when_started(line: StartLine | None, on_start: Callable[[], None]) -> None:
    if line is not None:
        await line.event.wait()
    on_start()


def _bin_quantile(bins: Counter[int], q: float) -> int:
    """The bin holding quantile q of the counts."""
    need, seen = q * sum(bins.values()), 0
    for b in sorted(bins):
        seen += bins[b]
        if seen >= need:
            return b
    return max(bins)


async def _meter(calendar: ReadCalendar, workers: list[DeviceWorker], lags: Counter[int]) -> None:
    """The loop's lag (how late a 20 ms sleep wakes: what every probe's start waits on top of
    its plan, counted in 0.1 ms bins), and once a second its CPU per read for the calendar."""
    t_cost = t0 = time.monotonic()
    frozen = False
    while True:
        t = time.monotonic()
        await asyncio.sleep(0.02)
        now = time.monotonic()
        lags[max(0, int((now - t - 0.02) * 1e4))] += 1
        if now - t_cost >= 1.0:
            t_cost = now
            calendar.measure(sum(w.status.reads for w in workers), workers[0].now_ns())
            opening = any(w.status.state in ("starting", "connecting") for w in workers)
            if not frozen and (not opening or now - t0 > 60):
                # the start line froze what the opens before it built; this freezes what the
                # devices that opened after it built (bench/run/startline.py)
                gc.freeze()
                frozen = True


def deadline_of(plan: ProbePlan) -> float:
    """Seconds after which a device still probing is hung."""
    return plan.duration_s + 4 * plan.timeout_s + 10


def mark_hung(statuses: list[DeviceStatus], store) -> None:
    """Devices whose worker has not ended by now are hung, and said so in the journal."""
    for st in statuses:
        if st.state not in ("done", "failed", "stopped", "hung"):
            st.state = "hung"
            store.journal(st.name, "error", "hung", "worker did not stop in time")
