"""A restarted watch resumes its clocks' current segments from disk: the day folders of the same
rack file, newest first, give each clock its latest reads (up to the window the live fit keeps,
across as many days as it takes), so a restart alone never narrows the window and never widens
a bound. Only devices the rack file names now are resumed (a device removed stays removed).

The breaks already said are kept in `watch-breaks.json` beside the day folders (per clock the
counts by kind and the end of the latest break): a break found again in the resumed reads is not
raised again. A last day still marked `running` whose process is gone (a killed watch) is
summarised and marked `killed` (`rackclock summarize`'s own rule) by a child process, after the
endpoint is up."""
from __future__ import annotations

import logging
import subprocess
import sys
import tarfile
from pathlib import Path

from bench import saferead
from bench.model.store import write_json
from bench.watch.estimator import WINDOW
from bench.watch.retention import samples_rows

log = logging.getLogger(__name__)
BREAKS_FILE = "watch-breaks.json"
SUMMARY_TIMEOUT_S = 3600.0


def watch_days(out: Path, rack_file: str) -> list[tuple[int, Path, dict]]:
    """(started_ns, folder, manifest) of the watch's day folders of this rack file, newest first."""
    days = []
    for m in Path(out).glob("*-watch*/manifest.json"):
        try:
            man = saferead.load_object(m)
        except (OSError, ValueError):
            continue
        if man.get("experiment") == "watch" and man.get("rack_file") == rack_file:
            days.append((int(man.get("started_ns") or 0), m.parent, man))
    return sorted(days, key=lambda d: d[0], reverse=True)


def last_day(out: Path, rack_file: str) -> Path | None:
    days = watch_days(out, rack_file)
    return days[0][1] if days else None


def killed_days(out: Path, rack_file: str) -> list[Path]:
    """Days whose watch died without closing them (still `running`, their pid gone)."""
    from bench.resummarize import _alive
    return [p for _, p, m in watch_days(out, rack_file)
            if m.get("status") == "running" and not _alive(m.get("pid"))]


def summarize_killed(days: list[Path]) -> None:
    """`rackclock summarize DAY` in a child each (a day's fits are large; the watch stays flat),
    without the phase files, as a closed day (docs/WATCH.md, "Retention and disk")."""
    for day in days:
        try:
            r = subprocess.run([sys.executable, "-m", "bench.cli", "summarize", "--quiet",
                                "--no-phase", str(day)], cwd=Path(__file__).resolve().parents[2],
                               capture_output=True, text=True, timeout=SUMMARY_TIMEOUT_S)
            if r.returncode not in (0, 1):
                log.warning("watch: %s could not be summarised: %s", day,
                            (r.stderr.strip().splitlines() or ["?"])[-1])
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("watch: %s could not be summarised: %r", day, exc)


def _clocks_of(days, name: str) -> tuple[str, list[dict]] | None:
    for _, _, man in days:
        d = (man.get("devices") or {}).get(name) or {}
        if d.get("clocks"):
            return d.get("plane", ""), d["clocks"]
    return None


def _day_reads(day: Path, name: str, clocks) -> dict[str, list[tuple[int, int, int]]]:
    """Per clock the good reads of one day (from its folder or its archive), in time order."""
    got: dict[str, list] = {c: [] for c in clocks}
    for r in samples_rows(day, name):
        if r.get("kind") != "read" or r.get("status") != "ok" or r.get("clock") not in got:
            continue
        try:
            got[r["clock"]].append((int(r["s_ns"]), int(r["e_ns"]), int(r["value_ns"])))
        except (TypeError, ValueError):
            continue
    for reads in got.values():
        reads.sort()
    return got


def _reads(days, name: str, clocks: list[dict]) -> dict[str, list[tuple[int, int, int]]]:
    """Per clock its latest reads (oldest first), at most WINDOW, from the newest days back."""
    got: dict[str, list] = {c["name"]: [] for c in clocks}
    for _, day, _ in days:
        need = {cn for cn, have in got.items() if len(have) < WINDOW}
        if not need:
            break
        try:
            found = _day_reads(day, name, need)
        except (OSError, ValueError, EOFError, tarfile.TarError) as exc:
            log.warning("watch: %s: samples of %s unreadable, not resumed: %r", name, day, exc)
            continue
        for cn, reads in found.items():
            have = got[cn]
            have[:0] = reads[max(0, len(reads) - (WINDOW - len(have))):]
    return got


def resume(out: Path, rack_file: str, state, devices: set[str]) -> dict[str, int]:
    """Seed `state` from the day folders for the rack file's `devices`; {device: reads}."""
    days = watch_days(out, rack_file)
    done = {}
    for name in sorted(devices):
        found = _clocks_of(days, name)
        if found is None:
            continue
        plane, clocks = found
        state.define(name, plane, clocks)
        n = 0
        for cn, reads in _reads(days, name, clocks).items():
            n += state.resume_reads(name, cn, reads)
        done[name] = n
    state.restore_breaks(load_breaks(out))
    return done


def load_breaks(out: Path) -> dict:
    try:
        return saferead.load_object(Path(out) / BREAKS_FILE)
    except (OSError, ValueError):
        return {}


def save_breaks(out: Path, breaks: dict) -> None:
    write_json(Path(out) / BREAKS_FILE, breaks)
