"""manifest.json built from typed records (bench/model/manifest.py) is the file the dict literals
wrote, byte for byte: the recorded run's manifest (tests/data/recorded/, written by the old
writer) rebuilt through the records and the run store's atomic writer, in the order a run writes
it; and the early-end manifests against the literals they replaced. A real run's manifest is
checked in tests/test_run.py (test_the_manifest_is_written_in_the_recorded_order)."""
from __future__ import annotations

import json
from pathlib import Path

from bench.model.manifest import DeviceProbed, DeviceStart, RunEnd, RunEndedEarly, RunStart
from bench.model.store import RunStore

RECORDED = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"
START_KEYS = ["schema", "schema_version", "csv_schema_versions", *RunStart.__dataclass_fields__]
END_KEYS = ["status", "error", "ended_ns", "duration_s", "stopped_by"]


def _replay(m: dict, root: Path) -> bytes:
    """The writes of a run, in its order, with the recorded values: the start, the keys other
    code writes (the incident, the plan, the reference...), each device's probing, the end."""
    store = RunStore(root, m["run_id"])
    try:
        store.write_manifest(RunStart.from_dict(m).to_dict())
        middle = {k: v for k, v in m.items() if k not in START_KEYS + END_KEYS}
        store.update_manifest(**middle)
        store.update_devices({n: DeviceProbed.from_dict(d).to_dict()
                              for n, d in m["devices"].items() if "identity" in d})
        store.update_manifest(**RunEnd.from_dict(m).to_dict())
    finally:
        store.close()
    return (store.path / "manifest.json").read_bytes()


def test_the_records_rebuild_the_recorded_manifest_byte_for_byte(tmp_path):
    want = (RECORDED / "manifest.json").read_bytes()
    m = json.loads(want)
    assert list(m)[:len(START_KEYS)] == START_KEYS      # the start, as the old writer put it
    assert _replay(m, tmp_path) == want


def test_a_moved_or_renamed_key_changes_the_file(tmp_path, monkeypatch):
    """The comparison can fail: a writer that moves or renames one key gives another file."""
    want = (RECORDED / "manifest.json").read_bytes()
    m = json.loads(want)
    real = RunStart.to_dict

    def moved(self: RunStart) -> dict:
        d = real(self)
        d["armed"] = d.pop("armed")
        return d

    def renamed(self: RunStart) -> dict:
        return {("rackfile" if k == "rack_file" else k): v for k, v in real(self).items()}

    for i, changed in enumerate((moved, renamed)):
        monkeypatch.setattr(RunStart, "to_dict", changed)
        assert _replay(m, tmp_path / str(i)) != want


def test_the_start_records_fields_are_the_files_keys():
    m = json.loads((RECORDED / "manifest.json").read_bytes())
    d = RunStart.from_dict(m).to_dict()
    assert list(d) == START_KEYS[3:]          # the store adds schema, schema_version, csv_schema_versions
    assert d["devices"]["pdu-1"] == {"plane": "pdu", "driver": "snmp_pdu"}
    assert DeviceStart("", error="ipmi_sim is not installed").to_dict() == {
        "plane": "", "error": "ipmi_sim is not installed"}
    assert RunStart.from_dict(d) == RunStart.from_dict(m)


def test_the_end_and_early_end_records_are_the_old_literals():
    assert json.dumps(RunEnd("completed", None, 5, 1.25).to_dict()) == json.dumps(
        {"status": "completed", "error": None, "ended_ns": 5, "duration_s": 1.25})
    assert json.dumps(RunEnd("interrupted", None, 5, 1.25, "SIGTERM").to_dict()) == json.dumps(
        {"status": "interrupted", "error": None, "ended_ns": 5, "duration_s": 1.25,
         "stopped_by": "SIGTERM"})
    assert json.dumps(RunEndedEarly("x", "r", "disk_full", "No space").to_dict()) == json.dumps(
        {"experiment": "x", "run_id": "r", "status": "disk_full", "error": "No space"})
    refused = RunEndedEarly("x", "r", "refused", "too many", {"admission": {"fits": False}},
                            {"name": "rack"})
    assert json.dumps(refused.to_dict()) == json.dumps(
        {"experiment": "x", "run_id": "r", "status": "refused", "error": "too many",
         "admission": {"fits": False}, "inventory": {"name": "rack"}})
    assert RunEndedEarly.from_dict({"schema": 1, **refused.to_dict()}) == refused


def test_records_read_bad_input_as_defaults():
    assert RunStart.from_dict(None).devices == {} and RunStart.from_dict([1]).argv == []
    bad = {"argv": "run", "armed": "yes", "pid": "12", "devices": {"a": 3}, "status": 7}
    s = RunStart.from_dict(bad)
    assert (s.argv, s.armed, s.pid, s.status, s.devices["a"]) == ([], False, 0, "",
                                                                   DeviceStart(""))
    assert DeviceProbed.from_dict({"clocks": "x", "reads": True}).to_dict()["reads"] == 0
    assert RunEnd.from_dict({"duration_s": "1"}).duration_s == 0.0
