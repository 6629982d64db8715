"""`rackclock fleet report FLEET`: the fleet at a glance. Per rack its host, status and run; per
plane and firmware version the distribution of offsets, drifts, latencies and breaks over every
rack's devices; with `--baseline OTHER_FLEET`, which racks regressed after a rollout: each rack's
run judged against the baseline fleet's run of the same rack exactly as `rackclock compare`
judges a pair (bench.compare.verdicts, the same tolerance file).

The values are the measures `rackclock compare` sets side by side (bench.compare.measures);
a distribution shows each measure's point values (min, median, max) and the median half-width
of their bounds, in the measure's unit. Writes FLEET/fleet.html (figure in FLEET/plots/).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from bench.compare.measures import Measure, identities, run_measures
from bench.compare.output import verdict_line
from bench.compare.verdicts import Comparison, compare_runs, fmt_value
from bench.fleet.fleet_verdict import fleet_exit, fleet_verdict, rack_verdict
from bench.fleet.gather import UNGATHERED, ensure_unpacked, left_behind, load_fleet_manifest
from bench.model.outcomes import FAIL, PASS
from bench.model.rundata import Run, load_run
from bench.model.texttable import WIDTH, fit_columns, left_out_lines, render, wrap

FAMILIES = ("offset", "drift", "latency", "breaks")


@dataclass(frozen=True)
class FleetRack:
    name: str
    record: dict                      # the rack's entry of fleet.json
    run: Run | None                   # None: the rack made no run folder (refused, crashed, ...)


@dataclass(frozen=True)
class Fleet:
    path: Path
    manifest: dict
    racks: tuple[FleetRack, ...]


@dataclass(frozen=True)
class Distribution:
    plane: str
    firmware: str
    measure: str                      # offset | drift | breaks | latency.<stimulus>
    unit: str
    points: tuple[float, ...]
    half_widths: tuple[float, ...]
    racks: tuple[str, ...]

    def stats(self) -> tuple[float, float, float]:
        p = np.asarray(self.points)
        return float(p.min()), float(np.median(p)), float(p.max())


def load_fleet(path: str | Path) -> Fleet:
    """A fleet folder read back; one whose command died without closing it (a lost head or
    driver) is `abandoned`, its ungathered racks with what they left (bench.fleet.gather)."""
    path = Path(path)
    manifest = load_fleet_manifest(path)
    if driver_gone(manifest):
        manifest = abandoned(path, manifest)
    racks = []
    for name, rec in manifest.get("racks", {}).items():
        run = None
        if rec.get("run_folder") and (path / rec["run_folder"] / "manifest.json").exists():
            run = load_run(ensure_unpacked(path / rec["run_folder"]))
        racks.append(FleetRack(name, rec, run))
    return Fleet(path, manifest, tuple(racks))


def driver_gone(manifest: dict) -> bool:
    """Whether fleet.json says `starting` or `running` but its command, on this host, is no
    longer alive (killed: by Ray when the head was lost, or SIGKILL). On another host: unknown,
    False."""
    import os
    import socket
    if manifest.get("status") not in ("starting", "running") or not isinstance(
            manifest.get("pid"), int):
        return False
    if (manifest.get("host") or {}).get("hostname") != socket.gethostname():
        return False
    try:
        os.kill(manifest["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:        # alive, someone else's
        return False
    return False


def abandoned(path: Path, manifest: dict) -> dict:
    """The manifest of a fleet whose command died: status `abandoned`; each rack it had not
    gathered says so, with what it left (bench.fleet.gather.left_behind)."""
    racks = {}
    for name, rec in manifest.get("racks", {}).items():
        if rec.get("status") in UNGATHERED:
            rec = left_behind(path, name, rec, f"not gathered: the fleet command (pid "
                                               f"{manifest['pid']}) ended while the rack was "
                                               f"{rec.get('status')}")
        racks[name] = rec
    return {**manifest, "status": "abandoned", "racks": racks}


def distributions(fleet: Fleet) -> list[Distribution]:
    """Per (plane, firmware, measure) every rack's device clocks' values."""
    groups: dict[tuple, list[tuple[str, Measure]]] = {}
    for fr in fleet.racks:
        if fr.run is not None and fr.run.summary.devices:
            for key, m in _grouped_measures(fr.run):
                groups.setdefault(key, []).append((fr.name, m))
    return [Distribution(plane, fw, name, unit, tuple(m.point for _, m in ms),
                         tuple((m.hi - m.lo) / 2 for _, m in ms),
                         tuple(sorted({r for r, _ in ms})))
            for (plane, fw, name, unit), ms in sorted(groups.items())]


def _grouped_measures(run) -> Iterator[tuple[tuple, Measure]]:
    """A run's judgeable measures of the FAMILIES, each with its group: (plane, firmware,
    measure, unit)."""
    ids = identities(run)
    for (device, _clock, name), m in run_measures(run).items():
        if name.split(".", 1)[0] in FAMILIES and m.judgeable:
            ident = ids.get(device, {})
            yield (ident.get("plane", ""), ident.get("firmware", "") or "?", name, m.unit), m


def rollout_verdicts(fleet: Fleet, baseline: Fleet, tolerances) -> dict[str, Comparison | str]:
    """Per rack of `fleet`: its comparison against the baseline fleet's run of the same rack,
    or why there is none."""
    base = {fr.name: fr for fr in baseline.racks}
    out: dict[str, Comparison | str] = {}
    for fr in fleet.racks:
        b = base.get(fr.name)
        if b is None:
            out[fr.name] = "not in the baseline fleet"
        elif b.run is None or fr.run is None:
            out[fr.name] = f"no run folder in the {'baseline' if b.run is None else 'candidate'}"
        else:
            out[fr.name] = compare_runs(b.run, fr.run, tolerances)
    return out


def rollout_word(c: Comparison | str) -> str:
    if isinstance(c, str):
        return "not compared"
    if c.failures:
        return "REGRESSED"
    return "UNDECIDED" if c.undecided else "unchanged"


def took(record: dict) -> str:
    """How long the rack's run probed, by its own manifest; else how long its task ran; '—'
    when it never ran (never the configured duration)."""
    for key, how in (("probed_s", ""), ("wall_s", " (task)")):
        if isinstance(record.get(key), (int, float)):
            return f"{record[key]:.1f} s{how}"
    return "—"


def rack_rows(fleet: Fleet) -> list[list[str]]:
    """One row per rack, in RACK_HEAD's order."""
    rows = []
    for fr in fleet.racks:
        r = fr.record
        fw = sorted({x.get("firmware") or "?" for x in identities(fr.run).values()}) if fr.run \
            else []
        word, why = rack_verdict(r)
        rows.append([fr.name, word, r.get("status", "?"), took(r), r.get("host") or "—",
                     (r.get("node_id") or "—")[:12], ", ".join(fw) or "—",
                     r.get("run_folder") or "—", why or "—"])
    return rows


RACK_HEAD = ["rack", "verdict", "status", "took", "host", "node", "firmware", "run folder",
             "reason"]
RACK_KEEP = [0, 1, 2, 8, 3, 7, 4, 6, 5]      # the columns in the order they are given room
REASON_FIT = 40      # the reason's room when columns are chosen (it is then clipped to fit)


def fitted(head: list[str], rows: list[list[str]], keep: list[int], width: int | None,
           clip: int) -> list[str]:
    """A table fitted to `width` (None: every column as wide as it is): columns kept in `keep`'s
    order while they fit, column `clip` given at most REASON_FIT columns when choosing and then
    clipped with '…' to the width; a note names the columns left to --wide."""
    if width is None:
        return render(head, rows, width=None)
    short = [r[:clip] + [r[clip][:REASON_FIT]] + r[clip + 1:] for r in rows]
    cols, left = fit_columns(head, short, keep, width)
    return render(head, rows, cols, width, clip=clip) + left_out_lines(left, width)


def rack_lines(fleet: Fleet, width: int | None = WIDTH) -> list[str]:
    """The fleet's verdict, the racks' table fitted to `width` (None: every column, as wide as
    it is), and in full the reason of each rack that did not pass."""
    word, why = fleet_verdict({fr.name: fr.record for fr in fleet.racks})
    lines = wrap(f"fleet verdict: {word}: {why}", width)
    rows = rack_rows(fleet)
    lines += fitted(RACK_HEAD, rows, RACK_KEEP, width, clip=8)
    for r in rows:
        if r[1] != PASS:
            lines += wrap(f"  {r[0]}: {r[1]}: {r[8]}", width, "    ")
    return lines


DIST_HEAD = ["plane", "firmware", "measure", "n", "racks", "min", "median", "max",
             "median ± bound"]
DIST_KEEP = [0, 1, 2, 6, 8, 5, 7, 3, 4]


def dist_rows(ds: list[Distribution]) -> list[list[str]]:
    out = []
    for d in ds:
        lo, med, hi = d.stats()
        out.append([d.plane, d.firmware, d.measure, str(len(d.points)), str(len(d.racks)),
                    fmt_value(lo, d.unit), fmt_value(med, d.unit), fmt_value(hi, d.unit),
                    "±" + fmt_value(float(np.median(d.half_widths)), d.unit)])
    return out


def rollout_lines(verdicts: dict[str, Comparison | str]) -> list[str]:
    lines = []
    for rack, c in verdicts.items():
        lines.append(f"  {rack}: " + (f"not compared: {c}" if isinstance(c, str)
                                       else verdict_line(c)))
    return lines


def text(fleet: Fleet, ds: list[Distribution], verdicts=None, baseline: Fleet | None = None,
         width: int | None = WIDTH) -> str:
    """The report for a terminal, its tables fitted to `width` (None: as wide as they are)."""
    m = fleet.manifest
    ray = m.get("ray") or {}
    lines = wrap(f"fleet {m.get('fleet')} ({fleet.path}): {m.get('status')}, "
                 f"{len(fleet.racks)} rack(s); ray {ray.get('version', '?')} "
                 f"{ray.get('mode', '')} at {ray.get('address', '?')}", width) + [""]
    lines += rack_lines(fleet, width)
    lines += ["", "per plane and firmware: point values over every rack's devices"]
    lines += fitted(DIST_HEAD, dist_rows(ds), DIST_KEEP, width, clip=2) if ds else \
        ["  (no rack has a summary)"]
    if verdicts is not None and baseline is not None:
        lines += ["", f"rollout against the baseline fleet {baseline.path}:"]
        lines += [x for ln in rollout_lines(verdicts) for x in wrap(ln, width, "    ")]
    return "\n".join(lines)


def report_exit(fleet: Fleet, verdicts=None, allow_undecided: bool = False) -> int:
    """`fleet report`'s exit status by the one exit table: the fleet's verdict, FAIL too when a
    rack regressed against the baseline."""
    word, _ = fleet_verdict({fr.name: fr.record for fr in fleet.racks})
    if verdicts and any(rollout_word(c) == "REGRESSED" for c in verdicts.values()):
        word = FAIL
    return fleet_exit(word, allow_undecided)


def figure(ds: list[Distribution], families=("offset", "drift", "latency", "breaks")):
    """One panel per measure family: each (plane, firmware) group's points, x the group."""
    import matplotlib.pyplot as plt

    from bench.output.figures import COLUMN_IN, print_style

    present = [f for f in families if any(d.measure.split(".")[0] == f for d in ds)]
    with print_style():
        fig, axes = plt.subplots(1, max(1, len(present)), squeeze=False,
                                 figsize=(COLUMN_IN * 2, 2.2))
        for ax, fam in zip(axes.ravel(), present):
            _family_panel(ax, fam, [d for d in ds if d.measure.split(".")[0] == fam])
        fig.suptitle("Fleet: point values of every rack's device clocks", fontsize=7)
        fig.tight_layout()
    return fig


def _family_panel(ax, fam: str, sub: list[Distribution]) -> None:
    """One measure family's panel: each (plane, firmware) group's points, x the group."""
    from bench.output.figures import unit_for
    from bench.output.plots import plane_colour
    unit = sub[0].unit
    sc = 1.0
    if unit == "ns":
        sc, unit = unit_for([p for d in sub for p in d.points])
    for i, d in enumerate(sub):
        ax.plot(np.full(len(d.points), i), np.asarray(d.points) / sc, "o", ms=3,
                alpha=0.7, color=plane_colour(d.plane))
    ax.set_xticks(range(len(sub)))
    ax.set_xticklabels([f"{d.plane} {d.firmware}" + (f"\n{d.measure.split('.', 1)[1]}"
                                                     if "." in d.measure else "")
                        for d in sub], rotation=60, ha="right")
    ax.set_ylabel(f"{fam} ({unit})")
    ax.set_title(f"{fam} per plane and firmware")
    ax.grid(alpha=0.3)


def html(fleet: Fleet, ds: list[Distribution], verdicts=None, baseline: Fleet | None = None) \
        -> Path:
    """FLEET/fleet.html, with the report's style and helpers (bench.output)."""
    from bench.output.report_html import CSS
    from bench.output.report_sections import esc, figure_html, note_html, table_html

    m = fleet.manifest
    ray = m.get("ray") or {}
    word, why = fleet_verdict({fr.name: fr.record for fr in fleet.racks})
    parts = [note_html(f"fleet verdict: {word}: {why}"),
             note_html(f"{len(fleet.racks)} rack(s), status {m.get('status')}; Ray "
                       f"{ray.get('version', '?')} ({ray.get('mode', '')}, "
                       f"{ray.get('address', '?')}); git {(m.get('git') or {}).get('revision')}"),
             "<h2>Racks</h2>", table_html(RACK_HEAD, rack_rows(fleet)),
             "<h2>Per plane and firmware</h2>",
             table_html(DIST_HEAD, dist_rows(ds)) if ds else note_html("no rack has a summary")]
    if ds:
        parts.append(figure_html(SimpleNamespace(path=fleet.path, formats=("png", "svg")),
                                 figure(ds), "fleet", "Every rack's device clocks, per plane and "
                                 "firmware version (colour: plane)."))
    if verdicts is not None and baseline is not None:
        parts += [f"<h2>Rollout against {esc(baseline.path)}</h2>",
                  table_html(["rack", "verdict", "detail"],
                             [[rack, rollout_word(c), c if isinstance(c, str) else
                               verdict_line(c)] for rack, c in verdicts.items()])]
    title = f"rackclock fleet {m.get('fleet')} {m.get('fleet_id', '')}"
    doc = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{esc(title)}"
           f"</title><style>{CSS}</style></head><body><h1>{esc(title)}</h1>"
           + "\n".join(parts) + "</body></html>\n")
    from bench import safeio
    return safeio.write_text(fleet.path / "fleet.html", doc)


def as_dict(fleet: Fleet, ds: list[Distribution], verdicts=None) -> dict:
    from bench.compare.output import as_dict as comparison_dict
    word, why = fleet_verdict({fr.name: fr.record for fr in fleet.racks})
    return {"fleet": str(fleet.path), "verdict": word, "reason": why,
            "racks": {fr.name: {**fr.record, **dict(zip(("verdict", "reason"),
                                                        rack_verdict(fr.record)))}
                      for fr in fleet.racks},
            "distributions": [{"plane": d.plane, "firmware": d.firmware, "measure": d.measure,
                               "unit": d.unit, "points": list(d.points),
                               "half_widths": list(d.half_widths), "racks": list(d.racks)}
                              for d in ds],
            "rollout": None if verdicts is None else {
                rack: {"verdict": rollout_word(c), **({"reason": c} if isinstance(c, str)
                                                      else {"comparison": comparison_dict(c)})}
                for rack, c in verdicts.items()}}


def write_json(path: Path, data: dict) -> None:
    from bench import safeio
    safeio.write_text(path, json.dumps(data, indent=1, default=str) + "\n")
