"""A clock's recent reads as the probing schedule keeps them (bench/run/runner.py): what it does
with a list of (s, e, value) tuples, append, len, an index or a slice, `del reads[:k]` of the
oldest, over a ring of int64 written whole when it is made. A long run's memory (rackclock
watch) then does not grow as the reads accumulate: a list of tuples of Python ints took about
170 bytes a read and grew for 80 minutes at 0.2 Hz before its first trim; the ring takes 24
bytes a read, all at the start."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

Read = tuple[int, int, int]


class ReadRing(Sequence[Read]):
    """At most `capacity` reads, oldest first; a read appended to a full ring pushes out the
    oldest."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._a = np.full((self.capacity, 3), 0, dtype=np.int64)   # every page touched now
        self._head = 0
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, read: Read) -> None:
        self._a[(self._head + self._n) % self.capacity] = read
        if self._n < self.capacity:
            self._n += 1
        else:
            self._head = (self._head + 1) % self.capacity

    @overload
    def __getitem__(self, k: int) -> Read: ...

    @overload
    def __getitem__(self, k: slice) -> list[Read]: ...

    def __getitem__(self, k: int | slice) -> Read | list[Read]:
        if isinstance(k, slice):
            idx = (np.arange(*k.indices(self._n)) + self._head) % self.capacity
            return [(a, b, c) for a, b, c in self._a[idx].tolist()]
        i = k + self._n if k < 0 else k
        if not 0 <= i < self._n:
            raise IndexError("read index out of range")
        a, b, c = self._a[(self._head + i) % self.capacity].tolist()
        return a, b, c

    def __delitem__(self, k: slice) -> None:
        """`del ring[:j]`: the j oldest reads dropped (the only deletion the schedule makes)."""
        if not isinstance(k, slice) or k.start not in (None, 0) or k.step not in (None, 1):
            raise TypeError("a ReadRing drops only its oldest reads: del ring[:j]")
        j = len(range(*slice(None, k.stop).indices(self._n)))
        self._head = (self._head + j) % self.capacity
        self._n -= j

    def __iter__(self) -> Iterator[Read]:
        return iter(self[:])
