"""Start and stop `rackclock watch` as a process for the watch tests; conditions with deadlines."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def until(cond, timeout_s: float, what: str, proc=None):
    """cond() until truthy, or fail naming `what` (and the watch's output when it died)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the watch ended ({proc.returncode}) waiting for {what}:\n"
                                 f"{proc.stdout.read() if proc.stdout else ''}")
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.2)


def start_watch(out: Path, *args: str, env: dict | None = None,
                log: Path | None = None) -> subprocess.Popen:
    """The watch as a process; its output piped, or into `log` (a long run: a pipe nobody
    drains would stop it once full)."""
    sink = open(log, "w") if log else subprocess.PIPE          # noqa: SIM115 (the child's)
    try:
        return subprocess.Popen([sys.executable, "-m", "bench.cli", "watch", "--out", str(out),
                                 "--listen", "127.0.0.1:0", *args], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                                stdout=sink, stderr=subprocess.STDOUT, text=True)
    finally:
        if log:
            sink.close()


def state(out: Path) -> dict | None:
    p = out / "watch.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def get_json(url: str, data: bytes | None = None):
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            return {"status": exc.code, **json.loads(exc.read() or b"{}")}
        except ValueError:                         # a server starting: not JSON yet
            return None
    except (urllib.error.URLError, OSError, ValueError):       # not listening yet
        return None


def stop_watch(proc: subprocess.Popen, sig=signal.SIGTERM) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""
