"""The documentation names only files the repository has: every `bench/...py` path (and every
path under drivers/, experiments/, benchmarks/, tests/, docs/, notebooks/) mentioned in the
markdown files exists, every path docs/ARCHITECTURE.md names (folders and the top-level
markdown files too) exists, and no file refers to FACTS.md, which lives outside the repository
(its measured floors are in docs/protocol_floors.md)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "results" / "README.md",
        ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
PATH = re.compile(r"(?<![\w./-])((?:bench|drivers|experiments|benchmarks|tests|docs|notebooks)"
                  r"/[\w./-]*\w\.(?:py|md|toml|ipynb|sh|json))\b")
PLACEHOLDERS = {"NAME", "RUN", "DEVICE", "FILE"}         # experiments/NAME.py
# any path under a top-level folder, a folder (trailing `/`) included, or a top-level markdown file
ANY_PATH = re.compile(r"(?<![\w./<-])((?:bench|drivers|experiments|benchmarks|tests|docs|notebooks"
                      r"|results|deploy)/[\w./-]*|[A-Z]+\.md)(?![\w<*])")


def missing_paths(text: str, root: Path = ROOT) -> list[str]:
    """Paths in the text that do not exist under root (a trailing `/` folder counts)."""
    return sorted({p for p in PATH.findall(text) if "<" not in p and "*" not in p
                   and Path(p).stem not in PLACEHOLDERS and not (root / p).exists()})


def missing_any(text: str, root: Path = ROOT) -> list[str]:
    """Every path (file or folder) in the text that does not exist under root."""
    found = {p.rstrip(".") for p in ANY_PATH.findall(text)}
    return sorted(p for p in found if not (root / p).exists())


def test_every_path_in_the_docs_exists():
    bad = {str(d.relative_to(ROOT)): m for d in DOCS if (m := missing_paths(d.read_text()))}
    assert bad == {}, bad


def test_a_wrong_path_is_found():
    text = "see `bench/run/runner.py` and bench/runner.py, drivers/base.py, docs/NOPE.md"
    assert missing_paths(text) == ["bench/runner.py", "docs/NOPE.md"]


def test_every_path_in_the_architecture_page_exists():
    text = ARCHITECTURE.read_text()
    assert len(ANY_PATH.findall(text)) >= 40           # the page is a map: it names the tree
    assert missing_any(text) == []


def test_a_wrong_folder_or_top_file_is_found():
    text = ("`bench/run/` and bench/runs/, `drivers/base.py`, README.md, NOPE.md, "
            "results/<run-id>/ (a placeholder), experiments/*.py")
    assert missing_any(text) == ["NOPE.md", "bench/runs/"]


def test_no_reference_to_a_file_outside_the_repository():
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    this = Path(__file__).relative_to(ROOT).as_posix()
    hits = [f for f in files if f != this and (ROOT / f).is_file()
            and f.endswith((".py", ".md", ".toml", ".sh", ".ipynb", ".txt"))
            and "FACTS.md" in (ROOT / f).read_text(errors="replace")]
    assert hits == [], hits
