"""One rank of experiments/collective_clock.py's data-parallel training loop (a worker process).

Started by the experiment as `python -m experiments._collective_worker SPEC_JSON`, with its wall
clock perturbed by libfaketime and its clock reads counted by the experiment's LD_PRELOAD shim
(both in the environment it is given). It trains a few-layer MLP on synthetic data with fixed
seeds, all-reduces the gradients through torch.distributed in one flat buffer per step (as DDP's
one bucket does), and prints one JSON line on stdout: per measured step its time, the
all-reduce's time and the clock reads the process made inside the all-reduce, each on
CLOCK_MONOTONIC (never the wall clock, which is the thing perturbed). The one file it writes is
its own libfaketime spec in the arm with a mid-run step.

Not imported by the bench (torch is an optional extra, `rackclock[training]`).
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from typing import Any


def _counter():
    """The shim's counters (realtime clock_gettime, gettimeofday, time, monotonic), or None
    when the shim is not preloaded."""
    path = os.environ.get("CLOCKCOUNT_LIB")
    if not path:
        return None
    lib = ctypes.CDLL(path)         # already loaded by LD_PRELOAD: the same handle and counts
    buf = (ctypes.c_longlong * 4)()

    def read() -> tuple[int, int, int, int]:
        lib.clockcount_read(buf)
        return buf[0], buf[1], buf[2], buf[3]
    return read


def _clocks() -> dict[str, int]:
    """The wall and monotonic clocks read back to back: the parent compares the difference with
    its own to see the offset that reached this process."""
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    wall = time.clock_gettime_ns(time.CLOCK_REALTIME)
    return {"mono_ns": mono, "wall_ns": wall}


def _model(torch: Any, spec: dict[str, Any], device: Any) -> Any:
    torch.manual_seed(spec["seed"])
    width, layers = spec["width"], spec["layers"]
    mods: list[Any] = []
    for i in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()] if i < layers - 1 else \
            [torch.nn.Linear(width, 10)]
    return torch.nn.Sequential(*mods).to(device)


def _step_file(spec: dict[str, Any], step: int) -> None:
    """The mid-run clock step: this rank's libfaketime spec file rewritten at `step_at`."""
    if spec.get("step_file") and step == spec["step_at"]:
        from bench import safeio

        # libfaketime's input, replaced whole (renamed into place)
        safeio.write_text(spec["step_file"], spec["step_to"] + "\n")


def train(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    backend = spec["backend"]
    cuda = backend == "nccl"
    device = torch.device(f"cuda:{spec['rank'] % torch.cuda.device_count()}") if cuda else \
        torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)       # NCCL: one GPU per rank, chosen before the group
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{spec['port']}",
                            rank=spec["rank"], world_size=spec["world"])
    model = _model(torch, spec, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(spec["seed"] + 1 + spec["rank"])
    x = torch.randn(spec["batch"], spec["width"], generator=gen).to(device)
    y = torch.randint(0, 10, (spec["batch"],), generator=gen).to(device)
    count = _counter()
    rows: list[list[int]] = []
    clocks = [_clocks()]
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for step in range(spec["warmup"] + spec["steps"]):
        _step_file(spec, step)
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)      # this rank's wall clock offset,
        offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - mono   # outside the timed step
        t0 = time.perf_counter_ns()
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        grads = [p.grad for p in model.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads])
        sync()
        c0 = count() if count else (0, 0, 0, 0)
        a0 = time.perf_counter_ns()
        dist.all_reduce(flat)
        sync()
        a1 = time.perf_counter_ns()
        c1 = count() if count else (0, 0, 0, 0)
        flat /= spec["world"]
        torch.nn.utils.vector_to_parameters(flat, grads)   # the mean back into the grads
        opt.step()
        sync()
        t1 = time.perf_counter_ns()
        if step >= spec["warmup"]:
            d = [b - a for a, b in zip(c0, c1)]
            d[3] -= 2 if count else 0       # our own two stamps (a0, a1) inside the window
            rows.append([t1 - t0, a1 - a0, *d, offset])
        if step == spec["warmup"] + spec["steps"] // 2:
            clocks.append(_clocks())
    clocks.append(_clocks())
    dist.destroy_process_group()
    return {"rank": spec["rank"], "backend": backend, "torch": torch.__version__,
            "columns": ["step_ns", "allreduce_ns", "rt_clock_gettime", "gettimeofday", "time",
                        "monotonic", "offset_ns"],
            "rows": rows, "clocks": clocks, "counted": count is not None}


if __name__ == "__main__":
    print(json.dumps(train(json.loads(sys.argv[1]))), flush=True)
    os._exit(0)        # skip torch's interpreter teardown: about 2 s of every run, nothing kept
