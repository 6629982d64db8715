"""`rackclock experiments [NAME|PATH]`: the experiments, their parameters and documentation.

An experiment is a module with a frozen `Params` dataclass (every field has a default: the
experiment runs with none given) and `run(bench, params)`. Those of the checkout live in
experiments/; any other file is run by its path (`rackclock run path/to/exp.py`).
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from dataclasses import MISSING, fields
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2] / "experiments"


def load_file(path: Path):
    """Import an experiment file from anywhere; a missing file or a module without Params/run is
    one line, not a traceback."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"no experiment file {path}")
    spec = importlib.util.spec_from_file_location(f"rackclock_experiment_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod           # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    missing = [a for a in ("Params", "run") if not hasattr(mod, a)]
    if missing:
        raise SystemExit(f"{path} is not an experiment: it defines no {' and no '.join(missing)}")
    return mod


def names() -> list[str]:
    return sorted(p.stem for p in CHECKOUT.glob("*.py") if not p.stem.startswith("_"))


def describe(mod) -> dict:
    """{doc, params: [(name, type, default, comment)]} of an experiment module."""
    doc = inspect.getdoc(mod) or ""
    src = inspect.getsource(mod.Params) if hasattr(mod, "Params") else ""
    comments = {}
    for line in src.splitlines():
        head, _, comment = line.partition("#")
        if ":" in head and comment:
            comments[head.split(":")[0].strip()] = comment.strip()
    params = []
    for f in fields(mod.Params):
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else "(required)")
        params.append((f.name, str(f.type), default, comments.get(f.name, "")))
    return {"doc": doc, "params": params}


def summary_lines() -> list[str]:
    """One line per experiment of the checkout: name and the first line of its documentation."""
    from bench.run.experiment import load_experiment
    out = []
    for n in names():
        try:
            doc = (inspect.getdoc(load_experiment(n)) or "").splitlines()
            out.append(f"  {n:<24} {doc[0] if doc else ''}")
        except Exception as exc:   # a broken experiment must not hide the others
            out.append(f"  {n:<24} (cannot be loaded: {exc!r})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock experiments",
                                 description="list the experiments, their parameters and documentation")
    ap.add_argument("experiment", nargs="?", help="one experiment's name or file: its full documentation")
    a = ap.parse_args(argv)
    from bench.run.experiment import load_experiment
    todo = [a.experiment] if a.experiment else names()
    for n in todo:
        mod = load_experiment(n)
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


if __name__ == "__main__":
    sys.exit(main())
