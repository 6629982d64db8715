"""The watch's day folders on disk: a closed day is packed once it is summarised, and removed
after KEEP_DAYS (--keep).

Packing follows the fleet's convention (bench/fleet/gather.ensure_unpacked): the whole day
folder goes into `<day>.tar.gz` beside it, and the folder keeps its small files (manifest,
summary, events, reference health, bounds) while its `samples/` go; `ensure_unpacked(day)` (and
`tar xzf <day>.tar.gz`) brings them back. The mapping service reads a packed day's samples
from the archive (bench/watch/mapping.py), the resume its latest reads (bench/watch/resume.py).
"""
from __future__ import annotations

import csv
import io
import json
import logging
import os
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)
KEEP_DAYS = 90.0          # day folders (and their archives) older than this are removed
PACK_AFTER_DAYS = 1.0     # closed days older than this are packed (yesterday stays as it is)


def archive_of(day: Path) -> Path:
    return day.with_name(day.name + ".tar.gz")


def pack(day: Path) -> Path | None:
    """`<day>.tar.gz` of the whole closed day (written aside, then renamed), then its samples
    removed from the folder; None when it cannot (the day is left as it was)."""
    day = Path(day)
    tar_path, part = archive_of(day), day.with_name(day.name + ".tar.gz.part")
    if not (day / "samples").is_dir():
        return tar_path if tar_path.exists() else None
    try:
        with tarfile.open(part, "w:gz", compresslevel=6) as tar:
            tar.add(day, arcname=day.name)
        os.replace(part, tar_path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        log.warning("watch: %s not packed: %s", day, exc.strerror or exc)
        return None
    shutil.rmtree(day / "samples", ignore_errors=True)
    return tar_path


def samples_rows(day: Path, device: str) -> Iterator[dict]:
    """The rows of a day's samples/<device>.csv, from the folder or from its archive."""
    p = Path(day) / "samples" / f"{device}.csv"
    if p.exists():
        with open(p, newline="") as f:
            yield from csv.DictReader(f)
        return
    tar_path = archive_of(Path(day))
    if not tar_path.exists():
        return
    with tarfile.open(tar_path, "r:gz") as tar:
        try:
            member = tar.extractfile(f"{Path(day).name}/samples/{device}.csv")
        except KeyError:
            return
        if member is not None:
            yield from csv.DictReader(io.TextIOWrapper(member, newline=""))


def _closed(out: Path, now_s: float) -> Iterator[tuple[Path, float]]:
    """(folder, age in s since it ended) of the watch's closed days in `out`."""
    for m in Path(out).glob("*-watch*/manifest.json"):
        try:
            man = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        end = man.get("ended_ns")
        if man.get("experiment") == "watch" and man.get("status") != "running" and end:
            yield m.parent, now_s - int(end) / 1e9


def tidy(out: Path, pack_after_s: float, keep_s: float, now_s: float | None = None
         ) -> tuple[list[Path], list[Path]]:
    """Pack the closed days that ended more than `pack_after_s` ago and remove those that ended
    more than `keep_s` ago (at `now_s`, Unix time; default now); (packed, removed)."""
    packed, gone = [], []
    for day, age in list(_closed(out, time.time() if now_s is None else now_s)):
        if age > keep_s:
            archive_of(day).unlink(missing_ok=True)
            shutil.rmtree(day, ignore_errors=True)
            gone.append(day)
        elif age > pack_after_s and (day / "samples").is_dir() and pack(day) is not None:
            packed.append(day)
    return packed, gone
