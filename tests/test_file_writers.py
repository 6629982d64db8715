"""Every file the bench writes goes through bench/safeio.py (issue 42): an AST scan of bench/,
drivers/ and experiments/ finds each call that could create or change a file and fails on any
outside the safe module and the writers listed here, each with why it needs no safe path."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("bench", "drivers", "experiments")
SAFE_MODULE = "bench/safeio.py"

# path:function -> why this writer stands outside bench/safeio.py (the only exceptions)
KNOWN = {
    "bench/lockdir.py:checked_dir": "lock folders: lockdir's own checks (owner, sticky, no-follow)",
    "bench/lockdir.py:open_lock": "lock files: O_EXCL|O_NOFOLLOW, checked by fstat, never written",
    "drivers/host_kernel.py:HostKernel._write_line": "a line into /dev/kmsg, a kernel device",
    "bench/output/timeline_files.py:OtelSink.add": "an unnamed temporary file (no name to plant)",
    "bench/logs/logfile.py:_temporary": "an unnamed temporary file holding a parsed log's "
                                              "texts (no name to plant)",
    "bench/fleet/gather.py:unpack_members": "tarfile's 'data' filter, into a checked folder",
    "bench/fleet/engine.py:_stderr_held": "an unnamed temporary file holding fd 2 (no name)",
    "bench/output/figures.py:save": "savefig into a memory buffer and into safeio's file objects",
    "bench/output/plots.py:_offset_plots": "savefig into safeio's file objects",
    "experiments/_collective_report.py:plot": "savefig into safeio's file objects",
}

WRITE_MODES = set("wax+")
# Path methods, told from str.replace and safeio.Folder's (name, data) by their one argument
PATH_WRITERS = {"write_text", "write_bytes", "mkdir", "symlink_to", "hardlink_to", "rename",
                "replace"}
OS_WRITERS = {"mkdir", "makedirs", "rename", "replace", "symlink", "link", "mkfifo", "mknod",
              "truncate"}
SHUTIL = {"copy", "copy2", "copyfile", "copytree", "move"}
WRITE_FLAGS = {"O_CREAT", "O_WRONLY", "O_RDWR", "O_APPEND", "O_TRUNC", "O_TMPFILE"}
TEMPFILES = {"mkstemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}
OTHER = {"savefig", "extractall", "extract", "savetxt", "to_csv", "to_parquet",
         "FileHandler", "RotatingFileHandler", "TimedRotatingFileHandler"}


def _name(f: ast.expr) -> tuple[str, str]:
    """(owner, attribute) of a call's function: ('os', 'open'), ('', 'open'), ('?', 'write_text')."""
    if isinstance(f, ast.Name):
        return "", f.id
    if isinstance(f, ast.Attribute):
        owner = f.value.id if isinstance(f.value, ast.Name) else "?"
        return owner, f.attr
    return "?", ""


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _mode(call: ast.Call, pos: int) -> str | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return _const_str(kw.value) or "?"
    return _const_str(call.args[pos]) if len(call.args) > pos else None


def _flags(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | \
        {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def writes(call: ast.Call) -> str | None:
    """What kind of write `call` is, or None."""
    owner, attr = _name(call.func)
    if attr == "open" and owner in ("", "io", "builtins"):
        mode = _mode(call, 1)
        return f"open(..., {mode!r})" if mode and set(mode) & WRITE_MODES else None
    if attr == "open" and owner == "os":
        flags = _flags(call.args[1]) if len(call.args) > 1 else set()
        return "os.open with " + "|".join(sorted(flags & WRITE_FLAGS)) if flags & WRITE_FLAGS \
            else None
    if attr in ("open", "fdopen") and owner in ("tarfile", "os"):
        mode = _mode(call, 1)
        has_obj = any(kw.arg == "fileobj" for kw in call.keywords)
        return f"{owner}.{attr}(..., {mode!r})" if mode and set(mode) & WRITE_MODES and \
            not has_obj and owner == "tarfile" else None
    if owner == "os" and attr in OS_WRITERS or owner == "shutil" and attr in SHUTIL:
        return f"{owner}.{attr}"
    if owner not in ("os", "shutil", "", "safeio", "dataclasses") and attr in PATH_WRITERS and \
            len(call.args) <= 1 and not (attr in ("replace", "rename") and
                                         (len(call.args) != 1 or call.keywords)):
        return f".{attr}()"
    if attr in TEMPFILES or attr in OTHER:
        return attr
    return None


def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, name + ".")


def scan() -> list[tuple[str, int, str]]:
    """(path:function, line, what) of every writer outside the safe module."""
    hits = []
    for top in TOPS:
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel == SAFE_MODULE:
                continue
            tree = ast.parse(p.read_text(), rel)
            for n in ast.walk(tree):
                if isinstance(n, ast.Call) and (what := writes(n)):
                    hits.append((f"{rel}:{_innermost(tree, n)}", n.lineno, what))
    return hits


def _innermost(tree: ast.AST, call: ast.Call) -> str:
    best, depth = "<module>", -1
    for name, fn in _functions(tree):
        if isinstance(fn, ast.ClassDef):
            continue
        if fn.lineno <= call.lineno <= (fn.end_lineno or fn.lineno) and name.count(".") > depth:
            best, depth = name, name.count(".")
    return best


def test_every_writer_goes_through_the_safe_module():
    bad = [f"{where} line {line}: {what}" for where, line, what in scan() if where not in KNOWN]
    assert not bad, "files written outside bench/safeio.py:\n" + "\n".join(bad)


def test_every_known_writer_is_still_there():
    found = {where for where, _, _ in scan()}
    gone = sorted(set(KNOWN) - found)
    assert not gone, f"listed in KNOWN but no longer writing (remove them): {gone}"


def test_the_scan_sees_each_kind_of_writer():
    src = """
def f(p, fig, fd):
    open(p, "w"); open(p, mode="ab"); p.write_text("x"); p.write_bytes(b"")
    fig.savefig(p); os.open(p, os.O_WRONLY | os.O_CREAT); shutil.copyfile(p, p)
    os.replace(p, p); p.mkdir(); tempfile.mkstemp(); tarfile.open(p, "w:gz")
    open(p); open(p, "rb"); os.open(p, os.O_RDONLY); safeio.write_text(p, "")
"""
    calls = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)]
    found = [w for n in calls if (w := writes(n))]
    assert len(found) == 11, found
