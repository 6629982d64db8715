"""What every benchmark figure states: its spread over repeats, and a scratch folder that goes."""
from __future__ import annotations

import contextlib
import shutil
import statistics
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path


def spread(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    """'median [min–max] over n' of a figure's repeats."""
    v = sorted(values)
    if len(v) == 1:
        return f"{fmt.format(v[0])} (1 repeat)"
    return (f"{fmt.format(statistics.median(v))} [{fmt.format(v[0])}–{fmt.format(v[-1])}] "
            f"over {len(v)}")


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temp folder for the script's emulators and runs, removed however the script ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def temp_dir(prefix: str) -> Path:
    """A temp folder removed when the script exits (normally or by an exception, Ctrl-C)."""
    import atexit
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
