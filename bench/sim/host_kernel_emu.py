"""The host kernel plane of the simulated rack: this host itself, not an emulator.

`serve` checks the device may write to the kernel log (`write_kmsg = true` in its entry and
/dev/kmsg writable, i.e. root) and leaves it out of the run with the reason otherwise. Its truth
comes from the host's clocks, sampled once a second while serving, read from the kernel's own
figures rather than estimated from user-space reads:
- `realtime`: offset 0 (the simulated rack's reference is CLOCK_REALTIME);
- `monotonic`: CLOCK_MONOTONIC - CLOCK_REALTIME, the kernel's exact figure (bench.sim.host_clocks:
  /proc/timer_list, root only), not a REALTIME/MONOTONIC/REALTIME triple: a stall between its
  reads moves its midpoint by half the stall (one such sample put the truth 4.3 us outside a
  proven bound in a loaded run);
- `kmsg`: the kernel log's clock is `local_clock()` (sched clock), not CLOCK_MONOTONIC; the
  kernel shows both (`ktime`, `cpu_clk`) in debugfs `sched/debug`, read when that is mounted
  and readable; the sample's instant is that `ktime` on the realtime scale. Between samples the
  difference is interpolated (the sched clock drifts smoothly against the timekeeper). Without
  these files a clock has no truth here: the run says so (an event `no_truth` in truth.json)
  rather than assume CLOCK_MONOTONIC.
"""
from __future__ import annotations

import bisect
import os
import re
import time

from bench.config.inventory import DeviceConfig
from bench.sim.clock_model import exact_truth
from bench.sim.host_clocks import TIMER_LIST, realtime_minus_monotonic_ns, timens_monotonic_ns
from bench.sim.ipmi_bmc_emu import note_every_second

SIM_KEYS: dict = {}          # the clock's keys only (bench/sim/simtable.py)

NS = 1_000_000_000
SCHED_DEBUG = ("/sys/kernel/debug/sched/debug", "/proc/sched_debug")
_FIELD = re.compile(r"^(ktime|cpu_clk)\s*:\s*(\d+)\.(\d{6})\s*$", re.M)


def kmsg_minus_monotonic_ns(tries: int = 5) -> int | None:
    """local_clock() - CLOCK_MONOTONIC (ns, the kernel's) from the scheduler's debug file, or None."""
    got = kmsg_reading(tries)
    return got[1] if got else None


def kmsg_reading(tries: int = 5) -> tuple[int, int] | None:
    """(kernel CLOCK_MONOTONIC ns, local_clock() - it ns) from the scheduler's debug file, or
    None. The kernel reads `ktime` before `cpu_clk`, so a delay between the two only adds: the
    least of a few."""
    got = [x for x in (_one_reading() for _ in range(tries)) if x is not None]
    return min(got, key=lambda x: x[1]) if got else None


def _one_reading() -> tuple[int, int] | None:
    for path in SCHED_DEBUG:
        try:
            with open(path) as f:
                head = f.read(2048)
        except OSError:
            continue
        got = {m[1]: int(m[2]) * 1_000_000 + int(m[3]) for m in _FIELD.finditer(head)}
        if "ktime" in got and "cpu_clk" in got:
            return got["ktime"], got["cpu_clk"] - got["ktime"]
    return None


class HostTruth:
    """Truth of one host clock against CLOCK_REALTIME: samples (realtime ns, base ns, d ns) with
    offset = base + d; `base` (minus `offs_real`, plus the namespace's shift for `monotonic`)
    changes only at steps, `d` (local_clock() - the kernel's CLOCK_MONOTONIC, `kmsg` only) is
    interpolated between samples with one base and carried on past the ends. Duck-types
    ClockModel's `truth(grid)`."""

    def __init__(self, kind: str):
        self.kind = kind                        # realtime | monotonic | kmsg
        self.samples: list[tuple[int, int, int]] = []
        self.missing = ""                       # why there is no sample, when there is none
        self.note()

    def note(self) -> None:
        if self.kind == "realtime":
            self.samples.append((time.clock_gettime_ns(time.CLOCK_REALTIME), 0, 0))
            return
        for _ in range(3):                      # offs_real the same before and after: no step
            real = realtime_minus_monotonic_ns()
            if real is None:
                self.missing = f"{TIMER_LIST} not readable: CLOCK_REALTIME - CLOCK_MONOTONIC unknown"
                return
            if self.kind == "monotonic":
                sample = (time.clock_gettime_ns(time.CLOCK_REALTIME), timens_monotonic_ns() - real, 0)
            else:
                k = kmsg_reading()
                if k is None:
                    self.missing = "debugfs sched/debug not readable: local_clock() unknown"
                    return
                sample = (k[0] + real, -real, k[1])
            if realtime_minus_monotonic_ns() == real:
                if self.samples and sample[0] < self.samples[-1][0]:
                    return                      # realtime stepped back: keep the record ordered
                self.samples.append(sample)
                return

    def offset_ns(self, t_ns: int) -> int:
        s = self.samples
        i = min(max(bisect.bisect_right([x[0] for x in s], t_ns) - 1, 0), len(s) - 1)
        r, base, d = s[i]
        j = i + 1 if i + 1 < len(s) else i - 1
        if j >= 0 and j != i and s[j][1] == base and s[j][0] != r:
            (ra, _, da), (rb, _, db) = sorted((s[i], s[j]))
            return base + da + round((db - da) * (t_ns - ra) / (rb - ra))
        return base + d

    def drift_ppm(self, t_ns: int, baseline_ns: int = 20 * NS) -> float:
        """CLOCK_MONOTONIC and CLOCK_REALTIME advance at one rate (the timekeeper's): 0. The log
        clock (the unadjusted sched clock) drifts against them: the slope of d across the samples
        within `baseline_ns` around t (the whole record when shorter)."""
        if self.kind != "kmsg" or len(self.samples) < 2:
            return 0.0
        near = [x for x in self.samples if abs(x[0] - t_ns) <= baseline_ns // 2]
        if len(near) < 2 or near[-1][0] - near[0][0] < baseline_ns // 2:
            near = self.samples
        (r0, _, d0), (r1, _, d1) = near[0], near[-1]
        return (d1 - d0) / (r1 - r0) * 1e6 if r1 > r0 else 0.0

    def truth(self, t_grid_ns) -> dict:
        ts = [int(t) for t in t_grid_ns]
        res = {"realtime": 1, "monotonic": 1, "kmsg": 1000}[self.kind]
        return {"t_ns": ts, "offset_ns": [self.offset_ns(t) for t in ts],
                "drift_ppm": [self.drift_ppm(t) for t in ts], "resolution_ns": res,
                "counter": self.kind != "realtime", "tz_error_ns": 0, "firmware": "",
                "breaks": [], "exact": exact_truth(self, self.knots(ts[0], ts[-1]) if ts else [])}

    def knots(self, t_lo: int, t_hi: int) -> list[int]:
        """Both sides of every sample: between them the offset is linear (ClockModel.knots)."""
        xs = {t_lo, t_hi, *(t for r, _, _ in self.samples for t in (r - 1, r))}
        return sorted(x for x in xs if t_lo <= x <= t_hi)


def kmsg_writable(path: str = "/dev/kmsg") -> bool:
    return os.access(path, os.W_OK)


async def serve(devices: list[DeviceConfig], ctx) -> dict[str, dict]:
    out: dict[str, dict] = {}
    truths: list[HostTruth] = []
    for d in devices:
        if not d.address.startswith("local://"):
            raise RuntimeError(f"{d.name}: the simulated rack serves only local:// hosts")
        kmsg = str(d.options.get("kmsg", "/dev/kmsg"))
        if d.options.get("write_kmsg") is not True or not kmsg_writable(kmsg):
            raise RuntimeError(f"{kmsg} is not writable here (needs root and write_kmsg = true): "
                               f"the host kernel plane is left out of this run")
        models = ctx.models(d, ())
        for kind in ("realtime", "monotonic", "kmsg"):
            t = HostTruth(kind)
            if not t.samples:
                ctx.record_event(d.name, "no_truth", ctx.now_ns(), clock=kind, reason=t.missing)
                continue
            models[kind] = t
            truths.append(t)
        out[d.name] = {"address": d.address}

    note_every_second(ctx, truths)
    return out
