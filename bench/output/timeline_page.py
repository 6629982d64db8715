"""The timeline as an HTML fragment (the report's, and timeline.html of `rackclock timeline`):
one lane per plane (the user's own log lines marked), each entry an interval bar
in reference time, the proven order visible (alternating bands are blocks: every entry of a band
is proven later than every entry of the bands before it; a hollow bar is unordered against
another entry, named in its tooltip), paged so that 1,000 entries stay readable (each page zoomed
to its own time span; every entry is on some page, nothing cut). Inline SVG and a few lines of
script: the report stays one self-contained file. Without script every page shows, one below the
other."""
from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC

from bench.units import directed, fmt_ns_up

PER_PAGE = 100
ROW_PX = 14
LABEL_PX = 400
LABEL_CHARS = 64
PLOT_PX = 820
USER_TEXT = ' font-style="italic" font-weight="bold"'
PALETTE = {"bmc": "#1f77b4", "pdu": "#d62728", "cooling": "#2ca02c", "optic": "#9467bd",
           "scheduler": "#ff7f0e", "reference": "#555555",
           "gpu": "#5f9600"}             # the GPU telemetry lane (the baseboard's controller)

STYLE = """
.tl-nav{margin:.4em 0;font:13px sans-serif}.tl-nav button{margin:0 .2em;font:inherit}
.tl-page svg{font:11px sans-serif;max-width:100%;height:auto}
.tl-page .lane{font-weight:bold}.tl-legend{font:12px sans-serif;margin:.3em 0}
"""

SCRIPT = """
(function(){var root=document.getElementById('%(id)s');if(!root)return;
var pages=root.querySelectorAll('.tl-page'),n=pages.length,i=0,
lab=root.querySelector('.tl-at');
function show(k){i=Math.max(0,Math.min(n-1,k));pages.forEach(function(p,j){p.hidden=j!==i;});
lab.textContent='page '+(i+1)+' of '+n;}
root.querySelector('.tl-prev').onclick=function(){show(i-1);};
root.querySelector('.tl-next').onclick=function(){show(i+1);};
root.querySelector('.tl-all').onclick=function(){pages.forEach(function(p){p.hidden=false;});
lab.textContent='all '+n+' pages';};
root.querySelector('.tl-nav').hidden=false;show(0);})();
"""


def _colour(plane: str) -> str:
    return PALETTE.get(plane, "#7f7f7f")


@dataclass(frozen=True)
class _Scale:
    """A page's time span on the plot's x axis (px)."""
    lo: int
    span: int

    def x(self, t: int) -> float:
        return LABEL_PX + (t - self.lo) / self.span * PLOT_PX


def _page_svg(rows: list[dict], t0: int) -> str:
    """One page: lanes by plane (in order of first appearance), one row per entry."""
    lanes: dict[str, list[dict]] = {}
    for r in rows:
        lanes.setdefault(r["entry"].plane or r["entry"].source, []).append(r)
    lo = min(r["entry"].lo_ns for r in rows)
    hi = max(r["entry"].hi_ns for r in rows)
    sc = _Scale(lo, max(hi - lo, 1))
    height = 18 + (len(rows) + len(lanes)) * ROW_PX + 24
    parts, y = _block_rects(rows, sc, height), 18
    for lane, members in lanes.items():
        parts.append(f'<text class="lane" x="4" y="{y + 10}">{html.escape(lane)}</text>')
        y += ROW_PX
        for r in members:
            parts.append(_entry_svg(r, sc, y, t0))
            y += ROW_PX
    parts += _time_axis(sc, y, t0)
    width = LABEL_PX + PLOT_PX + 40
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 38}" '
            f'viewBox="0 0 {width} {y + 38}">' + "".join(parts) + "</svg>")


def _block_rects(rows: list[dict], sc: _Scale, height: int) -> list[str]:
    """Proven-order bands: the x-extent of each block on this page, every other one grey."""
    blocks: dict[int, list[int]] = {}
    for r in rows:
        b = blocks.setdefault(r["block"], [r["entry"].lo_ns, r["entry"].hi_ns])
        b[0], b[1] = min(b[0], r["entry"].lo_ns), max(b[1], r["entry"].hi_ns)
    x = sc.x
    return [f'<rect class="block" x="{x(a):.1f}" y="14" width="{max(x(b) - x(a), 1):.1f}" '
            f'height="{height - 38}" fill="#eee"/>'
            for k, (a, b) in sorted(blocks.items()) if k % 2]


def _entry_tip(r: dict, t0: int) -> str:
    """An entry's tooltip: source, raw stamp, interval in run time and UTC, basis, order."""
    en, un = r["entry"], r["unordered_with"]
    user = bool(r.get("log"))
    return (f"#{r['index']} {en.source}: {en.label}\nraw stamp: {en.raw or '-'}\n"
            + (f"from your log {r['log']}\n" if user else "")
            + f"interval: {directed(en.lo_ns - t0, 1e9, 6, False)} .. "
            f"{directed(en.hi_ns - t0, 1e9, 6, True)} s ({fmt_ns_up(en.width_ns)})\n"
            f"UTC: {_utc(en.lo_ns)} .. {_utc(en.hi_ns, up=True)}\n"
            f"basis: {en.basis}, status: {en.status}"
            + (f"\ncalibration: {en.calibration}" if en.calibration else "")
            + (f"\nunordered with {r['unordered_count']}: #{', #'.join(map(str, un[:12]))}"
               + (f" and {r['unordered_count'] - min(len(un), 12)} more (counted; all in "
                  f"timeline.json's unordered_count)"
                  if r["unordered_count"] > min(len(un), 12) else "")
               if un or r["unordered_count"] else "\norder: proven"))


def _entry_svg(r: dict, sc: _Scale, y: int, t0: int) -> str:
    """One entry's row: its name and its interval bar (hollow when unordered)."""
    en = r["entry"]
    c = _colour(en.plane)
    user = bool(r.get("log"))
    w = max(sc.x(en.hi_ns) - sc.x(en.lo_ns), 2.0)
    fill = "none" if r["unordered_count"] else c
    label = en.label.split(" ", 1)[-1] if user else en.label    # "file:line " is in the tip
    name = ("✎ " if user else "") + (en.source + ": " + label)[:LABEL_CHARS]
    return (f'<g class="ev{" user" if user else ""}" data-index="{r["index"]}" '
            f'data-block="{r["block"]}"><title>{html.escape(_entry_tip(r, t0))}</title>'
            f'<text x="12" y="{y + 10}"{USER_TEXT if user else ""}>{html.escape(name)}</text>'
            f'<rect class="bar" x="{sc.x(en.lo_ns):.1f}" y="{y + 2}" width="{w:.1f}" height="9" '
            f'fill="{fill}" stroke="{"#000" if user else c}" stroke-width="1.5"/></g>')


def _time_axis(sc: _Scale, y: int, t0: int) -> list[str]:
    """Five ticks in run seconds, each with its UTC time below."""
    out = []
    for k in range(6):
        t = sc.lo + sc.span * k // 5
        x = sc.x(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="14" y2="{y}" stroke="#ccc"/>'
                   f'<text x="{x - 20:.1f}" y="{y + 14}">{(t - t0) / 1e9:.3f} s</text>'
                   f'<text class="utc" x="{x - 40:.1f}" y="{y + 28}">'
                   f'{_utc(t)[11:]}</text>')
    return out


def _utc(t_ns: int, up: bool = False) -> str:
    """A reference instant as UTC to the microsecond, rounded down (`up`: up, an interval's
    upper end)."""
    from datetime import datetime
    t_ns = -(-int(t_ns) // 1000) * 1000 if up else int(t_ns)
    s, f = divmod(t_ns, 10**9)
    try:
        return datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") + \
            f".{f // 1000:06d}Z"
    except (OverflowError, OSError, ValueError):
        return f"{t_ns} ns"


def timeline_html(rows: list[dict], t0: int, element_id: str = "timeline",
                  per_page: int = PER_PAGE) -> str:
    """The paged timeline of bench.analysis.timeline.order's rows."""
    pages = [rows[i:i + per_page] for i in range(0, len(rows), per_page)]
    out = [f"<style>{STYLE}</style><div id='{element_id}' class='tl'>",
           "<div class='tl-nav' hidden><button class='tl-prev'>◀ earlier</button>"
           "<span class='tl-at'></span><button class='tl-next'>later ▶</button>"
           "<button class='tl-all'>show all</button></div>",
           "<p class='tl-legend'>Bars: proven reference-time intervals (filled: order against "
           "every other entry proven; hollow: unordered against another, see its tooltip). "
           "✎ and a black outline: a line of your own log files. The axis gives seconds from "
           "the run's start and, below, UTC. "
           f"Grey and white bands: proven-ordered blocks. {len(rows)} entries on {len(pages)} "
           f"page(s) of up to {per_page}, each zoomed to its own span.</p>"]
    for k, page in enumerate(pages):
        a, b = page[0]["index"], page[-1]["index"]
        out.append(f"<section class='tl-page' data-page='{k}'><p class='tl-legend'>entries "
                   f"{a}–{b}</p>{_page_svg(page, t0)}</section>")
    out.append(f"</div><script>{SCRIPT % {'id': element_id}}</script>")
    return "".join(out)

