"""Validate a run folder's files against the schemas shipped in the package (bench/model/schemas/):
its JSON files (manifest, summary, incident) and the header of every CSV it holds."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import jsonschema

from bench.model.file_schemas import CSV_VERSIONS, JSON_VERSIONS, csv_kind, schema

JSON_FILES = {"manifest.json": "manifest", "summary.json": "summary", "incident.json": "incident",
              "truth.json": "truth", "timeline.json": "timeline"}


def errors(name: str, doc: object) -> list[str]:
    """Every way `doc` breaks schema `name`, one line each (path: message)."""
    v = jsonschema.Draft202012Validator(schema(name))
    return [f"{e.json_path}: {e.message[:200]}" for e in v.iter_errors(doc)]


def headers(folder: Path) -> dict[str, list[str]]:
    """{csv.schema.json key: header row} of every CSV in the folder (one file per kind)."""
    out: dict[str, list[str]] = {}
    for p in sorted(folder.rglob("*.csv")):
        kind = csv_kind(p.relative_to(folder).as_posix())
        assert kind is not None, f"{p}: a CSV the schemas do not describe"
        with p.open(newline="") as f:
            out.setdefault(kind, next(csv.reader(f)))
    return out


def check_folder(folder: Path) -> list[str]:
    """The run folder's files checked: the JSON files named (those present), the CSV headers,
    and the manifest's versions of the CSVs it holds. Returns the files checked."""
    checked = []
    for file, name in JSON_FILES.items():
        if not (folder / file).exists():
            continue
        doc = json.loads((folder / file).read_text())
        assert doc.get("schema_version") == JSON_VERSIONS[file], (file, doc.get("schema_version"))
        assert not (bad := errors(name, doc)), f"{folder / file}:\n" + "\n".join(bad[:20])
        checked.append(file)
    found = headers(folder)
    assert not (bad := errors("csv", found)), f"{folder}: CSV headers:\n" + "\n".join(bad)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(found) <= set(manifest["csv_schema_versions"]), (set(found), manifest["csv_schema_versions"])
    assert manifest["csv_schema_versions"] == CSV_VERSIONS
    return checked + sorted(found)
