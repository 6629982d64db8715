"""The documentation's house rules: docs/DESIGN.md states the design as it is (no "Changed" marks,
no issue numbers: the history is CHANGELOG.md) in paragraphs a reader can hold, and the README's
front page fits a screen or two of 110 columns. DESIGN.md is the design a newcomer reads in an
hour (at most 600 lines): reference material lives in the other docs/ pages."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "DESIGN.md"
README = ROOT / "README.md"
HISTORY = re.compile(r"\bChanged\b|(?i:\bissues? \d+|\bitem \d+)|#\d+\b")
LONGEST_BLOCK = 15          # lines of one paragraph or list item
README_LINES = 160
DESIGN_LINES = 600
WIDTH = 110


def history_marks(text: str) -> list[str]:
    """The lines that carry history: a "Changed" mark or an issue number."""
    return [line.strip() for line in text.splitlines() if HISTORY.search(line)]


def long_blocks(text: str, limit: int = LONGEST_BLOCK) -> list[str]:
    """The first words of every paragraph or list item over `limit` lines (code blocks and
    tables aside)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    blocks = re.split(r"\n\s*\n|\n(?=- )", prose)
    return [b.strip()[:60] for b in blocks
            if not b.lstrip().startswith("|") and len(b.strip().splitlines()) > limit]


def wide_lines(text: str, width: int = WIDTH) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if len(line) > width]


def test_design_carries_no_history():
    assert history_marks(DESIGN.read_text()) == []


def test_history_marks_are_found():
    text = ("Changed: the runner shards.\nas before issue 17\nsee #28\n"
            "(item 8) flank reads\nthe changed clock is fine\nRound 5 and 2 issues")
    assert history_marks(text) == ["Changed: the runner shards.", "as before issue 17",
                                   "see #28", "(item 8) flank reads"]


def test_design_paragraphs_are_short():
    assert long_blocks(DESIGN.read_text()) == []


def test_design_reads_in_an_hour():
    """Reference (formats, keys, options, each rule's figures) goes to docs/FORMATS.md,
    docs/MODEL.md and the other pages; DESIGN.md keeps the model, the contracts, the reasons."""
    assert len(DESIGN.read_text().splitlines()) <= DESIGN_LINES


def test_a_long_paragraph_is_found():
    long = "\n".join(["word"] * (LONGEST_BLOCK + 1))
    short = "\n".join(["- item"] + ["  more"] * 3)
    code = "```\n" + "\n".join(["x"] * 40) + "\n```"
    assert long_blocks(f"{short}\n\n{code}\n\n{long}\n") == [long[:60]]


def test_readme_front_page_fits():
    text = README.read_text()
    assert len(text.splitlines()) <= README_LINES
    assert wide_lines(text) == []


def test_readme_keeps_its_two_commands():
    text = README.read_text()
    assert "make run     # the standard suite on the simulated rack" in text
    assert "make test    # the test suite" in text
