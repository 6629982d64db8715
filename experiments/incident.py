"""Incident: which plane broke first? A cross-plane cascade with known true instants, ordered from
the planes' own logs, scored against the truth beside the naive merge.

End to end: the simulated rack plays the cascade of bench/sim/cascade.py while every clock is
calibrated; every plane's log is collected through its driver; each log entry is mapped through
its clock (bench/analysis/timeline_map.py) and widened by the device's declared logging latency into an
interval holding the event's instant; pairs are scored (right, wrong: must be 0, unordered) and
so is the naive merge of the raw stamps (a counter's or clockless entry at the instant the
collector received it, as a syslog or trap collector stamps it). The answer to "which plane broke
first" is the set of events no other is proven to precede; it must hold the true first.

Offline: the same cascade over many random racks and gaps in virtual time, with the same
estimator, mapping and scoring, gives the curve: fraction of pairs rackclock orders, and fraction
the naive merge orders wrongly, against the true gap between the events.
"""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import safeio
from bench.model.file_schemas import version
from bench.run.runner import ProbePlan

log = logging.getLogger(__name__)

NS = 1_000_000_000


@dataclass(frozen=True)
class Params:
    duration_s: float = 36.0
    cascade_at_s: float = 16.0
    gap_scale: float = 1.0            # the cascade's gaps (bench/sim/cascade.GAPS_S) times this
    cascades: int = 600               # offline cascades for the curve
    racks: int = 24                   # offline racks they are spread over
    seed: int = 1
    log_poll_s: float = 2.0
    timeout_s: float = 5.0
    first_cause: str = "modbus"       # or "redfish": the Redfish CDU's pump fault starts it


# -- the run's own cascade -------------------------------------------------------------------

def declared_latency_s(run, device: str) -> tuple[tuple[float, float], str] | None:
    """The device's logging latency bound: the inventory's `log_latency_bound_s`, or on a
    simulated rack the model's own `log_latency_s` range (said so)."""
    inv = run.manifest.inventory.device(device)
    if "log_latency_bound_s" in inv:
        lo, hi = inv["log_latency_bound_s"]
        return (float(lo), float(hi)), "inventory log_latency_bound_s"
    lat = (inv.get("sim") or {}).get("log_latency_s")
    if lat is None:
        return None
    lo, hi = (lat, lat) if isinstance(lat, (int, float)) else lat
    return (float(lo), float(hi)), "simulated rack's log_latency_s"


def _truth_instant(run, step: dict, s_ns: int) -> int | None:
    dev = run.truth.devices.get(step["device"]) if run.truth else None
    evs = dev.events if dev else ()
    for ev in sorted(evs, key=lambda x: x["t_ns"]):
        if ev["kind"] == step["truth_kind"] and ev["t_ns"] >= s_ns and \
                all(ev.get(k) == v for k, v in step["truth_detail"].items()):
            return int(ev["t_ns"])
    return None


def score_run(run) -> dict:
    """Score the cascade a run played (manifest `incident`) against its truth.json."""
    from bench.analysis.timeline_order import widen
    from bench.analysis.timeline_score import score
    from bench.model.timeline_build import Calibrated, run_entries

    inc = run.manifest.extra.get("incident")     # this experiment's own manifest key
    if not inc or not inc.get("steps"):
        return {"played": False, "why": "this run played no incident cascade"}
    if not run.truth:
        return {"played": False, "why": "no truth.json (not a simulated rack)"}
    start = int(run.manifest.started_ns or 0)
    cal = Calibrated.of([run])
    entries, _ = run_entries(run, cal)
    rows, missing = [], []
    for st in inc["steps"]:
        smp = run.samples(st["device"])
        want = start + int(st["at_s"] * NS)
        stim = [i for i in range(len(smp)) if smp.kind[i] == "stimulus" and smp.status[i] == "ok"
                and smp.clock[i] == st["stimulus"]]
        if not stim:
            missing.append(f"{st['name']}: stimulus not sent (run too short or refused)")
            continue
        i = min(stim, key=lambda k: abs(int(smp.s_ns[k]) - want))
        ev = [j for j in range(len(smp)) if smp.kind[j] == "event" and smp.status[j] == "ok"
              and int(smp.seq[j]) > int(smp.seq[i]) and st["match"] in smp.raw[j]]
        t_true = _truth_instant(run, st, int(smp.s_ns[i]))
        if not ev or t_true is None:
            missing.append(f"{st['name']}: " + ("no log entry collected" if not ev
                                                else "no truth event"))
            continue
        j = min(ev, key=lambda k: int(smp.seq[k]))
        en = next((x for x in entries if x.source == st["device"]
                   and x.label in (smp.raw[j], f"seen: {smp.raw[j]}")), None)
        if en is None:
            missing.append(f"{st['name']}: its log entry could not be placed")
            continue
        basis = en.basis
        if en.basis == "stamp":
            lat = declared_latency_s(run, st["device"])
            if lat is None:
                missing.append(f"{st['name']}: no declared logging latency for {st['device']}")
                continue
            (lo_s, hi_s), why = lat
            en = widen(en, int(lo_s * NS), int(hi_s * NS))
            basis = f"stamp - latency [{lo_s:g}, {hi_s:g}] s ({why})"
        info = run.manifest.device(st["device"]).clock(smp.clock[j])
        counter = bool(info and info.counter)
        wall = smp.has_value[j] and not counter
        naive = int(smp.value_ns[j]) if wall else int(smp.e_ns[j])
        rows.append({"step": st["name"], "plane": st["plane"], "device": st["device"],
                     "true_ns": t_true, "lo_ns": en.lo_ns, "hi_ns": en.hi_ns, "status": en.status,
                     "calibration": en.calibration, "raw": en.raw or smp.raw[j][:60],
                     "basis": basis, "naive_ns": naive,
                     "naive_from": "raw stamp" if wall else "collector receive time"})
    if len(rows) < 2:
        return {"played": False, "why": "; ".join(missing) or "fewer than two steps scored",
                "missing": missing}
    sc = score([r["true_ns"] for r in rows], [r["lo_ns"] for r in rows],
               [r["hi_ns"] for r in rows], [r["naive_ns"] for r in rows])
    for r in rows:
        r["covered"] = bool(r["lo_ns"] <= r["true_ns"] <= r["hi_ns"])
    missing += [f"{x} (not played)" for x in inc.get("skipped", [])]
    return {"played": True, "events": rows, "missing": missing,
            "rackclock": sc["rackclock"].as_dict(), "naive": sc["naive"].as_dict(),
            "true_first": rows[sc["true_first"]]["step"],
            "first_set": [rows[k]["step"] for k in sc["first_set"]],
            "first_contains_truth": sc["first_contains_truth"],
            "naive_first": rows[sc["naive_first"]]["step"]}


# -- many cascades in virtual time -----------------------------------------------------------

def offline(cascades: int = 600, racks: int = 24, seed: int = 1) -> dict:
    """The cascade over random racks and log-uniform gaps (10 ms to 10 s): every estimator,
    mapping and scoring step is the one the run uses; only the clocks are virtual."""
    from bench.analysis.timeline_map import calibrations, map_stamps
    from bench.analysis.timeline_score import curve, score
    from bench.sim.cascade import play, virtual_rack

    rng = np.random.default_rng(seed)
    t0 = 1_796_000_000 * NS
    scores, stamp_scores, uncovered, firsts, first_sizes, naive_first = [], [], 0, 0, [], 0
    per_rack = max(1, cascades // max(1, racks))
    for _ in range(racks):
        rack = virtual_rack(rng, t0)
        cals = [calibrations([("virtual", pc.fit, {})]) for pc in rack]
        for _ in range(per_rack):
            # within the calibration, or up to ten minutes after it (extrapolated)
            t_start = t0 + int(rng.uniform(5, 50) * NS) if rng.random() < 0.7 else \
                t0 + int(rng.uniform(60, 660) * NS)
            gaps = (10 ** rng.uniform(-2, 1, len(rack) - 1) * NS).astype(np.int64)
            evs = play(rack, t_start, gaps)
            lo, hi, naive, s_lo, s_hi = [], [], [], [], []
            for pc, c, ev in zip(rack, cals, evs):
                m = map_stamps(c, [ev["stamp_ns"]], ev["resolution_ns"],
                               not_after_ns=t_start + 3600 * NS)
                lat_lo, lat_hi = (int(x * NS) for x in pc.latency_s)
                s_lo.append(int(m.lo_ns[0]))
                s_hi.append(int(m.hi_ns[0]))
                lo.append(int(m.lo_ns[0]) - lat_hi)
                hi.append(int(m.hi_ns[0]) - lat_lo)
                naive.append(ev["stamp_ns"])
            true = [ev["true_ns"] for ev in evs]
            stamped = [ev["stamped_at_ns"] for ev in evs]
            uncovered += sum(not (a <= t <= b) for a, t, b in zip(lo, true, hi))
            uncovered += sum(not (a <= t <= b) for a, t, b in zip(s_lo, stamped, s_hi))
            stamp_scores.append(score(stamped, s_lo, s_hi, naive))
            sc = score(true, lo, hi, naive)
            scores.append(sc)
            firsts += sc["first_contains_truth"]
            first_sizes.append(len(sc["first_set"]))
            naive_first += sc["naive_first_right"]
    rc = {k: sum(s["rackclock"].as_dict()[k] for s in scores) for k in ("pairs", "right", "wrong",
                                                                       "unordered")}
    nm = {k: sum(s["naive"].as_dict()[k] for s in scores) for k in ("pairs", "right", "wrong",
                                                                   "unordered")}
    return {"cascades": len(scores), "racks": racks, "events_per_cascade": len(rack),
            "seed": seed, "rackclock": rc, "naive": nm, "intervals_missing_truth": uncovered,
            "first_contains_truth": firsts, "first_set_size_median": float(np.median(first_sizes)),
            "first_set_size_1": int(np.sum(np.array(first_sizes) == 1)),
            "naive_first_right": naive_first, "curve": curve(scores),
            "stamps": {k: sum(x["rackclock"].as_dict()[k] for x in stamp_scores)
                       for k in ("pairs", "right", "wrong", "unordered")},
            "stamp_curve": curve(stamp_scores)}


# -- report ----------------------------------------------------------------------------------

def _ms(ns: float) -> str:
    return f"{ns / 1e6:g} ms" if ns < NS else f"{ns / NS:g} s"


def lines(e2e: dict, off: dict | None) -> list[str]:
    out = []
    if e2e.get("played"):
        rc, nm = e2e["rackclock"], e2e["naive"]
        out.append(f"incident (end to end, {len(e2e['events'])} events through the emulators): "
                   f"rackclock {rc['right']} pairs ordered right, {rc['wrong']} wrong, "
                   f"{rc['unordered']} unordered; naive merge {nm['right']} right, "
                   f"{nm['wrong']} WRONG, {nm['unordered']} tied")
        out.append(f"  which plane broke first: one of {{{', '.join(e2e['first_set'])}}} "
                   f"(true first: {e2e['true_first']}, "
                   f"{'contained' if e2e['first_contains_truth'] else 'NOT CONTAINED'}); "
                   f"the naive merge says {e2e['naive_first']}")
        bad = [r["step"] for r in e2e["events"] if not r["covered"]]
        if bad:
            out.append(f"  intervals missing their true instant: {', '.join(bad)}")
        for m in e2e.get("missing", []):
            out.append(f"  not scored: {m}")
    else:
        out.append(f"incident (end to end): not scored: {e2e.get('why')}")
    if off:
        rc, nm = off["rackclock"], off["naive"]
        out.append(f"incident (offline, {off['cascades']} cascades over {off['racks']} random "
                   f"racks, gaps 10 ms-10 s): rackclock ordered {rc['right']}/{rc['pairs']} pairs, "
                   f"wrong {rc['wrong']}; naive wrong {nm['wrong']}/{nm['pairs']}; first-event set "
                   f"held the truth {off['first_contains_truth']}/{off['cascades']} "
                   f"(a single event {off['first_set_size_1']} times; naive first right "
                   f"{off['naive_first_right']}); intervals missing their true instant: "
                   f"{off['intervals_missing_truth']}")
        out.append(f"  {'true gap':>18}  {'pairs':>6}  {'rackclock ordered':>17}  "
                   f"{'rackclock wrong':>15}  {'naive wrong':>11}  {'naive tied':>10}  "
                   f"{'stamps ordered':>14}  {'stamps wrong':>12}")
        stamp_bins = {(b["gap_lo_ns"], b["gap_hi_ns"]): b for b in off.get("stamp_curve", [])}
        for b in off["curve"]:
            hi = "" if b["gap_hi_ns"] >= 10**15 else _ms(b["gap_hi_ns"])
            rng = f"{_ms(b['gap_lo_ns'])}-{hi}" if hi else f">= {_ms(b['gap_lo_ns'])}"
            sb = stamp_bins.get((b["gap_lo_ns"], b["gap_hi_ns"]))
            out.append(f"  {rng:>18}  {b['pairs']:>6}  {b['rackclock_ordered']:>17.1%}  "
                       f"{b['rackclock_wrong']:>15}  {b['naive_wrong']:>11.1%}  "
                       f"{b['naive_tied']:>10.1%}  "
                       + (f"{sb['rackclock_ordered']:>14.1%}  {sb['rackclock_wrong']:>12}"
                          if sb else f"{'-':>14}  {'-':>12}"))
        out.append("  (events: log stamp minus the declared logging latency; stamps: the log "
                   "stamps' own instants, binned by their true gap)")
    return out


def offline_later(cascades: int, racks: int, seed: int):
    """offline() started in a process of its own at low priority (bench.run.after.background):
    it needs nothing of the run, so it runs while the rack is probed. None: no cascades, or
    no process could be started (report computes it then)."""
    from bench.run.after import background
    if not cascades:
        return None
    return background(offline, cascades, racks, seed, modules=("experiments.incident",))


def report(bench, offline_cascades: int, racks: int, seed: int, later=None) -> dict:
    """Score the run's cascade and the offline curve (`later`: offline_later's, started before
    the probing with the same arguments); write incident.json (the closing output,
    bench.output.closing, shows its result after the table; all of it is in bench.log)."""
    from bench.model.rundata import load_run
    run = load_run(bench.store.path)
    e2e = score_run(run)
    off = (later.result() if later is not None else offline(offline_cascades, racks, seed)) \
        if offline_cascades else None
    res = {"schema": 1, "schema_version": version("incident.json"), "end_to_end": e2e, "offline": off}
    safeio.write_text(bench.store.path / "incident.json", json.dumps(res, indent=1, default=int))
    log.info("incident:\n%s", "\n".join(lines(e2e, off)))   # the terminal shows it after the table
    return res


def run(bench, params: Params) -> dict:
    from bench.sim.cascade import GAPS_S, resolve, steps_for
    steps, skipped = resolve(bench.rack, steps_for(params.first_cause),
                             gaps_s=tuple(g * params.gap_scale for g in GAPS_S),
                             start_s=params.cascade_at_s)
    bench.store.update_manifest(incident={"steps": steps, "skipped": skipped})
    later = offline_later(params.cascades, params.racks, params.seed)
    try:
        bench.probe(ProbePlan(duration_s=params.duration_s, stimulus_every_s=None,
                              log_poll_s=params.log_poll_s, timeout_s=params.timeout_s,
                              schedule=tuple((s["device"], s["at_s"], s["stimulus"])
                                             for s in steps)))
        summary = bench.summarize()
        report(bench, params.cascades, params.racks, params.seed, later)
    finally:
        if later is not None:
            later.close()
    return summary


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.cli import main
    sys.exit(main(["run", Path(__file__).stem, *sys.argv[1:]]))
