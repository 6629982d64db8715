"""notebooks/run_figures.ipynb executes against a real short run and redraws its figures."""
from __future__ import annotations

from pathlib import Path

import nbformat
from firmware_runs import BASELINE, shared_runs
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "run_figures.ipynb"


def test_notebook_redraws_the_figures_of_a_run(tmp_path_factory, monkeypatch):
    run = shared_runs(tmp_path_factory)[BASELINE]
    monkeypatch.setenv("RACKCLOCK_RUN", str(run))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"run {run.name}: clock_offset, completed" in text
    assert "bmc-1" in text and "bmc-2" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    # per clock (2): offset, residuals, and stability where the series allows; the latency figure
    skipped = text.count(": no ADEV/MDEV/TDEV/MTIE: ")
    assert len(images) == 2 * 3 - skipped + 1, text
    assert all(len(o["data"]["image/png"]) > 5000 for o in images)

