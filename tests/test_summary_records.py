"""summary.json's writer builds the typed records readers read (bench.model.summary_records) and
serialises them with to_dict(): on a real short run of the simulated rack each device's entry is
its DeviceSummary record's to_dict() (key order included), the records read back from the file
equal the writer's field by field, and the keys come in the order summary.json always had."""
import json

import pytest
from racks import sim_rack_text

from bench.model.rundata import bound_from_manifest, load_run, load_samples
from bench.model.summary import device_meta, device_summary
from bench.model.summary_records import DeviceSummary
from bench.run.experiment import run_experiment

# the order of summary.json's keys before the writer was typed (optional keys left out where absent)
ORDER = {
    "device": ["plane", "identity", "state", "errors", "first_errors", "clocks", "latency",
               "no_clock", "traps_lost"],
    "clock": ["resolution_declared_ns", "reads", "counter", "assumptions", "resolution_ns",
              "resolution_note", "verdict", "segments", "breaks", "outliers",
              "beyond_prior_note", "lag_seen_ns", "update_ns", "wraps", "stuck", "note", "zone_note",
              "breaks_truth", "stability", "read_stats", "drift_target_ppm", "drift_decided",
              "drift_decided_after_s"],
    "assumptions": ["drift_prior_ppm", "wander_ppm", "resolution_ns", "resolution_basis",
                    "reference_uncertainty_ns", "rate_changes", "rate_bound_ppm", "tick_lag_ns",
                    "unseen_step", "model"],
    "segment": ["start_ns", "end_ns", "reads", "epoch_ns", "offset_ns", "drift_ppm", "jitter_ns",
                "bracket_ns", "resolution_ns", "resolution_note", "offset_status", "drift_status",
                "drift_assumes", "mean_drift_ppm", "offset_line_ns", "gaps_ns", "rate_needed_ppm",
                "span_offset_ns", "band", "truth"],
    "truth": ["offset_ns", "offset_in", "band_points", "band_in", "drift_ppm", "drift_in",
              "band_out_t_ns", "mean_drift_ppm", "mean_drift_in"],
    "latency": ["events", "logged_ns", "observed_ns", "sent"],
    "event": ["seq", "s_ns", "e_ns", "observed_ns", "event", "pushed", "logged_ns", "logged_via",
              "logged_unbounded"],
}


def objects(dev: dict):
    """(kind, dict) of every object of a device entry whose key order is documented above."""
    yield "device", dev
    for c in dev["clocks"].values():
        yield "clock", c
        yield "assumptions", c["assumptions"]
        for sg in c["segments"]:
            yield "segment", sg
            if "truth" in sg:
                yield "truth", sg["truth"]
    for lat in dev["latency"].values():
        yield "latency", lat
        for e in lat["events"]:
            yield "event", e


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """10 s of bmc-3 (stimuli, a step), pdu-1 (traps, a zone note) and optic-1 (modules
    without a clock)."""
    tmp = tmp_path_factory.mktemp("records")
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-3", "pdu-1", "optic-1"]))
    return load_run(run_experiment("clock_offset", rack, tmp / "runs", {"duration_s": "10"}))


def test_summary_json_is_the_records_serialised(short_run):
    run = short_run
    top = json.loads((run.path / "summary.json").read_text())
    written = top["devices"]
    # requests per minute by kind, for the Redfish device whose driver counts them (issue 43)
    assert {"clock", "log", "discovery"} <= set(top["requests_per_min"]["bmc-3"]["by_kind"])
    manifest = run.manifest.raw
    assert {"bmc-3", "pdu-1", "optic-1"} <= set(written)
    kinds = set()
    for name, entry in written.items():
        rec = device_summary(name, load_samples(run.path / "samples" / f"{name}.csv"),
                             device_meta(manifest, name), bound_from_manifest(manifest),
                             run.truth.raw["devices"].get(name))
        assert json.dumps(rec.to_dict(), default=str) == json.dumps(entry), name
        back = DeviceSummary.of(name, entry)
        for clock, c in rec.clocks.items():
            assert back.clocks[clock] == c, (name, clock)
        assert back.latency == rec.latency and back.identity == rec.identity, name
        assert back == rec, name
        for kind, obj in objects(entry):
            kinds.add(kind)
            assert [k for k in ORDER[kind] if k in obj] == list(obj), (name, kind, list(obj))
    assert kinds == set(ORDER)            # every kind of object was there to check


def test_a_record_read_back_serialises_as_read(short_run):
    """A reader's record keeps what it read: to_dict() gives the file's entry back, keys a newer
    bench added included."""
    entry = json.loads((short_run.path / "summary.json").read_text())["devices"]["bmc-3"]
    entry = {**entry, "added_by_a_newer_bench": 1}
    assert DeviceSummary.of("bmc-3", entry).to_dict() == entry
