"""Every estimator and stability figure in one run (about a minute or two on 2 cores):

(a) coverage of the proven bounds over simulated devices, and breaks detected;
(b) tightness: offset width over the narrowest bracket, drift width after one hour;
(c) the chrony-style statistical estimate on the same segments, and how often it misses;
(d) MTIE and the deviations at 10^5 and 10^6 points against allantools;
(e) tick-edge probing against random dithered probing.

    .venv/bin/python benchmarks/run_all.py [--devices 12000] [--full-mtie]
        [--points 100000,1000000] [--probe-devices 60]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import estimator_mc  # noqa: E402
import probe_mc  # noqa: E402
import stability_speed  # noqa: E402


def _p(k, v):
    print(f"  {k}: {v}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=12_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--full-mtie", action="store_true",
                    help="time allantools' MTIE on every tau at 10^6 points (minutes)")
    ap.add_argument("--points", default="100000,1000000", help="(d)'s series lengths")
    ap.add_argument("--probe-devices", type=int, default=60, help="(e)'s simulated clocks")
    a = ap.parse_args(argv)
    points = [int(x) for x in a.points.split(",")]
    t0 = time.perf_counter()
    res = estimator_mc.run(a.devices, a.workers)
    s = estimator_mc.summarize(res)
    print(f"(a) coverage, {s['devices']} simulated devices ({s['devices_scored']} with segments "
          f"where the model held; {s['held_segments']} such segments)")
    for k in ("coverage_devices", "coverage_offset", "coverage_drift", "coverage_mapping",
              "breaks_injected", "breaks_detected", "breaks_by_kind", "breaks_visible",
              "breaks_visible_detected", "break_size_inside", "break_kind_right",
              "false_breaks", "outliers_injected", "outliers_found", "outliers_reported",
              "resolution_misdeclared", "resolution_caught", "notheld_segments",
              "notheld_offset_inside"):
        _p(k, s[k])
    print("(b) tightness (segments where the model held, >= 30 reads)")
    _p("median_offset_width_over_min_bracket", round(s["median_off_width_over_min_bracket"], 3))
    _p("by_resolution", s["off_width_over_min_bracket_by_resolution"])
    _p("with_wander_allowance", s["median_off_width_over_min_bracket_with_wander"])
    _p("without_wander", s["median_off_width_over_min_bracket_without_wander"])
    _p("drift_width_after_1h_10ms_clock_2ms_brackets", estimator_mc.drift_after_one_hour())
    print("(c) chrony-style statistical estimate on the same segments")
    for k in ("chrony_segments", "chrony_offset_miss", "chrony_drift_miss",
              "chrony_offset_miss_by_resolution", "chrony_median_off_width_over_min_bracket",
              "chrony_median_offset_error_ns", "interval_median_point_error_ns"):
        _p(k, s[k])
    print(f"    [{time.perf_counter() - t0:.0f} s so far]")
    print("(d) stability statistics against allantools (seconds; ratio = allantools / ours)")
    for n in points:
        _p("mtie", stability_speed.mtie_row(n, a.full_mtie, 3, 1))
    for n in points:
        _p("deviations", stability_speed.deviation_row(n))
    print("(e) tick-edge probing vs random dithered, 1 s clock, 0.8 ms + exp(0.3 ms) brackets")
    for k, v in probe_mc.run(a.probe_devices).items():
        _p(k, v)
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
