"""The experiment API: what a lab procedure does, one call per step.

    lab = Lab(bench)                                   # experiments/*.py get it as `run(bench, p)`
    for dev in lab.devices(plane="bmc"):               # select by name (glob), plane, driver
        r = lab.read_clock(dev)                        # one bracketed read, written to samples/
        st = lab.stimulate(dev, "test_event")          # allow-listed, armed, recorded
        lab.set_clock(dev, offset_s=5.0)               # stimulus kind "set_clock" (allow-listed)
        lab.wait_for(lambda: lab.logs(dev), timeout_s=5, what="a log entry")
    lab.probe(duration_s=30)                           # the probing loop of every device
    lab.measure("warmup.offset", r.value_ns - r.e_ns, "ns", limit=(-1e9, 1e9), device=dev)

Every exchange lands in the run folder exactly as the probing loop writes it (samples/DEVICE.csv,
events.csv); every `measure` lands in measurements.json, which `rackclock report` shows as the
"Measurements" section and `rackclock compare` sets side by side (bench.compare.measures), with
no experiment-specific code in either. A measurement is OpenHTF-like: a name, a unit, a value
or a proven bound [lo, hi], and a limit; its outcome is "pass" when the whole bound is inside the
limit, "fail" when it is wholly outside, "undecided" when it straddles a limit edge, and "no limit"
when it has none.

A device failure in a lab call is an outcome, not an exception: the call returns a falsy
`Failed` (bench/run/lab_outcome.py), recorded, logged and counted in the run's verdict, and the
procedure decides (`if not r: continue`). `lab.on_error = "raise"` makes the calls raise instead
(the experiment stops at the first failure); "expect" reports failures without judging them.

The drivers are asyncio coroutines; the lab runs them on one event loop in a thread of its own,
so a procedure is plain sequential Python. Lab sessions are closed before the probing loop runs
(a serial line or a pty admits one client).
"""
from __future__ import annotations

import asyncio
import fnmatch
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.errors import RackclockError
from bench.model.documents import Manifest
from bench.model.run_statuses import RowStatus
from bench.model.rundata import MEASUREMENTS_FILE
from bench.model.store import SampleWriter, write_json
from bench.run.lab_outcome import ON_ERROR, DeviceFailures, Failed
from bench.run.probe import run_devices
from bench.run.runner import ProbePlan
from drivers import driver_class
from drivers.base import (
    ClockSetter,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    LogSource,
    NtpClient,
    Read,
    Stimulus,
    StimulusRefused,
    StimulusTarget,
)

NS = 1_000_000_000
log = logging.getLogger(__name__)


class LabTimeout(RackclockError):
    """`wait_for` reached its deadline without the condition holding (on_error = "raise")."""


@dataclass(frozen=True)
class Measurement:
    """One named result with its unit, its bound and its limit."""
    name: str
    unit: str
    point: float
    lo: float
    hi: float
    device: str = ""
    basis: str = "exact"                 # proven | exact | observed | ...: what the bound rests on
    limit_lo: float | None = None
    limit_hi: float | None = None
    outcome: str = "no limit"            # pass | fail | undecided | no limit
    doc: str = ""
    direction: str = "higher_is_worse"   # for compare: higher_is_worse | any
    judge: bool = True                   # compare judges it (False: reported only, e.g. it
                                         # moves with the time of day)
    t_ns: int = 0
    extra: dict = field(default_factory=dict)


def outcome(lo: float, hi: float, limit_lo: float | None, limit_hi: float | None) -> str:
    """pass: the whole bound within the limit; fail: wholly outside; undecided: straddles;
    "no limit" when there is none (nothing was judged)."""
    if limit_lo is None and limit_hi is None:
        return "no limit"
    above_lo = limit_lo is None or lo >= limit_lo
    below_hi = limit_hi is None or hi <= limit_hi
    if above_lo and below_hi:
        return "pass"
    return "fail" if _wholly_outside(lo, hi, limit_lo, limit_hi) else "undecided"


def _wholly_outside(lo: float, hi: float, limit_lo: float | None, limit_hi: float | None) -> bool:
    return (limit_lo is not None and hi < limit_lo) or (limit_hi is not None and lo > limit_hi)


def _matches(d: Any, name: str | None, plane: str | None, driver: str | None,
             stimulus: str | None) -> bool:
    """Whether device `d` passes every filter given (Lab.devices)."""
    if name and not any(fnmatch.fnmatch(d.name, g.strip()) for g in name.split(",")):
        return False
    if plane and d.plane not in plane.split(","):
        return False
    if driver and d.driver != driver:
        return False
    return not (stimulus and not any(s.partition(":")[0] == stimulus for s in d.stimuli))


class Lab:
    """The bench as a lab procedure sees it (see the module's docstring)."""

    def __init__(self, bench):
        self.bench = bench
        self.store = bench.store
        self.now_ns = bench.reference.now_ns
        self.measurements: list[Measurement] = []
        self._drivers: dict[str, Driver] = {}
        self._writers: dict[str, SampleWriter] = {}
        self._cursors: dict[str, str | None] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lab", daemon=True)
        self._thread.start()
        self.timeout_s = 5.0
        self.on_error = "record"       # record | expect | raise (bench/run/lab_outcome.py)
        self.failures: dict[str, DeviceFailures] = {}

    # -- selection ---------------------------------------------------------------------------
    def devices(self, name: str | None = None, plane: str | None = None,
                driver: str | None = None, stimulus: str | None = None) -> list[str]:
        """Names of the rack's devices matching all given filters (`name` may be a glob or a
        comma-separated list of globs; `stimulus`: the inventory allows that stimulus name)."""
        return [d.name for d in self.bench.rack.devices
                if _matches(d, name, plane, driver, stimulus)]

    def config(self, device: str):
        for d in self.bench.rack.devices:
            if d.name == device:
                return d
        raise KeyError(f"no device {device!r} in the rack (have: "
                       f"{', '.join(d.name for d in self.bench.rack.devices)})")

    # -- sessions ------------------------------------------------------------------------------
    def _call(self, coro, timeout_s: float | None = None):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result((timeout_s or self.timeout_s) * 2 + 5)

    def driver(self, device: str) -> Driver | Failed:
        """The device's open driver session (opened on first use), or the failed open."""
        if device not in self._drivers:
            cfg = self.config(device)
            drv = driver_class(cfg.driver)(cfg, self.now_ns, armed=self.bench.armed)

            async def open_():
                await asyncio.wait_for(drv.open(), self.timeout_s * 2)
                return drv
            s0 = self.now_ns()
            try:
                self._drivers[device] = self._call(open_())
            except Exception as exc:       # recorded as the runner records a failed open
                return self._fail(device, "read", "", s0, exc, step="open")
        return self._drivers[device]

    def _out(self, device: str) -> SampleWriter:
        if device not in self._writers:
            self._writers[device] = self.store.samples(device)
        return self._writers[device]

    def release(self, device: str | None = None) -> None:
        """Close lab sessions (all, or one device's); the next call reopens them."""
        for name in [device] if device else list(self._drivers):
            drv = self._drivers.pop(name, None)
            if drv is not None:
                try:
                    self._call(drv.close())
                except Exception:
                    pass
            w = self._writers.pop(name, None)
            if w is not None:
                w.close()

    def close(self) -> None:
        self.release()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _fail(self, device: str, kind: str, what: str, s0: int, exc: BaseException,
              step: str = "") -> Failed:
        """Record a failed call (a row as the probing loop writes, a journal line), count it,
        and return it as the call's outcome; raise instead when the experiment asked to."""
        from bench.run.runner import _kind_of, _message
        k, msg = _kind_of(exc), _message(exc)
        self._out(device).write(kind, what, s0, self.now_ns(), None, None, "user", k, msg)
        self.store.journal(device, "error", k, f"lab {kind} {what}: {msg}")
        failed = Failed(device, step or kind, k, msg)
        self._count(failed)
        if self.on_error == "raise":
            if isinstance(exc, DeviceError):
                raise exc
            raise DeviceError(device, k, msg) from exc
        return failed

    def _count(self, failed: Failed) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"lab.on_error {self.on_error!r}: expected one of "
                             f"{', '.join(ON_ERROR)}")
        first = failed.device not in self.failures
        self.failures.setdefault(failed.device, DeviceFailures()).add(
            failed, self.on_error == "expect")
        (log.warning if first and self.on_error == "record" else log.info)(
            "lab: %s%s", failed, " (expected)" if self.on_error == "expect" else "")

    # -- the steps -----------------------------------------------------------------------------
    def read_clock(self, device: str, clock: str | None = None) -> Read | Failed:
        """One bracketed read of a clock (default: the device's first), recorded as a sample."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        clock = clock or drv.clocks()[0].name
        s0 = self.now_ns()
        try:
            r = self._call(asyncio.wait_for(drv.read_clock(clock), self.timeout_s))
        except Exception as exc:
            return self._fail(device, "read", clock, s0, exc)
        self._out(device).write("read", r.clock, r.s_ns, r.e_ns, r.value_ns, r.resolution_ns,
                                r.stamp, "ok", r.raw)
        return r

    def _refuse(self, device: str, drv: Driver, capability: type, what: str) -> Failed:
        """A step the device's driver lacks the capability for (drivers/base.py): a refusal,
        recorded like any failed step."""
        return self._fail(device, "stimulus" if capability is not LogSource else "event", what,
                   self.now_ns(), StimulusRefused(device, f"driver {drv.config.driver} is not "
                                                          f"a {capability.__name__}"))

    def stimulate(self, device: str, name: str,
                  target: str | int | None = None) -> Stimulus | Failed:
        """Send one stimulus the inventory allows (unarmed on a real rack: logged, not sent)."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        if not isinstance(drv, StimulusTarget):
            return self._refuse(device, drv, StimulusTarget, name)
        label = name if target is None else f"{name}:{target}"
        s0 = self.now_ns()
        try:
            st = self._call(asyncio.wait_for(drv.stimulate(name, target), self.timeout_s))
        except Exception as exc:
            return self._fail(device, "stimulus", label, s0, exc)
        return self._record_stimulus(device, label, st)

    def _record_stimulus(self, device: str, label: str, st: Stimulus) -> Stimulus:
        status = RowStatus.OK if st.sent else RowStatus.UNARMED
        self._out(device).write("stimulus", label, st.s_ns, st.e_ns, None, None, st.stamp, status,
                                st.raw)
        self.store.journal(device, "info", "stimulus", f"lab {label} {status}")
        return st

    def bulk_stimulate(self, device: str, name: str, count: int,
                       target: str | int | None = None) -> list[Stimulus] | Failed:
        """Send `count` allowed stimuli back to back (e.g. to fill a device log). They are
        journalled as one line, not written as stimulus rows: nothing waits for their log
        entries, so none could be paired with its entry (the summary pairs stimulus rows)."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        if not isinstance(drv, StimulusTarget):
            return self._refuse(device, drv, StimulusTarget, name)

        async def burst():
            return [await asyncio.wait_for(drv.stimulate(name, target), self.timeout_s)
                    for _ in range(count)]
        s0 = self.now_ns()
        try:
            out = self._call(burst(), self.timeout_s * max(1, count))
        except Exception as exc:
            return self._fail(device, "stimulus", name, s0, exc)
        label = name if target is None else f"{name}:{target}"
        self.store.journal(device, "info", "bulk_stimuli",
                           f"lab {count} x {label} sent in [{out[0].s_ns}, {out[-1].e_ns}] ns, "
                           f"not paired with log entries")
        return out

    def set_clock(self, device: str, value_ns: int | None = None,
                  offset_s: float | None = None) -> Stimulus | Failed:
        """Set the device's clock (stimulus kind `set_clock`, allow-listed like any other): to
        `value_ns` (UTC ns), or to the reference's time at sending plus `offset_s`."""
        if (value_ns is None) == (offset_s is None):
            raise ValueError("give exactly one of value_ns, offset_s")
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        if not isinstance(drv, ClockSetter):
            return self._refuse(device, drv, ClockSetter, "set_clock")
        s0 = self.now_ns()
        try:
            st = self._call(asyncio.wait_for(drv.set_clock(value_ns=value_ns, offset_s=offset_s),
                                             self.timeout_s))
        except Exception as exc:
            return self._fail(device, "stimulus", "set_clock", s0, exc)
        return self._record_stimulus(device, "set_clock", st)

    def set_ntp(self, device: str, enabled: bool | None = None,
                server: str | None = None) -> Stimulus | Failed:
        """Switch the device's NTP client on/off and/or set its server (stimulus kind `ntp`)."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        if not isinstance(drv, NtpClient):
            return self._refuse(device, drv, NtpClient, "ntp")
        label = "ntp:" + ",".join([*(["on" if enabled else "off"] if enabled is not None else []),
                                   *([f"server={server}"] if server else [])])
        s0 = self.now_ns()
        try:
            st = self._call(asyncio.wait_for(drv.set_ntp(enabled, server), self.timeout_s))
        except Exception as exc:
            return self._fail(device, "stimulus", label, s0, exc)
        return self._record_stimulus(device, label, st)

    def logs(self, device: str) -> list[LogEntry] | Failed:
        """Log entries new since the lab's last fetch of this device, recorded as events."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        if not isinstance(drv, LogSource):
            return self._refuse(device, drv, LogSource, "")
        s0 = self.now_ns()
        try:
            entries, cur = self._call(asyncio.wait_for(drv.log_entries(self._cursors.get(device)),
                                                       self.timeout_s))
        except Exception as exc:
            return self._fail(device, "event", "", s0, exc)
        self._cursors[device] = cur
        for en in entries:
            self._out(device).write("event", en.clock, en.s_ns, en.e_ns, en.value_ns,
                                    en.resolution_ns, "user", "ok",
                                    f"{en.cursor} {en.message}".strip())
        return entries

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def wait_for(self, condition: Callable[[], Any], timeout_s: float, poll_s: float = 0.2,
                 what: str = "the condition", device: str = "-") -> Any:
        """Call `condition` every `poll_s` until it returns something truthy (returned) or the
        deadline passes: then a falsy Failed(device, "wait", "timeout", ...) is returned
        (LabTimeout raised when on_error is "raise"), journalled, not counted as a device
        error (what a missed wait means is the experiment's to judge). A failed call inside
        (a Failed or a DeviceError) counts as not yet."""
        deadline = time.monotonic() + timeout_s
        last: object = None
        while True:
            try:
                v = condition()
                if v:
                    return v
                last = v if isinstance(v, Failed) else last
            except DeviceError as exc:
                last = exc
            if time.monotonic() >= deadline:
                msg = f"{what} did not hold within {timeout_s:g} s" + (f" (last: {last})"
                                                                        if last else "")
                self.store.journal(device, "warn", "wait", msg)
                if self.on_error == "raise":
                    raise LabTimeout(msg)
                return Failed(device, "wait", "timeout", msg)
            time.sleep(poll_s)

    def probe(self, duration_s: float, devices: list[str] | None = None, **plan: Any) -> list:
        """The probing loop (reads, allowed stimuli, log polls) for `duration_s`, of every
        device or of `devices`; lab sessions of those devices are closed first."""
        p = ProbePlan(duration_s=duration_s, **plan)
        if devices is None:
            self.release()
            return self.bench.probe(p)
        for d in devices:
            self.release(d)
        cfgs = [self.config(d) for d in devices]
        statuses, stopped = run_devices(cfgs, self.now_ns, self.store, p, self.bench.armed,
                                        seed=int(self.bench.rack.options.get("seed", 0)))
        self.bench.interrupted |= stopped
        self._merge_statuses(statuses)
        return statuses

    def probe_in_background(self, duration_s: float, devices: list[str], **plan: Any):
        """The probing loop of `devices` in a thread (load beside a procedure); `.join()` it."""
        t = threading.Thread(target=self.probe, args=(duration_s, devices), kwargs=plan,
                             name="lab-probe", daemon=True)
        t.start()
        return t

    def _merge_statuses(self, statuses) -> None:
        devices = Manifest.of(self.store.manifest).devices
        self.store.update_devices({st.name: st.record(devices.get(st.name)).to_dict()
                                   for st in statuses})

    def identify(self, device: str) -> Identity | Failed:
        """Record the device's identity and clocks in the manifest (as the probing loop does),
        so the summary fits the clocks a procedure read without the loop."""
        drv = self.driver(device)
        if isinstance(drv, Failed):
            return drv
        s0 = self.now_ns()
        try:
            ident = self._call(asyncio.wait_for(drv.identity(), self.timeout_s))
        except Exception as exc:
            return self._fail(device, "read", "", s0, exc, step="identify")
        self.store.update_device(
            device, identity={"vendor": ident.vendor, "model": ident.model,
                              "serial": ident.serial, "firmware": ident.firmware},
            clocks=[c.__dict__ for c in drv.clocks()], plane=self.config(device).plane)
        return ident

    def record_failures(self) -> None:
        """Each device's failed lab calls as a measurement `lab.device_errors` (a count, limit
        0 when any failure was not expected: the run's verdict fails on it)."""
        for dev, f in sorted(self.failures.items()):
            kw = f.measurement()
            self.measure("lab.device_errors", kw.pop("value"), kw.pop("unit"), device=dev, **kw)

    # -- results -------------------------------------------------------------------------------
    def measure(self, name: str, value: float | None, unit: str, *, lo: float | None = None,
                hi: float | None = None, limit: tuple | None = None, device: str = "",
                basis: str | None = None, doc: str = "", direction: str = "higher_is_worse",
                judge: bool = True, **extra: Any) -> Measurement:
        """Record a named result into measurements.json: `value` (point), or a bound [lo, hi]
        (its midpoint the point when value is None); `limit` = (lo, hi), either may be None."""
        lo, hi, point = _bound(name, value, lo, hi)
        llo, lhi = (limit or (None, None))
        m = Measurement(name, unit, point, lo, hi, device,
                        basis or ("exact" if lo == hi else "proven"),
                        None if llo is None else float(llo), None if lhi is None else float(lhi),
                        outcome(lo, hi, llo, lhi), doc, direction, judge, self.now_ns(), extra)
        self.measurements.append(m)
        write_json(self.store.path / MEASUREMENTS_FILE,
                   {"schema": 1, "measurements": [asdict(x) for x in self.measurements]})
        return m

    def distribution(self, name: str, unit: str, los, his, *, device: str = "",
                     limit: tuple | None = None, doc: str = "",
                     basis: str = "proven") -> Measurement | None:
        """Record a distribution of per-event bounds [lo_i, hi_i]: its median midpoint with the
        bound [min lo, max hi], the percentiles of the bounds, and the bounds themselves (the
        report draws their CDF). Empty: nothing recorded."""
        import numpy as np
        lo, hi = np.asarray(los, dtype=float), np.asarray(his, dtype=float)
        if not len(lo):
            return None
        pct = {f"p{q}": [float(np.percentile(lo, q)), float(np.percentile(hi, q))]
               for q in (5, 50, 95)}
        return self.measure(name, float(np.median((lo + hi) / 2)), unit, lo=float(lo.min()),
                            hi=float(hi.max()), limit=limit, device=device, doc=doc, basis=basis,
                            n=int(len(lo)), percentiles=pct,
                            distribution={"lo": lo.tolist(), "hi": hi.tolist()})


def _bound(name: str, value: float | None, lo: float | None, hi: float | None
           ) -> tuple[float, float, float]:
    """A measurement's (lo, hi, point): a missing end of the bound is the value, a missing
    value the bound's midpoint; neither given is an error."""
    if lo is None or hi is None:
        if value is None:
            raise ValueError(f"measurement {name!r}: give a value or a bound lo, hi")
        lo, hi = (value if lo is None else lo), (value if hi is None else hi)
    lo, hi = float(lo), float(hi)
    return lo, hi, float((lo + hi) / 2 if value is None else value)


def close_lab(bench) -> None:
    """Close the bench's lab, if an experiment opened one (the bench does when the rack stops);
    devices the procedure never touched are marked `unused` in the manifest (not an error: the
    summary leaves them out)."""
    lab = getattr(bench, "_lab", None)
    if lab is not None:
        devices = Manifest.of(bench.store.manifest).devices
        bench.store.update_devices({name: {"unused": "not used by this experiment"}
                                    for name, d in devices.items() if not d.error and not
                                    (bench.store.path / "samples" / f"{name}.csv").exists()})
        lab.record_failures()
        lab.close()
        bench._lab = None


def lab_of(bench) -> Lab:
    """The bench's one Lab (created on first use, closed when the run ends)."""
    if getattr(bench, "_lab", None) is None:
        bench._lab = Lab(bench)
    return bench._lab
