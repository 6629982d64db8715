"""The watch's alerts: one journal line and one WARNING per event (a break, a crossed limit, a
stuck clock, a degraded reference), and the example alerting rules under promtool."""
from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.reference.clock import Health
from bench.watch.alerts import Alerts
from bench.watch.state import STUCK_MIN_NS, WatchState

NS = 1_000_000_000
RULES = Path(__file__).resolve().parents[1] / "deploy" / "prometheus"


def _watch(limits=None):
    lines = []
    st = WatchState(lambda: 0)
    st.define("bmc-1", "bmc", [{"name": "datetime", "resolution_ns": NS}])
    al = Alerts(lambda *a: lines.append(a), limits or {})
    return st, al, lines, st.devices["bmc-1"].clocks["datetime"]


def test_stuck_clock_said_once_and_again_only_after_it_moved(caplog):
    st, al, lines, c = _watch()
    t = 1_800_000_000 * NS
    for k in range(3):                            # ticking: never stuck
        st.row("bmc-1", "read", "datetime", t + k * NS, t + k * NS + 1000, t + k * NS, "ok")
    assert not c.stuck
    v = t + 2 * NS
    with caplog.at_level(logging.WARNING, "bench.watch.alerts"):
        for k in range(3, 3 + STUCK_MIN_NS // NS + 5):       # the value stops
            st.row("bmc-1", "read", "datetime", t + k * NS, t + k * NS + 1000, v, "ok")
            al.stuck("bmc-1", "datetime", c)
    assert c.stuck
    assert [x[2] for x in lines] == ["alert_stuck"]
    assert sum("stuck" in r.getMessage() for r in caplog.records) == 1
    st.row("bmc-1", "read", "datetime", t + 99 * NS, t + 99 * NS + 1000, t + 99 * NS, "ok")
    al.stuck("bmc-1", "datetime", c)
    assert not c.stuck and len(lines) == 1


def test_limit_crossed_once_while_it_lasts():
    st, al, lines, c = _watch({"planes": {"bmc": {"offset_within": "10ms"}}})
    c.bounds = {"offset_lo_ns": 20e6, "offset_hi_ns": 25e6, "drift_lo_ppm": -1.0,
                "drift_hi_ppm": 1.0}
    al.crossed("bmc-1", "datetime", c)
    al.crossed("bmc-1", "datetime", c)
    assert [x[2] for x in lines] == ["alert_limit"]
    c.bounds = dict(c.bounds, offset_lo_ns=5e6, offset_hi_ns=12e6)   # undecided: not crossed
    al.crossed("bmc-1", "datetime", c)
    c.bounds = dict(c.bounds, offset_lo_ns=-30e6, offset_hi_ns=-20e6)
    al.crossed("bmc-1", "datetime", c)
    assert [x[2] for x in lines] == ["alert_limit", "alert_limit"]


def test_break_said_once_across_refits_of_a_sliding_window():
    st, al, lines, c = _watch()
    t = 1_800_000_000 * NS
    for k in range(40):                           # 1 s ticks, stepped by 3 s after read 20
        v = t + k * NS // 2 + (3 * NS if k >= 20 else 0)
        st.row("bmc-1", "read", "datetime", t + k * NS // 2, t + k * NS // 2 + 2_000_000,
               v // NS * NS, "ok")
    for _ in range(2):
        for dev, clock, cs in st.due():
            al.breaks(dev, clock, st.refit(dev, clock, cs))
        st.row("bmc-1", "read", "datetime", t + 20 * NS + 1, t + 20 * NS + 2_000_000,
               (t + 23 * NS) // NS * NS, "ok")
    assert [x[2] for x in lines] == ["alert_break"]
    assert sum(c.breaks.values()) == 1


def test_reference_degraded_once_until_it_recovers():
    lines = []
    al = Alerts(lambda *a: lines.append(a))
    ok = Health("realtime", 1, verified=True, grade="ok")
    bad = Health("realtime", 2, grade="fail", problems=("fail: ptp4l not answering",))
    for h in (ok, bad, bad, ok, bad):
        al.reference(h)
    assert [x[2] for x in lines] == ["alert_reference", "alert_reference"]
    assert "ptp4l not answering" in lines[0][3]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (prometheus)")
def test_alerting_rules_pass_promtool():
    for args in (["check", "rules", "rackclock.rules.yml"],
                 ["test", "rules", "rackclock.rules.test.yml"]):
        r = subprocess.run(["promtool", *args], cwd=RULES, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr


def test_rules_and_dashboard_name_only_exported_metrics():
    """Every rackclock_* name the alerting rules, their tests and the Grafana dashboard use is
    one the watch's endpoint exports (a renamed metric would silently never alert)."""
    import re

    from prometheus_client.exposition import generate_latest

    from bench.watch.metrics import registry
    st, _, _, c = _watch()
    c.bounds = {"offset_lo_ns": 1.0, "offset_hi_ns": 2.0, "offset_status": "proven",
                "epoch_ns": 0, "at_ns": 0, "at_lo_ns": 1, "at_hi_ns": 2, "rate_ppm": 600.0,
                "drift_lo_ppm": -1.0, "drift_hi_ppm": 1.0, "mean_drift_ppm": 0.1}
    c.last_read_ns = 0
    st.set_reference(Health("realtime", 1, verified=True, grade="ok", detail={
        "offset_from_master_ns": 12, "mean_path_delay_ns": 800, "gm_identity": "aa"}))
    text = generate_latest(registry(st)).decode()
    exported = set(re.findall(r"^(rackclock_\w+?)(?:\{| )", text, re.M))
    root = RULES.parent
    for f in (RULES / "rackclock.rules.yml", RULES / "rackclock.rules.test.yml",
              root / "grafana" / "rackclock-watch.json"):
        used = set(re.findall(r"rackclock_[a-z_]+[a-z]", f.read_text())) - {"rackclock_watch"}
        assert used and used <= exported, (f.name, used - exported)


def test_grandmaster_changes_counted_and_polite_default_rates():
    from prometheus_client.exposition import generate_latest

    from bench.config.loader import load_checked
    from bench.run.experiment import DEFAULT_RACK
    from bench.watch.metrics import registry
    from bench.watch.supervisor import polite
    st = WatchState(lambda: 0)
    for k, gm in enumerate(("aa", "aa", "bb", "bb", "cc")):
        st.set_reference(Health("realtime", k, verified=True, grade="ok",
                                detail={"gm_identity": gm}))
    assert "rackclock_reference_gm_identity_changes_total 2.0" in \
        generate_latest(registry(st)).decode()
    rack = load_checked(DEFAULT_RACK)
    rates = {d.name: polite(d, {}).rate_hz for d in rack.devices}
    assert rates["bmc-1"] == 0.2 and rates["pdu-1"] == 0.5 and rates["cdu-1"] == 0.5
    assert all(r <= 1.0 for r in rates.values())           # never a run's pace
    assert polite(rack.devices[0], {"*": 1.0, rack.devices[0].driver: 0.1}).rate_hz == 0.1
