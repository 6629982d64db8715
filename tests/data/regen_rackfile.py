"""Write docs/RACKFILE.md, the rack file's key reference, from the declarations
(bench/config/reference.py):

    PYTHONPATH=$PWD .venv/bin/python tests/data/regen_rackfile.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.config.reference import reference_text  # noqa: E402

if __name__ == "__main__":
    out = ROOT / "docs" / "RACKFILE.md"
    out.write_text(reference_text())
    print(f"written: {out}")
