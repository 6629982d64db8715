"""Serve the simulated rack from a child process for the length of a run.

The child's TMPDIR is a 0700 folder of the SimProcess's own, where the simulator keeps its
secrets (TLS keys, kubeconfig tokens): the SimProcess removes it when it ends, however the
child ended (a SIGKILLed simulator cannot clean up after itself)."""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench import priority, safeio, saferead
from bench.config.inventory import RackConfig, load_rack
from bench.sim.serve import ensure_secrets

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In the child before exec: the kernel sends it SIGTERM when the bench dies, however it dies
    (SIGKILL included), so a simulator is never orphaned. Linux only; elsewhere a no-op."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:    # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def serve_child(parent: int, nice: int) -> None:
    """In the simulator's child before exec: it dies with the bench, and it runs at the bench
    workers' nice where the bench may raise it (and, once serving, at their real-time priority:
    `--realtime`, bench/priority.py). The emulators stand in for devices that have CPUs of their
    own; below the workers, an answer waits for a worker's time slice, and that wait lands inside
    the bracket (300 devices at nice 0 and at the workers' -5: benchmarks/README.md, "Scale",
    round 5)."""
    die_with_parent(parent)
    priority.raise_nice(nice)      # without CAP_SYS_NICE it stays at 0 (`SimProcess.priority`)


class SimProcess:
    """`with SimProcess(rack_file, out_dir) as sim:` -> `sim.rack` (resolved), `sim.failed`.
    On exit the child is stopped and writes truth.json into `out_dir`."""

    def __init__(self, rack_file: Path, out_dir: Path, start_timeout_s: float = 60.0):
        self.rack_file = Path(rack_file)
        self.out_dir = Path(out_dir)
        self.timeout = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.rack: RackConfig | None = None
        self.failed: dict[str, str] = {}
        self.priority = ""                # the simulator's scheduling once serving, in words
        self.tmp: Path | None = None       # the child's TMPDIR (0700), removed on exit
        self.died: int | None = None       # its exit status if it ended before it was stopped
        self._stopped = False

    def __enter__(self) -> SimProcess:
        safeio.make_folder(self.out_dir)
        ensure_secrets(load_rack(self.rack_file))
        env_tmp = os.environ.get("TMPDIR")          # where the child would have put it
        self.tmp = Path(tempfile.mkdtemp(prefix="rackclock-sim-", dir=env_tmp if env_tmp and
                                         os.path.isdir(env_tmp) else None))     # mode 0700
        try:
            return self._start()
        except BaseException:
            self.__exit__()
            raise

    def _start(self) -> SimProcess:
        with safeio.append(self.out_dir / "sim.log") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bench.commands.sim", "--rack", str(self.rack_file.resolve()),
                 "--out", str(self.out_dir.resolve()), "--realtime"], stdout=log, stderr=log,
                env={**os.environ, "TMPDIR": str(self.tmp)},
                cwd=Path(__file__).resolve().parents[2],
                preexec_fn=functools.partial(serve_child, os.getpid(), priority.WORKER_NICE))
        ready = self.out_dir / "rack.toml"
        deadline = time.monotonic() + self.timeout
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = saferead.tail_text(self.out_dir / "sim.log", 2000)
                raise RuntimeError(f"the simulated rack did not start:\n{tail}")
            time.sleep(0.05)
        self.priority = priority.describe(self.proc.pid)
        self.rack = replace(load_rack(ready), simulated=True,
                            limits=load_rack(self.rack_file).limits)   # [limits]: the rack file's
        failed = self.out_dir / "sim_failed.json"
        self.failed = saferead.load_object(failed) if failed.exists() else {}
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and not self._stopped:
            self._stopped, self.died = True, self.proc.poll()
        try:
            if self.proc and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            if self.tmp is not None:          # the keys and tokens, whatever became of the child
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.tmp = None

    def fault(self, device: str, kind: str, **how) -> dict:
        """Trigger a fault in the served rack (bench/sim/faults.py): `{"t_ns": ...}`, the instant
        it is scheduled for, or `{"armed": True}` when it waits for the device's samples."""
        from bench.sim.faults import send_fault
        return send_fault(self.out_dir, device, kind, **how)

    def move_truth(self, run_dir: Path) -> Path | None:
        src = self.out_dir / "truth.json"
        if src.exists():
            safeio.write_bytes(run_dir / "truth.json",
                               saferead.read_bytes(src, saferead.CAPS["truth.json"]))
            src.unlink()
            return run_dir / "truth.json"
        return None
