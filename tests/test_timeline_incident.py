"""The incident experiment: a cascade scored against the truth beside the naive merge, offline over
many cascades and once end to end through the emulators."""
import json

import numpy as np
from schema_check import check_folder

from bench.analysis.timeline_score import curve, first_set, score

NS = 1_000_000_000
MS = 1_000_000


def test_score_counts_right_wrong_unordered_and_the_naive_merge():
    true = [0, 100 * MS, 2 * NS]
    lo = [-50 * MS, 60 * MS, 1900 * MS]
    hi = [50 * MS, 140 * MS, 2100 * MS]
    naive = [5 * NS, 1 * NS, 1 * NS]          # a clock 5 s fast, two stamps tied
    sc = score(true, lo, hi, naive)
    assert sc["rackclock"].as_dict() == {"pairs": 3, "right": 3, "wrong": 0, "unordered": 0}
    assert sc["naive"].as_dict() == {"pairs": 3, "right": 0, "wrong": 2, "unordered": 1}
    assert sc["first_set"] == [0] and sc["first_contains_truth"] and not sc["naive_first_right"]
    # overlapping intervals: unordered, and the first set grows to hold every candidate
    sc = score(true, [-50 * MS, 40 * MS, 1900 * MS], [50 * MS, 140 * MS, 2100 * MS], naive)
    assert sc["rackclock"].as_dict()["unordered"] == 1 and sc["first_set"] == [0, 1]
    # a wrong interval (a bug) is counted as wrong, never hidden
    sc = score(true, [200 * MS, 0, 1900 * MS], [300 * MS, 150 * MS, 2100 * MS], naive)
    assert sc["rackclock"].wrong == 1
    assert first_set([0, 10], [5, 20]) == [0]


def test_curve_bins_pairs_by_their_true_gap():
    a = score([0, 20 * MS, 5 * NS], [0, 10 * MS, 5 * NS], [15 * MS, 30 * MS, 5 * NS + 1],
              [0, -1, 5 * NS])
    c = curve([a])
    assert [(b["gap_lo_ns"], b["pairs"]) for b in c] == [(0, 1), (3 * NS, 2)]
    assert c[0]["rackclock_ordered"] == 0.0 and c[0]["naive_wrong"] == 1.0
    assert c[1]["rackclock_ordered"] == 1.0 and c[1]["rackclock_wrong"] == 0


def test_offline_cascades_never_order_wrongly_and_the_first_set_holds_the_truth():
    from experiments.incident import offline
    off = offline(cascades=96, racks=4, seed=7)
    assert off["cascades"] == 96
    assert off["rackclock"]["wrong"] == 0 and off["intervals_missing_truth"] == 0
    assert off["first_contains_truth"] == 96
    assert off["naive"]["wrong"] > 0                 # offsets of seconds: the naive merge errs
    far = [b for b in off["curve"] if b["gap_lo_ns"] >= 3 * NS]
    assert far and all(b["rackclock_ordered"] > 0.9 for b in far)


def test_incident_end_to_end_through_the_emulators(tmp_path):
    """A short run of the real experiment: the simulated rack plays the cascade, the drivers
    collect every plane's log, the timeline is scored against truth.json."""
    from bench.run.experiment import run_experiment
    from experiments.incident import lines
    folder = run_experiment("incident", None, tmp_path, {
        "duration_s": "17", "cascade_at_s": "5", "cascades": "0"}, quiet=True)
    assert "incident.json" in check_folder(folder)      # its schema (issue 45 item 2)
    res = json.loads((folder / "incident.json").read_text())["end_to_end"]
    assert res["played"], res
    assert len(res["events"]) >= 5, res["missing"]
    assert res["rackclock"]["wrong"] == 0
    assert all(e["covered"] for e in res["events"])
    assert res["first_contains_truth"]
    assert res["rackclock"]["right"] + res["rackclock"]["unordered"] + 0 == \
        res["rackclock"]["pairs"]
    assert any("node NotReady" in m and "not played" in m for m in res["missing"])
    # the GPU baseboard's telemetry (a throttle-reason metric, stamped by its controller's
    # clock) is ordered after the CDU pump fault that caused it, 4 s before (bounds allow it)
    ev = {e["step"]: e for e in res["events"]}
    gpu, cdu = ev["GPU thermal throttle"], ev["CDU pump trip"]
    assert gpu["device"] == "hmc-1" and "." in gpu["raw"], gpu     # a ms metric stamp
    assert gpu["covered"] and cdu["covered"]
    assert cdu["hi_ns"] < gpu["lo_ns"], (cdu, gpu)
    text = "\n".join(lines(res, None))
    assert "0 wrong" in text and "which plane broke first" in text
    assert np.all([e["raw"] for e in res["events"]])
