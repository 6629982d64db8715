"""The host kernel plane of the simulated rack: this host itself, not an emulator.

`serve` checks the device may write to the kernel log (`write_kmsg = true` in its entry and
/dev/kmsg writable, i.e. root) and leaves it out of the run with the reason otherwise. Its truth
comes from the host's clocks, sampled once a second while serving:
- `realtime`: offset 0 (the simulated rack's reference is CLOCK_REALTIME);
- `monotonic`: CLOCK_MONOTONIC - CLOCK_REALTIME (pairs read back to back, ±100 ns);
- `kmsg`: the kernel log's clock is `local_clock()` (sched clock), not CLOCK_MONOTONIC; the
  kernel shows both (`ktime`, `cpu_clk`) in debugfs `sched/debug`, read when that is mounted
  and readable. Without it the log clock has no truth here: the run says so (an event
  `no_truth` in truth.json) rather than assume CLOCK_MONOTONIC.
"""
from __future__ import annotations

import os
import re

from bench.model.inventory import DeviceConfig
from bench.sim.ipmi_bmc import host_clock_pair, note_every_second

NS = 1_000_000_000
SCHED_DEBUG = ("/sys/kernel/debug/sched/debug", "/proc/sched_debug")
_FIELD = re.compile(r"^(ktime|cpu_clk)\s*:\s*(\d+)\.(\d{6})\s*$", re.M)


def kmsg_minus_monotonic_ns(tries: int = 5) -> int | None:
    """local_clock() - CLOCK_MONOTONIC (ns) from the scheduler's debug file, or None. The kernel
    prints `ktime` before `cpu_clk`, so a delay between the two only adds: the least of a few."""
    got = [d for d in (_one_reading() for _ in range(tries)) if d is not None]
    return min(got) if got else None


def _one_reading() -> int | None:
    for path in SCHED_DEBUG:
        try:
            with open(path) as f:
                head = f.read(2048)
        except OSError:
            continue
        got = {m[1]: int(m[2]) * 1_000_000 + int(m[3]) for m in _FIELD.finditer(head)}
        if "ktime" in got and "cpu_clk" in got:
            return got["cpu_clk"] - got["ktime"]
    return None


class HostTruth:
    """Truth of one host clock against CLOCK_REALTIME: offset(t) from the last sample at or
    before t. Duck-types ClockModel's `truth(grid)`."""

    def __init__(self, kind: str):
        self.kind = kind                        # realtime | monotonic | kmsg
        self.samples: list[tuple[int, int]] = []
        self.note()

    def note(self) -> None:
        r, m, _ = host_clock_pair()
        if self.kind == "realtime":
            self.samples.append((r, 0))
        elif self.kind == "monotonic":
            self.samples.append((r, m - r))
        else:
            d = kmsg_minus_monotonic_ns()
            if d is not None:
                self.samples.append((r, m - r + d))

    def offset_ns(self, t_ns: int) -> int:
        off = self.samples[0][1]
        for r, o in self.samples:
            if r <= t_ns:
                off = o
        return off

    def drift_ppm(self, t_ns: int, baseline_ns: int = 20 * NS) -> float:
        """CLOCK_MONOTONIC and CLOCK_REALTIME advance at one rate (the timekeeper's): 0. The log
        clock (the unadjusted sched clock) drifts against them: the slope across the samples
        within `baseline_ns` around t (the whole record when shorter)."""
        if self.kind != "kmsg" or len(self.samples) < 2:
            return 0.0
        near = [x for x in self.samples if abs(x[0] - t_ns) <= baseline_ns // 2]
        if len(near) < 2 or near[-1][0] - near[0][0] < baseline_ns // 2:
            near = self.samples
        (r0, o0), (r1, o1) = near[0], near[-1]
        return (o1 - o0) / (r1 - r0) * 1e6 if r1 > r0 else 0.0

    def truth(self, t_grid_ns) -> dict:
        ts = [int(t) for t in t_grid_ns]
        res = {"realtime": 1, "monotonic": 1, "kmsg": 1000}[self.kind]
        return {"t_ns": ts, "offset_ns": [self.offset_ns(t) for t in ts],
                "drift_ppm": [self.drift_ppm(t) for t in ts], "resolution_ns": res,
                "counter": self.kind != "realtime", "tz_error_ns": 0, "firmware": "",
                "breaks": []}


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
                ctx.record_event(d.name, "no_truth", ctx.now_ns(), clock=kind,
                                 reason="debugfs sched/debug not readable: local_clock() unknown")
                continue
            models[kind] = t
            truths.append(t)
        out[d.name] = {"address": d.address}

    note_every_second(ctx, truths)
    return out
