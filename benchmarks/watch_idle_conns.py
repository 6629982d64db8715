"""`rackclock watch` under an idle-connection flood (issue 41): N connections opened to its
endpoint and held without a byte (those the watch drops are opened again every few seconds),
while /metrics is scraped twice a second. Reports the scrape latency (median, p99, max; and
failed scrapes) before and during the flood, and the clocks' read bracket widths (median, p90)
in both stretches: the flood must not reach the probing.

The flood's connections are held by child processes of at most PER_CHILD each (a process's own
file limit, often 20,000, would otherwise leave the scraper no descriptor at all), as an
attacker with several processes would.

A served rack (`rackclock sim` in a process of its own: bmc-2, cdu-1, pdu-2), watched as a lab
rack at --rate 2.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/watch_idle_conns.py --conns 20000 \
        --before-s 60 --flood-s 300 [--settle-s 20]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def default_devices(arg: str | None) -> list[str]:
    """The devices a `--devices` option names (comma-separated), else every device of the
    default rack."""
    from bench.config.inventory import load_rack
    from bench.sim import DEFAULT_RACK
    return arg.split(",") if arg else [d.name for d in load_rack(DEFAULT_RACK).devices]


def serve(tmp: Path, devices: list[str]) -> tuple[subprocess.Popen, Path]:
    from racks import sim_rack_text

    from bench.config.inventory import load_rack
    rack = tmp / "small.toml"
    rack.write_text(sim_rack_text(devices))
    for d in load_rack(rack).devices:
        for var in [d.password_env] + [v for k, v in d.options.items() if k.endswith("_env")]:
            if var:
                os.environ.setdefault(var, secrets.token_urlsafe(9))
    out = tmp / "served"
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "sim", "--rack", str(rack),
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while not (out / "rack.toml").exists():
        assert proc.poll() is None
        time.sleep(0.1)
    return proc, out / "rack.toml"


class Flood(threading.Thread):
    """Hold `n` idle connections to the endpoint; reopen those the server closed every 5 s."""

    def __init__(self, port: int, n: int):
        super().__init__(daemon=True)
        self.port, self.n = port, n
        self.stop = threading.Event()
        self.opened = self.reopened = self.failed = 0
        self.held = 0

    def _open(self, sel) -> bool:
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", self.port))
            sel.register(s, selectors.EVENT_READ)
            return True
        except OSError:
            self.failed += 1
            return False

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            self.opened += self._open(sel)
        while not self.stop.is_set():
            closed = 0
            for key, _ in sel.select(timeout=5.0):
                s = key.fileobj
                sel.unregister(s)
                s.close()
                closed += 1
            for _ in range(closed):
                self.reopened += self._open(sel)
            self.held = len(sel.get_map())
        for key in list(sel.get_map().values()):
            key.fileobj.close()


PER_CHILD = 10_000


def flood_child(port: int, n: int) -> int:
    """`--flood-child PORT N`: hold N idle connections until stdin closes; print the counts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    f = Flood(port, n)
    f.start()
    sys.stdin.read()
    f.stop.set()
    f.join(30)
    print(json.dumps({"opened": f.opened, "reopened": f.reopened, "open_failed": f.failed,
                      "held_at_end": f.held}), flush=True)
    return 0


def start_flood(port: int, conns: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, __file__, "--flood-child", str(port),
                              str(min(PER_CHILD, conns - k))], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
            for k in range(0, conns, PER_CHILD)]


def stop_flood(children: list[subprocess.Popen]) -> dict:
    got = [json.loads(c.communicate(timeout=120)[0] or "{}") for c in children]
    return {k: sum(g.get(k, 0) for g in got) for k in ("opened", "reopened", "open_failed",
                                                       "held_at_end")}


def scrape(url: str) -> float | None:
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            r.read()
    except OSError:
        return None
    return time.perf_counter() - t0


def brackets(day: Path, t0_ns: int, t1_ns: int) -> dict:
    from bench.model.rundata import load_run
    run = load_run(day)
    out = {}
    for dev in run.devices:
        smp = run.samples(dev)
        for clock in sorted({c for c in smp.clock if c}):
            s, e, _, _ = smp.reads(clock)
            w = (e - s)[(s >= t0_ns) & (s < t1_ns)] / 1e6
            if len(w):
                out[f"{dev}:{clock}"] = (round(float(np.median(w)), 3),
                                         round(float(np.percentile(w, 90)), 3), len(w))
    return out


def stats(lat: list) -> dict:
    ok = sorted(x for x in lat if x is not None)
    if not ok:
        return {"scrapes": len(lat), "failed": len(lat)}
    return {"scrapes": len(lat), "failed": len(lat) - len(ok),
            "median_ms": round(statistics.median(ok) * 1e3, 1),
            "p99_ms": round(ok[min(len(ok) - 1, int(0.99 * len(ok)))] * 1e3, 1),
            "max_ms": round(ok[-1] * 1e3, 1), "over_1s": sum(x > 1.0 for x in ok)}


def main() -> int:
    if sys.argv[1:2] == ["--flood-child"]:
        return flood_child(int(sys.argv[2]), int(sys.argv[3]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--conns", type=int, default=20_000)
    ap.add_argument("--before-s", type=float, default=60.0)
    ap.add_argument("--flood-s", type=float, default=300.0)
    ap.add_argument("--settle-s", type=float, default=20.0, help="after the first scrape, before 'before'")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = Path(tempfile.mkdtemp(prefix="watch-idle-"))
    sim, rack = serve(tmp, ["bmc-2", "cdu-1", "pdu-2"])
    out = tmp / "out"
    watch = subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--rack", str(rack),
                              "--out", str(out), "--listen", "127.0.0.1:0", "--rate", "2",
                              "--reference-allowance", "1ms"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=open(tmp / "watch.err", "w"))
    try:
        st = {}
        while not st.get("day"):                   # written first as it serves, with no day yet
            if watch.poll() is not None:
                raise SystemExit(f"the watch ended ({watch.returncode}): {tmp / 'watch.err'}")
            time.sleep(0.2)
            try:
                st = json.loads((out / "watch.json").read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                st = {}
        url, day = st["url"], Path(st["day"])
        while scrape(url) is None:
            time.sleep(0.2)
        time.sleep(a.settle_s)             # the devices open and settle
        phases: dict = {}
        flood: list[subprocess.Popen] = []
        for name, length in (("before", a.before_s), ("flood", a.flood_s)):
            if name == "flood":
                flood = start_flood(int(url.rsplit(":", 1)[1]), a.conns)
            t0, lat, fails = time.time_ns(), [], []
            m0 = time.monotonic()
            end = m0 + length
            while time.monotonic() < end:
                t = time.monotonic()
                lat.append(scrape(url))
                if lat[-1] is None:
                    fails.append(round(t - m0, 1))
                time.sleep(0.5)
            phases[name] = {**stats(lat), "failed_at_s": fails[:20],
                            "brackets_ms": brackets(day, t0, time.time_ns())}
        phases["flood"].update(stop_flood(flood))
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait(300)
        sim.send_signal(signal.SIGTERM)
        sim.wait(60)
    err = (tmp / "watch.err").read_text()
    phases["watch_stderr_lines"] = len(err.splitlines())
    phases["tracebacks"] = err.count("Traceback")
    phases["load"] = [round(x, 1) for x in os.getloadavg()]
    phases["conns"] = a.conns
    print(json.dumps(phases, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
