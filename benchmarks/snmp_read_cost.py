"""CPU cost of one SNMP clock read, bench (driver) and simulator (agent), of this tree against an
earlier commit's, side by side in one run.

The earlier commit's tree is extracted (`git archive`) into a temporary folder; each arm runs in
a child process with that tree first on sys.path, so the driver, the simulator and the runner
are all that tree's. Arms alternate (`--repeats`), so the machine's load falls on both.
Two kinds of runs per arm:
  - `driver`: N copies of the default rack's pdu-2 (SNMP v2c, trap listener on; `--device
    pdu-1`: SNMPv3 with USM SHA/AES, hrSystemDate, trap listener on) served from
    their own process; this process opens N drivers and reads each one's sysUpTime at 1 Hz in
    bursts of two (as the runner does) from a random phase, with a log poll every 2 s per device,
    for `--duration` s. CPU ms per read of this process (`time.process_time`) and of the
    simulator's (/proc ticks), log polls' cost included; and the same for back-to-back reads
    alone (no log polls, no pacing).
  - `runner`: the same rack through the probing runner (`benchmarks/scale.py`'s `run_size`,
    as `scale.py --calibrate` measures it for bench/run/exchange_cost.json): its steady-state
    CPU ms per ok read of the bench's processes and of the simulator's.
CPU time is robust to other load on the machine (wall time is not); the load average is printed.

    nice .venv/bin/python benchmarks/snmp_read_cost.py [--baseline a5ace22] [--devices 16]
        [--duration 20] [--repeats 2] [--runs driver,runner] [--device pdu-1] [--processes 2]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extract(commit: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


# -- in the child, with the arm's tree first on sys.path --------------------------------------------
def child(tree: Path, kind: str, devices: int, duration_s: float, source: str,
          processes: int | None) -> dict:
    sys.path[:0] = [str(tree), str(tree / "benchmarks")]
    import asyncio
    import random
    import time

    import tomli_w
    from scale import TICK, _stat, run_size, scale_rack_dict  # the arm's own benchmarks/scale.py
    from spread import temp_dir

    mix = (("pdu", source, 1.0),)
    work = temp_dir("rackclock-snmp-read-cost-")
    if kind == "runner":
        row = run_size(devices, duration_s, work, None,
                       {} if processes is None else {"processes": processes}, mix=mix)
        return {**row["steady"], "load": row["load_before"]}

    from bench.reference.clock import Reference
    from bench.run.simproc import SimProcess
    from drivers.snmp_pdu import SnmpPdu

    (work / "rack.in.toml").write_text(tomli_w.dumps(scale_rack_dict(devices, mix=mix)))

    async def go(sim) -> dict:
        drivers = [SnmpPdu(d, Reference.now_ns) for d in sim.rack.devices]
        for d in drivers:                 # one at a time: the first answers load pysnmp's MIBs
            for attempt in range(5):
                try:
                    await d.open()
                    break
                except Exception:
                    if attempt == 4:
                        raise
                    await asyncio.sleep(0.5)
        counts = {"reads": 0, "polls": 0}

        async def paced(d):
            await asyncio.sleep(random.uniform(0, 1.0))
            end, next_poll = time.monotonic() + duration_s, time.monotonic() + 2.0
            while time.monotonic() < end:
                for _ in range(2):
                    await d.read_clock("sysuptime")
                    counts["reads"] += 1
                if time.monotonic() >= next_poll:
                    await d.log_entries(None)
                    counts["polls"] += 1
                    next_poll += 2.0
                await asyncio.sleep(1.0)

        def cpu():
            return time.process_time(), _stat(sim.proc.pid)[1] / TICK
        b0, s0 = cpu()
        await asyncio.gather(*(paced(d) for d in drivers))
        b1, s1 = cpu()
        n = 0
        end = time.monotonic() + min(duration_s, 10.0)
        while time.monotonic() < end:
            for d in drivers:
                await d.read_clock("sysuptime")
                n += 1
        b2, s2 = cpu()
        for d in drivers:
            await d.close()
        return {"reads": counts["reads"], "polls": counts["polls"],
                "bench_ms_per_read": round(1000 * (b1 - b0) / counts["reads"], 3),
                "sim_ms_per_read": round(1000 * (s1 - s0) / counts["reads"], 3),
                "b2b_reads": n, "b2b_bench_ms": round(1000 * (b2 - b1) / n, 3),
                "b2b_sim_ms": round(1000 * (s2 - s1) / n, 3), "load": os.getloadavg()[:1]}

    with SimProcess(work / "rack.in.toml", work / "sim") as sim:
        return asyncio.run(go(sim))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="a5ace22", help="the earlier commit")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--duration", type=float, default=20.0, help="s per run")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--runs", default="driver,runner")
    ap.add_argument("--device", default="pdu-2",
                    help="the default rack's PDU to copy: pdu-2 (v2c) or pdu-1 (v3, USM)")
    ap.add_argument("--processes", type=int, default=None,
                    help="runner: its worker processes (as scale.py --calibrate --processes)")
    ap.add_argument("--child", nargs=2, metavar=("TREE", "KIND"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(Path(a.child[0]), a.child[1], a.devices, a.duration, a.device,
                               a.processes)))
        return 0
    with tempfile.TemporaryDirectory(prefix="rackclock-snmp-base-") as tmp:
        arms = {f"before ({a.baseline})": extract(a.baseline, Path(tmp)), "after (this tree)": ROOT}
        rows: dict[tuple[str, str], list[dict]] = {}
        for _ in range(a.repeats):
            for kind in a.runs.split(","):
                for arm, tree in arms.items():
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", str(tree), kind, "--devices",
                         str(a.devices), "--duration", str(a.duration), "--device", a.device,
                         *(["--processes", str(a.processes)] if a.processes else [])],
                        capture_output=True, text=True, cwd=tree)
                    if out.returncode:
                        print(f"{arm} {kind} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
                        return 1
                    row = json.loads(out.stdout.strip().splitlines()[-1])
                    rows.setdefault((kind, arm), []).append(row)
                    print(kind, arm, row, flush=True)
    print(f"\n{a.devices} SNMP PDUs (copies of the default rack's {a.device}), {a.duration:g} s "
          f"per run, {a.repeats} runs per arm alternating; medians over runs; CPU ms per read")
    print("| run | arm | bench | simulator | total | back-to-back bench / sim | load (1 min) |")
    print("|---|---|---|---|---|---|---|")
    for (kind, arm), runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in
               ("bench_ms_per_read", "sim_ms_per_read")}
        b2b = (f"{statistics.median(r['b2b_bench_ms'] for r in runs):.3f} / "
               f"{statistics.median(r['b2b_sim_ms'] for r in runs):.3f}" if kind == "driver" else "-")
        print(f"| {kind} | {arm} | {med['bench_ms_per_read']:.3f} | {med['sim_ms_per_read']:.3f} | "
              f"{med['bench_ms_per_read'] + med['sim_ms_per_read']:.3f} | {b2b} | "
              f"{', '.join(format(r['load'][0], '.1f') for r in runs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
