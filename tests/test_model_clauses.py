"""Every clause of every clock's model shows on screen and in the report (issue 39): what
summary.json's `assumptions` holds (each clause of `model`, the lag among them, the step X, the
resolution, the reference allowance, the wander allowance, the rate-change assumption, a drift
prior apart from the rate bound) is said for every clock, the shared ones once, the table still
in 120 columns."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from bench.model.summary_records import Summary
from bench.output.terminal import table
from bench.units import fmt_ns, fmt_ns_up, fmt_ppm

RECORDED = Path(__file__).parent / "data" / "recorded" / "20261201T161000Z-clock_offset"


def _said(flat: str, clock: str, label: str, value: str) -> bool:
    """Is `label value` said for `clock`: on the shared line, with its name, or as the value
    of 'the rest' where its name is not given another value."""
    lines = [x for line in flat.splitlines() for x in _unspliced(line)]
    shared = next((x for x in lines if x.startswith("model (every clock): ")), "")
    text = f"{label} {value}".strip()
    if text in shared.split(": ", 1)[-1].split("; "):
        return True
    for line in lines:
        body = line[len(label) + 2:] if label and line.startswith(f"{label}: ") else line
        parts = body.split("; ")
        if label and line.startswith(f"{label}: "):
            mine = [p for p in parts if clock in p]
            if mine:
                return any(p.endswith(f" {value}") or p == value for p in mine)
            if f"{value} (the rest)" in parts:
                return True
        elif not label:
            for p in parts:
                if p.startswith(f"{value} (") and (clock in p or p.endswith("(the rest)")):
                    return True
    return False


def _unspliced(line: str) -> list[str]:
    """A clause said once with its one varying word by clock, 'HEAD{w1 the rest; w2 CLOCKS}TAIL',
    as one line per value in the plain form ('CLAUSE (the rest)', 'CLAUSE (CLOCKS)')."""
    if "{" not in line or "}" not in line:
        return [line]
    head, rest = line.split("{", 1)
    mid, tail = rest.split("}", 1)
    out = []
    for part in mid.split("; "):
        word, _, who = part.partition(" ")
        out.append(f"{head}{word}{tail} ({who})")
    return ["; ".join(out)]


def _every_clause_said(summary: dict, text: str) -> int:
    flat = text.replace("\n  ", " ")
    n = 0
    for d, c in Summary.of(summary).clocks():
        a, clock = c.assumptions, f"{d.name} {c.name}"
        for clause in (x.strip() for x in str(a.raw["model"]).split(";")):
            if clause.startswith("a step of "):
                u = a.unseen_step
                assert f"{clock} {fmt_ns_up(u['size_ns'])}" in flat, clock
                assert f"probability >= {u['probability']:g} when they last " \
                       f"{u['within_s']:g} s" in flat
            else:
                assert _said(flat, clock, "", clause), (clock, clause)
            n += 1
        for label, value in (("resolution", f"{fmt_ns(a.resolution_ns)} ({a.resolution_basis})"),
                             ("reference allowance", fmt_ns_up(a.reference_uncertainty_ns)),
                             ("wander allowance", f"{a.wander_ppm:g} ppm/√h"),
                             ("a drift at an instant assumes", a.rate_changes)):
            assert _said(flat, clock, label, value), (clock, label, value)
            n += 1
        if a.drift_prior_ppm != a.raw["rate_bound_ppm"]:
            assert _said(flat, clock, "drift prior", f"±{fmt_ppm(a.drift_prior_ppm)}"), clock
    return n


def _recorded() -> dict:
    return json.loads((RECORDED / "summary.json").read_text())


def test_every_clause_of_a_recorded_run_shows_on_screen():
    s = _recorded()
    text = table(s)
    assert _every_clause_said(s, text) >= 7 * 6
    assert "reading lags its clock by at most 10 ms (pdu-1 hrsystemdate)" in text
    assert all(len(x) <= 120 for x in text.splitlines())


def test_clauses_that_differ_per_clock_are_said_per_clock():
    s = copy.deepcopy(_recorded())
    clocks = [c for d in s["devices"].values() for c in d["clocks"].values()]
    a0, a1, a2 = (clocks[i]["assumptions"] for i in (0, 1, 2))
    a0["model"] = a0["model"].replace("600 ppm", "1500 ppm") + "; reading lags its clock by " \
        "at most 5 ms"
    a0.update(rate_bound_ppm=1500.0, drift_prior_ppm=1500.0, tick_lag_ns=5_000_000)
    a1.update(wander_ppm=0.5, reference_uncertainty_ns=250_000, drift_prior_ppm=900.0)
    a2.update(resolution_ns=100_000_000, resolution_basis="observed")
    text = table(s)
    assert _every_clause_said(s, text) >= 7 * 6
    assert all(len(x) <= 120 for x in text.splitlines())
    # one clause, its one varying figure by clock
    assert "offset moves at most {600 the rest; 1500 bmc-1 datetime;" in text


def test_the_report_says_every_clause(tmp_path):
    from bench.model.rundata import load_run
    from bench.output.report_verdict import _clock_table_html
    html = _clock_table_html(load_run(RECORDED))
    for d in _recorded()["devices"].values():
        for c in d["clocks"].values():
            a = c["assumptions"]
            for clause in (x.strip() for x in a["model"].split(";")):
                if not clause.startswith("a step of "):
                    assert clause in html, clause
            assert a["rate_changes"] in html
    assert "resolution: 1 s (declared) (the rest)" in html
    assert "reference allowance 0 ns" in html
