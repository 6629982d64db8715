"""The watch's day folders on disk: a closed day is packed once it is summarised, and removed
after KEEP_DAYS (--keep).

Packing follows the fleet's convention (bench/fleet/gather.ensure_unpacked): the whole day
folder goes into `<day>.tar.gz` beside it, and the folder keeps its small files (manifest,
summary, events, reference health, bounds) while its `samples/` go; `ensure_unpacked(day)` (and
`tar xzf <day>.tar.gz`) brings them back. The archive is written through bench/safeio.py (a
fresh temporary file, fsynced, renamed into place) from the day's files read through
bench/saferead.py, and read back member by member in memory (saferead.open_archive), never
unpacked to disk: the mapping service reads a packed day's samples from it (PackedRun,
bench/watch/mapping.py), the resume its latest reads (samples_rows, bench/watch/resume.py).
"""
from __future__ import annotations

import logging
import os
import shutil
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench import safeio, saferead
from bench.model.rundata import Run, Samples, load_run, load_samples

log = logging.getLogger(__name__)
KEEP_DAYS = 90.0          # day folders (and their archives) older than this are removed
PACK_AFTER_DAYS = 1.0     # closed days older than this are packed (yesterday stays as it is)


def archive_of(day: Path) -> Path:
    return day.with_name(day.name + ".tar.gz")


def pack(day: Path) -> Path | None:
    """`<day>.tar.gz` of the whole closed day (written aside, then renamed), then its samples
    removed from the folder; None when it cannot (the day is left as it was)."""
    day = Path(day)
    tar_path = archive_of(day)
    if not (day / "samples").is_dir():
        return tar_path if tar_path.exists() else None
    try:
        with safeio.atomic(tar_path) as f, \
                tarfile.open(fileobj=f, mode="w:gz", compresslevel=6) as tar:
            _add_tree(tar, day, day.name)
    except (OSError, ValueError, tarfile.TarError) as exc:
        log.warning("watch: %s not packed: %s", day, getattr(exc, "strerror", None) or exc)
        return None
    shutil.rmtree(day / "samples", ignore_errors=True)
    return tar_path


def _add_tree(tar: tarfile.TarFile, folder: Path, arcname: str) -> None:
    """`folder` into `tar` as `arcname`, in name order: its folders, and its regular files read
    through bench/saferead.py (a symlink or anything else is left out, and said)."""
    tar.addfile(tar.gettarinfo(str(folder), arcname))
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            _add_tree(tar, folder / e.name, f"{arcname}/{e.name}")
        elif e.is_file(follow_symlinks=False):
            with saferead.open_regular(folder / e.name, cap=saferead.CAPS["samples"]) as f:
                ti = tar.gettarinfo(arcname=f"{arcname}/{e.name}", fileobj=f)
                # a regular file (fstat said so) even when another name links it
                ti.type, ti.linkname, ti.size = tarfile.REGTYPE, "", os.fstat(f.fileno()).st_size
                tar.addfile(ti, f)
        else:
            log.warning("watch: %s is not a regular file: not packed", folder / e.name)


def _member(day: Path, device: str) -> str:
    return f"{day.name}/samples/{device}.csv"


def samples_rows(day: Path, device: str) -> Iterator[dict[str, str]]:
    """The rows of a day's samples/<device>.csv, from the folder or from its archive (read
    through bench/saferead.py: a line that is no row is skipped)."""
    day = Path(day)
    p = day / "samples" / f"{device}.csv"
    if p.exists():
        yield from saferead.csv_rows(p)
        return
    tar_path = archive_of(day)
    if not tar_path.exists():
        return
    with saferead.open_archive(tar_path) as ar:
        f = ar.member(_member(day, device))
        if f is not None:
            with f:
                yield from saferead.csv_rows_of(f)


@dataclass(frozen=True)
class PackedRun(Run):
    """A packed day read back: its documents from the folder, its samples from the archive,
    streamed (bench.saferead.Archive). Inside `with run.reading():` one open archive serves
    every device (one scan lists them, one more reads them in the archive's name order);
    outside it each call opens the archive anew."""
    archive: Path = Path()
    _open: list[saferead.Archive] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def of(cls, day: Path) -> PackedRun:
        run = load_run(day)
        return cls(run.path, run.manifest, run.summary, run.truth, archive_of(Path(day)))

    @contextmanager
    def reading(self) -> Iterator[PackedRun]:
        with saferead.open_archive(self.archive) as ar:
            self._open.append(ar)
            try:
                yield self
            finally:
                self._open.remove(ar)

    @contextmanager
    def _archive(self) -> Iterator[saferead.Archive]:
        if self._open:
            yield self._open[-1]
        else:
            with saferead.open_archive(self.archive) as ar:
                yield ar

    @property
    def devices(self) -> list[str]:
        head = f"{self.path.name}/samples/"
        with self._archive() as ar:
            names = ar.names()
        return sorted(n[len(head):-len(".csv")] for n in names if n.startswith(head)
                      and n.endswith(".csv") and "/" not in n[len(head):])

    def samples(self, device: str) -> Samples:
        with self._archive() as ar:
            f = ar.member(_member(self.path, device))
            if f is None:
                raise FileNotFoundError(f"{self.archive}: no samples of {device}")
            with f:
                return load_samples(self.path / "samples" / f"{device}.csv", f)


def _closed(out: Path, now_s: float) -> Iterator[tuple[Path, float]]:
    """(folder, age in s since it ended) of the watch's closed days in `out`."""
    for m in Path(out).glob("*-watch*/manifest.json"):
        try:
            man = saferead.load_object(m)
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
