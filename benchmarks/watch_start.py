"""How soon a start of `rackclock watch` answers /metrics (issue 41: within 5 s of a start after
kill -9): the default rack served by `rackclock sim` in a process of its own, watched as a lab
rack on a fixed port (so that the figure does not depend on when watch.json is written), for
--life-s, then killed with SIGKILL and started again, --starts times. Per start: seconds from
the process's start to its first /metrics answer, and to `rackclock_watch_starting 0` (the
devices read back from the day folders and probed; a tree without that gauge: to the first
scrape showing a device measuring), with the load average.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/watch_start.py --starts 6 --life-s 45
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from watch_idle_conns import default_devices, serve  # noqa: E402

START_MAX_S = 300.0
STARTED = re.compile(r'^rackclock_watch_starting 0|^rackclock_device_state\{.*state="measuring"\} 1',
                     re.M)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def life(rack: Path, out: Path, port: int, life_s: float) -> dict:
    """One watch from its start to its SIGKILL after `life_s` (and after its first answer, the
    start given at most START_MAX_S)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--rack", str(rack),
                             "--out", str(out), "--listen", f"127.0.0.1:{port}",
                             "--reference-allowance", "1ms"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = started = None
    while (time.monotonic() - t0 < life_s or first is None) and \
            time.monotonic() - t0 < START_MAX_S:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            first = first or time.monotonic() - t0
            if started is None and STARTED.search(text):
                started = time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.05 if started is None else 0.5)
    proc.kill()
    proc.wait(60)
    return {"first_metrics_s": first and round(first, 2),
            "started_s": started and round(started, 2),
            "load": round(os.getloadavg()[0], 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=6)
    ap.add_argument("--life-s", type=float, default=45.0)
    ap.add_argument("--devices", default=None, help="comma-separated devices of the default "
                    "rack (default: all)")
    a = ap.parse_args()
    names = default_devices(a.devices)
    tmp = Path(tempfile.mkdtemp(prefix="watch-start-"))
    sim, rack = serve(tmp, names)
    port, rows = free_port(), []
    try:
        for k in range(a.starts):
            rows.append({"start": k, "after": "fresh" if k == 0 else "kill -9",
                         **life(rack, tmp / "out", port, a.life_s)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(60)
    killed = sorted(r["first_metrics_s"] for r in rows[1:] if r["first_metrics_s"] is not None)
    print(json.dumps({"starts_after_kill": len(rows) - 1, "first_metrics_s_after_kill": killed,
                      "unanswered": sum(r["first_metrics_s"] is None for r in rows)}), flush=True)
    return 0 if all(r["first_metrics_s"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
