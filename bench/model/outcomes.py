"""The one outcome vocabulary and exit-code table of every judging command (`run`, `compare`,
`trend`, `limits`): their --help texts and docs/REGRESSION.md quote EXIT_TABLE from here.

  PASS       0  every judged figure is proven within its limit or tolerance
  REGRESSED  1  a judged figure is proven beyond it (a limit: FAIL; a run: FAIL)
  ERROR      2  usage or input error: bad arguments, a missing or malformed file
  UNDECIDED  3  nothing failed, but a figure's bounds straddle its limit or tolerance, or nothing
                was judged (no clock measured, every clock stuck): never a green gate

`--allow-undecided` maps UNDECIDED to 0 (the old behaviour); nothing else changes the table.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.model.vocabulary import FAIL, PASS, UNDECIDED_VERDICT

__all__ = ["FAIL", "PASS", "REGRESSED", "ERROR", "UNDECIDED", "EXIT", "FAILING", "UNDECIDED_ROW",
           "EXIT_TABLE", "ALLOW_UNDECIDED_HELP", "exit_table_text", "exit_table_markdown",
           "outcome", "exit_code", "worst", "measured_clocks"]

REGRESSED = "REGRESSED"
ERROR = "ERROR"
UNDECIDED = UNDECIDED_VERDICT

EXIT = {PASS: 0, REGRESSED: 1, FAIL: 1, ERROR: 2, UNDECIDED: 3}

# the verdicts a comparison row can take, grouped by the outcome they give
FAILING = ("regressed", "changed", "lost")
UNDECIDED_ROW = "undecided"

EXIT_TABLE = (
    ("PASS", 0, "every judged figure is proven within its limit or tolerance"),
    ("FAIL / REGRESSED", 1, "a judged figure is proven beyond its limit or tolerance"),
    ("usage or input error", 2, "bad arguments, a missing or malformed file"),
    ("UNDECIDED", 3, "nothing failed, but a bound straddles its limit or tolerance, or nothing "
                     "was judged (no clock measured, every clock stuck); --allow-undecided: 0"),
)
ALLOW_UNDECIDED_HELP = ("exit 0 instead of 3 when nothing failed but something is UNDECIDED "
                        "(the old behaviour; an undecided gate is not a green one)")


def exit_table_text() -> str:
    """The table as --help epilogs print it (argparse RawDescriptionHelpFormatter), lines of at
    most 100 columns."""
    import textwrap
    return "exit status:\n" + "\n".join(
        textwrap.fill(f"{code}  {name}: {what}", 98, initial_indent="  ",
                      subsequent_indent="     ") for name, code, what in EXIT_TABLE)


def exit_table_markdown() -> str:
    """The table as the docs print it (docs/REGRESSION.md; a test checks they agree)."""
    rows = ["| exit | outcome | meaning |", "|---|---|---|"]
    rows += [f"| {code} | {name} | {what} |" for name, code, what in EXIT_TABLE]
    return "\n".join(rows)


def outcome(failed: bool, undecided: bool, judged: bool = True) -> str:
    """PASS, REGRESSED or UNDECIDED: a failure wins; then anything undecided, or nothing judged."""
    if failed:
        return REGRESSED
    return UNDECIDED if undecided or not judged else PASS


def exit_code(outcome_word: str, allow_undecided: bool = False) -> int:
    """The exit status of an outcome word (PASS, FAIL, REGRESSED, UNDECIDED, ERROR; any case)."""
    w = str(outcome_word).upper()
    if w not in EXIT:
        raise ValueError(f"not an outcome: {outcome_word!r} (known: {', '.join(EXIT)})")
    if w == UNDECIDED and allow_undecided:
        return 0
    return EXIT[w]


def worst(outcomes: Iterable[str]) -> str:
    """The overall outcome of several: REGRESSED/FAIL > UNDECIDED > PASS (none: UNDECIDED)."""
    ws = [str(o).upper() for o in outcomes]
    if any(w in (REGRESSED, FAIL) for w in ws):
        return REGRESSED
    return PASS if ws and all(w == PASS for w in ws) else UNDECIDED


def measured_clocks(summary: Any) -> int:
    """Clocks of a run's summary (bench.model.summary_records.Summary) with a fitted segment: neither
    stuck nor unread. None of them: nothing was measured, and no judge of the run passes it."""
    return sum(1 for _, c in summary.clocks() if c.segments and str(c.verdict) != "stuck")
