"""Power cycle: cycle the PDU outlet that feeds a device and follow it across planes: the PDU's
outlet-log stamps (off, on), the device's loss of reachability, its return, where its clock comes
back (RTC, 1970 or the firmware image's date) and when it is set again (its NTP client).

Runs on its own simulated rack by default (power_cycle_rack.toml: pdu-1 outlet 4 feeds bmc-1,
whose clock comes back at 1970); on a real rack give `device`, `pdu`, `outlet` (the inventory
must allow `outlet_reboot:OUTLET` on the PDU, and --arm). Every instant is bounded between two
exchanges (the last that saw the old state and the first that saw the new one); the PDU's log
stamps are mapped through this run's calibration of its clock. All figures are relative to the
reboot command's bracket. The device's failed reads while it is dark are the point: they are
recorded as expected (lab.on_error = "expect"), reported, not judged.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

NS = 1_000_000_000
RACK = Path(__file__).with_name("power_cycle_rack.toml")
DAY = 86400 * NS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Params:
    device: str = ""                 # default: the device the simulated rack's topology feeds
    pdu: str = ""
    outlet: int = 0
    read_every_s: float = 0.1        # device reads while it goes down and comes back
    read_timeout_s: float = 1.0      # a read unanswered this long counts as "not reachable"
    deadline_s: float = 60.0         # for the device to come back and be set again
    set_within_s: float = 2.0        # "set again": the clock within this of the reference


def topology(lab, p: Params) -> tuple[str, str, int]:
    if p.device and p.pdu and p.outlet:
        return p.device, p.pdu, p.outlet
    for d in lab.bench.rack.devices:
        feed = (d.sim or {}).get("power")
        if feed and (not p.device or d.name == p.device):
            pdu, _, outlet = str(feed).partition(":")
            return d.name, pdu, int(outlet)
    raise SystemExit("power_cycle: give device, pdu and outlet (no power topology in the rack)")


def classify(value_ns: int, now_ns: int) -> str:
    """Where a clock came back: with the reference (RTC kept it), near 1970, or elsewhere (the
    firmware image's date)."""
    if abs(value_ns - now_ns) < DAY:
        return "rtc"
    return "epoch" if value_ns < 365 * DAY else "image"


def follow(lab, dev: str, pdu: str, p: Params, last_ok=None) -> list[tuple]:
    """Read the device until it went down, came back and was set again (or the deadline);
    between reads, fetch the PDU's log and read its clock (the calibration of its stamps).
    `last_ok`: the device's last good read before the command, the first row (on a slow bench
    the device may be dark by the first read here; the read before still bounds the instant)."""
    rows: list[tuple] = []        # (state, s_ns, e_ns, value_ns or None)
    if last_ok is not None:
        rows.append(("ok", last_ok.s_ns, last_ok.e_ns, last_ok.value_ns))
    end = lab.now_ns() + int(p.deadline_s * NS)
    lab.timeout_s, lab.on_error = p.read_timeout_s, "expect"   # dark reads are the point
    while lab.now_ns() < end:
        s0 = lab.now_ns()
        r = lab.read_clock(dev)
        if r:
            rows.append(("ok", r.s_ns, r.e_ns, r.value_ns))
        else:
            rows.append(("fail", s0, lab.now_ns(), None))
            lab.release(dev)                               # a fresh session once it is back
        if "clock_set" in intervals(rows, int(p.set_within_s * NS)):
            break
        lab.logs(pdu)                                      # a failure: recorded, not judged
        lab.read_clock(pdu)
        lab.sleep(p.read_every_s)
    lab.timeout_s, lab.on_error = 5.0, "record"
    return rows


def intervals(rows: list[tuple], set_within_ns: int) -> dict:
    """The instants the reads bound: down, back, the clock's return and its setting."""
    out: dict = {}
    first_fail = next((k for k, r in enumerate(rows) if r[0] == "fail"), None)
    if first_fail is None:
        return out
    if first_fail > 0:
        out["unreachable"] = [rows[first_fail - 1][1], rows[first_fail][2]]
    back = next((k for k in range(first_fail, len(rows)) if rows[k][0] == "ok"), None)
    if back is None:
        return out
    out["reachable"] = [rows[back - 1][1], rows[back][2]]
    v = rows[back][3]
    out["clock_back"] = {"value_ns": v, "kind": classify(v, rows[back][2]),
                         "offset_ns": [v - rows[back][2], v + NS - rows[back][1]]}
    oks = [k for k in range(back, len(rows)) if rows[k][0] == "ok"]
    wrong = [k for k in oks if abs(rows[k][3] - rows[k][2]) >= set_within_ns]
    right = next((k for k in oks if wrong and k > wrong[0]
                  and abs(rows[k][3] - rows[k][2]) < set_within_ns), None)
    if right is not None:
        last_wrong = max(k for k in wrong if k < right)
        out["clock_set"] = [rows[last_wrong][1], rows[right][2]]
    return out


def pdu_stamps(lab, pdu: str, st) -> list[dict]:
    """The PDU's outlet-log entries after the command, in log order, their stamps mapped through
    every segment of this run's fit of the PDU clock that can have been in force between the
    command and the fetch that listed them (bench/model/stamps.py): `lo`, `hi` (reference ns)
    and `via`, or `lo`, `hi` None and why in `unbounded`."""
    from bench.model.rundata import load_samples
    from bench.model.stamps import bound_stamps
    from bench.model.summary import device_meta, fit_clocks
    smp = load_samples(lab.store.path / "samples" / f"{pdu}.csv")
    meta = device_meta(lab.store.manifest, pdu)
    results = fit_clocks(smp, meta)
    rows = [i for i in smp.select("event") if smp.e_ns[i] >= st.s_ns and smp.has_value[i]]
    return [{"raw": smp.raw[i], "lo": b.lo_ns, "hi": b.hi_ns,
             **({"via": b.via} if b.lo_ns is not None else {"unbounded": b.why})}
            for i, b in zip(rows, bound_stamps(smp, results, meta, rows, [st.s_ns] * len(rows)))]


def run(bench, p: Params) -> dict:
    lab = bench.lab
    dev, pdu, outlet = topology(lab, p)
    for d in (dev, pdu):
        if not lab.identify(d):               # recorded, counted in the verdict: no cycle
            return bench.summarize()
    lab.logs(pdu)
    last_ok = None
    for _ in range(10):                       # calibration before the cycle
        last_ok = lab.read_clock(dev) or last_ok
        lab.read_clock(pdu)
        lab.sleep(0.2)
    st = lab.stimulate(pdu, "outlet_reboot", outlet)
    if not st:                                # the command failed: recorded, nothing to follow
        return bench.summarize()
    rows = follow(lab, dev, pdu, p, last_ok)
    for _ in range(10):                       # calibration after it
        lab.read_clock(pdu)
        lab.sleep(0.2)
    iv = intervals(rows, int(p.set_within_s * NS))
    stamps = pdu_stamps(lab, pdu, st)
    bench.store.update_manifest(power_cycle={"device": dev, "pdu": pdu, "outlet": outlet,
                                             "command_ns": [st.s_ns, st.e_ns], "intervals": iv,
                                             "pdu_stamps": stamps})

    def rel(name, a_b, doc, who):
        lab.measure(f"power_cycle.{name}", None, "ns", device=who, lo=a_b[0] - st.e_ns,
                    hi=a_b[1] - st.s_ns, doc=f"reboot command -> {doc}")
    for k, s in enumerate(stamps[:2]):
        if s["lo"] is not None:
            rel(f"pdu_{'off' if k == 0 else 'on'}_stamp", (s["lo"], s["hi"]),
                f"the PDU's outlet-log stamp ({'off' if k == 0 else 'on'}), mapped", pdu)
    for name, doc in (("unreachable", "the device stops answering"),
                      ("reachable", "the device answers again"),
                      ("clock_set", "its clock set again (within set_within_s)")):
        if name in iv:
            rel(name, iv[name], doc, dev)
    if "clock_back" in iv:
        cb = iv["clock_back"]
        lab.measure("power_cycle.clock_back_offset", None, "ns", device=dev,
                    lo=cb["offset_ns"][0], hi=cb["offset_ns"][1], direction="any",
                    judge=cb["kind"] == "rtc", kind=cb["kind"],
                    doc=f"its clock when it answers again: {cb['kind']} (device minus reference)")
    summary = bench.summarize()
    log.info("%s", "\n".join(lines(lab.measurements, iv)))   # the terminal shows them after the table
    return summary


def lines(ms, iv: dict) -> list[str]:
    from bench.units import fmt_interval_ns
    out = ["power cycle (from the reboot command; bounds between the exchanges either side):"]
    for m in ms:
        out.append(f"  {m.device:<8} {m.name:<32} {fmt_interval_ns(m.lo, m.hi)}"
                   + (f"  ({m.extra['kind']})" if "kind" in m.extra else ""))
    missing = [k for k in ("unreachable", "reachable", "clock_back", "clock_set") if k not in iv]
    if missing:
        out.append(f"  not observed: {', '.join(missing)}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
