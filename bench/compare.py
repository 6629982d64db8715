"""`rackclock compare BASELINE CANDIDATE`: what changed between two runs, e.g. before and after a
firmware update, with a verdict only where the bounds prove a change.

Identity and firmware differences come first. Then per device and measure (bench.compare_measures)
both values with their bounds, the change, the tolerance (bench/compare_tolerances.toml explains
the rules and which measures are comparable run to run) and the verdict:

  regressed / improved   bounds disjoint by more than the tolerance (worse / better)
  changed                the same, for a measure with no better direction (drift, offset)
  lost                   bounded in the baseline, not in the candidate (e.g. no log entry)
  changed within tolerance, no proven change, unchanged (within tolerance), new,
  not compared                                                     (pass)

Exit status 1 when any judged measure regressed, changed or was lost; 0 otherwise; 2 on bad input.
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.compare_config import Tolerances, ToleranceError, tolerances_from_dict
from bench.compare_measures import Measure, identities, run_measures
from bench.rundata import Run, load_run

DEFAULT_TOLERANCES = Path(__file__).with_name("compare_tolerances.toml")
FAILING = ("regressed", "changed", "lost")


@dataclass(frozen=True)
class Row:
    device: str
    clock: str
    measure: str
    unit: str
    baseline: Measure | None
    candidate: Measure | None
    tolerance: float | None
    verdict: str
    reason: str = ""

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate.point - self.baseline.point

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING


@dataclass(frozen=True)
class Comparison:
    baseline: Run
    candidate: Run
    identity_changes: list = field(default_factory=list)   # [(device, what, before, after)]
    notes: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    tolerances: str = ""

    @property
    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.failed]

    @property
    def exit_status(self) -> int:
        return 1 if self.failures else 0


def load_tolerances(path: str | Path | None) -> Tolerances:
    p = Path(path) if path else DEFAULT_TOLERANCES
    try:
        return tolerances_from_dict(tomllib.loads(p.read_text()), str(p))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ToleranceError(f"{p}: {exc}") from None


def verdict(b: Measure | None, c: Measure | None, rule) -> tuple[str, float | None, str]:
    """(verdict, tolerance used, reason) for one measure in both runs."""
    if b is None and c is None:
        return "not compared", None, "in neither run"
    if not rule.judge:
        return "not compared", None, "not judged (tolerance file)"
    if b is None:
        return "new", None, "not bounded in the baseline"
    if c is None:
        return "lost", None, "bounded in the baseline, not in the candidate"
    if not (b.judgeable and c.judgeable):
        return "not compared", None, b.note or c.note
    tol = rule.allowed(b.point)
    gap = max(c.lo - b.hi, b.lo - c.hi)          # > 0: the bound intervals are disjoint
    if gap > tol:
        up = c.lo > b.hi
        if rule.direction == "any":
            return "changed", tol, f"bounds disjoint by {gap:.6g} {b.unit}"
        return ("regressed" if up else "improved"), tol, f"bounds disjoint by {gap:.6g} {b.unit}"
    if gap > 0:
        return "changed within tolerance", tol, f"bounds disjoint by {gap:.6g} {b.unit}"
    if b.basis == c.basis == "exact" and b.point == c.point:
        return "unchanged", tol, "exact and equal"
    if max(c.hi - b.lo, b.hi - c.lo) <= tol:
        return "unchanged within tolerance", tol, "every value in both bounds is within tolerance"
    return "no proven change", tol, "bounds overlap"


def _identity_changes(a: Run, b: Run) -> list[tuple[str, str, str, str]]:
    ia, ib = identities(a), identities(b)
    out = []
    for dev in sorted(set(ia) | set(ib)):
        if dev not in ib:
            out.append((dev, "device", "present", "absent"))
            continue
        if dev not in ia:
            out.append((dev, "device", "absent", "present"))
            continue
        for k in ("firmware", "vendor", "model", "serial", "plane", "error"):
            if ia[dev].get(k, "") != ib[dev].get(k, ""):
                out.append((dev, k, ia[dev].get(k, ""), ib[dev].get(k, "")))
    return out


def _run_notes(a: Run, b: Run) -> list[str]:
    ma, mb = a.manifest, b.manifest
    notes = []
    for key, label in (("experiment", "experiment"), ("parameters", "parameters"),
                       ("simulated", "simulated")):
        if ma.get(key) != mb.get(key):
            notes.append(f"{label} differ: {ma.get(key)} -> {mb.get(key)}")
    da, db = ma.get("duration_s"), mb.get("duration_s")
    if da and db and abs(da - db) > 0.2 * max(da, db):
        notes.append(f"durations differ ({da} s -> {db} s): counts of breaks and the width of "
                     f"bounds depend on it")
    ga = ma.get("reference", {}).get("grade")
    gb = mb.get("reference", {}).get("grade")
    if ga != gb:
        notes.append(f"reference grade differs: {ga} -> {gb}")
    for run, label in ((a, "baseline"), (b, "candidate")):
        if run.manifest.get("status") != "completed":
            notes.append(f"{label} run did not complete (status {run.manifest.get('status')})")
        if not run.summary:
            notes.append(f"{label} run has no summary.json")
    return notes


def compare_runs(baseline: Run, candidate: Run, tolerances: Tolerances) -> Comparison:
    mb, mc = run_measures(baseline), run_measures(candidate)
    planes = {**{d: x["plane"] for d, x in identities(baseline).items()},
              **{d: x["plane"] for d, x in identities(candidate).items()}}
    rows = []
    for key in sorted(set(mb) | set(mc)):
        device, clock, name = key
        b, c = mb.get(key), mc.get(key)
        rule = tolerances.rule(name, device, planes.get(device, ""))
        v, tol, why = verdict(b, c, rule)
        unit = (b or c).unit
        rows.append(Row(device, clock, name, unit, b, c, tol, v, why))
    return Comparison(baseline, candidate, _identity_changes(baseline, candidate),
                      _run_notes(baseline, candidate), rows, tolerances.source)


def main(argv: list[str] | None = None) -> int:
    from bench import compare_output as out

    ap = argparse.ArgumentParser(
        prog="rackclock compare",
        description="compare two runs (e.g. before and after a firmware update); exit 1 when a "
                    "measure regressed beyond its tolerance")
    ap.add_argument("baseline", type=Path, help="run folder of the baseline")
    ap.add_argument("candidate", type=Path, help="run folder of the candidate")
    ap.add_argument("--tolerances", type=Path, default=None,
                    help=f"tolerance file (default: {DEFAULT_TOLERANCES.name} beside this module)")
    ap.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown report")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write JSON")
    ap.add_argument("--junit", type=Path, metavar="FILE",
                    help="also write JUnit XML (one testcase per device and measure)")
    ap.add_argument("--all", action="store_true",
                    help="terminal table: show every measure (default: hide 'not compared' rows)")
    a = ap.parse_args(argv)
    try:
        tol = load_tolerances(a.tolerances)
        cmp = compare_runs(load_run(a.baseline), load_run(a.candidate), tol)
    except (FileNotFoundError, ToleranceError) as exc:
        print(f"rackclock compare: {exc}", file=sys.stderr)
        return 2
    print(out.terminal(cmp, show_all=a.all))
    if a.markdown:
        a.markdown.write_text(out.markdown(cmp))
    if a.json:
        a.json.write_text(out.to_json(cmp))
    if a.junit:
        a.junit.write_text(out.junit(cmp))
    return cmp.exit_status


if __name__ == "__main__":
    sys.exit(main())
