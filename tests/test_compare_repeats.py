"""Verdicts stable over repeats: three rounds of short runs of a one-CDU rack, each round a
baseline (cdu-1 drifting 100 ppm), a firmware update that makes it drift 160 ppm, and one that
changes nothing. The +60 ppm change is never passed (REGRESSED, or UNDECIDED naming the run
length that would decide it) in 3 of 3 pairs; the nine baseline x no-change pairs exit 0."""
from __future__ import annotations

import threading

import pytest
from racks import sim_rack_text

from bench.compare import verdicts as compare
from bench.model.rundata import load_run
from bench.run.experiment import run_experiment

DURATION_S = "20"
ROUNDS = 3


def rack_text(kind: str, seed: int) -> str:
    sim = {"baseline": {"firmware": "4.2.1"},
           "faster": {"firmware": "4.3.0", "drift_ppm": 160.0},
           "same": {"firmware": "4.2.2"}}[kind]
    return sim_rack_text(["cdu-1"], name="cdu-drift", seed=seed, changes={"cdu-1": {"sim": sim}})


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    """The three rounds' nine runs at once (all of them share the machine's load, as a round's
    three did when the rounds ran one after another); seeds 100..102 keep the rounds apart."""
    root = tmp_path_factory.mktemp("cdu-repeats")
    out: list[dict] = [{} for _ in range(ROUNDS)]
    errors: list[BaseException] = []

    def go(k: int, kind: str) -> None:
        try:
            rack = root / f"rack-{k}-{kind}.toml"
            rack.write_text(rack_text(kind, seed=100 + k))
            out[k][kind] = run_experiment("clock_offset", rack, root / f"out-{k}-{kind}",
                                          {"duration_s": DURATION_S}, quiet=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(k, kind)) for k in range(ROUNDS)
               for kind in ("baseline", "faster", "same")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    for k, runs in enumerate(out):
        for kind, path in runs.items():
            assert load_run(path).manifest["status"] == "completed", (k, kind)
        assert set(runs) == {"baseline", "faster", "same"}, (k, set(runs))
    return out


def _compare(a, b):
    cmp = compare.compare_runs(load_run(a), load_run(b), compare.load_tolerances(None))
    row = next(r for r in cmp.rows if r.device == "cdu-1" and r.measure == "drift")
    return cmp, row


def test_drift_change_is_never_passed(rounds, capsys):
    seen = []
    for runs in rounds:
        cmp, row = _compare(runs["baseline"], runs["faster"])
        seen.append((row.verdict, row.change, row.decide_s, row.reason))
        assert row.verdict in ("regressed", "undecided"), row
        if row.verdict == "undecided":
            assert row.decide_s is not None and row.decide_s > float(DURATION_S) * 0.5, row
            assert "would decide it" in row.reason
            assert cmp.exit_status() == 3 or cmp.failures
        else:
            assert cmp.exit_status() == 1
    with capsys.disabled():
        for v, ch, span, why in seen:
            print(f"\n+60 ppm: {v}, point change {ch:+.1f} ppm, decide at "
                  f"{compare.fmt_span(span) if span else '—'}: {why}")


def test_no_change_pairs_exit_zero(rounds, capsys):
    codes = []
    for a in rounds:
        for b in rounds:
            cmp, row = _compare(a["baseline"], b["same"])
            codes.append(cmp.exit_status(allow_undecided=True))
            assert cmp.exit_status() in (0, 3), [(r.device, r.measure, r.verdict, r.reason)
                                                 for r in cmp.failures]
            assert row.verdict in ("unchanged", "undecided")
    assert codes == [0] * ROUNDS ** 2
