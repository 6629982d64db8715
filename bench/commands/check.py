"""`rackclock check`: is the reference healthy, and is every device of the rack reachable?

Prints the reference's grade and figures, then one row per device: its identity and, for each
of its clocks, what a few reads prove (bench/check_reads.py: reads until the value changes, so
the resolution is learned from the clock's own tick, never taken from its format on trust):
device minus reference at the middle of the bound, to its precision, and the bound; e.g.
`-4 ms, 1 s resolution (learned from a tick; 100 ms declared): offset in [-27, 19] ms`, or,
when no tick came within the budget, the declared resolution `assumed` and said so),
every device checked in its own thread with its own event loop and a timeout. Exit status 0 when
everything is usable, 1 when the reference or any device is not, 2 on bad arguments.
With no `--rack` it serves the simulated rack in this process and checks that.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.check_reads import BUDGET_S
from bench.config.keys import InventoryError
from bench.model.texttable import WIDTH, render, terminal_width, wrap
from bench.units import fmt_interval_ns, fmt_ns

HELP = "reference health, reachability and identity of every device"

if TYPE_CHECKING:
    from bench.config.inventory import DeviceConfig, RackConfig
    from bench.reference.clock import Health


@dataclass
class DeviceCheck:
    name: str
    plane: str
    driver: str
    address: str
    status: str = "timeout"                 # ok | an error class | timeout | no-driver
    identity: str = ""
    reads: list = field(default_factory=list)   # (clock, text) for a read or an error
    bounds: dict = field(default_factory=dict)  # clock -> CheckBound (bench/check_reads.py)
    error: str = ""
    seconds: float = 0.0

    @property
    def usable(self) -> bool:
        return self.status == "ok"


async def _check_device(device: DeviceConfig, now_ns, result: DeviceCheck,
                        timeout_s: float = 10.0) -> None:
    import asyncio  # here, as the drivers: `rackclock check --help` imports neither

    import drivers
    from drivers.base import DeviceError

    try:
        cls = drivers.driver_class(device.driver)
    except (ImportError, AttributeError) as exc:
        result.status, result.error = "no-driver", f"no driver {device.driver!r}: {exc}"
        return
    drv = cls(device, now_ns)
    try:
        await drv.open()
        ident = await drv.identity()
        result.identity = " ".join(x for x in (ident.vendor, ident.model, ident.firmware and
                                               f"fw {ident.firmware}", ident.serial and
                                               f"s/n {ident.serial}") if x)
        failed = await _read_clocks(drv, result, timeout_s)
        if failed:
            result.status, result.error = failed.kind, failed.message
        else:
            result.status = "ok"
    except DeviceError as exc:
        result.status, result.error = exc.kind, exc.message
    except Exception as exc:       # a driver bug must show as this device's error, not a crash
        result.status, result.error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(drv.close(), 5)


async def _read_clocks(drv, result: DeviceCheck, timeout_s: float):
    """Every clock of the device read into `result`; the first DeviceError, or None."""
    from drivers.base import DeviceError
    failed = None
    walls = sum(not c.counter for c in drv.clocks())
    budget = min(BUDGET_S, 0.5 * timeout_s / max(1, walls))   # room for the open and all
    for spec in drv.clocks():
        try:
            await _read_clock(drv, spec, result, budget)
        except DeviceError as exc:
            result.reads.append((spec.name, f"{exc.kind}: {exc.message}"))
            failed = failed or exc
    return failed


async def _read_clock(drv, spec, result: DeviceCheck, budget_s: float) -> None:
    """A counter: one read. A wall clock: reads across a tick (bench/check_reads.py)."""
    import asyncio

    from bench.check_reads import bound_from_reads, reads_across_a_tick
    if spec.counter:
        r = await drv.read_clock(spec.name)
        result.reads.append((spec.name, read_text(r, True)))
        return
    reads = await reads_across_a_tick(lambda: drv.read_clock(spec.name), asyncio.sleep, budget_s)
    b = bound_from_reads(reads, reads[-1].resolution_ns, int(getattr(spec, "lag_ns", 0)))
    result.bounds[spec.name] = b
    result.reads.append((spec.name, bound_text(b, reads[-1].resolution_ns,
                                               min(r.e_ns - r.s_ns for r in reads))))


def bound_text(b, declared_ns: int, bracket_ns: int) -> str:
    """What a check's reads prove, with the resolution it rests on and where that came from."""
    point = (b.lo + b.hi) // 2
    if b.basis == "learned":
        how = "learned from a tick" + ("" if b.resolution_ns == declared_ns
                                       else f"; {fmt_ns(declared_ns)} declared")
    else:
        how = f"assumed as declared: no tick in {b.reads} reads"
    head = f"{fmt_ns(point, precision_ns=max(1, b.hi - b.lo))}"
    if b.resolution_ns <= bracket_ns and b.basis == "learned":
        return f"{head} [bracket {fmt_ns(bracket_ns)}]: offset in {fmt_interval_ns(b.lo, b.hi)}"
    return (f"{head}, {fmt_ns(b.resolution_ns)} resolution ({how}): offset in "
            f"{fmt_interval_ns(b.lo, b.hi)}" + ("" if b.basis == "learned" else " assumed"))


def read_text(r, counter: bool) -> str:
    """One read as the offset it allows: device minus reference at the bracket's middle, to the
    precision of its bound; a clock coarser than its bracket says what the one read pins
    ('-788 ms, 1 s resolution: offset in [-788, 212] ms; a run pins it')."""
    br, q = r.e_ns - r.s_ns, max(1, int(r.resolution_ns))
    if counter:
        return f"counter [bracket {fmt_ns(br)}]"
    lo, hi = r.value_ns - r.e_ns, r.value_ns + q - r.s_ns     # true reading in [v, v + q)
    point = r.value_ns - (r.s_ns + r.e_ns) // 2
    if q > br:
        return (f"{fmt_ns(point, precision_ns=min(q, hi - lo))}, {fmt_ns(q)} resolution: "
                f"offset in {fmt_interval_ns(lo, hi)}; a run pins it")
    return f"{fmt_ns(point, precision_ns=hi - lo)} [bracket {fmt_ns(br)}]"


def check_devices(devices, now_ns, timeout_s: float = 10.0) -> list[DeviceCheck]:
    """Every device in its own daemon thread and event loop, all in parallel, each with a
    timeout; a driver that hangs past it is reported as `timeout` and left behind."""
    import asyncio

    results = [DeviceCheck(d.name, d.plane, d.driver, d.address) for d in devices]

    def work(d: DeviceConfig, res: DeviceCheck):
        t0 = time.monotonic()

        async def bounded():
            try:
                await asyncio.wait_for(_check_device(d, now_ns, res, timeout_s), timeout_s)
            except TimeoutError:
                res.status, res.error = "timeout", f"no complete answer within {timeout_s:g} s"

        try:
            asyncio.run(bounded())
        except Exception as exc:
            res.status, res.error = "error", f"{type(exc).__name__}: {exc}"
        res.seconds = time.monotonic() - t0

    threads = [threading.Thread(target=work, args=(d, r), daemon=True, name=f"check-{d.name}")
               for d, r in zip(devices, results)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s + 5
    for t, r in zip(threads, results):
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            r.status, r.error = "timeout", f"driver hung past {timeout_s:g} s"
    return results


def _ptp_lines(d: dict) -> list[str]:
    """What ptp4l (and phc2sys) say, from a health's detail."""
    out = [f"  ptp4l {d.get('uds', '')}: ports {' '.join(d.get('port_states', [])) or '?'}, "
           f"GM {d.get('gm_identity') or '?'} present={d.get('gm_present')}, "
           f"offset {fmt_ns(d.get('master_offset_ns'))}, "
           f"path delay {fmt_ns(d.get('mean_path_delay_ns'))}, "
           f"last sync {fmt_ns(d.get('sync_age_ns'))} ago, "
           f"{'/'.join(d.get('timestamping', [])) or '?'} stamps"]
    if d.get("phc") or d.get("phc2sys") is not None:
        out.append(f"  phc2sys: {len(d.get('phc2sys') or [])} running"
                   + (f"; CLOCK_REALTIME vs {d['phc']}: {fmt_ns(d.get('phc_sys_offset_ns'))}"
                      if d.get("phc") else ""))
    return out


def _host_lines(d: dict) -> list[str]:
    """The kernel's view of CLOCK_REALTIME and a PHC read, from a health's detail."""
    out = []
    k = d.get("kernel")
    if k:
        out.append(f"  kernel: CLOCK_REALTIME {'synchronized' if k['synchronized'] else 'unsynchronized'}"
                   f" ({k['state']}), maxerror {fmt_ns(k['maxerror_ns'])}, "
                   f"esterror {fmt_ns(k['esterror_ns'])}")
    if "phc_read" in d:
        p = d["phc_read"]
        out.append(f"  PHC read by {p['method']}: bracket {fmt_ns(p['bracket_ns'])}, "
                   f"PHC - CLOCK_REALTIME {fmt_ns(p['phc_minus_realtime_ns'])} "
                   f"(UTC offset {p['utc_offset_s']} s, {p['utc_offset_source']})")
    return out


def reference_lines(h: Health | None, refused: str | None) -> list[str]:
    if refused or h is None:
        return [f"reference: REFUSED: {refused}"]
    d = h.detail
    out = [f"reference: {h.source}  grade {h.grade}  "
           f"{'verified' if h.verified else 'UNVERIFIED'} ({h.basis})  "
           f"uncertainty {fmt_ns(h.uncertainty_ns)}"]
    if h.basis == "linuxptp" or "port_states" in d:
        out += _ptp_lines(d)
    out += _host_lines(d)
    out.append(f"  {h.note}")
    out += [f"  {p}" for p in h.problems]
    return out


def device_table(results: list[DeviceCheck], width: int | None = WIDTH) -> list[str]:
    """One row per device (identity clipped to fit `width`), its clock reads indented below it
    (device - reference; a counter's bracket)."""
    head = ["device", "plane", "driver", "status", "identity"]
    rows = [[r.name, r.plane, r.driver, r.status, r.identity or "-"] for r in results]
    table = render(head, rows, width=width, clip=4)
    lines = table[:2]
    for r, row in zip(results, table[2:]):
        lines.append(row)
        for clock, text in r.reads:
            lines += wrap(f"    {clock}: {text}", width, " " * 8)
        if r.error:
            lines += wrap(f"    {r.status}: {r.error}", width, " " * 8)
    return lines


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, int | None, float,
                                                   RackConfig]:
    """The command line and the rack file, checked (InventoryError; SystemExit for --help and
    argument errors)."""
    from bench.commands import OneLineParser

    ap = OneLineParser(prog="rackclock check",
                                 description="reference health and reachability of every device")
    ap.add_argument("--rack", type=Path, default=None,
                    help="rack file (default: serve and check the simulated rack)")
    ap.add_argument("--reference-allowance", default=None,
                    help="bound on the reference's own error when linuxptp cannot vouch for it, "
                         "e.g. 1ms")
    ap.add_argument("--ptp-uds", default=None,
                    help="ptp4l's management socket (default: the rack file's ptp_uds, else "
                         "/var/run/ptp4l or /var/run/ptp/ptp4l)")
    ap.add_argument("--timeout", default="10", help="seconds per device (default 10)")
    ap.add_argument("--device", action="append", default=[], help="check only this device "
                    "(repeatable)")
    a = ap.parse_args(argv)
    # the drivers and the rack file's model after the arguments: `rackclock check --help`
    # imports none
    from bench.config.loader import load_checked
    from bench.config.rackfile import parse_allowance
    from drivers.base import TIMEOUT_KEY

    allowance = parse_allowance(a.reference_allowance)
    try:
        timeout = TIMEOUT_KEY.check(float(a.timeout))
    except (ValueError, InventoryError):
        raise InventoryError(f"--timeout {a.timeout!r} is not accepted "
                             f"({TIMEOUT_KEY.accepted()})") from None
    from bench.sim.serve import DEFAULT_RACK
    source = load_checked(a.rack or DEFAULT_RACK, need_devices=False)   # `run`'s loader
    unknown = set(a.device) - {d.name for d in source.devices}
    if unknown:                   # refused before anything is started or opened
        raise InventoryError(f"no device {', '.join(sorted(unknown))} in the rack "
                             f"(devices: {', '.join(d.name for d in source.devices)})")
    return a, allowance, timeout, source


def _serve(stack: contextlib.ExitStack, source: RackConfig) -> tuple[RackConfig, dict, dict]:
    """The rack to check: a simulated rack file served here (the rack as served, the devices it
    left out and why, the devices as declared), or a lab rack, held for this session
    (RackBusy when another holds it)."""
    from bench.config.racklock import rack_lock

    if not source.simulated:       # a lab rack: one session at a time, as `rackclock run`
        if source.source:
            stack.enter_context(rack_lock(source.source, wait_s=0, what="rackclock check"))
        return source, {}, {}
    from bench.sim.serve import ensure_secrets
    from bench.sim.thread import SimRackThread

    ensure_secrets(source)
    sim = stack.enter_context(SimRackThread(source))
    rack = sim.rack
    if rack is None:                  # set by the thread's start
        raise RuntimeError("the simulated rack did not start")
    print(f"simulated rack {rack.name!r} served on loopback "
          f"({len(rack.devices)} of {len(source.devices)} emulators up)")
    return rack, dict(sim.failed), {d.name: d for d in source.devices}


def _open_reference(stack: contextlib.ExitStack, rack: RackConfig, allowance: int | None,
                    ptp_uds: str | None) -> tuple[Callable[[], int], Health | None, str | None]:
    """The reference's clock, its health, and why it was refused (then the devices are still
    checked, against CLOCK_REALTIME)."""
    from bench.config.rackfile import reference_options
    from bench.reference.clock import Reference, ReferenceRefused, reference_for_run

    try:
        opts = reference_options(rack)
        if ptp_uds is not None:
            opts["ptp_uds"] = None if ptp_uds == "none" else ptp_uds
        ref, health = reference_for_run(rack.reference, allowance, rack.simulated, **opts)
        stack.callback(ref.close)
        return ref.now_ns, health, None
    except (ReferenceRefused, ValueError, OSError) as exc:
        return Reference.now_ns, None, str(exc)


def _results(rack: RackConfig, only: list[str], now_ns: Callable[[], int], timeout: float,
             sim_failed: dict, declared: dict) -> list[DeviceCheck]:
    """Every device checked (or those named), and the simulated ones left out, with why."""
    devices = [d for d in rack.devices if not only or d.name in only]
    results = check_devices(devices, now_ns, timeout)
    for name, why in sim_failed.items():
        if not only or name in only:
            d = declared.get(name)
            results.append(DeviceCheck(name, d.plane if d else "", d.driver if d else "",
                                       "", status="no-emulator", error=why))
    return results


def _closing_line(results: list[DeviceCheck], health: Health | None, bad_ref: bool) -> str:
    bad = [r.name for r in results if not r.usable]
    return (f"{len(results) - len(bad)} of {len(results)} devices usable; reference "
            + ("unusable" if bad_ref or health is None else health.grade
               + ("" if health.verified or health.grade == "unverified" else " (unverified)")))


def main(argv: list[str] | None = None) -> int:
    try:
        a, allowance, timeout, source = _arguments(argv)
    except InventoryError as exc:
        print(f"rackclock check: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return int(exc.code or 0)
    # the reference and the rack lock after the arguments, as the drivers: a quick --help
    from bench.config.racklock import RackBusy

    with contextlib.ExitStack() as stack:
        try:
            rack, sim_failed, declared = _serve(stack, source)
        except RackBusy as exc:
            print(f"rackclock check: {exc}", file=sys.stderr)
            return 2
        now_ns, health, refused = _open_reference(stack, rack, allowance, a.ptp_uds)
        for line in reference_lines(health, refused):
            print(line)
        results = _results(rack, a.device, now_ns, timeout, sim_failed, declared)
        return _report(results, health, refused)


def _report(results: list[DeviceCheck], health: Health | None, refused: str | None) -> int:
    """The device table and the closing line; the exit status (1: anything unusable)."""
    print()
    for line in device_table(results, terminal_width()):
        print(line)
    bad_ref = refused is not None or health is None or health.grade == "fail"
    print()
    print(_closing_line(results, health, bad_ref))
    return 1 if bad_ref or any(not r.usable for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
