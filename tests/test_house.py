"""House rules ruff cannot check, read from the tree with `ast`:

- every function in bench/ and drivers/ is at most 60 lines (decorators excluded, its body to its
  last line included); the ones still over while their splits are in flight are LONG_FUNCTIONS,
  one named function each (the lead removes entries as splits merge; an entry that is no longer
  needed fails, so the list only shrinks);
- no two modules in bench/ and drivers/ share a file name (issue 44: names by role; an emulator
  is NAME_emu.py beside its driver NAME.py, a library beside its command is named for its role);
- `print` only in the command modules (bench/cli.py and bench/commands/, as the CLI lists them)
  and the run's own terminal output (COMMAND_FUNCTIONS); library code logs or returns text.

Cyclomatic complexity is ruff's C901 (pyproject.toml: max-complexity 15, its per-file-ignores)
and radon's ranks (tests/test_complexity.py).
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("bench", "drivers")
MAX_LINES = 60

# path:qualified name -> its length when listed (issue 32: split in flight on another branch)
LONG_FUNCTIONS: dict[str, int] = {}

# the modules of the command line, which decide what reaches the terminal: bench/cli.py and the
# command modules as the CLI finds them (bench.commands.names(): no second list)
def command_modules(root: Path) -> set[str]:
    from bench.commands import names
    return {"bench/cli.py"} | {f"bench/commands/{n}.py" for n in names(root / "bench" / "commands")}


# the run's own terminal output (quiet=False: the `rackclock run` command's; tests pass quiet=True)
COMMAND_FUNCTIONS = {"bench/run/experiment.py:_ended_early", "bench/run/experiment.py:_say_end",
                     "bench/run/rackless.py:RacklessBench.say", "bench/run/rackless.py:run_rackless"}


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every function, nested ones and methods included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


@functools.cache
def _parsed(root: Path) -> tuple[tuple[str, ast.AST], ...]:
    return tuple((path.relative_to(root).as_posix(), ast.parse(path.read_text()))
                 for top in TOPS for path in sorted((root / top).rglob("*.py")))


def sources(root: Path) -> Iterator[tuple[str, ast.AST]]:
    yield from _parsed(root)


def long_functions(root: Path) -> dict[str, int]:
    """path:qualified name -> lines, of every function over MAX_LINES."""
    out = {}
    for rel, tree in sources(root):
        for name, node in functions(tree):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_LINES:
                out[f"{rel}:{name}"] = n
    return out


def prints(root: Path) -> list[str]:
    """path:line (function) of every print call outside the command modules and functions."""
    found = []
    commands = command_modules(root)
    for rel, tree in sources(root):
        if rel in commands:
            continue
        inside = {}                 # print node -> the outermost function holding it
        for name, node in functions(tree):
            for sub in ast.walk(node):
                inside.setdefault(sub, name)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "print"):
                where = f"{rel}:{inside.get(node, '<module>')}"
                if where not in COMMAND_FUNCTIONS:
                    found.append(f"{rel}:{node.lineno} ({inside.get(node, 'module level')})")
    return found


def test_no_function_over_60_lines():
    found = long_functions(ROOT)
    new = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS}
    assert not new, ("functions over 60 lines (split them into named steps): "
                     + ", ".join(f"{k} ({v})" for k, v in sorted(new.items())))


def test_the_long_function_list_only_shrinks():
    found = long_functions(ROOT)
    stale = sorted(k for k in LONG_FUNCTIONS if k not in found)
    assert not stale, "now within 60 lines (remove from LONG_FUNCTIONS): " + ", ".join(stale)
    grown = sorted(k for k, v in LONG_FUNCTIONS.items() if found[k] > v)
    assert not grown, "grew since listed: " + ", ".join(f"{k} ({found[k]})" for k in grown)


def test_library_code_does_not_print():
    found = prints(ROOT)
    assert not found, "print in library code (log, or return the text to the command):\n" + \
        "\n".join(found)


def test_the_listed_places_exist():
    """Every listed module and function is in the tree (a rename must update the lists)."""
    names = {f"{rel}:{name}" for rel, tree in sources(ROOT) for name, _ in functions(tree)}
    assert COMMAND_FUNCTIONS <= names, COMMAND_FUNCTIONS - names


def test_the_command_modules_are_the_clis_and_each_declares_its_command():
    """The print rule's command modules are what `rackclock` dispatches to: every one declares
    its HELP and a main(argv), and `rackclock --help` lists exactly them."""
    import ast
    import contextlib
    import io

    from bench import cli
    from bench.commands import commands

    found = commands()
    assert len(found) >= 13 and "run" in found and "check" in found, found
    for name in found:
        tree = dict(sources(ROOT))[f"bench/commands/{name}.py"]
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), name
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main(["--help"])
    listed = out.getvalue().split("{", 1)[1].split("}", 1)[0].split(",")
    assert listed == list(found), listed


def shared_names(root: Path) -> dict[str, list[str]]:
    """file name -> its paths, for every module name (packages' __init__.py aside) held twice."""
    where: dict[str, list[str]] = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            if path.name != "__init__.py":
                where.setdefault(path.name, []).append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_no_two_modules_share_a_name():
    assert not shared_names(ROOT), "modules sharing a name (name each for its role): " + \
        "; ".join(", ".join(paths) for paths in shared_names(ROOT).values())


def test_the_checks_catch_a_planted_violation(tmp_path):
    """Not vacuous: a long function and a print planted in a copy of a library module fail."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "drivers").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    (tmp_path / "bench" / "lib.py").write_text(
        "class C:\n    def long(self):\n" + body.replace("    ", "        ")
        + "def short():\n    print('hi')\n")
    (tmp_path / "bench" / "cli.py").write_text("def main():\n    print('ok')\n")
    (tmp_path / "bench" / "commands").mkdir()
    (tmp_path / "bench" / "commands" / "hello.py").write_text("HELP = 'hi'\nprint('ok')\n")
    assert long_functions(tmp_path) == {"bench/lib.py:C.long": MAX_LINES + 1}
    assert prints(tmp_path) == [f"bench/lib.py:{MAX_LINES + 4} (short)"]
    (tmp_path / "drivers" / "lib.py").write_text("X = 1\n")
    assert shared_names(tmp_path) == {"lib.py": ["bench/lib.py", "drivers/lib.py"]}


def test_the_installed_top_level_names_are_the_documented_ones():
    """README's install section names the distribution's top-level packages: exactly these."""
    import importlib.metadata
    import tomllib

    documented = {"bench", "drivers", "experiments"}
    readme = (ROOT / "README.md").read_text()
    assert "Installed names:" in readme, "README's install section names the installed packages"
    said = readme.split("Installed names:", 1)[1].split("\n\n", 1)[0]
    assert all(f"`{n}`" in said for n in documented), said
    top = importlib.metadata.distribution("rackclock").read_text("top_level.txt")
    assert top is not None and set(top.split()) == documented
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert {n.split(".")[0] for n in find["include"]} == documented
