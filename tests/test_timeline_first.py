"""`rackclock timeline --first`: which plane broke first among the window's lines, on a generated
five-plane cascade whose true instants are known (cooling -> pdu -> bmc -> gpu -> scheduler, the
clocks seconds apart): the true first named, or a set holding it with the reason; the proof; the
naive merge's answer beside it (wrong here); the story in proven order; terminal, JSON, HTML."""
import json

import numpy as np
import pytest
from timeline_truth import MS, NS, T0, iso, make_run, misses

from bench.analysis.first_break import Lines, first_planes
from bench.commands.timeline import main
from bench.sim.clock_model import ClockParams

DEVICES = {
    "cdu-1": ("cooling", {"datetime": ClockParams(offset_s=3.2, drift_ppm=15, resolution_s=1.0)}),
    "pdu-1": ("pdu", {"sysuptime": ClockParams(counter=True, uptime_s=1234567.0, drift_ppm=23,
                                               resolution_s=0.01)}),
    "bmc-1": ("bmc", {"datetime": ClockParams(offset_s=-2.6, drift_ppm=-8, resolution_s=1.0)}),
    "hmc-1": ("gpu", {"datetime": ClockParams(offset_s=1.5, drift_ppm=30, resolution_s=0.001)}),
    "k8s-1": ("scheduler", {"apiserver": ClockParams(offset_s=-0.41, drift_ppm=4,
                                                     resolution_s=1.0)}),
}


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("cascade"), DEVICES)


def _cascade(rack, folder, gaps_s):
    """One line per plane at cascade instants (plus a quiet line on each plane 200 s before,
    outside the window), each in its own format; the logs and the true instants by file."""
    t = T0 + 300 * NS + (np.cumsum([0, *gaps_s]) * NS).astype(np.int64)
    early = T0 + 100 * NS
    r = rack.read
    files = {
        "cdu.log": [f"{iso(r('cdu-1', 'datetime', x)).replace('T', ' ')[:-1]} cdu-1 pumpd: {w}"
                    for x, w in ((early, "pump ok"), (t[0], "pump 2 tripped"))],
        "traps.log": [f"2026-11-30 00:00:00 pdu-1 [UDP: [10.0.0.9]:161->[10.0.0.1]:162]:\n"
                      f"DISMAN-EVENT-MIB::sysUpTimeInstance = Timeticks: "
                      f"({r('pdu-1', 'sysuptime', x) // (10 * MS)}) x\tOID: {w}"
                      for x, w in ((early, "outletOn"), (t[1], "outletOverload"))],
        "bmc.json": [json.dumps({"Members": [
            {"Id": str(k + 1), "Created": iso(r("bmc-1", "datetime", x)), "Message": w}
            for k, (x, w) in enumerate(((early, "ok"), (t[2], "inlet temp high")))]})],
        "hmc.log": [f"<132>1 {iso(r('hmc-1', 'datetime', x), 3)} hmc-1 gpud - - - {w}"
                    for x, w in ((early, "ok"), (t[3], "GPU thermal throttle"))],
        "events.json": [json.dumps({"items": [
            {"kind": "Event", "metadata": {"creationTimestamp": iso(r("k8s-1", "apiserver", x)),
                                           "resourceVersion": str(k + 1)},
             "involvedObject": {"kind": "Node", "name": "gpu-node-2"}, "reason": w}
            for k, (x, w) in enumerate(((early, "NodeReady"), (t[4], "NodeNotReady")))]})]}
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n")
    truth = {name: {1: early, 3 if name == "traps.log" else 2: int(t[k])}   # a trap: 2 lines
             for k, name in enumerate(files)}
    specs = [f"cdu-1={folder / 'cdu.log'},tz=UTC", f"pdu-1={folder / 'traps.log'}",
             f"bmc-1={folder / 'bmc.json'}", f"hmc-1={folder / 'hmc.log'}",
             f"k8s-1={folder / 'events.json'}"]
    return specs, truth


def _first(rack, tmp_path, capsys, gaps):
    specs, truth = _cascade(rack, tmp_path, gaps)
    assert main([str(rack.path), *specs, "--first", "--window", "250..400"]) == 0
    out = capsys.readouterr().out
    for name, tr in truth.items():
        assert not misses(rack.path, name, tr), name
    data = json.loads((rack.path / "timeline.json").read_text())
    return out, data["first"], (rack.path / "timeline.html").read_text()


def test_the_true_first_plane_is_named_with_its_proof_beside_the_naive_merge(
        rack, tmp_path, capsys):
    out, first, page = _first(rack, tmp_path, capsys, [1.6, 1.6, 1.6, 3.0])
    assert out.splitlines()[0] == ("which plane broke first (5 lines in the window 250..400): "
                                   "cooling broke first")
    assert first["planes"] == ["cooling"] and first["lines"] == 5
    assert "pump 2 tripped" in first["first"][0]["label"]
    assert {p["plane"] for p in first["proof"]} == {"pdu", "bmc", "gpu", "scheduler"}
    for p in first["proof"]:
        assert p["after"]["hi_ns"] < p["line"]["lo_ns"]
    # the naive merge of raw stamps: bmc-1 runs 2.6 s slow, so its line looks first; refuted
    assert first["naive"]["answer"] == "bmc broke first" and "refuted_by" in first["naive"]
    assert "naive merge of the raw stamps: bmc broke first" in out
    assert [s["plane"] for s in first["story"]] == ["cooling", "pdu", "bmc", "gpu", "scheduler"]
    assert [s["step"] for s in first["story"]] == [1, 2, 3, 4, 5]
    assert "cooling broke first" in page and "tl-first" in page


def test_a_set_holds_the_true_first_with_the_reason_when_the_order_is_not_proven(
        rack, tmp_path, capsys):
    out, first, _ = _first(rack, tmp_path, capsys, [0.3, 1.6, 1.6, 3.0])
    assert first["planes"] == ["cooling", "pdu"]
    assert first["answer"] == "cooling or pdu: undecidable between them"
    assert "cooling or pdu: undecidable between them" in out.splitlines()[0]
    (u,) = first["undecided"]
    assert {u["a"]["plane"], u["b"]["plane"]} == {"cooling", "pdu"}
    assert u["a"]["lo_ns"] <= u["b"]["hi_ns"] and u["b"]["lo_ns"] <= u["a"]["hi_ns"]


def test_a_bad_window_is_one_error(rack, capsys):
    assert main([str(rack.path), "--first", "--window", "yesterday..today"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--window" in err


def test_same_clock_stamps_order_the_first_line_though_their_intervals_overlap():
    x = Lines(np.array([0, 10]), np.array([100, 110]), np.array([3, 3]), np.array([5, 7]),
              np.array([1, 1]), ["bmc", "pdu"], ["a", "b"], np.array([5, 7]),
              np.array([True, True]))
    ans = first_planes(x)
    assert ans["planes"] == ["bmc"] and ans["proof"][0]["by"].startswith("the same clock")


def test_files_carry_line_resolution_and_clock_and_the_page_opens_on_the_window(
        rack, tmp_path, capsys):
    import csv
    _first(rack, tmp_path, capsys, [1.6, 1.6, 1.6, 3.0])
    data = json.loads((rack.path / "timeline.json").read_text())
    ents = {(e["log"], e["line"]): e for e in data["entries"] if e["log"]}
    trap, cdu = ents[("traps.log", 3)], ents[("cdu.log", 2)]
    assert (trap["resolution_ns"], trap["clock"]) == (10 * MS, "pdu-1/sysuptime")
    assert (cdu["resolution_ns"], cdu["clock"]) == (NS, "cdu-1/datetime")
    for e in data["entries"]:
        assert e["unordered_more"] == e["unordered_count"] - len(e["unordered_with"])
        assert e["assumed_lo_ns"] >= e["lo_ns"] and e["assumed_hi_ns"] <= e["hi_ns"]
    with open(rack.path / "timeline.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["log"], r["line"], r["resolution_ns"], r["clock"]) for r in rows] == [
        (e["log"], str(e["line"]), str(e["resolution_ns"]), e["clock"])
        for e in data["entries"]]
    page = (rack.path / "timeline.html").read_text()
    # the early lines (200 s before the window) are collapsed and counted, not drawn
    assert "5 earlier entries" in page and "collapsed" in page
    assert "pump ok" not in page.split("earlier entries", 1)[1]
    assert "✎ cdu-1: cdu-1 pumpd: pump 2 tripped" in page


def test_unordered_lists_beyond_twelve_are_counted_not_cut_silently(rack, tmp_path, capsys):
    t = T0 + 300 * NS + 100 * MS
    shown = iso(rack.read("cdu-1", "datetime", t)).replace("T", " ")[:-1]
    log = tmp_path / "burst.log"
    log.write_text("".join(f"{shown} cdu-1 pumpd: alarm {k}\n" for k in range(30)))
    assert main([str(rack.path), f"cdu-1={log},tz=UTC,order=none"]) == 0
    capsys.readouterr()
    data = json.loads((rack.path / "timeline.json").read_text())
    burst = [e for e in data["entries"] if e["log"] == "burst.log"]
    assert len(burst) == 30
    for e in burst:          # one tick: each unordered with the 29 others, 12 listed
        assert e["unordered_count"] >= 29 and len(e["unordered_with"]) == 12
        assert e["unordered_more"] == e["unordered_count"] - 12
