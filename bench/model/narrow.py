"""A table's columns kept narrow in memory and read back in their own type: a column with one
value is that value (no memory); an integer column whose values, or whose differences from
another column, span less than 2**32 is kept as those differences less their least, in the
narrowest unsigned type that holds them (a million interval ends 4 bytes each, not 8, or 1 byte
each for a list of a few codes); any other column as it is. Reading a slice (`part`) decodes
that slice only; `c[name]` decodes the whole column (a transient copy: for the few whole-column
reads). A timeline of a million log lines keeps its sixteen columns in ~30 MB, not 83
(bench.model.timeline_table.Timeline)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

SAFE = 2**62        # both columns within ±SAFE: their difference fits int64
UNSIGNED = (np.uint8, np.uint16, np.uint32)


class Columns(Mapping[str, npt.NDArray[Any]]):
    """Columns of n rows by name, each kept as ("const", dtype, value), ("plain", array) or
    ("delta", dtype, ref, base, data): row i is data[i] + base (+ column ref's row i)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._enc: dict[str, tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self._enc)

    def __iter__(self) -> Iterator[str]:
        return iter(self._enc)

    def __getitem__(self, k: str) -> npt.NDArray[Any]:
        out: npt.NDArray[Any] = self.part(k, slice(None))
        return out

    def part(self, k: str, key: Any) -> Any:
        """Rows `key` (a slice, an index array, a mask or an int) of column k, in its type."""
        e = self._enc[k]
        if e[0] == "plain":
            return e[1][key]
        if e[0] == "const":
            return np.broadcast_to(np.asarray(e[2], e[1]), (self.n,))[key]
        _, dt, ref, base, data = e
        out = data[key].astype(np.int64) + base
        if ref is not None:
            out = out + self.part(ref, key)
        return out.astype(dt)

    def nbytes(self) -> int:
        """Bytes the columns hold."""
        return sum(e[1].nbytes if e[0] == "plain" else e[4].nbytes if e[0] == "delta" else 0
                   for e in self._enc.values())

    def put(self, k: str, a: npt.ArrayLike, ref: str | None = None) -> None:
        """Column k from a whole array (its type kept)."""
        arr = np.asarray(a)
        self.encode(k, [arr], arr.dtype, ref)

    def encode(self, k: str, parts: Sequence[npt.ArrayLike], dtype: Any,
               ref: str | None = None) -> None:
        """Column k from its parts, one after the other (their total: n rows), kept in the
        narrowest form (`ref`: a column already here that its differences may be taken from);
        no whole copy of the column in its own type is made where a narrow form holds it."""
        arrs = [np.asarray(p, dtype) for p in parts]
        dt = np.dtype(dtype)
        if sum(len(a) for a in arrs) != self.n:
            raise ValueError(f"column {k}: {sum(len(a) for a in arrs)} rows, not {self.n}")
        if dt == np.bool_ or not np.issubdtype(dt, np.integer) or not self.n:
            self._enc[k] = _one_or_plain(arrs, dt)
            return
        self._encode_int(k, arrs, dt, ref)

    def _encode_int(self, k: str, arrs: Sequence[npt.NDArray[Any]], dt: Any,
                    ref: str | None) -> None:
        lo, hi = _span(arrs)
        if lo == hi:
            self._enc[k] = ("const", dt, lo)
            return
        width, base, use = self._narrowest(arrs, dt, lo, hi, ref)
        if width >= 2**32:
            self._enc[k] = ("plain", _joined(arrs))
            return
        refs: list[Any] = _ref_parts(self[use], arrs) if use is not None else [None] * len(arrs)
        self._enc[k] = ("delta", dt, use, base, _packed(arrs, refs, base, width, self.n))

    def _narrowest(self, arrs: Sequence[npt.NDArray[Any]], dt: Any, lo: int, hi: int,
                   ref: str | None) -> tuple[int, int, str | None]:
        """(width, base, reference column or None): the values less base, or less the
        reference column's and base, whichever spans fewer values."""
        best: tuple[int, int, str | None] = (hi - lo, lo, None)
        if ref is None or dt != np.int64 or not (-SAFE < lo and hi < SAFE):
            return best
        rs = _ref_parts(self[ref], arrs)
        rlo, rhi = _span(rs)
        if -SAFE < rlo and rhi < SAFE:
            dlo, dhi = _span([a - r for a, r in zip(arrs, rs)])
            if dhi - dlo < best[0]:
                best = (dhi - dlo, dlo, ref)
        return best

    def take(self, perm: npt.NDArray[np.intp]) -> None:
        """Every column's rows in the order `perm` (a column at a time)."""
        for k, e in list(self._enc.items()):
            if e[0] == "plain":
                self._enc[k] = ("plain", e[1][perm])
            elif e[0] == "delta":
                self._enc[k] = (*e[:4], e[4][perm])


def _span(arrs: Sequence[npt.NDArray[Any]]) -> tuple[int, int]:
    """The least and greatest value of non-empty arrays, as Python ints."""
    full = [a for a in arrs if len(a)]
    return min(int(a.min()) for a in full), max(int(a.max()) for a in full)


def _packed(arrs: Sequence[npt.NDArray[Any]], refs: Sequence[Any], base: int, width: int,
            n: int) -> npt.NDArray[Any]:
    """The parts less base (and less their reference's rows) in the narrowest unsigned type
    that holds `width`, one array of n rows."""
    ut = next(t for t in UNSIGNED if width < np.iinfo(t).max + 1)
    data = np.empty(n, ut)
    at = 0
    for a, r in zip(arrs, refs):
        data[at:at + len(a)] = a - base if r is None else a - r - base
        at += len(a)
    return data


def _ref_parts(ref: npt.NDArray[Any], arrs: Sequence[npt.NDArray[Any]]
               ) -> list[npt.NDArray[np.int64]]:
    """The reference column cut as `arrs` are (its rows in the same order)."""
    out, at = [], 0
    for a in arrs:
        out.append(np.asarray(ref[at:at + len(a)], np.int64))
        at += len(a)
    return out


def _one_or_plain(arrs: Sequence[npt.NDArray[Any]], dt: Any) -> tuple[Any, ...]:
    """A column of one value as that value, else as it is."""
    full = [a for a in arrs if len(a)]
    if full and all((a == full[0][0]).all() for a in full):
        return ("const", dt, full[0][0].item())
    return ("plain", _joined(arrs) if arrs else np.zeros(0, dt))


def _joined(arrs: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """The parts as one array (one part: itself, not a copy; the table's parts are its
    own)."""
    return np.concatenate(arrs) if len(arrs) != 1 else np.ascontiguousarray(arrs[0])


def give_back() -> None:
    """Free heap returned to the system (glibc's malloc_trim; elsewhere nothing): between the
    phases of a big timeline, malloc keeps tens of MB of freed arrays that the next phase,
    which allocates differently, does not reuse."""
    import ctypes
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def one_arena() -> None:
    """One malloc arena for every thread (glibc's M_ARENA_MAX; elsewhere nothing): the threads
    that write a timeline's files side by side would each take an arena of their own, and
    hold ~30 MiB more between them."""
    import ctypes
    try:
        ctypes.CDLL(None).mallopt(-8, 1)        # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
