"""pytest plugin (entry point `pytest11`): a lab's own regression suite gets the rack.

    pytest --rack lab.toml [--calibrate-s 20] [--rack-arm] [--calibration-out results/]

Fixtures (all skip the test, with the reason, when no rack file is given):

  rack          the RackConfig of the rack file (--rack, or $RACKCLOCK_RACK)
  rack_file     its path
  rack_drivers  {device: driver} opened once per session; each driver's coroutines are callable
                as plain functions (`rack_drivers["bmc-1"].identity()`), run on a private loop
  calibration   {device: DeviceCalibration} from a short clock_offset run (--calibrate-s
                seconds): `calibration["bmc-1"].offset_bound() < 5 * ms`
  rack_held     the RackConfig, with the lab rack held by this session (below)

A rack file marked `simulated = true` works too: it is served on loopback for the session.
One session at a time on a lab rack: `rack_drivers` and `calibration` hold the rack
(bench.config.racklock, keyed by the rack file's path) from their first use to the session's end,
so a second session on the same rack (another pytest, a second xdist worker) waits for it, up to
--rack-wait-s, and then fails naming the holder.
Unit constants in ns for assertions: `from bench.pytest_plugin import ns, us, ms, s`; a failed
assertion on a calibration figure reads in units (`bmc-2 offset_bound: 41.27 s < 5 ms is false`).
Stimuli reach a real rack only with --rack-arm; on a simulated rack they are always sent.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
from pathlib import Path

import pytest

from bench.analysis.proven_segment import Bound
from bench.config.racklock import DEFAULT_WAIT_S, RackBusy, rack_lock
from bench.model.documents import ClockSummary, DeviceSummary, Identity, SegmentSummary
from bench.model.run_statuses import RunStatus

ns = 1
us = 1_000
ms = 1_000_000
s = 1_000_000_000



class Nanoseconds(float):
    """A duration in ns from a calibration accessor: an assertion on it reads in units
    (pytest_assertrepr_compare below), e.g. `offset_bound 41.3 s < 5 ms`."""

    what = "ns"

    def __new__(cls, value: float, what: str = "ns"):
        x = super().__new__(cls, value)
        x.what = what
        return x


def pytest_assertrepr_compare(config, op, left, right):
    """A comparison with a calibration figure, in units; the raw ns figures on a second line."""
    if not isinstance(left, Nanoseconds) and not isinstance(right, Nanoseconds):
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (left, right)):
        return None
    from bench.units import fmt_ns
    name = next(x.what for x in (left, right) if isinstance(x, Nanoseconds))

    def show(x):
        return fmt_ns(float(x), 4)
    return [f"{name}: {show(left)} {op} {show(right)} is false",
            f"(in ns: {float(left):.0f} {op} {float(right):.0f})"]


NO_RACK = "no rack file given (pytest --rack FILE or RACKCLOCK_RACK=FILE)"
CALL_TIMEOUT_S = 30.0


def pytest_addoption(parser):
    group = parser.getgroup("rackclock")
    group.addoption("--rack", default=os.environ.get("RACKCLOCK_RACK"),
                    help="rack file of a real lab rack (default: $RACKCLOCK_RACK)")
    group.addoption("--calibrate-s", type=float, default=20.0,
                    help="length of the session's clock_offset calibration run, s (default 20)")
    group.addoption("--calibration-out", default=None,
                    help="folder for the calibration's run folder (default: a temporary folder)")
    group.addoption("--rack-arm", action="store_true", default=False,
                    help="let the calibration and the drivers send stimuli to a real rack")
    group.addoption("--rack-wait-s", type=float, default=DEFAULT_WAIT_S,
                    help="how long to wait for another session using the same rack file, s "
                         f"(default {DEFAULT_WAIT_S:g})")


def _rack_path(config) -> Path:
    path = config.getoption("--rack")
    if not path:
        pytest.skip(NO_RACK)
    return Path(path)


@pytest.fixture(scope="session")
def rack_file(request) -> Path:
    """The rack file given with --rack; skips the test when none is given."""
    return _rack_path(request.config)


@pytest.fixture(scope="session")
def rack(request):
    """The RackConfig of the rack file given with --rack; skips the test when none is given."""
    from bench.config.inventory import load_rack
    return load_rack(_rack_path(request.config))


def _session_name(config) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"pytest{f' worker {worker}' if worker else ''} in {config.rootpath}"


@contextlib.contextmanager
def holding_rack(config, rack_file):
    """Hold the rack of `rack_file` (bench.config.racklock) for the block; a wait past
    --rack-wait-s fails the test naming the session that holds it."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(rack_lock(rack_file, config.getoption("--rack-wait-s"),
                                         what=_session_name(config)))
        except RackBusy as exc:
            pytest.fail(str(exc), pytrace=False)
        yield


@pytest.fixture(scope="session")
def rack_held(request, rack):
    """The lab rack held by this session from first use to its end (a simulated rack is
    served afresh for each session and needs no holding)."""
    if rack.simulated:
        yield rack
        return
    with holding_rack(request.config, rack.source):
        yield rack


# -- drivers -------------------------------------------------------------------------------------

class _Loop:
    """An asyncio loop in its own thread: the drivers' home for the session."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rackclock-drivers",
                                       daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = CALL_TIMEOUT_S):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class SyncDriver:
    """A driver whose coroutines are called as plain functions; `.driver` is the driver itself."""

    def __init__(self, driver, loop: _Loop):
        self.driver = driver
        self._loop = loop

    def __getattr__(self, name):
        attr = getattr(self.driver, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **kw: self._loop.run(attr(*a, **kw))
        return attr

    def __repr__(self) -> str:
        return f"<SyncDriver {self.driver.name} ({type(self.driver).__name__})>"


class RackDrivers(dict):
    """{device: SyncDriver}; `.errors` holds the devices that could not be opened, and asking
    for one of them fails the test with the device's own error."""

    def __init__(self):
        super().__init__()
        self.errors: dict[str, str] = {}

    def __missing__(self, name):
        if name in self.errors:
            pytest.fail(f"device {name} could not be opened: {self.errors[name]}", pytrace=False)
        raise KeyError(f"no device {name!r} in the rack (devices: {sorted(self)})")


@pytest.fixture(scope="session")
def rack_served(request, rack, tmp_path_factory):
    """The rack with reachable addresses: a simulated rack file is served for the session."""
    if not rack.simulated:
        yield rack
        return
    from bench.run.simproc import SimProcess
    with SimProcess(Path(rack.source), tmp_path_factory.mktemp("rackclock-sim")) as sim:
        yield sim.rack


@pytest.fixture(scope="session")
def rack_drivers(request, rack_held, rack_served):
    """Every device's driver, opened once for the session and closed at its end."""
    from bench.reference.clock import open_reference
    from drivers import driver_class

    armed = rack_served.simulated or request.config.getoption("--rack-arm")
    reference = open_reference(rack_served.reference)
    loop = _Loop()
    drivers = RackDrivers()
    for dev in rack_served.devices:
        try:
            drv = driver_class(dev.driver)(dev, reference.now_ns, armed=armed)
            loop.run(drv.open())
            drivers[dev.name] = SyncDriver(drv, loop)
        except Exception as exc:          # one dead device must not cost the others
            drivers.errors[dev.name] = str(exc) or type(exc).__name__
    try:
        yield drivers
    finally:
        for d in drivers.values():
            try:
                loop.run(d.driver.close(), timeout=10)
            except Exception:
                pass
        loop.stop()
        reference.close()


# -- calibration ---------------------------------------------------------------------------------

Bounds = Bound     # the estimator's proven interval: lo, hi, point, width, magnitude


class DeviceCalibration:
    """One device's calibration: proven bounds from the session's clock_offset run (ns, ppm).
    `summary` is the device's bench.model.documents.DeviceSummary, `identity` its Identity."""

    def __init__(self, name: str, summary: DeviceSummary, identity: Identity):
        self.name = name
        self.summary = summary
        self.identity = identity
        self.plane = summary.plane

    def __repr__(self) -> str:
        return f"<DeviceCalibration {self.name}: clocks {self.clocks}>"

    @property
    def firmware(self) -> str:
        return self.identity.firmware

    @property
    def clocks(self) -> list[str]:
        return self.summary.fitted_clocks()

    @property
    def errors(self) -> int:
        return self.summary.error_count

    def _clock(self, clock: str | None) -> ClockSummary:
        names = self.clocks
        if not names:
            pytest.fail(f"{self.name}: no clock was calibrated "
                        f"(errors: {self.summary.first_errors or 'none'})", pytrace=False)
        if clock is None:
            clock = names[0]
        if clock not in names:
            raise KeyError(f"{self.name} has no calibrated clock {clock!r} (clocks: {names})")
        return self.summary.clocks[clock]

    def _segment(self, clock: str | None) -> SegmentSummary:
        last = self._clock(clock).last
        if last is None:               # never: a calibrated clock has a segment
            pytest.fail(f"{self.name}: clock {clock!r} has no segment", pytrace=False)
        return last

    def offset(self, clock: str | None = None) -> Bounds:
        """Device minus reference at the last segment's epoch, ns (proven bounds)."""
        return self._segment(clock).offset_ns

    def offset_bound(self, clock: str | None = None) -> float:
        """The largest |offset| the proof allows, ns."""
        return Nanoseconds(self.offset(clock).magnitude, f"{self.name} offset_bound")

    def drift(self, clock: str | None = None) -> Bounds:
        return self._segment(clock).drift_ppm

    def drift_bound(self, clock: str | None = None) -> float:
        """The largest |drift| the proof allows, ppm."""
        return self.drift(clock).magnitude

    def breaks(self, clock: str | None = None) -> list:
        """The clock's breaks (bench.analysis.breaks.Break records)."""
        return list(self._clock(clock).breaks)

    def bracket_median(self, clock: str | None = None) -> float:
        median = self._segment(clock).bracket_median_ns
        if median is None:             # a summary that recorded no brackets
            pytest.fail(f"{self.name}: no bracket median in its summary", pytrace=False)
        return Nanoseconds(median, f"{self.name} bracket_median")

    def resolution(self, clock: str | None = None) -> int:
        return int(self._clock(clock).resolution_ns or 0)

    def latency(self, stimulus: str | None = None) -> Bounds:
        """Stimulus -> device log stamp, ns (proven bounds over the calibration's events)."""
        lat = self.summary.latency
        if stimulus is None and lat:
            stimulus = sorted(lat)[0]
        b = lat[stimulus].logged_ns if stimulus in lat else None
        if not b:
            pytest.fail(f"{self.name}: no logged latency for stimulus {stimulus!r} in the "
                        f"calibration (stimuli: {sorted(lat) or 'none'})", pytrace=False)
        return Bounds(b.lo, b.hi, b.point)

    def latency_bound(self, stimulus: str | None = None) -> float:
        """The longest logging latency the proof allows, ns."""
        return Nanoseconds(self.latency(stimulus).hi, f"{self.name} latency_bound")


class RackCalibration(dict):
    """{device: DeviceCalibration}, with the run folder it came from (`.path`, `.run`)."""

    def __init__(self, run):
        super().__init__()
        self.run = run
        self.path = run.path
        for name, d in run.summary.devices.items():
            self[name] = DeviceCalibration(name, d, run.manifest.device(name).identity
                                           or d.identity)

    def __missing__(self, name):
        raise KeyError(f"no device {name!r} in the calibration (devices: {sorted(self)})")


@pytest.fixture(scope="session")
def calibration(request, rack_held, rack_file, tmp_path_factory) -> RackCalibration:
    """A short clock_offset run on the rack (--calibrate-s), once per session."""
    from bench.model.rundata import load_run
    from bench.run.experiment import run_experiment

    cfg = request.config
    out = cfg.getoption("--calibration-out")
    out = Path(out) if out else tmp_path_factory.mktemp("rackclock-calibration")
    secs = cfg.getoption("--calibrate-s")
    path = run_experiment("clock_offset", rack_file, out, {"duration_s": str(secs)},
                          armed=cfg.getoption("--rack-arm"), quiet=True)
    run = load_run(path)
    if run.manifest.status != RunStatus.COMPLETED or not run.summary.raw:
        pytest.fail(f"the calibration run did not complete ({run.manifest.status}: "
                    f"{run.manifest.error or None}); run folder {path}", pytrace=False)
    return RackCalibration(run)
