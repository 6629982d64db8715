"""`rackclock report`: RUN/report.html and RUN/plots/ (bench.output.report_html). The command's arguments; the
library is imported once they are parsed (bench/cli.py finds this module only when the command runs)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "HTML report and print figures of a run folder"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock report",
                                 description="write RUN/report.html and RUN/plots/ from a run folder")
    ap.add_argument("run", type=Path, help="run folder (results/<run-id>)")
    ap.add_argument("--formats", default="png",
                    help="figure files to write in RUN/plots/, comma separated: png, svg, pdf "
                         "(default: png; the page embeds PNG whatever is written)")
    ap.add_argument("--details", action="store_true",
                    help="every figure: each clock's TIE with residuals (default: only clocks "
                         "with a break, a wrap or a bound that is not proven), jitter and "
                         "stability (ADEV, MDEV, TDEV, MTIE), and the latency distributions")
    ap.add_argument("--processes", type=int, default=None,
                    help="worker processes drawing the figures (default: one per core, at "
                         "most 4, while the cores are idle, else 1; 1: in this process)")
    ap.add_argument("--offset-figures", action="store_true",
                    help="also each clock's offset figure (plots/offset_<device>_<clock>), "
                         "which a run of more than 40 clocks leaves undrawn unless asked")
    a = ap.parse_args(argv)
    # the library after the arguments: `rackclock report --help` stays quick
    from bench.output.report_html import build_report

    if a.processes is not None and a.processes < 1:
        ap.error("--processes: at least 1")
    formats = tuple(f.strip() for f in a.formats.split(",") if f.strip())
    bad = sorted(set(formats) - {"png", "svg", "pdf"})
    if bad or not formats:
        print(f"rackclock report: --formats {a.formats!r}: unknown {', '.join(bad) or 'empty'} "
              f"(accepted: png, svg, pdf)", file=sys.stderr)
        return 2
    try:
        rr = build_report(a.run, formats=formats, details=a.details, processes=a.processes)
    except FileNotFoundError as exc:
        print(f"rackclock report: {exc}", file=sys.stderr)
        return 2
    written = len(rr.written) + (_offset_figures(a.run, formats, a.processes)
                                 if a.offset_figures else 0)
    print(f"report: {rr.path / 'report.html'} ({written} figure files in "
          f"{rr.path / 'plots'})")
    return 0


def _offset_figures(run_path: Path, formats: tuple[str, ...], processes: int | None) -> int:
    """Each clock's offset figure (bench.output.plots), PNG by the run's after-probing workers
    (bench.run.after: the same files) unless `processes` is 1; the files written."""
    from bench.model.rundata import load_run
    from bench.output.plots import offset_plots
    from bench.output.report_html import default_processes
    run = load_run(run_path)
    procs = default_processes() if processes is None else processes
    pool = None
    if procs > 1 and formats == ("png",):
        from bench.run.after import AfterPool
        pool = AfterPool.start(procs)
    figures = pool.figures(run.path, run.summary.devices) if pool is not None else None
    try:
        return len(figures.result() if figures is not None
                   else offset_plots(run, formats=formats))
    finally:
        if pool is not None:
            pool.close()


if __name__ == "__main__":
    sys.exit(main())
