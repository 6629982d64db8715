"""`rackclock timeline --first`: the answer (which plane broke first, or the set undecidable
between them), its proof, the naive merge's answer and the story, as terminal lines and as an
HTML section (bench/analysis/first_break.py makes the answer)."""
from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

from bench.units import fmt_interval_ns


def _iv(line: dict[str, Any], t0: int) -> str:
    return fmt_interval_ns(line["lo_ns"] - t0, line["hi_ns"] - t0)


def answer_lines(ans: dict[str, Any], t0: int, window: str = "") -> Iterator[str]:
    """The answer first, then why, the naive merge beside it, and the story (run time)."""
    where = f" in the window {window}" if window else ""
    yield f"which plane broke first ({ans['lines']} lines{where}): {ans['answer']}"
    if not ans["lines"]:
        return
    yield from _why_lines(ans, t0)
    yield _naive_line(ans["naive"])
    yield "  story (proven order; a step is proven after every line of the steps before it):"
    for s in ans["story"]:
        yield (f"    {s['step']:>3}  {s['plane']:<10} {_iv(s, t0):<32} {s['label'][:70]}")
    if ans["story_count"] > len(ans["story"]):
        yield f"    ... {ans['story_count'] - len(ans['story'])} more lines (timeline.json)"


def _why_lines(ans: dict[str, Any], t0: int) -> Iterator[str]:
    """The first lines, the pairs undecidable between them, and why each other plane is not
    first."""
    for ln in ans["first"][:5]:
        yield f"  first: {ln['label'][:90]} {_iv(ln, t0)}"
    if ans["first_count"] > 5:
        yield f"  ... {ans['first_count'] - 5} more lines no other line is proven before"
    for u in ans.get("undecided", []):
        yield (f"  undecidable: {u['a']['label'][:50]} {_iv(u['a'], t0)} and "
               f"{u['b']['label'][:50]} {_iv(u['b'], t0)}: {u['why']}")
    for p in ans["proof"]:
        yield (f"  proof {p['plane']} not first: {p['line']['label'][:50]} {_iv(p['line'], t0)} "
               f"is after {p['after']['label'][:50]} {_iv(p['after'], t0)} ({p['by']}; "
               f"each of its {p['lines']} lines has a line proven before it)")


def _naive_line(nv: dict[str, Any]) -> str:
    """What the naive merge of the raw stamps says, and the line that refutes it."""
    said = f"  naive merge of the raw stamps: {nv['answer']}"
    if "line" in nv:
        said += f" ({nv['line']['label'][:60]})"
    if "refuted_by" in nv:
        said += f": wrong, that line is proven after {nv['refuted_by']['label'][:60]}"
    return said


def answer_html(ans: dict[str, Any], t0: int, window: str = "") -> str:
    """The same as an HTML section, verdict first."""
    lines = list(answer_lines(ans, t0, window))
    head, rest = lines[0], lines[1:]
    return (f"<section class='tl-first'><h2>{html.escape(head)}</h2><pre>"
            + html.escape("\n".join(rest)) + "</pre></section>")
