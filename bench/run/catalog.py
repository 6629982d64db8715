"""The experiments, their parameters and documentation (listed by `rackclock experiments`,
bench/commands/experiments.py).

An experiment is a module with a frozen `Params` dataclass (every field has a default: the
experiment runs with none given) and `run(bench, params)`. Those of the checkout live in
experiments/; any other file is run by its path (`rackclock run path/to/exp.py`).
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import sys
import textwrap
import tokenize
from dataclasses import MISSING, fields
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.config.keys import InventoryError, did_you_mean

CHECKOUT = Path(__file__).resolve().parents[2] / "experiments"


def load_file(path: Path) -> ModuleType:
    """Import an experiment file from anywhere; a missing file or a module without Params/run is
    one line, not a traceback."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"no experiment file {path}")
    spec = importlib.util.spec_from_file_location(f"rackclock_experiment_{path.stem}", path)
    if spec is None or spec.loader is None:         # no loader for the suffix (not a .py file)
        raise SystemExit(f"{path} is not an experiment: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod           # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    missing = [a for a in ("Params", "run") if not hasattr(mod, a)]
    if missing:
        raise SystemExit(f"{path} is not an experiment: it defines no {' and no '.join(missing)}")
    return mod


def names() -> list[str]:
    return sorted(p.stem for p in CHECKOUT.glob("*.py") if not p.stem.startswith("_"))


def load_experiment(name: str) -> ModuleType:
    """`experiments.NAME` of the checkout, or an experiment file anywhere (`path/to/exp.py`)."""
    if name.endswith(".py") or "/" in name:
        return load_file(Path(name))
    try:
        return importlib.import_module(f"experiments.{name}")
    except ModuleNotFoundError as exc:
        if exc.name in (f"experiments.{name}", "experiments"):
            raise InventoryError(f"no experiment {name!r}{did_you_mean(name, names())}") from None
        raise


def describe(mod: ModuleType) -> dict[str, Any]:
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


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, whole (lines joined)."""
    para = " ".join(doc.split("\n\n", 1)[0].split())
    m = re.search(r"[.?!:](\s|$)(?=[A-Z(`]|$)", para[para.find(":") + 1:] if ": " in para[:40]
                  else para)
    if not m:
        return para
    off = para.find(":") + 1 if ": " in para[:40] else 0
    return para[:off + m.end()].strip()


def module_docstring(path: Path) -> str:
    """A module's docstring (cleaned as ast.get_docstring does) from its first tokens: the file
    is not compiled, so `rackclock --help` lists every experiment quickly."""
    with tokenize.open(path) as f:
        for tok in tokenize.generate_tokens(f.readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                continue
            if tok.type != tokenize.STRING or "f" in tok.string.split(tok.string[-1])[0].lower():
                return ""
            doc = ast.literal_eval(tok.string)
            return inspect.cleandoc(doc) if isinstance(doc, str) else ""
    return ""


def summary_lines(width: int = 100) -> list[str]:
    """Per experiment of the checkout: its name and the first sentence of its documentation,
    whole, wrapped to `width`."""
    out = []
    for n in names():
        try:                       # read, not imported: `rackclock --help` stays quick
            text = first_sentence(module_docstring(CHECKOUT / f"{n}.py"))
        except (OSError, SyntaxError, ValueError, tokenize.TokenError) as exc:
            text = f"(cannot be read: {exc!r})"      # a broken one must not hide the others
        out += textwrap.wrap(f"{n:<24} {text}", width, initial_indent="  ",
                             subsequent_indent=" " * 27) or [f"  {n}"]
    return out
