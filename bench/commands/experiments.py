"""`rackclock experiments [NAME|PATH]`: the experiments, their parameters and documentation
(bench/run/catalog.py)."""
from __future__ import annotations

import argparse
import sys

from bench.config.keys import InventoryError
from bench.run.catalog import describe, load_experiment, names

HELP = "the experiments, their parameters and documentation"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock experiments",
                                 description="list the experiments, their parameters and documentation")
    ap.add_argument("experiment", nargs="?", help="one experiment's name or file: its full documentation")
    a = ap.parse_args(argv)
    todo = [a.experiment] if a.experiment else names()
    for n in todo:
        try:
            mod = load_experiment(n)
        except (InventoryError, SystemExit) as exc:     # one line, never a traceback
            print(f"rackclock experiments: {exc}", file=sys.stderr)
            return 2
        d = describe(mod)
        lines = d["doc"].splitlines()
        print(f"{n}: {lines[0] if lines else ''}")
        if a.experiment:
            for ln in lines[1:]:
                print(f"  {ln}".rstrip())
        for name, typ, default, comment in d["params"]:
            print(f"    {name + '=' + str(default):<28} {typ:<14} {comment}".rstrip())
        print()
    print("run one: rackclock run NAME [--param KEY=VALUE ...]; a file anywhere: rackclock run "
          "path/to/exp.py")
    return 0
