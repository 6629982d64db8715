"""pytest plugin (entry point `pytest11`): a lab's own regression suite gets the rack file.

`pytest --rack lab.toml` (or RACKCLOCK_RACK=lab.toml) gives the `rack` fixture; tests that use it
are skipped with a clear reason when no rack is given.
"""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("rackclock")
    group.addoption("--rack", default=os.environ.get("RACKCLOCK_RACK"),
                    help="rack file of a real lab rack (default: $RACKCLOCK_RACK)")


@pytest.fixture(scope="session")
def rack(request):
    """The RackConfig of the rack file given with --rack; skips the test when none is given."""
    path = request.config.getoption("--rack")
    if not path:
        pytest.skip("no rack file given (pytest --rack FILE or RACKCLOCK_RACK=FILE)")
    from bench.inventory import load_rack
    return load_rack(path)
