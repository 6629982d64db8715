"""Property-based tests of the rack loader (issue 31): generated rack files, structural and
text mutations of the default rack never raise anything but the project's one-line error, and
the [sim] tables it accepts never break the simulator's own readers of them (tests/rackfuzz.py).
Fixed seed and a few hundred examples here; benchmarks/fuzz/rackfile.py runs the long fuzz."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.rackfuzz import document, mutation, outcome, text_mutation, write

SHORT = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(doc) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), doc)
        if path is not None:
            outcome(path)


@SHORT
@given(document())
def test_generated_rack_files_load_or_say_why_in_one_line(doc):
    _check(doc)


@SHORT
@given(mutation())
def test_mutated_default_racks_load_or_say_why_in_one_line(doc):
    _check(doc)


@SHORT
@given(text_mutation())
def test_mutated_default_rack_text_loads_or_says_why_in_one_line(text):
    _check(text)
