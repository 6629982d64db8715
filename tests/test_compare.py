"""`rackclock compare`: a firmware update in the simulated rack that slows one BMC's logging must
fail the comparison naming that device and measure; an update that changes nothing must pass."""
from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

import pytest
from firmware_runs import BASELINE, REGRESSED, UNCHANGED, shared_runs

from bench.commands import compare as compare_cli
from bench.compare import verdicts as compare
from bench.compare.measures import Measure
from bench.compare.tolerances import Rule, ToleranceError, tolerances_from_dict


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    runs = shared_runs(tmp_path_factory)
    from bench.model.rundata import load_run
    for fw, path in runs.items():
        m = load_run(path).manifest
        assert m["status"] == "completed", (fw, m.get("error"))
    return runs


def test_firmware_regression_is_caught(runs, tmp_path, capsys):
    j, js, md = tmp_path / "c.xml", tmp_path / "c.json", tmp_path / "c.md"
    rc = compare_cli.main([str(runs[BASELINE]), str(runs[REGRESSED]), "--junit", str(j),
                       "--json", str(js), "--markdown", str(md)])
    out = capsys.readouterr().out
    print(out)
    assert rc == 1
    # identity first: the firmware change is listed before the measures
    fw_line = f"bmc-1: firmware {BASELINE} -> {REGRESSED}"
    assert fw_line in out and out.index(fw_line) < out.index("measure")
    assert "REGRESSED: 2 regression(s): bmc-1 latency.test_event.median regressed; bmc-1 " \
        "latency.test_event.p90 regressed" in out

    data = json.loads(js.read_text())
    assert data["outcome"] == "REGRESSED" and data["exit_status"] == 1
    failed = [(m["device"], m["measure"], m["verdict"]) for m in data["measures"] if m["failed"]]
    assert failed == [("bmc-1", "latency.test_event.median", "regressed"),
                      ("bmc-1", "latency.test_event.p90", "regressed")]
    row = next(m for m in data["measures"] if m["device"] == "bmc-1"
               and m["measure"] == "latency.test_event.median")
    # the proof: every latency the candidate allows exceeds every one the baseline allows
    assert row["candidate"]["lo"] - row["baseline"]["hi"] > row["tolerance"]
    assert row["change"] > 2e9                      # the update added about 3 s
    assert data["identity_changes"] == [{"device": "bmc-1", "what": "firmware",
                                         "baseline": BASELINE, "candidate": REGRESSED}]

    suite = ET.parse(j).getroot()
    cases = suite.findall("testcase")
    assert len(cases) == len(data["measures"]) and int(suite.get("failures")) == 2
    failures = [(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None]
    assert failures == [("bmc-1", "latency.test_event.median"), ("bmc-1", "latency.test_event.p90")]
    text = md.read_text()
    assert "REGRESSED" in text and f"| bmc-1 | firmware | {BASELINE} | {REGRESSED} |" in text


def test_unchanged_update_passes(runs, tmp_path, capsys):
    js = tmp_path / "c.json"
    rc = compare_cli.main([str(runs[BASELINE]), str(runs[UNCHANGED]), "--json", str(js)])
    out = capsys.readouterr().out
    print(out)
    assert rc in (0, 3), out          # never REGRESSED; UNDECIDED is 3, not a pass
    assert compare_cli.main([str(runs[BASELINE]), str(runs[UNCHANGED]),
                             "--allow-undecided"]) == 0
    assert f"bmc-1: firmware {BASELINE} -> {UNCHANGED}" in out
    data = json.loads(js.read_text())
    verdicts = {(m["device"], m["measure"]): m["verdict"] for m in data["measures"]}
    assert verdicts[("bmc-1", "resolution")] == "unchanged"
    assert verdicts[("bmc-1", "offset")] in ("not compared",      # free-running by default,
                                             "changed (not judged)")   # shown when it moved
    assert verdicts[("bmc-1", "jitter")] == "not compared"        # 1 s clock: the tick
    assert verdicts[("bmc-1", "latency.test_event.median")] in ("unchanged", "undecided")
    assert verdicts[("bmc-1", "latency.test_event.extremes")] == "not compared"
    assert "PASS" in out or "UNDECIDED" in out


def test_tolerance_file_overrides_per_device(runs, tmp_path, capsys):
    """A lab that accepts slow logging on bmc-1 says so; judging bmc-2's offset (it is one
    simulated clock model in both runs, restarted at each run) needs a tolerance to pass."""
    tol = tmp_path / "tol.toml"
    tol.write_text(compare.DEFAULT_TOLERANCES.read_text() + """
[devices."bmc-1".latency]
tolerance = "10s"

[devices."bmc-2".offset]
judge = true
tolerance = "1s"
""")
    rc = compare_cli.main([str(runs[BASELINE]), str(runs[REGRESSED]), "--tolerances", str(tol),
                       "--json", str(tmp_path / "c.json")])
    capsys.readouterr()
    assert rc in (0, 3)
    data = json.loads((tmp_path / "c.json").read_text())
    v = {(m["device"], m["measure"]): (m["verdict"], m["tolerance"]) for m in data["measures"]}
    assert v[("bmc-1", "latency.test_event.median")] == ("unchanged", 10e9)
    assert v[("bmc-2", "offset")][1] == 1e9 and v[("bmc-2", "offset")][0] != "not compared"


def test_bad_tolerance_file_is_a_clear_error(runs, tmp_path, capsys):
    tol = tmp_path / "bad.toml"
    tol.write_text('[measures.latnecy]\ntolerance = "1s"\n')
    assert compare_cli.main([str(runs[BASELINE]), str(runs[UNCHANGED]), "--tolerances", str(tol)]) == 2
    assert "unknown measure 'latnecy'" in capsys.readouterr().err
    assert compare_cli.main([str(runs[BASELINE]), str(tmp_path / "nothing")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def _m(lo, hi, basis="proven", judgeable=True):
    return Measure("d", "c", "latency.x", "ns", lo, hi, (lo + hi) / 2, basis, judgeable)


@pytest.mark.parametrize("b, c, rule, expected", [
    (_m(0, 10), _m(30, 40), Rule(tolerance=5), "regressed"),
    (_m(30, 40), _m(0, 10), Rule(tolerance=5), "improved"),
    (_m(0, 10), _m(30, 40), Rule(tolerance=5, direction="any"), "changed"),
    (_m(0, 10), _m(30, 40), Rule(tolerance=5, direction="magnitude"), "regressed"),
    (_m(-40, -30), _m(0, 10), Rule(tolerance=5, direction="magnitude"), "improved"),
    (_m(-40, -30), _m(30, 40), Rule(tolerance=5, direction="magnitude"), "changed"),
    # the size of the change is judged: +21..+40 with bounds that prove at least +2 is not a pass
    (_m(0, 10), _m(12, 40), Rule(tolerance=5), "undecided"),
    (_m(0, 10), _m(30, 40), Rule(tolerance=1, relative=5.0), "undecided"),
    (_m(0, 10), _m(30, 40), Rule(tolerance=1, relative=10.0), "unchanged"),
    (_m(0, 10), _m(5, 40), Rule(tolerance=5), "undecided"),
    (_m(0, 10), _m(2, 8), Rule(tolerance=10), "unchanged"),
    (_m(3, 3, "exact"), _m(3, 3, "exact"), Rule(), "unchanged"),
    (_m(0, 10), None, Rule(), "lost"),
    (None, _m(0, 10), Rule(), "new"),
    # not judged (a free-running offset), yet a proven change beyond the tolerance is shown
    (_m(0, 10), _m(30, 40), Rule(tolerance=5, judge=False), "changed (not judged)"),
    (_m(0, 10), _m(2, 12), Rule(tolerance=5, judge=False), "not compared"),
    (_m(0, 10, judgeable=False), _m(30, 40), Rule(), "not compared"),
])
def test_verdicts(b, c, rule, expected):
    assert compare.verdict(b, c, rule)[0] == expected


def test_tolerance_rules_resolve_most_specific_last():
    t = tolerances_from_dict({"measures": {"latency": {"tolerance": "200ms"},
                                           "latency.outlet": {"tolerance": "1s"}},
                              "planes": {"pdu": {"latency": {"tolerance": "2s"}}},
                              "devices": {"pdu-1": {"latency.outlet": {"judge": False}}}})
    assert t.rule("latency.test_event").tolerance == 200e6
    assert t.rule("latency.outlet").tolerance == 1e9
    assert t.rule("latency.outlet", "pdu-2", "pdu").tolerance == 2e9
    assert t.rule("latency.outlet", "pdu-1", "pdu").judge is False
    assert t.rule("latency.outlet.median").tolerance == 1e9      # a quantile: its stimulus's
    assert t.rule("latency.outlet.p90", "pdu-1", "pdu").judge is False
    with pytest.raises(ToleranceError, match="expected a number"):
        tolerances_from_dict({"measures": {"drift": {"tolerance": "2ms"}}})


def _drift(lo, hi, point, span_s=60.0, assumed=False, half=None, informative=True):
    return Measure("cdu-1", "rtc", "drift", "ppm", lo, hi, point, "proven", span_s=span_s,
                   narrowing="1/span", assumed=assumed, half_width=half,
                   point_informative=informative)


def test_undecided_names_the_run_length_that_decides():
    """60 s runs bounding 100 and 160 ppm each ±50 ppm wide: the change (+60 ppm, proven only
    within [-40, +160]) is undecided at 2 ppm; bounds ~ 1/span decide it when both half-widths
    (50 + 50 ppm at 60 s) shrink below the 58 ppm margin: about 104 s."""
    b, c = _drift(50, 150, 100), _drift(110, 210, 160)
    v, tol, why, span = compare.verdict(b, c, Rule(tolerance=2, direction="magnitude"))
    assert v == "undecided" and tol == 2
    assert span == pytest.approx(60 * 100 / 58, rel=1e-6)
    assert "runs of 104 s each would decide it" in why and "e+" not in why
    # at that length the projected bounds prove the change
    k = 60 / span
    assert (160 - 50 * k) - (100 + 50 * k) > 2 - 1e-9
    # a latency bound does not narrow with span: no length is named
    lat = Measure("d", "", "latency.x", "ns", 0, 4e8, 2e8, "proven")
    assert compare.verdict(lat, lat, Rule(tolerance=2e8))[3] is None


def test_units_are_human():
    assert compare.fmt_value(6.95231e8, "ns") == "695 ms"
    assert compare.fmt_value(-1.23e15, "ns") == "-1230000 s"
    assert compare.fmt_value(53.8, "ppm", signed=True) == "+53.8 ppm"
    assert compare.fmt_span(7200) == "2.0 h" and compare.fmt_span(45.2) == "46 s"
    assert compare.fmt_span(720) == "12 min"


def test_empty_run_comparison_is_readable(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "manifest.json").write_text(json.dumps({"run_id": "x", "status": "refused",
                                                     "error": "reference refused " * 40}))
    rc = compare_cli.main([str(runs[BASELINE]), str(empty)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "nothing to compare: the candidate has no measures" in out
    assert max(len(line) for line in out.splitlines()) < 300, out


def test_trend_of_three_runs_finds_the_step(runs, tmp_path, capsys):
    """The firmware series 2.14.0 -> 2.14.1 -> 2.15.0: the step that slowed bmc-1's logging is
    the third run; the last run is judged against the runs since the previous firmware change
    (run #2, 2.14.1) and regressed; the changes are marked; JSON, JUnit and the figure written."""
    from bench.commands import trend

    fig, js = tmp_path / "trend.png", tmp_path / "trend.json"
    rc = trend.main([str(runs[BASELINE]), str(runs[UNCHANGED]), str(runs[REGRESSED]),
                     "--as-given", "--figure", str(fig), "--json", str(js),
                     "--junit", str(tmp_path / "trend.xml")])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "REGRESSED: last run against run #2: bmc-1 latency.test_event.median" in out
    assert f"at #3: bmc-1 firmware {UNCHANGED} -> {REGRESSED}" in out
    assert "the last run is judged against run #2" in out
    t = next(x for x in json.loads(js.read_text())["trends"]
             if x["device"] == "bmc-1" and x["measure"] == "latency.test_event.median")
    assert t["first_change_run"] == 2 and len(t["values"]) == 3
    data = json.loads(js.read_text())
    assert data["reference_runs"] == [1] and data["outcome"] == "REGRESSED"
    assert {"run": 2, "device": "bmc-1", "what": "firmware", "before": UNCHANGED,
            "after": REGRESSED} in data["identity_changes"]
    suite = ET.parse(tmp_path / "trend.xml").getroot()
    failed = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert "latency.test_event.median" in failed and int(suite.get("failures")) == len(failed)
    # a named baseline: the first run
    rc = trend.main([str(runs[BASELINE]), str(runs[UNCHANGED]), str(runs[REGRESSED]),
                     "--as-given", "--figure", str(fig), "--baseline", str(runs[BASELINE])])
    assert rc == 1 and "judged against run #1" in capsys.readouterr().out
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and fig.stat().st_size > 20000
    assert trend.main([str(runs[BASELINE]), str(runs[UNCHANGED])]) == 2


def test_trend_figure_says_its_cap_and_lands_beside_the_runs(runs, tmp_path, capsys,
                                                             monkeypatch):
    """Issue 30: the figure silently kept 24 panels and was written to the current folder."""
    from bench.commands import trend

    monkeypatch.chdir(tmp_path)
    rc = trend.main([str(runs[BASELINE]), str(runs[UNCHANGED]), str(runs[REGRESSED]),
                     "--as-given", "--max-panels", "1", "--figure"])
    out = capsys.readouterr().out
    assert rc == 1 and not (tmp_path / "trend.png").exists()
    line = next(x for x in out.splitlines() if x.startswith("figure: "))
    assert line.startswith(f"figure: {runs[REGRESSED] / 'trend.png'} (1 of ")
    assert "--max-panels" in line and (runs[REGRESSED] / "trend.png").exists()


def test_compare_fits_120_columns_with_figures_to_their_precision(runs, capsys):
    """Issue 30 item 7: ~265 columns before, and -3641.27 s printed as -3640 s."""
    compare_cli.main([str(runs[BASELINE]), str(runs[REGRESSED]), "--all"])
    out = capsys.readouterr().out
    assert max(len(x) for x in out.splitlines()) <= 120, out
    compare_cli.main([str(runs[BASELINE]), str(runs[REGRESSED]), "--all", "--wide"])
    out = capsys.readouterr().out
    assert max(len(x) for x in out.splitlines()) > 120              # every column
    row = next(x for x in out.splitlines() if x.startswith("bmc-2") and " offset " in x)
    # bmc-2 is 41.27 s behind here: every interval with the decimals its width needs
    ivs = re.findall(r"\[(-41\.\d+), (-41\.\d+)\] s", row)
    assert len(ivs) == 2, row
    for a, b in ivs:
        need = math.ceil(-math.log10(float(b) - float(a)))
        assert float(a) < float(b) and len(a.split(".")[1]) >= need, (a, b, row)


def test_bounds_show_the_digits_their_width_needs():
    from bench.compare.output import bounds
    m = Measure("d", "c", "offset", "ns", -3641.2695e9, -3641.2665e9, -3641.268e9, "proven", True)
    assert bounds(m, "ns") == "-3641.268 s [-3641.2695, -3641.2665] s"


def test_an_address_or_port_alone_is_no_identity_change():
    from bench.compare.verdicts import without_addresses as w
    assert w("unreachable: host 127.0.0.1:34097") == w("unreachable: host 127.0.0.1:40211")
    assert w("serial:///dev/pts/3") == w("serial:///dev/pts/7")
    assert w("https://10.0.0.21:443/redfish/v1") == w("https://10.0.0.22/redfish/v1")
    assert w("2.14.0") != w("2.15.0") and w("SIM3C56A850") != w("SIM3C56A851")


def test_an_assumed_drift_is_never_called_proven(runs):
    """Issue 28 item 7: compare labelled every drift 'proven'; the drift at an epoch is assumed.
    compare's drift is the segment's mean drift over its window where that is proven (it is
    then the summary's proven interval), else the drift at the epoch with its own status."""
    from bench.compare.measures import run_measures
    from bench.model.rundata import load_run
    run = load_run(runs[BASELINE])
    ms = run_measures(run)
    drifts = [(d, c, m) for (d, c, name), m in ms.items() if name == "drift"]
    assert drifts
    for d, c, m in drifts:
        seg = run.summary.devices[d].clocks[c].longest
        md = seg.mean_drift or {}
        if md.get("status") == "proven":
            assert m.basis == "proven" and (m.lo, m.hi) == (md["lo"], md["hi"]), (d, c, m)
        else:
            assert m.basis == seg.drift_status != "proven", (d, c, m.basis)
