"""No import cycle among the modules of bench/, drivers/ and experiments/: every import counts,
those inside functions included (a function-level import hides a cycle, it does not cut it). The
imports are read with `ast` (tests/test_layers.py's reader), the graph's strongly connected
components found with Tarjan's algorithm; a component of more than one module is a cycle.

An import of a package's module counts as an edge to that module, not to the package's
__init__ (which Python also runs, but ours hold no imports back into their modules)."""
from __future__ import annotations

import sys
from pathlib import Path

from test_layers import imports

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("bench", "drivers", "experiments")


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """module name -> (its file, is a package)."""
    out = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            is_package = rel.name == "__init__"
            out[".".join(rel.parts[:-1] if is_package else rel.parts)] = (path, is_package)
    return out


def graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (at any depth in its source)."""
    mods = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_package) in mods.items():
        for _, target in imports(m, path.read_text(), is_package):
            while target and target not in mods:     # `from a import name`: the module a
                target = target.rpartition(".")[0]
            if target and target != m:
                edges[m].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def test_no_import_cycle():
    found = cycles(graph(ROOT))
    assert not found, "import cycles (move the shared helper down):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_a_cycle_is_found_lazy_imports_included():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_planted_function_level_import_makes_a_cycle(tmp_path):
    for top in TOPS:
        (tmp_path / top).mkdir()
        (tmp_path / top / "__init__.py").write_text("")
    (tmp_path / "bench" / "low.py").write_text("def f():\n    from bench.high import g\n")
    (tmp_path / "bench" / "high.py").write_text("from bench import low\n\ndef g():\n    pass\n")
    (tmp_path / "drivers" / "x.py").write_text("from bench.low import f\n")
    assert cycles(graph(tmp_path)) == [["bench.high", "bench.low"]]


if __name__ == "__main__":           # python tests/test_import_cycles.py: list the cycles
    print("\n".join(" <-> ".join(c) for c in cycles(graph(ROOT))) or "no cycles")
    sys.exit(0)
