"""bench/run/after.py's worker pool: results in order, and a worker that dies costs nothing but
time (this process does what is left, with the same results). Real spawned processes."""
from __future__ import annotations

import multiprocessing
import os

from bench.run.after import AfterPool


def double_unless_in_a_worker(x: int) -> int:
    """Ends the worker process that runs it; in the parent it doubles."""
    if multiprocessing.parent_process() is not None and x == 3:
        os._exit(1)
    return 2 * x


def test_a_dead_worker_leaves_the_rest_to_this_process():
    pool = AfterPool(1)
    try:
        assert list(pool.map(double_unless_in_a_worker, [(k,) for k in range(6)])) == \
            [0, 2, 4, 6, 8, 10]
        # the pool is gone after the loss: everything from now on is done here, the same
        assert list(pool.map(double_unless_in_a_worker, [(5,), (1,)])) == [10, 2]
        assert pool.figures(".", ["x"]) is None
    finally:
        pool.close()
