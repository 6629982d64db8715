"""Every word of the output has one line of meaning (issue 45 item 6): under the closing output
for the words it uses, in `rackclock run --help`, and in docs/WORDS.md, from one table."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.model.vocabulary import GLOSSARY, LEGEND, glossary_lines
from bench.output.closing import closing_text

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "recorded" / "20261201T161000Z-clock_offset"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_words_page_says_every_word_as_the_table_does():
    words = _flat(ROOT.joinpath("docs", "WORDS.md").read_text())
    for w, m in {**LEGEND, **GLOSSARY}.items():
        assert f"**{w}**: {m}" in words, w


def test_the_closing_output_explains_the_words_it_uses_and_no_others():
    text, _ = closing_text(RECORDED, wide=True)
    body = text.split("\nbracket: ", 1)[0]
    used = glossary_lines(body)
    assert "bracket: " + GLOSSARY["bracket"] in text and len(used) >= 3, used
    for line in used:
        assert line in text
    unused = [w for w in GLOSSARY if f"{w}: {GLOSSARY[w]}" not in text]
    assert unused and all(not re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", body.lower())
                          for w in unused), unused


def test_a_word_inside_another_is_not_used():
    assert glossary_lines("unbreakable, epochs, a floored clock") == []
    assert glossary_lines("Two breaks; one break.") == [f"break: {GLOSSARY['break']}"]


def test_run_help_lists_the_words():
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--help"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0
    out = _flat(p.stdout)
    assert "words of the output:" in out
    assert all(f"{w}: {_flat(m)}" in out for w, m in GLOSSARY.items())
