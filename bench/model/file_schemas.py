"""The JSON Schemas (draft 2020-12) of the files a run folder holds, shipped in the package
(bench/model/schemas/, read through importlib.resources), and each file's `schema_version`.

`schema_version` is MAJOR.MINOR per file: a minor bump adds an optional field (a reader of 1.0
reads a 1.3 file); a major bump renames, removes or retypes a field (docs/SCHEMAS.md). The JSON
files carry theirs; the CSVs' are in manifest.json's `csv_schema_versions`, and their headers are
csv.schema.json's. The bench does not validate what it writes at run time (jsonschema is not a
dependency): the tests validate every file a run writes (tests/test_schemas.py).
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any

JSON_VERSIONS = {"manifest.json": "1.0", "summary.json": "1.0", "incident.json": "1.0",
                 "truth.json": "1.0", "timeline.json": "2.0"}     # timeline.json's format is 2
CSV_VERSIONS = {"samples/*.csv": "1.0", "events.csv": "1.0", "reference.csv": "1.0",
                "bounds.csv": "1.0", "stability.csv": "1.0", "phase/*.csv": "1.0",
                "sim/sim_samples.csv": "1.0", "timeline.csv": "1.0"}
NAMES = ("manifest", "summary", "incident", "truth", "timeline", "csv")


def version(file: str) -> str:
    """The schema_version the bench writes into `file` (manifest.json, summary.json, ...)."""
    return JSON_VERSIONS[file]


def schema(name: str) -> dict[str, Any]:
    """One shipped schema by name (`manifest`, `summary`, `incident`, `truth`, `timeline`,
    `csv`), as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r}: one of {', '.join(NAMES)}")
    text = resources.files("bench.model.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    out: dict[str, Any] = json.loads(text)
    return out


def csv_kind(relative: str) -> str | None:
    """The csv.schema.json key of a CSV's path inside a run folder (`samples/bmc-1.csv` ->
    `samples/*.csv`), or None for a CSV the schema does not describe."""
    if relative in CSV_VERSIONS:
        return relative
    folder, _, name = relative.rpartition("/")
    if folder and name.endswith(".csv") and "/" not in folder:
        kind = f"{folder}/*.csv"
        return kind if kind in CSV_VERSIONS else None
    return None
