"""The one vocabulary (bench/model/vocabulary.py): every older word for "not settled" maps to
undecided, the overall verdict is the worst of the checks', and a stuck clock says N and T."""
from bench.model import vocabulary as v


def test_every_old_word_for_not_settled_is_undecided():
    for old in ("unproven", "INCONCLUSIVE", "not yet", "undecided"):
        assert v.word(old) == "undecided"
    assert v.verdict_word("unproven") == "UNDECIDED"
    assert v.verdict_word("pass") == "PASS" and v.verdict_word("fail") == "FAIL"


def test_overall_is_the_worst_verdict():
    assert v.overall(["pass", "pass"]) == "PASS"
    assert v.overall(["pass", "undecided"]) == "UNDECIDED"
    assert v.overall(["undecided", "fail", "pass"]) == "FAIL"
    assert v.overall([]) == ""


def test_stuck_names_reads_and_span():
    assert v.stuck_text({"reads": 40, "span_s": 59.8}) == \
        "stuck (no advance over 40 reads spanning 59.8 s)"
    assert v.stuck_text(None) == "stuck"


def test_every_word_has_a_legend():
    lines = v.legend_lines()
    assert len(lines) == 5 and all(": " in x and len(x) > 40 for x in lines)
