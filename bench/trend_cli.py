"""`rackclock trend`: measures of three or more runs side by side, with a figure (bench.output.trend). The
command's arguments; the library is imported once they are parsed (bench/cli.py finds this module only
when the command runs)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench import safeio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock trend",
                                 description="measures of more than two runs side by side, in "
                                             "time order, with a figure")
    ap.add_argument("runs", type=Path, nargs="+", help="run folders (three or more)")
    ap.add_argument("--tolerances", type=Path, default=None, help="tolerance file (as compare)")
    ap.add_argument("--figure", type=Path, default=None,
                    help="figure file (.png, .svg or .pdf; default: trend.png in the newest "
                         "run's folder)")
    ap.add_argument("--max-panels", type=int, default=24,
                    help="panels in the figure (default 24; regressions first; the rest are "
                         "said, never dropped silently)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write JSON")
    ap.add_argument("--all", action="store_true", help="show measures that are not judged")
    ap.add_argument("--as-given", action="store_true",
                    help="keep the runs in the order given (default: by start time)")
    a = ap.parse_args(argv)
    # the library after the arguments: `rackclock trend --help` stays quick
    from bench.compare.tolerances import ToleranceError
    from bench.compare.verdicts import FAILING, load_tolerances
    from bench.model.rundata import load_run
    from bench.output import figures
    from bench.output.trend import _started, as_dict, figure, panels, text, trends

    if len(a.runs) < 3:
        print("rackclock trend: give three or more runs (two: rackclock compare)",
              file=sys.stderr)
        return 2
    try:
        tol = load_tolerances(a.tolerances)
        runs = [load_run(p) for p in a.runs]
        runs = runs if a.as_given else sorted(runs, key=_started)
    except (FileNotFoundError, ToleranceError) as exc:
        print(f"rackclock trend: {exc}", file=sys.stderr)
        return 2
    ts = trends(runs, tol)
    print(text(runs, ts, a.all))
    fig = figure(runs, ts, max_panels=max(1, a.max_panels))
    out = a.figure or runs[-1].path / "trend.png"
    paths, _ = figures.save(fig, out.parent, out.stem, (out.suffix[1:] or "png",))
    n = len(panels(ts))
    left = f" ({min(n, a.max_panels)} of {n} measures; --max-panels {n} draws all)" \
        if n > a.max_panels else ""
    print(f"figure: {paths[0]}{left}")
    if a.json:
        safeio.write_text(a.json, json.dumps(as_dict(runs, ts), indent=1) + "\n")
    return 1 if any(t.overall in FAILING for t in ts) else 0


if __name__ == "__main__":
    sys.exit(main())
