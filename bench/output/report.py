"""`rackclock report RUN`: a self-contained HTML report (RUN/report.html, figures embedded, no
network needed to read it) and the figures as files in RUN/plots/ (PNG, SVG, PDF).

The report is the list of sections in bench.output.report_sections; each draws from the run folder
through bench.model.rundata.load_run.
"""
from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from bench.output.report_sections import SECTIONS, ReportRun, esc, note_html
from bench.model.rundata import load_run

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:72em;margin:2em auto;
     padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;border-bottom:1px solid #ccc;
     margin-top:1.8em} h3{font-size:1em}
table{border-collapse:collapse;margin:.6em 0;font-size:12px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} table.kv thead{display:none}
figure{display:inline-block;margin:.6em 1em .6em 0;max-width:100%;vertical-align:top}
figure img{max-width:100%;height:auto} figcaption{font-size:11px;color:#444}
table.verdict td{white-space:nowrap}
table.verdict td:nth-child(5),table.verdict td:nth-child(7){font-weight:600}
.files{color:#888} .note{font-size:12px;color:#555;max-width:60em} .error{color:#a00}
@media print{body{max-width:none;margin:0} h2{break-after:avoid} figure{break-inside:avoid}}
"""


def build_report(path: str | Path, sections=None, formats=("png", "svg", "pdf")) -> ReportRun:
    """Write RUN/report.html and RUN/plots/*; returns the ReportRun (`.written` lists figures).

    A section that fails becomes a visible error in the report, never a missing report."""
    run = load_run(path)
    rr = ReportRun(run.path, run.manifest, run.summary, run.truth, formats=tuple(formats))
    parts = []
    for section in SECTIONS if sections is None else sections:
        try:
            frag = section(rr)
        except Exception as exc:   # one broken section must not cost the whole report
            frag = (f"<h2>{esc(section.__name__)}</h2><p class='error'>this section failed: "
                    f"{esc(repr(exc))}</p><pre class='note'>{esc(traceback.format_exc())}</pre>")
        if frag:
            parts.append(frag)
    if not rr.summary.raw:
        parts.insert(0, note_html("This run has no summary.json (it did not finish): only what "
                                  "the manifest says is shown."))
    title = f"rackclock run {rr.run_id}"
    doc = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
           f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
           f"<h1>{esc(title)}</h1>" + "\n".join(parts) + "</body></html>\n")
    (rr.path / "report.html").write_text(doc, encoding="utf-8")
    return rr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock report",
                                 description="write RUN/report.html and RUN/plots/ from a run folder")
    ap.add_argument("run", type=Path, help="run folder (results/<run-id>)")
    ap.add_argument("--formats", default="png,svg,pdf",
                    help="figure files to write in RUN/plots/ (default: png,svg,pdf)")
    a = ap.parse_args(argv)
    formats = tuple(f.strip() for f in a.formats.split(",") if f.strip())
    try:
        rr = build_report(a.run, formats=formats)
    except FileNotFoundError as exc:
        print(f"rackclock report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {rr.path / 'report.html'} ({len(rr.written)} figure files in "
          f"{rr.path / 'plots'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
