"""The one vocabulary every output uses (table, report, compare, limits, live line): a figure is
proven, assumed (naming the assumption) or undecided (naming what is missing); a check against a
limit passes, fails or is undecided; a clock that never advanced is stuck. The words and the
legend texts live here only (the model layer, so limits and compare use it as the outputs do);
bench.analysis.statuses holds the values summary.json carries.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

PROVEN = "proven"
ASSUMED = "assumed"
UNDECIDED = "undecided"
EXTRAPOLATED = "extrapolated"
STUCK = "stuck"

PASS = "PASS"
FAIL = "FAIL"
UNDECIDED_VERDICT = "UNDECIDED"

# the words older outputs used for "not settled", and the one word that replaces them
SYNONYMS = {"unproven": UNDECIDED, "inconclusive": UNDECIDED, "not yet": UNDECIDED,
            "not reached": UNDECIDED}

LEGEND = {
    PROVEN: "holds whenever the clock's stated model holds (the reads, the reference's bound, "
            "at most one unseen break per segment); the truth lies inside",
    ASSUMED: "holds only under the assumption named beside it (e.g. at most one unseen rate "
             "change for a drift at an instant); the reads alone do not prove it",
    UNDECIDED: "the reads do not settle it; what is missing is named beside it",
    EXTRAPOLATED: "outside the calibrated span (first to last read of a segment): carried by "
                  "the drift bound, not by reads; judged only when a span is asked for",
    STUCK: "the clock did not advance over the reads stated: no offset or drift is published",
}

# the other words of the output, one line each: printed under the closing output where used,
# in `rackclock run --help` and in docs/WORDS.md, all from here
GLOSSARY = {
    "bracket": "the reference interval around one read, from the request leaving to the answer "
               "arriving: the device read its clock inside it",
    "pinned": "how narrow the clock's offset bound got; 'after T s' (live: pinned@T): when it "
              "first came within twice the narrowest bracket",
    "floor": "the narrowest bracket seen: the width an offset bound can approach, never beat",
    "break": "a step, reboot or rate change the reads prove; it splits a clock into segments, "
             "each fitted on its own",
    "epoch": "the instant at which a segment's offset and drift are stated",
    "late probes": "reads that started 10 ms or more after the instant planned for them (a busy "
                   "host); their brackets are kept, only wider",
    "a smaller one can hide": "a step below the size stated may stay unseen for 10 s; proven "
                              "bounds allow for one such step in each segment",
    "naive merge": "every log line ordered by its own stamp, as if each device's clock were "
                   "right",
    "contained": "the plane that truly broke first is among those rackclock names first",
}


def glossary_lines(text: str) -> list[str]:
    """'word: meaning' for each GLOSSARY word that `text` uses."""
    low = text.lower()
    return [f"{w}: {m}" for w, m in GLOSSARY.items()
            if re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", low)]


VERDICT_LEGEND = {
    PASS: "every value the bounds allow meets the limit",
    FAIL: "no value the bounds allow meets it",
    UNDECIDED_VERDICT: "the bound straddles the limit (a longer run or finer reads decides it)",
}


def word(status: str | None) -> str:
    """The vocabulary's word for a status as written anywhere (None or '' -> proven, as the
    summary's older folders meant)."""
    s = str(status or PROVEN).lower()
    return SYNONYMS.get(s, s)


def verdict_word(verdict: str) -> str:
    """pass -> PASS, fail -> FAIL, undecided/unproven/inconclusive -> UNDECIDED."""
    w = word(verdict)
    return {"pass": PASS, "fail": FAIL}.get(w, UNDECIDED_VERDICT)


def stuck_text(stuck: Mapping[str, Any] | None) -> str:
    """'stuck (no advance over 40 reads spanning 60 s)' from a summary clock's `stuck` record."""
    x = stuck or {}
    n, span = x.get("reads"), x.get("span_s")
    if n is None or span is None:
        return STUCK
    return f"{STUCK} (no advance over {int(n)} reads spanning {float(span):.3g} s)"


def legend_lines(words: Iterable[str] = (PROVEN, ASSUMED, UNDECIDED, EXTRAPOLATED, STUCK)
                 ) -> list[str]:
    return [f"{w}: {LEGEND[w]}" for w in words]


def overall(verdicts: Iterable[str]) -> str:
    """One overall verdict over checks' verdicts: FAIL if any fails, else UNDECIDED if any is
    undecided, else PASS (no checks: '')."""
    vs = [verdict_word(v) for v in verdicts]
    if not vs:
        return ""
    return FAIL if FAIL in vs else UNDECIDED_VERDICT if UNDECIDED_VERDICT in vs else PASS
