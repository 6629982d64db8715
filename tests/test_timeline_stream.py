"""Issue 46 item 4: the timeline of a million lines in less memory (mapping in slices where each
stamp maps alone, the nearest-unordered lists as int16 offsets, the stamps' numeric columns
freed once mapped, the order's temporaries freed as they go, the texts spilled to a temporary
file and read back by span) writes what it wrote before, byte for byte: a small seeded case
(tests/timeline_stream_case.py: a stepped clock, so two segments, ambiguous lines; the log read
in file order and with order=none) against the files commit fc3c331 wrote for it, with the
mapping's slices made tiny and the texts spilled and read in many spans so that every path
through them is taken."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from tests.timeline_stream_case import make_case, outputs

GOLD = Path(__file__).parent / "data" / "timeline_stream"


def test_the_timeline_writes_what_it_wrote_before_mapped_in_slices_texts_spilled(tmp_path,
                                                                                monkeypatch):
    from bench.analysis import timeline_map
    from bench.analysis import timeline_order as timeline
    from bench.commands import timeline as timeline_cli
    from bench.logs import logfile
    monkeypatch.setattr(timeline, "SLICE", 7)            # nearest-unordered 7 rows at a time
    monkeypatch.setattr(timeline_map, "MAP_CHUNK", 37)    # 400 lines: 11 slices, one short
    monkeypatch.setattr(logfile, "SPILL_BYTES", 0)        # the texts read back from a file,
    monkeypatch.setattr(logfile, "READ_GAP", 40)          # in many spans
    run, logs = make_case(tmp_path)
    assert timeline_cli.main([str(run), *logs, "--rows", "5"]) == 0
    for name, data in outputs(tmp_path, run).items():
        want = gzip.decompress((GOLD / f"{name}.gz").read_bytes())
        assert data == want, name


def test_map_stamps_in_slices_equals_at_once_for_every_calibration(tmp_path, monkeypatch):
    """Two calibrations and no order key (each stamp alone): every column of the mapping, its
    notes and statuses the same whether mapped in slices or at once."""
    from bench.analysis import timeline_map
    from bench.model.rundata import load_run
    from bench.model.timeline_build import Calibrated
    run, _ = make_case(tmp_path)
    cals = Calibrated.of([load_run(run)]).clock("bmc-1", "datetime")
    assert len(cals) == 2
    rng = np.random.default_rng(5)
    v = np.sort(rng.integers(cals[0].span[0] - 10**10, cals[1].span[1] + 10**10, 500))
    v[::50] = 0                              # before 2000: presync
    whole = timeline_map.map_stamps(cals, v, 10**6)
    monkeypatch.setattr(timeline_map, "MAP_CHUNK", 64)
    sliced = timeline_map.map_stamps(cals, v, 10**6)
    for f in ("lo_ns", "hi_ns", "status", "calibration", "candidates", "distance_ns",
              "assumed_lo_ns", "assumed_hi_ns"):
        assert np.array_equal(getattr(whole, f), getattr(sliced, f)), f
        assert getattr(whole, f).dtype == getattr(sliced, f).dtype, f
    assert whole.notes == sliced.notes and whole.names == sliced.names
    st = {timeline_map.STATUS[k] for k in whole.status.tolist()}
    assert {"assumed", "ambiguous", "presync"} <= st          # the case covers these paths
    assert any("extrapolated beyond" in n for n in whole.notes)   # counted over all slices
