"""`check` and `run` agree (issue 43 item 2): `check` learns a clock's resolution from its own
reads across a tick instead of trusting the format's, so its bound never excludes what a run of
the same device proves; against net-snmp's real snmpd, whose hrSystemDate declares 100 ms and
fills whole seconds (a correct clock looked 0.2-0.8 s off to the old check)."""
from __future__ import annotations

from racks import sim_rack_text  # noqa: F401 (tests/ on the path, as the other tests)
from test_snmp_pdu_snmpd import rack_text, snmpd_port  # noqa: F401 (the fixture)

from bench.check_reads import bound_from_reads
from bench.commands.check import check_devices
from bench.config.inventory import load_rack
from bench.model.rundata import load_run
from bench.reference.clock import Reference
from bench.run.experiment import run_experiment
from drivers.base import Read

NS = 1_000_000_000
MS = 1_000_000


def reads_of(offset_ns: int, q_ns: int, starts: list[int], bracket_ns: int = MS):
    """Reads of a clock `offset_ns` ahead, ticking every q_ns, sampled mid-bracket; each
    declares 100 ms."""
    out = []
    for s in starts:
        t = s + bracket_ns // 2
        out.append(Read("c", s, s + bracket_ns, (t + offset_ns) // q_ns * q_ns, 100 * MS))
    return out


def test_a_tick_seen_gives_the_resolution_and_a_bound_that_holds_the_truth():
    t0 = 1_800_000_000 * NS + 300 * MS
    for off in (-6 * MS, 0, 3 * MS, 250 * MS, -700 * MS):
        starts = [t0, t0 + 2 * MS] + [t0 + 2 * MS + k * 50 * MS for k in range(1, 21)]
        reads = reads_of(off, NS, starts)
        k = next(i for i in range(1, len(reads)) if reads[i].value_ns != reads[i - 1].value_ns)
        b = bound_from_reads(reads[:k + 1], 100 * MS)
        assert b.basis == "learned" and b.resolution_ns == NS
        assert b.lo <= off <= b.hi and b.hi - b.lo <= 60 * MS, (off, b)
        # the format's 100 ms, taken on trust, excludes the truth for most phases: the old way
        r = reads[0]
        old = (r.value_ns - r.e_ns, r.value_ns + 100 * MS - r.s_ns)
        assert not old[0] <= off <= old[1] or (off + t0) % NS < 100 * MS


def test_no_tick_within_the_budget_assumes_the_declared_resolution_and_says_so():
    t0 = 1_800_000_000 * NS
    reads = reads_of(0, 60 * NS, [t0 + k * 50 * MS for k in range(10)])
    b = bound_from_reads(reads, 100 * MS)
    assert b.basis == "assumed" and b.resolution_ns == 100 * MS


def test_five_checks_of_real_snmpd_agree_with_a_run(snmpd_port, tmp_path):  # noqa: F811
    rack = tmp_path / "rack.toml"
    rack.write_text(rack_text(snmpd_port))
    run = load_run(run_experiment("clock_offset", rack, tmp_path / "runs",
                                  {"duration_s": "12", "stimulus_every_s": "none"}, quiet=True,
                                  allowance_ns=0))
    segs = run.summary["devices"]["snmpd"]["clocks"]["hrsystemdate"]["segments"]
    (seg,) = segs
    run_lo, run_hi = seg["offset_ns"]["lo"], seg["offset_ns"]["hi"]
    assert run_lo <= 0 <= run_hi                  # the truth: the agent's clock is the reference
    device = load_rack(rack).devices[0]
    for _ in range(5):
        (res,) = check_devices([device], Reference.now_ns)
        assert res.status == "ok", res.error
        b = res.bounds["hrsystemdate"]
        assert b.basis == "learned" and b.resolution_ns == NS, b      # not the declared 100 ms
        assert b.lo <= 0 <= b.hi, b                                   # holds the truth
        assert b.lo <= run_hi and run_lo <= b.hi, (b, run_lo, run_hi)  # never excludes the run
        assert b.hi - b.lo < 150 * MS, b                              # and still a bound
        text = dict(res.reads)["hrsystemdate"]
        assert "1 s resolution (learned from a tick; 100 ms declared)" in text, text
