"""How the run folder's documents are read into records (bench/model/: `manifest_records`,
`segment_records`, `clock_records`, `summary_records`, `truth_records`, `event_records`): each
field's reader, tolerant of a key an older run folder lacks, and the mapping view of a document's
raw dict.

The run folder's JSON and CSV documents as frozen records: manifest.json, summary.json,
truth.json and events.csv, read exactly as results/README.md documents them. Readers use these
fields instead of string keys. Writers build the same records and write their `to_dict()`
(bench/model/summary.py: the summary; drivers: `Identity`; bench/output/live.py: `Calibration`);
the manifest's other parts are still dicts (bench/run/experiment.py, bench/model/store.py).
A record read from a file serialises as it was read (`.raw`); one a writer built, from its fields.

Every record keeps the dict it was read from as `.raw` (compare=False): a key a newer bench
added is kept there and never breaks an older reader, and a key an older run folder lacks takes
its default (an empty string, zero, None, an empty tuple). A status string this bench does not
know stays a plain string beside the enum members it does know (bench.model.run_statuses.parse).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, overload

from bench.analysis.proven_segment import Bound


def _d(x: object) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _l(x: object) -> list[Any]:
    return x if isinstance(x, list) else []


def _s(x: object) -> str:
    """A text field as written; a missing or null one is empty."""
    return str(x or "")


def _dict_or_none(x: object) -> dict[str, Any] | None:
    """A copy of an object field; None where it is missing or not an object."""
    return dict(x) if isinstance(x, Mapping) else None


def _read_stats(x: object) -> dict[str, Any] | None:
    """A clock's `read_stats` as written, or None where it is absent or not of its form (then
    compare judges from the samples)."""
    if not isinstance(x, Mapping) or _int(x.get("distinct_values"), None) is None:
        return None
    cis = [x.get(k) for k in ("bracket_ns", "jitter_ns") if k in x]
    if any(not _is_ci(c) for c in cis) or len(cis) == 1:
        return None
    return dict(x)


def _is_ci(c: object) -> bool:
    """Whether `c` is a confidence interval as written: a list of three numbers."""
    return isinstance(c, list) and len(c) == 3 and all(_float(v, None) is not None for v in c)


@overload
def _int(x: Any, default: int = 0) -> int: ...
@overload
def _int(x: Any, default: None) -> int | None: ...


def _int(x: Any, default: int | None = 0) -> int | None:
    try:
        return int(x) if x not in (None, "") else default
    except (TypeError, ValueError):
        return default


@overload
def _float(x: Any, default: float = 0.0) -> float: ...
@overload
def _float(x: Any, default: None) -> float | None: ...


def _float(x: Any, default: float | None = 0.0) -> float | None:
    try:
        return float(x) if x not in (None, "") else default
    except (TypeError, ValueError):
        return default


def _ns(x: Any, default: float = 0.0) -> float:
    """A count of ns as written: an int stays an int (a counter's offset near 1.8e18 ns has no
    ns left in a float), anything else a float."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    return _float(x, default)


def bound(x: object) -> Bound | None:
    """{"lo", "hi", "point"} as a Bound; a missing point is the middle (per-event latencies)."""
    x = _d(x)
    if x.get("lo") is None or x.get("hi") is None:
        return None
    lo, hi = x["lo"], x["hi"]      # as written: an int stays an int (a counter's offset near
    # 1.8e18 ns would lose hundreds of ns as a float)
    return Bound(lo, hi, x["point"] if x.get("point") is not None else (lo + hi) / 2)


def _rest(cls: type[Any], x: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `x` that are not fields of `cls`."""
    known = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in x.items() if k not in known}


class _RawMapping(Mapping[str, Any]):
    """The document's keys, read-only, for code outside the bench (notebooks, tests,
    experiments) that read `run.summary["devices"]` before this model existed. Bench modules
    read the fields."""
    raw: Mapping[str, Any]          # the document as read (a dataclass field of each subclass)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    # unhashable, as every Mapping (collections.abc.Mapping sets __hash__ = None)
