"""The watch's mapping service: 10,000 stamps in one batch (issue 41: <= 100 ms).

A short run of the simulated bmc-2 is the closed day; its reads also fill a live window (as a
running watch holds them). Timed: parsing and mapping 10^4 RFC 3339 stamps (the server's
`_batch`), through the live fit and through the closed day (its fits cached, as after the
first query), and the whole POST /v1/map round trip on loopback (JSON both ways).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/watch_map_speed.py [--n 10000] [--repeat 7] [--duration 20]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def iso(ns: int) -> str:
    t = datetime.fromtimestamp(ns // 10**9, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9 // 10**6:03d}Z"


def timed(fn, repeat: int) -> tuple[float, float, float]:
    """(median wall ms, best wall ms, median CPU ms of this thread: what a quiet core takes)."""
    ts, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        fn()
        ts.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return statistics.median(ts) * 1e3, min(ts) * 1e3, statistics.median(cpu) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--duration", type=float, default=20.0, help="the closed day's run, s")
    a = ap.parse_args()
    from racks import sim_rack_text

    from bench.model.rundata import load_run
    from bench.run.experiment import run_experiment
    from bench.watch.mapping import Mapper
    from bench.watch.metrics import registry
    from bench.watch.server import Server
    from bench.watch.state import WatchState
    tmp = Path(tempfile.mkdtemp(prefix="mapspeed-"))
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-2"]))
    day = run_experiment("clock_offset", rack, tmp / "runs",
                         {"duration_s": f"{a.duration:g}", "stimulus_every_s": "100"}, quiet=True)
    run = load_run(day)
    s, e, v, _ = run.clock_reads("bmc-2", "datetime")
    st = WatchState(time.time_ns)
    st.define("bmc-2", "bmc", [{"name": "datetime", "resolution_ns": 10**9}])
    for k in range(len(s)):
        st.row("bmc-2", "read", "datetime", int(s[k]), int(e[k]), int(v[k]), "ok")
    st.refit("bmc-2", "datetime", st.devices["bmc-2"].clocks["datetime"])
    lo, hi = int(v[0]), int(v[-1])
    items = [{"device": "bmc-2", "clock": "datetime", "stamp": iso(lo + (hi - lo) * k // a.n)}
             for k in range(a.n)]
    for name, mapper in (("live fit", Mapper(st, lambda: [])),
                         ("closed day", Mapper(None, lambda: [day]))):
        srv = Server(registry(st), mapper)
        got = srv._batch(items)                    # warm: the day's fits loaded once
        ok = sum(1 for g in got if "lo_ns" in g and g["lo_ns"] is not None)
        med, best, cpu = timed(lambda s=srv: s._batch(items), a.repeat)
        print(f"{name}: {a.n} stamps parsed and mapped: median {med:.1f} ms, best {best:.1f} ms"
              f" wall, {cpu:.1f} ms CPU ({ok} placed)")
    srv = Server(registry(st), Mapper(st, lambda: [])).start()
    body = json.dumps(items).encode()

    def post():
        req = urllib.request.Request(f"http://127.0.0.1:{srv.port}/v1/map", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            json.loads(r.read())
    try:
        med, best, _ = timed(post, a.repeat)
    finally:
        srv.stop()
    print(f"POST /v1/map of {a.n} stamps, round trip (client's JSON too): median {med:.1f} ms, "
          f"best {best:.1f} ms wall")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
