"""The wait after the probing (issue 46 item 1): `rackclock run` as a user runs it, timed from
the end of its probing to the closing output and to the process's exit.

    nice .venv/bin/python benchmarks/after_run.py [--duration 60] [--repeats 3] [--devices N]

Each repeat runs `python -m bench.cli run --out TMP --duration D` (with `--devices N`: a
simulated rack of N devices, benchmarks/scale.py's mix, through `--rack`) as a subprocess,
stamps every line of its stdout as it arrives, and reads the run's own phase lines from its
bench.log: when the probing started and ended (`probing: ...`, `probing ended after ...`), how
long the summary took and how long the run waited for its incident's offline cascades and its
figures. Per repeat it prints set-up (process start to probing), probing, the closing output
(its first line, the verdict) and the exit, both after the probing ended, the CPU seconds the
run's processes spent after the probing ended (a figure the machine's load does not inflate:
/proc's sample at the probing's end against the run's own and its reaped children's at exit),
and the share of late probes (the manifest's); then the medians, with the load average before
and after (the machine is shared: read the figures with it). `--json FILE` keeps the rows.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\S+) \w+ (.*)$")


def log_phases(bench_log: Path) -> dict:
    """Wall-clock instants (epoch s) and durations the run wrote into its bench.log."""
    out: dict = {}
    for line in bench_log.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        msg = m.group(3)
        if msg.startswith("probing: "):
            out["probing_start"] = t
        elif msg.startswith("probing ended after"):
            out["probing_end"] = t
        elif msg.startswith("summary written after"):
            out["summary_s"] = float(msg.split()[3])
        elif msg.startswith("background offline: waited"):
            out["offline_wait_s"] = float(msg.split()[3])
        elif msg.startswith("figures:"):        # "figures: N clocks, not drawn": none waited for
            w = re.search(r"waited ([\d.]+) s", msg)
            out["figures_wait_s"] = float(w.group(1)) if w else 0.0
    return out


def manifest_phases(folder: Path) -> dict:
    """A run from before the phase lines: its probing's start and end from the manifest
    (`started_ns`, `probed_until_ns`: the reference's clock, the host's realtime on the
    simulated rack)."""
    m = json.loads((folder / "manifest.json").read_text())
    return {"probing_start": m["started_ns"] / 1e9, "probing_end": m["probed_until_ns"] / 1e9}


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, CPU ticks of the process and its reaped children), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = text[text.rindex(")") + 2:].split()
    return int(f[1]), sum(int(x) for x in f[11:15])


def tree_cpu_s(root: int) -> float:
    """CPU seconds of a process and every descendant, live or reaped."""
    stats = {int(p): st for p in os.listdir("/proc") if p.isdigit() and (st := _stat(int(p)))}
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += stats[p][1] if p in stats else 0
        todo.extend(kids.get(p, []))
    return total / TICK


def one_run(duration_s: float, out: Path, rack: Path | None, extra: list[str],
            root: Path = ROOT) -> dict:
    cmd = [sys.executable, "-m", "bench.cli", "run", "--out", str(out), "--duration",
           f"{duration_s:g}", *(["--rack", str(rack)] if rack else []), *extra]
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONUNBUFFERED": "1"}   # lines as printed
    lines: list[tuple[float, str]] = []
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)

    def reader() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append((time.time(), line.rstrip("\n")))

    cpu: list[tuple[float, float]] = []          # (when, the run's tree's CPU s so far)
    done = threading.Event()

    def sampler() -> None:                        # never reaps the child (wait4 below does)
        while not done.wait(0.1):
            cpu.append((time.time(), tree_cpu_s(p.pid)))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    threading.Thread(target=sampler, daemon=True).start()
    _, status, usage = os.wait4(p.pid, 0)
    t_exit = time.time()
    done.set()
    rc = os.waitstatus_to_exitcode(status)
    p.returncode = rc
    th.join(10)
    folder = next((Path(s.split(": ", 1)[1]) for _, s in reversed(lines)
                   if s.startswith("run folder: ")), None)
    if folder is None or not (folder / "bench.log").exists():
        raise SystemExit(f"no run folder in the output of {' '.join(cmd)} (exit {rc})")
    ph = log_phases(folder / "bench.log")
    devs = json.loads((folder / "manifest.json").read_text()).get("devices", {}).values()
    late = sum(int(d.get("late_probes") or 0) for d in devs)
    probes = sum(int(d.get("probes") or 0) for d in devs)
    if "probing_end" not in ph:
        ph.update(manifest_phases(folder))
    end = ph["probing_end"]
    verdict = next((t for t, s in lines if s.startswith("verdict:")), None)
    at_end = max((c for t, c in cpu if t <= end), default=0.0)
    cpu_after = usage.ru_utime + usage.ru_stime - at_end   # the child and all it reaped
    return {"exit_status": rc, "setup_s": round(ph["probing_start"] - t0, 2),
            "probing_s": round(end - ph["probing_start"], 2),
            "closing_after_s": round(verdict - end, 2) if verdict else None,
            "exit_after_s": round(t_exit - end, 2), "summary_s": ph.get("summary_s"),
            "figures_wait_s": ph.get("figures_wait_s"), "offline_wait_s": ph.get("offline_wait_s"),
            "cpu_after_s": round(cpu_after, 2),
            "late_probes_pct": round(100 * late / probes, 2) if probes else None,
            "folder": str(folder)}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--devices", type=int, default=0,
                    help="a simulated rack of N devices (benchmarks/scale.py's mix; default: "
                         "the default rack)")
    ap.add_argument("--processes", type=int, default=None, help="rackclock run --processes")
    ap.add_argument("--root", type=Path, default=ROOT,
                    help="the checkout whose rackclock runs (default: this one), e.g. an "
                         "export of the commit before, for a before/after")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="after_run.") as tmp:
        rack = None
        if a.devices:
            import tomli_w
            from scale import scale_rack_dict
            rack = Path(tmp) / f"scale-{a.devices}.toml"
            rack.write_text(tomli_w.dumps(scale_rack_dict(a.devices)))
        extra = ["--fit-rates"] if a.devices else []
        if a.processes:
            extra += ["--processes", str(a.processes)]
        what = f"{a.devices} devices" if a.devices else "the default rack"
        print(f"rackclock run ({a.root.resolve()}), {what}, {a.duration:g} s, "
              f"{a.repeats} repeat(s)")
        print("| repeat | set-up s | probing s | summary s | waited for offline cascades s | "
              "waited for figures s | "
              "closing printed after probing s | exit after probing s | CPU after probing s | "
              "late probes % | load before / after |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for k in range(a.repeats):
            before = load()
            r = one_run(a.duration, Path(tmp) / f"r{k}", rack, extra, a.root.resolve())
            r["load"] = f"{before} / {load()}"
            rows.append(r)
            print(f"| {k + 1} | {r['setup_s']} | {r['probing_s']} | {r['summary_s']} | "
                  f"{r['offline_wait_s']} | "
                  f"{r['figures_wait_s']} | {r['closing_after_s']} | {r['exit_after_s']} | "
                  f"{r['cpu_after_s']} | {r['late_probes_pct']} | {r['load']} |", flush=True)
    closing = [r["closing_after_s"] for r in rows if r["closing_after_s"] is not None]
    print(f"after probing: closing printed {statistics.median(closing):.2f} s, exit "
          f"{statistics.median(r['exit_after_s'] for r in rows):.2f} s (median of {len(rows)})")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
