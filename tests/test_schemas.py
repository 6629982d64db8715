"""The JSON Schemas shipped in the package (issue 45 item 2; bench/model/schemas/, docs/SCHEMAS.md):
valid draft 2020-12, read through importlib.resources, the CSV headers the code writes, and strict
enough that a renamed, mistyped or missing field fails. Real runs' files are validated where the
runs are made: tests/test_run.py (the default rack) and tests/test_timeline_incident.py
(incident.json); here the recorded run folder of tests/data/recorded/."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from schema_check import check_folder, errors

from bench.model import bounds_csv, phase_export, stability_export, store
from bench.model.file_schemas import CSV_VERSIONS, JSON_VERSIONS, NAMES, csv_kind, schema
from bench.output import timeline_files
from bench.reference import monitor

RECORDED = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"


def test_every_shipped_schema_is_draft_2020_12_and_versioned():
    for name in NAMES:
        s = schema(name)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(s)
        assert s.get("additionalProperties") is False, name
    for name in ("manifest", "summary", "incident", "truth", "timeline"):
        assert {"schema", "schema_version"} <= set(schema(name)["required"])
    assert set(JSON_VERSIONS) == {"manifest.json", "summary.json", "incident.json", "truth.json",
                                  "timeline.json"}
    with pytest.raises(KeyError, match="no schema 'measurements'"):
        schema("measurements")


def test_the_csv_headers_are_the_ones_the_code_writes():
    heads = {k: v["const"] for k, v in schema("csv")["properties"].items()}
    assert set(heads) == set(CSV_VERSIONS)
    assert heads["samples/*.csv"] == store.SAMPLE_COLUMNS
    assert heads["events.csv"] == store.EVENT_COLUMNS
    assert heads["reference.csv"] == list(monitor.COLUMNS)
    assert heads["bounds.csv"] == bounds_csv.COLUMNS
    assert heads["stability.csv"] == stability_export.COLUMNS
    assert heads["phase/*.csv"] == phase_export.COLUMNS
    assert heads["timeline.csv"] == list(timeline_files.FIELDS)
    assert (csv_kind("samples/bmc-1.csv"), csv_kind("phase/bmc-1.datetime.csv"), csv_kind("bounds.csv"),
            csv_kind("timeline.csv"), csv_kind("other.csv"), csv_kind("a/b/c.csv")) == (
        "samples/*.csv", "phase/*.csv", "bounds.csv", "timeline.csv", None, None)


def test_the_recorded_run_folder_validates():
    assert check_folder(RECORDED)[:4] == ["manifest.json", "summary.json", "incident.json", "truth.json"]


def _planted(doc: dict, how: str) -> dict:
    d = copy.deepcopy(doc)
    seg = next(c["segments"][0] for dev in d["devices"].values() for c in dev["clocks"].values()
               if c["segments"])
    if how == "renamed":
        seg["offset_nss"] = seg.pop("offset_ns")
    elif how == "mistyped":
        seg["reads"] = str(seg["reads"])
    elif how == "missing":
        del d["reference_uncertainty_ns"]
    elif how == "bound_mistyped":
        seg["offset_ns"]["lo"] = 1.5
    elif how == "version":
        d["schema_version"] = "2.0"
    elif how == "unversioned":
        del d["schema_version"]
    return d


@pytest.mark.parametrize("how", ["renamed", "mistyped", "missing", "bound_mistyped", "version",
                                 "unversioned"])
def test_a_planted_wrong_summary_fails(how):
    good = json.loads((RECORDED / "summary.json").read_text())
    assert errors("summary", good) == []
    bad = errors("summary", _planted(good, how))
    assert bad, how


def test_a_planted_wrong_manifest_incident_and_csv_header_fail(tmp_path):
    man = json.loads((RECORDED / "manifest.json").read_text())
    assert errors("manifest", man) == []
    for change in ({"status": "finished"}, {"started_ns": "1796141409275466271"}, {"run_ids": "x"}):
        assert errors("manifest", {**man, **change}), change
    dev = dict(man["devices"]["bmc-1"], firmware_version="2.14.0")       # a field at the wrong level
    assert errors("manifest", {**man, "devices": {**man["devices"], "bmc-1": dev}})
    inc = json.loads((RECORDED / "incident.json").read_text())
    assert errors("incident", inc) == []
    e2e = dict(inc["end_to_end"])
    e2e["rackclock"] = {**e2e["rackclock"], "right": "7"}
    assert errors("incident", {**inc, "end_to_end": e2e})
    truth = json.loads((RECORDED / "truth.json").read_text())
    assert errors("truth", truth) == []
    clock = truth["devices"]["bmc-1"]["clocks"]["datetime"]
    clock["offsets_ns"] = clock.pop("offset_ns")
    assert errors("truth", truth)
    cols = list(bounds_csv.COLUMNS)
    assert errors("csv", {"bounds.csv": cols}) == []
    cols[cols.index("offset_lo_ns")] = "offset_low_ns"
    assert errors("csv", {"bounds.csv": cols})
    assert errors("csv", {"timeline.csv": ["t_ns"]})                   # a header cut short
    assert errors("csv", {"other.csv": ["t_ns"]})                      # a CSV it does not describe
    folder = tmp_path / "run"                                          # and check_folder sees it
    folder.mkdir()
    for f in ("manifest.json", "summary.json"):
        (folder / f).write_text((RECORDED / f).read_text())
    (folder / "bounds.csv").write_text(",".join(cols) + "\n")
    with pytest.raises(AssertionError, match="bounds.csv"):
        check_folder(folder)
