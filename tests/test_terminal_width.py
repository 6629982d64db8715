"""The terminal output fits: every table in 120 columns by default (--wide: everything), the live
line in 100 with each clock's bound and status visible; a stuck clock is called stuck and shows
no offset; figures keep the digits their bounds need (issue 30 items 6 and 8, issue 29 item 9)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.model import limit_checks as limits
from bench.output.closing import closing_text
from bench.output.live import LiveBounds
from bench.output.terminal import LIVE_WIDTH, Progress, table
from bench.run.runner import DeviceStatus

S = 1_000_000_000
T0 = 1_800_000_000 * S


def _seg(lo, hi, dlo=-120.0, dhi=150.0, truth=True, **kw):
    return {"start_ns": T0, "end_ns": T0 + 60 * S, "epoch_ns": T0 + 30 * S, "reads": 120,
            "offset_ns": {"lo": lo, "hi": hi, "point": (lo + hi) // 2},
            "drift_ppm": {"lo": dlo, "hi": dhi, "point": (dlo + dhi) / 2},
            "offset_status": "proven", "drift_status": "assumed",
            "bracket_ns": {"median": 1.57e6, "min": 7e5},
            "mean_drift_ppm": {"lo": -225.2, "hi": 216.9, "point": 0, "status": "proven"},
            "truth": {"offset_ns": 0, "offset_in": truth, "drift_in": True}, **kw}


def _clock(*segs, counter=False, **kw):
    return {"reads": 240, "counter": counter, "verdict": "proven", "segments": list(segs),
            "breaks": [{"kind": "step"}] * (len(segs) - 1), **kw}


def worst_summary() -> dict:
    """Long names, a 9-digit offset in seconds, counters from other years, several segments,
    errors, a stuck clock: every cell as wide as the bench makes it."""
    big = -369924892 * S
    return {"devices": {
        "bmc-rack3-slot17": {"plane": "bmc", "errors": {"timeout": 12, "protocol": 3},
                             "clocks": {"datetime": _clock(
                                 _seg(-3641_269_500_000, -3641_266_500_000),
                                 _seg(big - 800_000_000, big - 2_000_000))}},
        "bmc-2": {"plane": "bmc", "errors": {}, "clocks": {"datetime": _clock(
            _seg(-3641_269_500_000, -3641_266_500_000))}},
        "pdu-1": {"plane": "pdu", "errors": {"timeout": 4}, "clocks": {
            "hrsystemdate": _clock(_seg(-3599_164_000_000, -3599_153_000_000)),
            "sysuptime": _clock(_seg(-1_753_000_000 * S - 3_720_000, -1_753_000_000 * S
                                     + 3_720_000), counter=True, wraps=[{}])}},
        "host-1": {"plane": "host", "errors": {}, "clocks": {
            "realtime": _clock(_seg(-377, 376, -0.0277, 0.0261)),
            "monotonic": _clock(_seg(-T0 - 406, -T0 + 406, -0.0314, 0.0264), counter=True)}},
        "bmc-9": {"plane": "bmc", "errors": {}, "clocks": {"datetime": {
            "reads": 40, "verdict": "stuck", "stuck": {"reads": 40, "span_s": 59.8},
            "segments": [_seg(-78 * S, 0)]}}},
    }}


MANIFEST = {"inventory": {"limits": {"planes": {"bmc": {"offset_within": "100ms",
                                                        "drift_within_ppm": 50},
                                                "pdu": {"offset_within": "1s"}}}},
            "calibration": {"pdu-1": {"hrsystemdate": {
                "calibrated_after_s": None, "last_width_ns": 10.7e6, "min_bracket_ns": 3.33e6}},
                "host-1": {"realtime": {"calibrated_after_s": 8.4, "width_then_ns": 1.2e3}}}}


def test_every_table_fits_120_columns_by_default():
    text = table(worst_summary(), MANIFEST)
    long = [x for x in text.splitlines() if len(x) > 120]
    assert not long, long
    assert "limits:" in text and "bmc-rack3-slot17 datetime" in text
    wide = table(worst_summary(), MANIFEST, width=None)
    assert max(len(x) for x in wide.splitlines()) > 120          # --wide: every column
    assert "mean drift ppm" in wide and "bracket p50" in wide


def test_figures_keep_the_digits_their_bounds_need():
    text = table(worst_summary(), MANIFEST, width=None)
    assert "[-369924892.80, -369924892.00] s" in text           # never -370000000 s
    assert "[-3641.2695, -3641.2665] s" in text                  # never -3640 s
    assert "-370000000" not in text and "-3640 s" not in text


def test_a_stuck_clock_is_called_stuck_and_shows_no_offset():
    text = table(worst_summary(), MANIFEST)
    row = next(x for x in text.splitlines() if x.startswith("bmc-9 datetime"))
    assert "stuck (no advance over 40 reads spanning 59.8 s)" in row
    assert " ms" not in row and " s [" not in row and "ppm" not in row
    checks = [c for c in limits.check_run(worst_summary(), MANIFEST) if c.device == "bmc-9"]
    assert checks and all(c.verdict == "undecided" and "stuck" in c.why for c in checks)


def test_calibration_reads_as_a_state_not_a_failure():
    text = table(worst_summary(), MANIFEST, width=None)
    assert "pinned 11 ms; floor 3.3 ms" in text and "pinned 1.2 µs after 8.4 s" in text
    assert "not yet" not in text


def test_the_live_line_fits_100_columns_with_every_bound_and_status(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")         # as a 100-column terminal reports
    rng = np.random.default_rng(1)
    st = DeviceStatus("host-1-with-a-long-name", "host", state="measuring", reads=360,
                      errors=3, last_bracket_ns=692, last_error="timeout: " + "x" * 120)
    live = LiveBounds(T0)
    for clock, q in (("monotonic", 1), ("kmsg_timestamps", 1000), ("realtime", 1)):
        s = T0 + np.arange(40) * 500_000_000 + rng.integers(0, 1000, 40)
        rows = [(int(a), int(a) + 700, int(a) + 350 + 1000, q) for a in s]
        st.recent[clock] = rows
        live._fit(st.name, clock, rows)
    line = Progress(60, live=live).line(st)
    assert len(line) <= LIVE_WIDTH, (len(line), line)
    assert len(re.findall(r"±\S+ \S+ (proven|assumed|break)", line)) == 3, line


def test_the_live_line_calls_a_clock_that_never_advances_stuck(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    st = DeviceStatus("bmc-9", "bmc", state="measuring", reads=40)
    live = LiveBounds(T0)
    rows = [(T0 + k * 500_000_000, T0 + k * 500_000_000 + 2_000_000, 1_700_000_000 * S, S)
            for k in range(40)]                       # a DateTime that never moves
    st.recent["datetime"] = rows
    live._fit(st.name, "datetime", rows)
    line = Progress(60, live=live).line(st)
    assert "datetime stuck (no advance over 40 reads spanning 19.5 s)" in line, line
    assert "±" not in line and len(line) <= LIVE_WIDTH


RECORDED = Path(__file__).parent / "data" / "recorded" / "20261201T161000Z-clock_offset"


def _over(text: str, width: int) -> list[str]:
    """Lines wider than `width`, but for a path said whole (to be copied) at a line's end."""
    return [x for x in text.splitlines() if len(x) > width
            and not (x.split()[-1].startswith("/") and len(x) - len(x.split()[-1]) <= width)]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_closing_output_fits_the_width_the_terminal_reports(monkeypatch, columns):
    """COLUMNS honoured (issue 45 item 3): the verdict, the tables, the notes and the model
    clauses of a recorded run fit; what a narrow table leaves out it names."""
    monkeypatch.setenv("COLUMNS", str(columns))
    text, verdict = closing_text(RECORDED)
    assert not _over(f"{verdict}\n{text}", columns)
    assert columns > 80 or "(--wide adds:" in text, text[:2000]
    wide, _ = closing_text(RECORDED, wide=True)
    assert _over(wide, 120)                      # --wide: every column, however wide


def test_summarize_prints_to_the_terminal_width(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    env = {**os.environ, "COLUMNS": "80"}
    p = subprocess.run([sys.executable, "-m", "bench.cli", "summarize", str(run)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode in (0, 3), p.stderr[-2000:]
    assert "bmc-1 datetime" in p.stdout and not _over(p.stdout, 80), _over(p.stdout, 80)


def test_the_live_line_fits_a_narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    st = DeviceStatus("bmc-1", "bmc", state="measuring", reads=40, last_bracket_ns=692_000)
    live = LiveBounds(T0)
    rows = [(T0 + k * 500_000_000, T0 + k * 500_000_000 + 700_000,
             T0 + k * 500_000_000 + 3_000_000 - (T0 + k * 500_000_000) % S, S) for k in range(40)]
    st.recent["datetime"] = rows
    live._fit(st.name, "datetime", rows)
    line = Progress(60, live=live).line(st)
    assert len(line) <= 80 and "datetime ±" in line, line
