"""RUN/bounds.csv (issue 30 item 11): one row per clock and segment with offset, drift and mean
drift lo/hi and their statuses, the calibrated span and the model; a stuck clock's row has no
bounds; written beside summary.json by the run store."""
from __future__ import annotations

import csv

from test_terminal_width import worst_summary

from bench.model.bounds_csv import COLUMNS, write_bounds_csv
from bench.model.store import RunStore


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_one_row_per_clock_and_segment_with_statuses(tmp_path):
    rows = _read(write_bounds_csv(tmp_path, worst_summary()))
    assert list(rows[0]) == COLUMNS
    big = [r for r in rows if r["device"] == "bmc-rack3-slot17"]
    assert [r["segment"] for r in big] == ["0", "1"]
    assert int(big[1]["offset_lo_ns"]) == -369924892 * 10**9 - 800_000_000   # exact int ns
    assert big[0]["offset_status"] == "proven" and big[0]["drift_status"] == "assumed"
    assert big[0]["mean_drift_status"] == "proven" and float(big[0]["mean_drift_lo_ppm"]) == -225.2
    assert float(big[0]["span_s"]) == 60.0 and big[0]["span_from_ns"] < big[0]["span_to_ns"]
    (stuck,) = [r for r in rows if r["device"] == "bmc-9"]
    assert stuck["offset_status"] == "stuck" and stuck["offset_lo_ns"] == "" and \
        stuck["drift_lo_ppm"] == ""
    counter = next(r for r in rows if r["clock"] == "sysuptime")
    assert counter["counter"] == "1"


def test_the_store_writes_it_beside_summary_json(tmp_path):
    store = RunStore(tmp_path, "20260101T000000Z-x")
    store.write_summary(worst_summary())
    assert (store.path / "summary.json").exists()
    assert len(_read(store.path / "bounds.csv")) == 8     # 7 clocks, one with 2 segments
    store.close()
