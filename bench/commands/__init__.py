"""The subcommands of `rackclock`, one module each, found by listing this package (no list of
them is kept by hand): a module's name is its command's (`rackclock NAME`), its module-level
`HELP = "..."` (a string literal) the line `rackclock --help` shows beside it, and its
`main(argv) -> int` the command, its return value the exit status.

`commands()` reads each module's HELP from its source without importing it, so `rackclock
--help` loads no command (tests/test_cli_lazy.py); `rackclock NAME` imports that module alone.
Modules whose name starts with `_` are helpers, not commands. tests/test_house.py reads the same
listing: these modules (and bench/cli.py) are the ones that may print.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = "run"                  # the default command, listed first; the rest by name


class OneLineParser(argparse.ArgumentParser):
    """Argument errors in one line (and exit 2), as every other configuration error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n")


def names(folder: Path = HERE) -> list[str]:
    """The command modules of `folder` (this package): `run` first, then by name. Listed from
    the folder (os.listdir: pkgutil's import alone costs a command's start about 10 ms)."""
    found = sorted(f[:-3] for f in os.listdir(folder)
                   if f.endswith(".py") and not f.startswith("_"))
    return sorted(found, key=lambda n: n != FIRST)


def declared_help(path: Path) -> str:
    """The module's `HELP = "..."`, read from its source (not imported); ValueError when it has
    none or it is not a string literal."""
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "HELP"):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
            break
    raise ValueError(f"{path}: a command module declares HELP = \"...\" (a string literal)")


def commands(folder: Path = HERE) -> dict[str, str]:
    """name -> help line of every command module, in names() order."""
    return {n: declared_help(folder / f"{n}.py") for n in names(folder)}
