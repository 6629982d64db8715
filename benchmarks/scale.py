"""Load benchmark of the probing runner: mixed simulated racks of N devices (40 % Redfish BMCs,
30 % SNMP PDUs, 30 % Modbus CDUs), each read at 1 Hz in bursts of two (target 2 reads/s), for a
short run per size.

    nice .venv/bin/python benchmarks/scale.py --sizes 8,50,150,300 --duration 25 [--processes N]

The simulated rack is served from its own processes (`--sim-procs`, default one per 150
devices: they share the cores with the bench, and at 300 devices two processes answered the
CDUs' reads in 1.27 ms of bracket twice where three gave 1.17-1.69 ms), so the figures are the
runner's. Per size it prints, per plane: reads/s per device
(min / median over the plane's devices, against the target), bracket p50 (ms) and its ratio to
the first size's, the late-read share (reads that started more than `late_ms` after their
planned instant; `-` when the runner does not record it), devices with zero reads; and per
process: CPU (% of one core over the probing), peak RSS (MB) and threads. The load average
before and after each run is printed with it: the machine is shared, so read the figures with
it. `--json FILE` keeps the rows.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tomli_w  # noqa: E402
from spread import temp_dir  # noqa: E402

from bench.model.store import RunStore  # noqa: E402
from bench.reference.clock import Reference  # noqa: E402
from bench.run import runner  # noqa: E402
from bench.run.simproc import SimProcess  # noqa: E402
from bench.sim.serve import DEFAULT_RACK  # noqa: E402

try:                                 # bench/run/probe.py since issue 32; runner's before
    from bench.run.probe import run_devices  # noqa: E402
except ImportError:
    run_devices = runner.run_devices

MIX = (("bmc", "bmc-1", 0.4), ("pdu", "pdu-2", 0.3), ("cooling", "cdu-1", 0.3))
LATE_MS = 10.0


def scale_rack_dict(n: int, rate_hz: float = 1.0, seed: int = 20261130, mix=MIX) -> dict:
    """A simulated rack of `n` devices in the mix above, each a copy of a default-rack device
    (its clock offset varied), at `rate_hz`."""
    base = tomllib.loads(DEFAULT_RACK.read_text())
    counts = [int(n * share) for _, _, share in mix]
    counts[0] += n - sum(counts)
    devices = {}
    for (plane, src, _), count in zip(mix, counts):
        for i in range(count):
            d = copy.deepcopy(base["devices"][src])
            d["rate_hz"] = rate_hz
            sim = d.setdefault("sim", {})
            sim.pop("reboots", None)
            sim.pop("steps", None)
            if "sysuptime" in sim.get("clocks", {}):
                sim["clocks"]["sysuptime"]["uptime_s"] = 86400.0 + 37 * i   # no wrap in the run
            else:
                sim["offset_s"] = float(sim.get("offset_s", 0.0)) + 0.001 * i
            devices[f"{plane}-{i + 1:03d}"] = d
    return {"rack": {"name": f"scale-{n}", "reference": "realtime", "simulated": True,
                     "seed": seed}, "devices": devices}


def split(data: dict, parts: int) -> list[dict]:
    names = list(data["devices"])
    out = []
    for k in range(parts):
        part = copy.deepcopy(data)
        part["devices"] = {n: data["devices"][n] for n in names[k::parts]}
        part["rack"]["name"] = f"{data['rack']['name']}-{k}"
        out.append(part)
    return out


# -- per-process CPU, RSS, threads from /proc ------------------------------------------------------
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, cpu ticks, threads) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = text[text.rindex(")") + 2:].split()
    return int(f[1]), int(f[11]) + int(f[12]), int(f[17])


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit() and (st := _stat(int(p))):
            kids.setdefault(st[0], []).append(int(p))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


class ProcSampler(threading.Thread):
    """Once a second: CPU ticks, RSS and threads of every process of the bench's tree (the sim
    processes are labelled apart)."""

    def __init__(self, sim_pids: set[int]):
        super().__init__(daemon=True)
        self.sim_pids = sim_pids
        self.stop = threading.Event()
        self.first: dict[int, tuple[float, int]] = {}
        self.last: dict[int, tuple[float, int]] = {}
        self.rss: dict[int, float] = {}
        self.threads: dict[int, int] = {}
        self.series: list[tuple[int, float, float]] = []   # (time_ns, bench s, sim s) of CPU

    def sample(self) -> None:
        now = time.monotonic()
        totals = [0.0, 0.0]
        for pid in _tree(os.getpid()):
            st = _stat(pid)
            if st is None:
                continue
            self.first.setdefault(pid, (now, st[1]))
            self.last[pid] = (now, st[1])
            self.rss[pid] = max(self.rss.get(pid, 0.0), _rss_mb(pid))
            self.threads[pid] = max(self.threads.get(pid, 0), st[2])
        for pid, (_, ticks) in self.last.items():        # exited workers keep their last count
            totals[pid in self.sim_pids] += ticks / TICK
        self.series.append((time.time_ns(), *totals))

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.sample()

    def table(self, window_s: float) -> list[dict]:
        rows = []
        sims = set()
        for s in self.sim_pids:
            sims.update(p for p in self.first if p == s)
        for pid, (_t0, c0) in self.first.items():
            t1, c1 = self.last[pid]
            role = "bench" if pid == os.getpid() else "sim" if pid in self.sim_pids else "worker"
            if role == "worker" and (c1 - c0) == 0 and self.rss[pid] < 1:
                continue
            rows.append({"pid": pid, "role": role,
                         "cpu_pct": round(100 * (c1 - c0) / TICK / max(window_s, 1e-9), 1),
                         "rss_mb": round(self.rss[pid]), "threads": self.threads[pid]})
        return sorted(rows, key=lambda r: (r["role"], r["pid"]))


# -- one size ----------------------------------------------------------------------------------------
def read_figures(run_dir: Path, devices, duration_s: float, t0_ns: int) -> dict:
    """Per plane: reads/s per device over the run (`reads_*`) and while measuring, from the
    first read on (`measuring_*`: n / (last - first + one period)), the first read's delay after
    the run's start, bracket p50, late share, devices with no read."""
    planes: dict[str, dict] = {}
    try:
        entries = json.loads((run_dir / "manifest.json").read_text()).get("devices", {})
    except (OSError, ValueError):
        entries = {}
    for d in devices:
        reads, brackets, late, planned, starts = 0, [], 0, 0, []
        path = run_dir / "samples" / f"{d.name}.csv"
        if path.exists():
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["kind"] != "read":
                        continue
                    if r.get("late_ns") not in (None, ""):
                        planned += 1
                        late += int(r["late_ns"]) > LATE_MS * 1e6
                    if r["status"] == "ok":
                        reads += 1
                        brackets.append(int(r["e_ns"]) - int(r["s_ns"]))
                        starts.append(int(r["s_ns"]))
        p = planes.setdefault(d.plane, {"rates": [], "brackets": [], "late": 0, "planned": 0,
                                        "zero": 0, "target": d.rate_hz * 2, "measuring": [],
                                        "first": [], "yielded": 0, "probes": 0})
        p["yielded"] += int(entries.get(d.name, {}).get("aims_yielded") or 0)
        p["probes"] += int(entries.get(d.name, {}).get("probes") or 0)
        p["rates"].append(reads / duration_s)
        if starts:
            p["measuring"].append(reads / ((max(starts) - min(starts)) / 1e9 + 1 / d.rate_hz))
            p["first"].append((min(starts) - t0_ns) / 1e9)
        else:
            p["measuring"].append(0.0)
        p["brackets"].extend(brackets)
        p["late"] += late
        p["planned"] += planned
        p["zero"] += reads == 0
    out = {}
    for plane, p in sorted(planes.items()):
        out[plane] = {"devices": len(p["rates"]), "target": p["target"],
                      "reads_min": round(min(p["rates"]), 2),
                      "reads_median": round(statistics.median(p["rates"]), 2),
                      "measuring_min": round(min(p["measuring"]), 2),
                      "measuring_median": round(statistics.median(p["measuring"]), 2),
                      "below_95": sum(r < 0.95 * p["target"] for r in p["measuring"]),
                      "first_read_max_s": round(max(p["first"]), 1) if p["first"] else None,
                      "bracket_p50_ms": round(statistics.median(p["brackets"]) / 1e6, 3)
                      if p["brackets"] else None,
                      "late_share": round(p["late"] / p["planned"], 4) if p["planned"] else None,
                      "zero_reads": p["zero"],
                      "aims_yielded_share": round(p["yielded"] / p["probes"], 4)
                      if p["probes"] else None}
    return out


def run_size(n: int, duration_s: float, work: Path, sim_procs: int | None,
             run_kw: dict, mix=MIX) -> dict:
    data = scale_rack_dict(n, mix=mix)
    parts = split(data, sim_procs or max(1, (n + 149) // 150))
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        sims = []
        tag = f"{n}-{'-'.join(m[0] for m in mix)}-{time.monotonic_ns()}"   # a fresh folder each
        for k, part in enumerate(parts):
            f = work / f"rack-{tag}-{k}.toml"
            f.write_text(tomli_w.dumps(part))
            sims.append(stack.enter_context(SimProcess(f, work / f"sim-{tag}-{k}", 300.0)))
        rack = replace(sims[0].rack, devices=tuple(d for s in sims for d in s.rack.devices))
        store = RunStore(work / "runs", f"scale-{n}")
        store.write_manifest({"experiment": "scale", "status": "running"})
        plan = runner.ProbePlan(duration_s=duration_s, stimulus_every_s=15.0, burst=2)
        sampler = ProcSampler({s.proc.pid for s in sims})
        sampler.sample()
        sampler.start()
        t0 = time.monotonic()
        t0_ns = time.time_ns()
        statuses, _ = run_devices(list(rack.devices), Reference.now_ns, store, plan,
                                         True, **run_kw)
        window = time.monotonic() - t0
        store.update_devices({st.name: st.record().to_dict() for st in statuses})
        sampler.sample()
        sampler.stop.set()
        store.close()
        states: dict[str, int] = {}
        for st in statuses:
            states[st.state] = states.get(st.state, 0) + 1
        figures = read_figures(store.path, rack.devices, duration_s, t0_ns)
        reads = ok_reads(store.path)
    return {"devices": n, "duration_s": duration_s, "wall_s": round(window, 1),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "states": states,
            "planes": figures, "processes": sampler.table(window), "run_kw": run_kw,
            "ok_reads": reads, "steady": steady_cost(store.path, sampler.series)}


def steady_cost(run_dir: Path, series: list) -> dict:
    """CPU ms per ok read of the bench's and the simulator's processes once every device has
    read (opens excluded: an SNMP engine alone costs ~0.2 s)."""
    firsts, reads = [], []
    for p in (run_dir / "samples").glob("*.csv"):
        with open(p, newline="") as f:
            s = [int(r["s_ns"]) for r in csv.DictReader(f)
                 if r["kind"] == "read" and r["status"] == "ok"]
        if s:
            firsts.append(min(s))
            reads.extend(s)
    if not firsts:
        return {}
    t = sorted(firsts)[int(0.9 * (len(firsts) - 1))]       # 90 % of the devices read by then
    after = [x for x in series if x[0] >= t]
    if len(after) < 2:
        return {}
    n = sum(1 for x in reads if after[0][0] <= x <= after[-1][0])
    return {"reads": n, "window_s": round((after[-1][0] - after[0][0]) / 1e9, 1),
            "bench_ms_per_read": round(1000 * (after[-1][1] - after[0][1]) / max(1, n), 3),
            "sim_ms_per_read": round(1000 * (after[-1][2] - after[0][2]) / max(1, n), 3)}


def ok_reads(run_dir: Path) -> int:
    n = 0
    for p in (run_dir / "samples").glob("*.csv"):
        with open(p, newline="") as f:
            n += sum(r["kind"] == "read" and r["status"] == "ok" for r in csv.DictReader(f))
    return n


def calibrate(n: int, duration_s: float, work: Path, run_kw: dict, path: Path) -> None:
    """Cost of a read per driver (CPU ms of the bench's processes and of the simulator's), each
    plane alone on a rack of `n` devices; written for bench/run/admission.py."""
    drivers = {}
    for plane, src, _ in MIX:
        row = run_size(n, duration_s, work, None, run_kw, mix=((plane, src, 1.0),))
        driver = tomllib.loads(DEFAULT_RACK.read_text())["devices"][src]["driver"]
        drivers[driver] = {**row["steady"], "devices": n, "load_before": row["load_before"]}
        print(plane, drivers[driver], flush=True)
    path.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d") + f" by benchmarks/scale.py "
                                f"--calibrate {n} on {os.cpu_count()} cores",
                                "drivers": drivers}, indent=1) + "\n")


def print_row(row: dict, base: dict | None) -> None:
    n = row["devices"]
    print(f"\n## {n} devices, {row['duration_s']:g} s (probing took {row['wall_s']} s); load "
          f"average before {row['load_before']}, after {row['load_after']}; states "
          f"{row['states']}")
    print("| plane | devices | reads/s per device over the run, min / median (target) | "
          "same while measuring | below 95 % while measuring | first read after (max, s) | "
          "bracket p50 ms (× first size) | late share | zero reads | aims yielded |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for plane, p in row["planes"].items():
        b0 = (base or {}).get("planes", {}).get(plane, {}).get("bracket_p50_ms")
        ratio = f" ({p['bracket_p50_ms'] / b0:.2f}×)" if b0 and p["bracket_p50_ms"] else ""
        late = "-" if p["late_share"] is None else f"{100 * p['late_share']:.2f} %"
        ys = p.get("aims_yielded_share")
        yielded = "-" if ys is None else f"{100 * ys:.1f} %"
        print(f"| {plane} | {p['devices']} | {p['reads_min']} / {p['reads_median']} "
              f"({p['target']:g}) | {p['measuring_min']} / {p['measuring_median']} | "
              f"{p['below_95']} | {p['first_read_max_s']} | {p['bracket_p50_ms']}{ratio} | "
              f"{late} | {p['zero_reads']} | {yielded} |")
    procs = row["processes"]
    by_role: dict[str, list] = {}
    for p in procs:
        by_role.setdefault(p["role"], []).append(p)
    print("processes: " + "; ".join(
        f"{role} ×{len(ps)}: CPU {'+'.join(str(p['cpu_pct']) for p in ps)} %, RSS "
        f"{'+'.join(str(p['rss_mb']) for p in ps)} MB, threads "
        f"{'+'.join(str(p['threads']) for p in ps)}" for role, ps in sorted(by_role.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8,50,150")
    ap.add_argument("--duration", type=float, default=25.0)
    ap.add_argument("--processes", type=int, default=None,
                    help="the runner's worker processes (default: its own choice)")
    ap.add_argument("--sim-procs", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--keep", action="store_true",
                    help="keep the work folder (run folders, simulator logs) and print its path")
    ap.add_argument("--calibrate", type=int, default=None, metavar="N",
                    help="measure the cost of a read per driver on racks of N devices of one "
                         "plane each and write bench/run/exchange_cost.json")
    a = ap.parse_args()
    import inspect
    run_kw = {}
    if a.processes is not None and "processes" in inspect.signature(run_devices).parameters:
        run_kw["processes"] = a.processes
    if a.keep:
        work = Path(tempfile.mkdtemp(prefix="scale-"))
        print(f"work folder (kept): {work}")
    else:
        work = temp_dir("scale-")
    if a.calibrate:
        from bench.run.admission import COST_FILE
        calibrate(a.calibrate, a.duration, work, run_kw, COST_FILE)
        return
    rows = []
    for n in (int(x) for x in a.sizes.split(",")):
        rows.append(run_size(n, a.duration, work, a.sim_procs, run_kw))
        print_row(rows[-1], rows[0] if len(rows) > 1 else None)
        sys.stdout.flush()
        if a.json:
            a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
