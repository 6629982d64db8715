"""events.csv as records: the run journal's lines."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.model.field_readers import (
    _int,
)


@dataclass(frozen=True)
class Event:
    """One line of the run journal (events.csv)."""
    t_ns: int
    device: str
    level: str
    kind: str
    message: str


def load_events(path: str | Path) -> list[Event]:
    """events.csv of a run folder; a line cut short by a run that died is skipped."""
    p = Path(path)
    if not p.exists():
        return []
    from bench import saferead
    out = []
    for row in saferead.csv_rows(p):
        t = _int(row.get("t_ns"), None)
        if t is None or row.get("message") is None:
            continue
        out.append(Event(t, row.get("device") or "", row.get("level") or "",
                         row.get("kind") or "", row.get("message") or ""))
    return out
