"""Figures printed to the precision of their bounds (issue 29 item 9): fmt_ns never rounds an
integer digit away and shows every digit down to a given precision; `rackclock check` shows a
coarse clock's one read with its resolution and what it pins."""
import re

from bench.commands.check import main as check_main
from bench.commands.check import read_text
from bench.units import fmt_interval_ns, fmt_ns
from drivers.base import Read

S = 1_000_000_000


def test_large_offsets_keep_every_integer_digit():
    assert fmt_ns(-369924892 * S) == "-369924892 s"      # was -370000000 s: 21 hours lost
    assert fmt_ns(-3641.27 * S) == "-3641 s"             # was -3640 s
    assert fmt_ns(12_345_678) == "12.3 ms" and fmt_ns(999.98e6) == "1 s"


def test_precision_shows_the_digits_a_bound_needs():
    assert fmt_ns(-3641.27 * S, precision_ns=3_000_000) == "-3641.27 s"
    assert fmt_ns(-369924892 * S - 123_000_000, precision_ns=10_000_000) == "-369924892.12 s"
    lo, hi = -3641.2695 * S, -3641.2665 * S
    text = fmt_interval_ns(lo, hi)
    assert text == "[-3641.2695, -3641.2665] s"


def _width_digits(text: str) -> int:
    return len(re.sub(r"[^0-9]", "", text.split()[0]))


def test_no_figure_has_fewer_digits_than_its_bound_width_needs():
    for x, width in ((-369924892 * S, 1 * S), (-3641.27 * S, 10_000_000), (53.1e6, 2e6)):
        shown = fmt_ns(x, precision_ns=width)
        value = float(shown.split()[0])
        unit = {"s": S, "ms": 1e6, "µs": 1e3, "ns": 1}[shown.split()[1]]
        assert abs(value * unit - x) <= width, (shown, x, width)


def test_check_shows_a_coarse_read_with_its_resolution():
    # a 1 s DateTime read: value 3 ms behind... the bracket [s, s + 16 ms], true offset +3 ms
    s = 1_800_000_000 * S + 796_000_000
    r = Read("datetime", s, s + 16_000_000, 1_800_000_000 * S, S)
    text = read_text(r, counter=False)
    assert text.startswith("-804 ms, 1 s resolution: offset in [-812, 204] ms; a run pins it"), text
    fine = Read("realtime", s, s + 2_000, s + 1_000 + 5_000_000, 1)
    assert read_text(fine, counter=False) == "5 ms [bracket 2 µs]"
    assert read_text(fine, counter=True) == "counter [bracket 2 µs]"


def test_check_refuses_an_unknown_device_before_starting_the_rack(capsys):
    assert check_main(["--device", "bmc-9"]) == 2
    out = capsys.readouterr()
    assert "no device bmc-9 in the rack" in out.err
    assert "served on loopback" not in out.out       # the old code started the rack first


def test_check_table_fits_120_columns():
    from bench.commands.check import DeviceCheck, device_table
    r = DeviceCheck("k8s-1", "scheduler", "k8s_scheduler", "", status="ok",
                    identity="Kubernetes API server linux/amd64 fw v1.31.4 s/n "
                             "https://127.0.0.1:36325 " + "x" * 80,
                    reads=[("hrsystemdate", "-3600.1 s, 100 ms resolution: offset in "
                            "[-3600.13, -3600.01] s; a run pins it " + "y" * 60)])
    lines = device_table([r])
    assert all(len(x) <= 120 for x in lines), lines
    assert any(x.startswith("    hrsystemdate: -3600.1 s, 100 ms resolution") for x in lines)
