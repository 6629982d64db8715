"""No false alarms: pairs of runs of the unchanged default simulated rack, compared as a
firmware update would be. A pair of runs of one unchanged rack must never be REGRESSED; how many
come out UNDECIDED (exit 3) and which measures, is what the rack's tolerances can decide.

    .venv/bin/python benchmarks/false_alarms.py [--pairs 20] [--duration 60] [--experiment regression]
        [--devices bmc-1,pdu-2]

Prints per pair the outcome and exit status, then the counts: REGRESSED pairs (must be 0),
measures judged, decided and undecided over all pairs, per measure family.
"""
from __future__ import annotations

import argparse
import sys
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from racks import sim_rack_text  # noqa: E402
from spread import temp_dir  # noqa: E402

from bench.compare.verdicts import compare_runs, load_tolerances  # noqa: E402
from bench.model.rundata import load_run  # noqa: E402
from bench.run.experiment import run_experiment  # noqa: E402


def pair(root: Path, i: int, duration: str, experiment: str,
         rack: Path | None = None) -> tuple[Path, Path]:
    """Two runs of the default rack (or `rack`) at once (they share the load, as a lab's pair
    would not)."""
    out: dict[str, Path] = {}

    def go(tag: str) -> None:
        out[tag] = run_experiment(experiment, rack, root / f"{i}-{tag}",
                                  {"duration_s": duration}, quiet=True)
    ts = [threading.Thread(target=go, args=(t,)) for t in ("a", "b")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out["a"], out["b"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--duration", default="60")
    ap.add_argument("--experiment", default="regression")
    ap.add_argument("--devices", default=None, help="devices of the default rack (default: all)")
    a = ap.parse_args()
    tol = load_tolerances(None)
    verdicts: Counter = Counter()
    regressed = 0
    root = temp_dir("rackclock-false-alarms-")
    rack = None
    if a.devices:
        rack = root / "rack.toml"
        rack.write_text(sim_rack_text(a.devices.split(",")))
    for i in range(a.pairs):
        x, y = pair(root, i, a.duration, a.experiment, rack)
        cmp = compare_runs(load_run(x), load_run(y), tol)
        regressed += cmp.outcome == "REGRESSED"
        for r in cmp.judged:
            verdicts[(r.measure.split(".")[0]
                      + ("." + r.measure.rsplit(".", 1)[1] if r.measure.startswith("latency")
                         else ""), r.verdict)] += 1
        print(f"pair {i + 1}: {cmp.outcome} (exit {cmp.exit_status()}); failures: "
              + ("; ".join(f"{r.device} {r.measure} {r.verdict}" for r in cmp.failures)
                 or "none"), flush=True)
    print(f"\nREGRESSED pairs: {regressed} of {a.pairs} ({a.duration} s runs, {a.experiment})")
    for fam in sorted({f for f, _ in verdicts}):
        row = {v: n for (f, v), n in verdicts.items() if f == fam}
        print(f"  {fam}: " + ", ".join(f"{v} {n}" for v, n in sorted(row.items())))


if __name__ == "__main__":
    main()
