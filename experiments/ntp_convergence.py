"""NTP convergence: set an NTP-disciplined device clock off by hand, measure how its client
brings it back: time to re-converge within a bound, the slew rate applied, whether it stepped;
with the NTP server unreachable; and a manual set racing the NTP client.

Cases, on the first device whose rack-file entry allows `set_clock` and `ntp` (or `device`):
  step        NTP off, clock set `step_s` ahead, NTP on: reads every `read_every_s` locate the
              step between two reads (proven bound on the time from "NTP on" to the step, and on
              its size); a fit of the reads after it bounds the offset left.
  slew        the same with `slew_s` (below the client's step threshold): a fit of the reads while
              it slews bounds the rate applied (ppm); the time until the offset is within
              `bound_s` follows from that line (basis: the slew stays linear until then).
  unreachable clock set `step_s` ahead with the server unreachable (`unreachable_server`): the
              offset `deadline_s` after "NTP on" (not corrected: the client cannot), then the
              server restored and the time to converge measured again.
  race        a manual set with NTP on: refused by the device (OpenBMC answers 400
              PropertyValueConflict), or accepted and then pulled back by the client (measured).
Each case builds on the last, so a device failure ends the run (lab.on_error = "raise": status
failed, the error named); a refused manual set in `race` is an expected outcome, not a failure.
The device is left with NTP on and its server restored. On a real rack the same procedure runs
against the device's own client (give `server`, `unreachable_server`, deadlines to suit it).
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.analysis.estimate import fit_clock
from bench.analysis.probe_schedule import current_segment, edge_window
from bench.run.lab import LabTimeout
from drivers.base import DeviceError, Read

NS = 1_000_000_000

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Params:
    device: str = ""                       # default: the first allowing set_clock and ntp
    step_s: float = 5.0                    # manual set ahead by this much (above step threshold)
    slew_s: float = 0.2                    # ... and by this much (below it)
    bound_s: float = 0.05                  # "converged": |offset| within this
    read_every_s: float = 0.05             # reads while waiting for the client
    deadline_s: float = 15.0               # for a step to happen
    slew_window_s: float = 20.0            # reads of the slewing clock fitted for its rate
    slew_drift_prior_ppm: float = 100000.0 # the slew fit's drift prior (a slew is far above 200)
    server: str = "pool.ntp.org"
    unreachable_server: str = "192.0.2.1"  # TEST-NET-1: nothing answers there
    cases: str = "step,slew,unreachable,race"


def offset_bound(r) -> tuple[int, int]:
    """Device minus reference, from one read: [value - e, value + resolution - s]."""
    return r.value_ns - r.e_ns, r.value_ns + r.resolution_ns - r.s_ns


def set_off(lab, dev: str, offset_s: float, server: str):
    lab.set_ntp(dev, enabled=False, server=server)
    lab.set_clock(dev, offset_s=offset_s)
    for _ in range(3):
        lab.read_clock(dev)


def wait_step(lab, dev: str, on, ahead_ns: int, p: Params, what: str) -> dict:
    """Read until a read proves the offset came below half the set offset; the step lies between
    the last read proving it above and that read."""
    half = ahead_ns // 2
    pre: list[Read | None] = [None]

    def stepped() -> Read | None:
        r = lab.read_clock(dev)
        lo, hi = offset_bound(r)
        if lo > half:
            pre[0] = r
        elif hi < half:
            return r                                # the first read proving it below
        lab.sleep(p.read_every_s)
        return None
    try:
        b: Read = lab.wait_for(stepped, p.deadline_s, 0.0, what=what)
    except LabTimeout:
        return {"stepped": False}
    a = pre[0]
    start = a.s_ns if a is not None else on.s_ns
    out = {"stepped": True, "lo": start - on.e_ns, "hi": b.e_ns - on.s_ns,
           "step_after_ns": start, "step_before_ns": b.e_ns}
    if a is not None:
        alo, ahi = offset_bound(a)
        blo, bhi = offset_bound(b)
        out["size"] = (blo - ahi, bhi - alo)
    return out


def fit_reads(lab, dev: str, t_from: int, t_to: int, prior_ppm: float):
    from bench.model.rundata import load_samples
    smp = load_samples(lab.store.path / "samples" / f"{dev}.csv")
    s, e, v, q = smp.reads(smp.clock[int(smp.select("read")[0])])
    k = (s >= t_from) & (e <= t_to)
    if k.sum() < 4:
        return None
    fit = fit_clock(s[k], e[k], v[k], int(q[k][0]), drift_prior_ppm=prior_ppm)
    return max(fit.segments, key=lambda sg: sg.reads) if fit.segments else None


EDGE_READS = 6     # reads spread across a tick edge's window, within a BMC's request budget


def read_for(lab, dev: str, seconds: float, every_s: float, prior_ppm: float) -> None:
    """Reads for `seconds`. On a clock whose tick is coarser than a read's bracket, once its line
    is known: reads back to back across the window the line allows for each next tick edge and
    none between, so every edge is bracketed to about one read's width (reads at a fixed pace
    bracket an edge only to the pace, which leaves a 14 s fit of a 1 s clock thousands of ppm
    wide). Until then, and on fine clocks, one read per `every_s`."""
    t_end = lab.now_ns() + int(seconds * NS)
    s, e, v = [], [], []
    state: dict[str, Any] = {}

    def read():
        r = lab.read_clock(dev)
        s.append(r.s_ns), e.append(r.e_ns), v.append(r.value_ns)
        return r

    r = read()
    while lab.now_ns() < t_end:
        b_ns = int(np.median(np.subtract(e, s)))
        sg, q = current_segment(np.asarray(s), np.asarray(e), np.asarray(v), r.resolution_ns, 0,
                                prior_ppm, 0, state)
        now = lab.now_ns()
        if sg is None or q <= 2 * b_ns or sg.offset_at(now).hi - sg.offset_at(now).lo >= q - b_ns:
            lab.sleep(every_s)
            r = read()
            continue
        k, a, b = edge_window(sg, q, int(v[-1] % q), now + b_ns)
        if a - b_ns >= t_end:
            lab.sleep(max(0, t_end - now) / NS)
            break
        lab.sleep(max(0, a - b_ns - now) / NS)
        # about EDGE_READS reads across the window: back to back, a window wider than the
        # device's request budget allows (a BMC's 10 a second) was read at the budget's pace
        # from its start, and its edge pinned only to 0.1 s
        gap = min(every_s, (b - a) / EDGE_READS / NS)
        edge = k * q + int(v[-1] % q)
        while lab.now_ns() <= b + b_ns and lab.now_ns() < t_end:
            r = read()
            if r.value_ns >= edge:
                break
            lab.sleep(gap)


def case_step(lab, dev, p: Params, name: str = "step", ahead_s: float | None = None) -> dict:
    ahead = ahead_s if ahead_s is not None else p.step_s
    set_off(lab, dev, ahead, p.server)
    on = lab.set_ntp(dev, enabled=True)
    st = wait_step(lab, dev, on, int(ahead * NS), p, f"{dev}: the NTP client's step")
    res = {"on_s_ns": on.s_ns, "on_e_ns": on.e_ns, **st}
    lab.measure(f"ntp_convergence.{name}.stepped", int(st["stepped"]), "count", device=dev,
                doc=f"clock set {ahead:g} s ahead: did the client step it (1) or not (0) "
                    f"within {p.deadline_s:g} s")
    if st["stepped"]:
        lab.measure(f"ntp_convergence.{name}.time", None, "ns", device=dev, lo=st["lo"],
                    hi=st["hi"], limit=(0, p.deadline_s * NS),
                    doc="NTP switched on -> the client's step (between two reads)")
        if "size" in st:
            lab.measure(f"ntp_convergence.{name}.size", None, "ns", device=dev, lo=st["size"][0],
                        hi=st["size"][1], direction="any", doc="the step's size")
        t = lab.now_ns()
        read_for(lab, dev, 5.0, p.read_every_s, 200.0)
        seg = fit_reads(lab, dev, t, lab.now_ns(), 200.0)
        if seg is not None:
            o = seg.offset_at(lab.now_ns())
            lab.measure(f"ntp_convergence.{name}.offset_after", None, "ns", device=dev, lo=o.lo,
                        hi=o.hi, limit=(-p.bound_s * NS, p.bound_s * NS),
                        doc="offset after the step (fit of 5 s of reads)")
            res["offset_after"] = o.as_dict()
    return res


def case_slew(lab, dev, p: Params) -> dict:
    set_off(lab, dev, p.slew_s, p.server)
    on = lab.set_ntp(dev, enabled=True)
    t_on = on.e_ns
    lab.sleep(2.0)                                    # the client's first poll
    t_from = lab.now_ns()
    read_for(lab, dev, p.slew_window_s, p.read_every_s, p.slew_drift_prior_ppm)
    seg = fit_reads(lab, dev, t_from, lab.now_ns(), p.slew_drift_prior_ppm)
    res = {"on_s_ns": on.s_ns, "on_e_ns": on.e_ns, "window_ns": [t_from, lab.now_ns()]}
    if seg is None:
        return res
    d = seg.drift_ppm
    lab.measure("ntp_convergence.slew.rate", None, "ppm", device=dev, lo=d.lo, hi=d.hi,
                direction="any", doc=f"frequency the client applied while slewing {p.slew_s:g} s "
                                     f"(fit of {seg.reads} reads)")
    res["rate_ppm"] = d.as_dict()
    # the line's crossing of the bound: earliest where its lower edge is inside, latest where
    # its upper edge is (a clock set ahead slews down)
    b = p.bound_s * NS
    grid = np.arange(t_on, t_on + int(600 * NS), int(0.01 * NS))
    lo_in = next((int(t) for t in grid if seg.offset_at(int(t)).lo <= b), None)
    hi_in = next((int(t) for t in grid[::10] if seg.offset_at(int(t)).hi <= b), None)
    if hi_in is not None:
        hi_in = next(int(t) for t in range(hi_in - int(0.1 * NS), hi_in + 1, int(0.01 * NS))
                     if seg.offset_at(int(t)).hi <= b)
    if lo_in is not None and hi_in is not None:
        lab.measure("ntp_convergence.slew.time", None, "ns", device=dev, lo=lo_in - on.e_ns,
                    hi=hi_in - on.s_ns, basis="slew line fit (the slew stays linear)",
                    doc=f"NTP switched on -> |offset| within {p.bound_s:g} s")
        res["converged_ns"] = [lo_in, hi_in]
        wait = (hi_in - lab.now_ns()) / NS
        if 0 < wait < 120:
            lab.sleep(wait)
        t = lab.now_ns()
        read_for(lab, dev, 4.0, p.read_every_s, p.slew_drift_prior_ppm)
        seg2 = fit_reads(lab, dev, t, lab.now_ns(), p.slew_drift_prior_ppm)
        if seg2 is not None:
            o = seg2.offset_at(lab.now_ns())
            lab.measure("ntp_convergence.slew.offset_after", None, "ns", device=dev, lo=o.lo,
                        hi=o.hi, limit=(-p.bound_s * NS, p.bound_s * NS),
                        doc="offset once the line says converged (fit of 4 s of reads)")
    return res


def case_unreachable(lab, dev, p: Params) -> dict:
    set_off(lab, dev, p.step_s, p.unreachable_server)
    on = lab.set_ntp(dev, enabled=True)
    st = wait_step(lab, dev, on, int(p.step_s * NS), p, f"{dev}: a step with the server down")
    lab.measure("ntp_convergence.unreachable.stepped", int(st["stepped"]), "count", device=dev,
                limit=(0, 0), doc=f"server unreachable: did the clock move back within "
                                  f"{p.deadline_s:g} s (it must not)")
    r = lab.read_clock(dev)
    lo, hi = offset_bound(r)
    lab.measure("ntp_convergence.unreachable.offset", None, "ns", device=dev, lo=lo, hi=hi,
                direction="any", judge=False,
                doc=f"offset {p.deadline_s:g} s after NTP on, server unreachable")
    restored = lab.set_ntp(dev, server=p.server)
    st2 = wait_step(lab, dev, restored, int(p.step_s * NS), p, f"{dev}: the step once restored")
    if st2["stepped"]:
        lab.measure("ntp_convergence.unreachable.restored_time", None, "ns", device=dev,
                    lo=st2["lo"], hi=st2["hi"], limit=(0, p.deadline_s * NS),
                    doc="server reachable again -> the client's step")
    return {"on_s_ns": on.s_ns, "restored_s_ns": restored.s_ns, "restored_e_ns": restored.e_ns,
            "stepped_while_down": st["stepped"], "restored": st2}


def case_race(lab, dev, p: Params) -> dict:
    if lab.devices(name=dev, stimulus="ntp"):
        lab.set_ntp(dev, enabled=True, server=p.server)
    lab.sleep(1.0)                       # (a device without an NTP switch runs its client always)
    lab.on_error = "expect"             # a refusal is one of the race's outcomes
    st = lab.set_clock(dev, offset_s=p.step_s)
    lab.on_error = "raise"
    if not st:
        lab.measure("ntp_convergence.race.manual_set_refused", 1, "count", device=dev,
                    direction="any", doc=f"a manual set with NTP on: refused ({st.message[:80]})")
        return {"refused": st.message}
    lab.measure("ntp_convergence.race.manual_set_refused", 0, "count", device=dev,
                direction="any", doc="a manual set with NTP on was accepted")
    back = wait_step(lab, dev, st, int(p.step_s * NS), p, f"{dev}: NTP pulling the set back")
    if back["stepped"]:
        lab.measure("ntp_convergence.race.pulled_back", None, "ns", device=dev, lo=back["lo"],
                    hi=back["hi"], doc="manual set with NTP on -> the client steps it back")
    return {"refused": None, "pulled_back": back}


CASES = {"step": case_step, "slew": case_slew, "unreachable": case_unreachable,
         "race": case_race}


def run(bench, p: Params) -> dict:
    lab = bench.lab
    lab.on_error = "raise"      # each case builds on the last: the first device failure ends the
                                # run (status failed, the error named), as this experiment asks
    both = [d for d in lab.devices(stimulus="set_clock") if d in lab.devices(stimulus="ntp")]
    dev = p.device or (both[0] if both else "")
    if not dev:
        raise SystemExit("no device of this rack allows both set_clock and ntp")
    lab.identify(dev)
    results = {}
    cases = [c.strip() for c in p.cases.split(",") if c.strip()]
    if not lab.devices(name=dev, stimulus="ntp"):       # no NTP switch: only the race applies
        skipped = [c for c in cases if c != "race"]
        cases = [c for c in cases if c == "race"]
        bench.store.journal(dev, "warn", "ntp_convergence", f"{dev} has no NTP switch allowed: "
                            f"cases {skipped} skipped")
    try:
        for name in cases:
            results[name] = CASES[name](lab, dev, p)
            bench.store.update_manifest(ntp_convergence={"device": dev, "cases": results})
    finally:
        try:
            if lab.devices(name=dev, stimulus="ntp"):
                lab.set_ntp(dev, enabled=True, server=p.server)
        except DeviceError:
            pass
    # this run slews the clock on purpose, far beyond the default drift prior (200 ppm): the
    # fit of this device assumes the slew experiment's prior instead, and says so
    inv = bench.store.manifest.get("inventory", {})
    inv.get("devices", {}).get(dev, {})["drift_prior_ppm"] = p.slew_drift_prior_ppm
    bench.store.update_manifest(inventory=inv)
    bench.store.journal(dev, "info", "drift_prior", f"raised to {p.slew_drift_prior_ppm:g} ppm "
                        f"for the fit: the experiment slews this clock")
    summary = bench.summarize()
    log.info("%s", "\n".join(lines(lab.measurements)))   # the terminal shows them after the table
    return summary


def lines(ms) -> list[str]:
    from bench.units import fmt_bounds, fmt_interval_ns
    out = ["NTP convergence:"]
    for m in ms:
        val = (fmt_interval_ns(m.lo, m.hi) if m.unit == "ns" else
               fmt_bounds(m.lo, m.hi, m.unit, 6) if m.lo != m.hi else f"{m.point:g} {m.unit}")
        out.append(f"  {m.device:<8} {m.name:<44} {val}  {m.outcome}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
