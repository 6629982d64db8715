"""trend prints and plots each point to the precision of its bound (issue 45 item 5): a drift
of -0.0904 ppm inside [-600, 600] ppm is 0 ppm, as its bound can tell, not four digits it
cannot."""
from __future__ import annotations

import matplotlib.pyplot as plt

from bench.compare.measures import Measure
from bench.output.trend_view import Trend, _cell, _panel
from bench.units import point_within


def _m(lo, hi, point, unit="ppm"):
    return Measure("bmc-1", "datetime", "drift", unit, lo, hi, point, "proven")


def test_points_are_printed_to_a_tenth_of_their_bounds_width():
    assert _cell(_m(-600, 600, -0.0904), "ppm") == "0 ppm [-600 ppm, 600 ppm]"
    assert _cell(_m(12.1, 12.6, 12.3456), "ppm").startswith("12.3 ppm ")    # to 0.01: 12.35
    assert point_within(12.3456, 12.1, 12.6) == 12.35
    assert _cell(_m(1_992_433, 4_690_723, 3_365_186, "ns"), "ns").startswith("3.4 ms ")
    assert point_within(7.0, 7.0, 7.0) == 7.0                                # exact: as it is
    assert str(point_within(-0.0904, -600, 600)) == "0.0"                    # never "-0"


def test_the_trend_panel_plots_the_point_it_prints():
    t = Trend("bmc-1", "datetime", "drift", "ppm",
              [_m(-600, 600, -0.0904), _m(-20, 20, 3.21)], "unchanged", "", None)
    fig, ax = plt.subplots()
    try:
        _panel(ax, t, "bmc", 2)
        ys = list(ax.lines[0].get_ydata())
        assert ys == [0.0, 3.0], ys
    finally:
        plt.close(fig)
