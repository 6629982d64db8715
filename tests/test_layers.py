"""The architecture rules, checked by reading every module's imports (lazy ones inside functions
included) with `ast`:

- drivers/ never import bench.sim, and bench/sim never imports drivers;
- bench/analysis imports only the standard library, numpy, allantools, bench.units, bench.errors
  and bench.analysis itself (the math stays pure);
- a lower layer never imports a higher one. Order: base (bench.units, bench.errors, bench.ports,
  bench.lockdir, bench.priority, bench.safeio, bench.saferead) < config (bench/config/: the
  rack file's keys, records and checks) < analysis < model < reference < drivers < loader
  (bench/config/loader.py, a rack file checked against the drivers and the emulators whose
  declarations it reads, and bench/config/reference.py, the key reference made from them)
  < compare < output < run < services (the bench/fleet and bench/watch packages and the other
  modules at bench/ top: resummarize, check_reads, logsetup, pytest_plugin) < commands
  (bench/commands/, one module per subcommand, and bench/cli.py, which dispatches to them); so
  bench.model never imports drivers, and no library imports a command. UPWARD lists the
  exceptions, each with its reason;
- a command module never imports another command module (what two commands share lives below,
  or in bench/commands/__init__.py);
- bench/sim may import the bench layers below run; only the loader, run and the commands import
  bench.sim.

Imports by string (importlib.import_module("drivers." + name)) are not seen; two such places:
drivers.driver_class loads drivers by name from the rack file, bench.sim.simtable an emulator's
SIM_KEYS by the emulator's name.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["base", "config", "analysis", "model", "reference", "drivers", "loader", "compare", "output",
         "run", "services", "commands"]
SIM_USERS = ("loader", "run", "services", "commands")
# (importer, imported) -> why this one import goes up a layer
UPWARD = {("bench.fleet.tasks", "bench.cli"):
          "a fleet's rack runs `rackclock run` itself (bench.cli.main), the same code path",
          ("bench.config.inventory", "bench.model.limit_checks"):
          "a rack file's [limits] tables are parsed by the judge that reads them"}
PURE_OK = {"numpy", "allantools"}
PURE_OK_BENCH = {"base", "analysis"}


def layer(module: str) -> str | None:
    """The layer of a module name: a bench layer, "sim", "drivers", or None (not ours)."""
    parts = module.split(".")
    if parts[0] == "drivers":
        return "drivers"
    if parts[0] != "bench":
        return None
    if len(parts) == 1 or parts[1] in ("units", "errors", "ports", "lockdir", "priority",
                                       "safeio", "saferead", "__init__"):
        return "base"
    if parts[1] == "sim":
        return "sim"
    if parts[1] == "config":
        return "loader" if parts[2:3] in (["loader"], ["reference"]) else "config"
    if parts[1] in ("commands", "cli"):
        return "commands"
    if parts[1] in ORDER and parts[1] not in ("services", "loader"):
        return parts[1]
    return "services"


def upward_allowed(module: str, target: str) -> bool:
    return any(m == module and (target == t or target.startswith(t + "."))
               for m, t in UPWARD)


def is_command(target: str) -> bool:
    """bench.commands.NAME[...] where NAME is a command module (not a name of the package's
    __init__, such as OneLineParser)."""
    parts = target.split(".")
    return (len(parts) > 2 and parts[:2] == ["bench", "commands"]
            and (ROOT / "bench" / "commands" / f"{parts[2]}.py").exists())


def imports(module: str, source: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the source, at any depth; `from a import b`
    gives both a and a.b (b may be a module). Relative imports are resolved against `module`."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
    return out


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """The rules this module's imports break, one line each."""
    me = layer(module)
    found = []
    for line, target in imports(module, source, is_package):
        if any(f.startswith(f"{module} ") and f" at line {line}:" in f for f in found):
            continue                      # one line per import statement
        to = layer(target)
        top = target.split(".")[0]
        why = None
        if me == "drivers" and to == "sim":
            why = "drivers never import the simulator"
        elif me == "sim" and to == "drivers":
            why = "the simulator never imports drivers"
        elif me == "analysis" and not (to in PURE_OK_BENCH or top in PURE_OK
                                       or (to is None and top in sys.stdlib_module_names)):
            why = ("bench/analysis imports only the standard library, numpy, allantools, "
                   "bench.units, bench.errors and bench.analysis")
        elif me == "sim" and to in ORDER and ORDER.index(to) >= ORDER.index("run"):
            why = "bench/sim imports only the bench layers below run"
        elif me in ORDER and to == "sim" and me not in SIM_USERS:
            why = "only the loader, run and the commands import bench.sim"
        elif (me in ORDER and to in ORDER and ORDER.index(to) > ORDER.index(me)
              and not upward_allowed(module, target)):
            why = f"a lower layer ({me}) imports a higher one ({to})"
        elif (module.startswith("bench.commands.") and is_command(target)
              and target.split(".")[2] != module.split(".")[2]):
            why = "a command module never imports another command module"
        if why:
            found.append(f"{module} ({me}) imports {target} ({to or 'third party'}) "
                         f"at line {line}: {why}")
    return sorted(set(found))


def check_tree(root: Path) -> list[str]:
    """Every violation in bench/ and drivers/ under `root`."""
    found = []
    for top in ("bench", "drivers"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            is_package = rel.name == "__init__"
            module = ".".join(rel.parts[:-1] if is_package else rel.parts)
            found += violations(module, path.read_text(), is_package)
    return found


def test_the_tree_keeps_its_layers():
    found = check_tree(ROOT)
    assert found == [], "layer rule broken:\n" + "\n".join(found)


def test_the_walk_reads_the_layers():
    """Not vacuous: the real tree has imports of every kind the rules allow."""
    seen = set()
    for top in ("bench", "drivers"):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            module = ".".join(rel.parts)
            seen |= {(layer(module), layer(t)) for _, t in imports(module, path.read_text())}
    for pair in [("run", "sim"), ("commands", "sim"), ("sim", "model"), ("output", "model"),
                 ("commands", "services"), ("services", "run"), ("commands", "commands"),
                 ("loader", "sim"), ("loader", "drivers"), ("sim", "config"), ("drivers", "config"),
                 ("analysis", "analysis"), ("drivers", "model"), ("run", "drivers")]:
        assert pair in seen, pair


def test_each_rule_catches_its_violation():
    bad = {
        ("drivers.snmp_pdu", "from bench.sim.clock_model import NS"): "drivers never import",
        ("bench.sim.ntp", "import drivers.base"): "never imports drivers",
        ("bench.analysis.estimate", "import scipy"): "bench/analysis imports only",
        ("bench.analysis.estimate", "from bench.model import summary"): "bench/analysis imports",
        ("bench.model.summary", "def f():\n    from bench.output.terminal import Progress\n"):
            "lower layer (model) imports a higher one (output)",
        ("bench.output.report_html", "from bench import cli"): "(output) imports a higher one (commands)",
        ("bench.watch.watcher", "from bench.commands.check import main"):
            "(services) imports a higher one (commands)",
        ("bench.fleet.engine", "from bench.cli import main"): "(services) imports a higher one",
        ("bench.commands.trend", "from bench.commands.compare import main"):
            "never imports another command module",
        ("bench.run.lab", "import bench.resummarize"): "(run) imports a higher one (services)",
        ("bench.sim.serve", "from bench.run.runner import ProbePlan"): "below run",
        ("bench.compare.verdicts", "from bench.sim import rack"): "only the loader, run and the",
        ("bench.config.inventory", "def f():\n    from bench.sim.simtable import check_sim\n"):
            "only the loader, run and the commands import bench.sim",
        ("bench.config.keys", "from bench.model.documents import Manifest"):
            "(config) imports a higher one (model)",
        ("bench.config.schema", "import drivers.base"): "(config) imports a higher one (drivers)",
        ("bench.errors", "from bench.analysis import estimate"): "(base) imports a higher one",
        ("bench.reference.clock", "from ..run import lab"): "(reference) imports a higher one (run)",
        ("bench.config.rackfile", "def f():\n    import drivers\n"):
            "(config) imports a higher one (drivers)",
        ("drivers.snmp_pdu", "from bench.output.terminal import Progress"):
            "(drivers) imports a higher one (output)",
    }
    for (module, source), why in bad.items():
        found = violations(module, source)
        assert len(found) == 1 and why in found[0], (module, source, found)


def test_allowed_imports_pass():
    ok = [("bench.analysis.estimate", "import numpy as np\nimport math\nfrom bench.units import NS"),
          ("bench.analysis.stability", "import allantools\nfrom . import estimate"),
          ("bench.run.simproc", "import bench.sim.serve"),
          ("bench.cli", "def f():\n    from bench.sim.rack import SimRack"),
          ("bench.commands.fleet", "from bench.fleet.config import FleetError"),
          ("bench.commands.summarize", "from bench.commands import OneLineParser"),
          ("bench.fleet.tasks", "def f():\n    from bench.cli import main"),
          ("bench.config.loader", "import drivers\ndef f():\n    from bench.sim import simtable"),
          ("bench.sim.clock_model", "from bench.config.schema import num"),
          ("bench.sim.rack", "from bench.config.inventory import Key"),
          ("bench.output.report_html", "from bench.model.rundata import Run"),
          ("drivers.base", "from bench.config.inventory import Key\nfrom bench.errors import X")]
    for module, source in ok:
        assert violations(module, source) == [], (module, source)


def test_a_planted_violation_in_a_copy_of_the_tree_fails(tmp_path):
    import shutil

    for top in ("bench", "drivers"):
        shutil.copytree(ROOT / top, tmp_path / top,
                        ignore=shutil.ignore_patterns("__pycache__", "*.toml", "*.json"))
    assert check_tree(tmp_path) == []
    target = tmp_path / "bench" / "analysis" / "segment.py"
    target.write_text(target.read_text() + "\n\ndef _planted():\n"
                      "    from bench.output.terminal import Progress   # lazy, still caught\n")
    found = check_tree(tmp_path)
    assert len(found) == 1 and found[0].startswith(
        "bench.analysis.segment (analysis) imports bench.output.terminal (output)"), found


if __name__ == "__main__":            # python tests/test_layers.py [ROOT]: list the violations
    found = check_tree(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found) or "layers kept")
    sys.exit(1 if found else 0)
