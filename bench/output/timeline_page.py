"""The timeline as an HTML fragment (the report's, and timeline.html of `rackclock timeline`):
one lane per plane (the user's own log lines marked), each entry an interval bar
in reference time, the proven order visible (alternating bands are blocks: every entry of a band
is proven later than every entry of the bands before it; a hollow bar is unordered against
another entry, named in its tooltip), paged so that 1,000 entries stay readable (each page zoomed
to its own time span; every entry is on some page, nothing cut). Given the run's span, its pages
share one x axis over the run (zoomable: zoom in and out, pan, back to the run), and the entries
from before or after it (a device log's records from hours earlier) are gathered apart, collapsed
under a line that counts them ("5 records from 2.0 h to 59.6 min before the run"). Tick labels
are round steps at the precision of the entries' widths, never finer. Inline SVG and a few lines
of script: the report stays one self-contained file. Without script every page shows, one below
the other."""
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
.tl-nav,.tl-zoom{margin:.4em 0;font:13px sans-serif}
.tl-nav button,.tl-zoom button{margin:0 .2em;font:inherit}
.tl-out summary{font:13px sans-serif;cursor:pointer;margin:.4em 0}
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

ZOOM = """
(function(){var root=document.getElementById('%(id)s');if(!root)return;
var z=root.querySelector('.tl-zoom');if(!z)return;
var L=%(left)d,P=%(plot)d,run=[%(a)s,%(b)s],v=run.slice(),T0S=%(t0s)d,T0F=%(t0f)s,RES=%(res)s;
function nice(x){var e=Math.pow(10,Math.floor(Math.log10(x))),m=x/e;
return (m<1.5?1:m<3.5?2:m<7.5?5:10)*e;}
function X(t){return L+(t-v[0])/(v[1]-v[0])*P;}
function clip(x){return Math.max(L,Math.min(L+P,x));}
function utc(t,d){var s=T0F+t,w=Math.floor(s),f=(s-w).toFixed(d);if(f[0]==='1'){w+=1;f=(0).toFixed(d);}
return new Date((T0S+w)*1000).toISOString().slice(11,19)+(d?f.slice(1):'');}
function draw(){var w=v[1]-v[0],st=nice(Math.max(w/5,RES)),
d=Math.max(0,Math.min(9,-Math.floor(Math.log10(Math.max(st,RES))+1e-9)));
root.querySelectorAll('svg.tl-run').forEach(function(s){
s.querySelectorAll('[data-lo]').forEach(function(e){var a=+e.dataset.lo,b=+e.dataset.hi,
x0=clip(X(a)),x1=clip(X(b));e.setAttribute('x',x0.toFixed(1));
e.setAttribute('width',Math.max(x1-x0,+(e.dataset.min||1)).toFixed(1));
e.setAttribute('visibility',(b<v[0]||a>v[1])?'hidden':'visible');});
var g=s.querySelector('g.tl-axis'),y=+g.dataset.y,h='';
for(var k=Math.ceil(v[0]/st-1e-9);k*st<=v[1]+1e-9*st;k++){var t=k*st,x=X(t);
h+='<line x1="'+x.toFixed(1)+'" x2="'+x.toFixed(1)+'" y1="14" y2="'+y+'" stroke="#ccc"/>'+
'<text class="tick" x="'+(x-20).toFixed(1)+'" y="'+(y+14)+'">'+t.toFixed(d)+' s</text>'+
'<text class="utc" x="'+(x-40).toFixed(1)+'" y="'+(y+28)+'">'+utc(t,d)+'</text>';}
g.innerHTML=h;});
z.querySelector('.tl-view').textContent=v[0].toFixed(d)+' s to '+v[1].toFixed(d)+' s';}
function zoom(f){var c=(v[0]+v[1])/2,h=Math.max((v[1]-v[0])*f,5*RES)/2;v=[c-h,c+h];draw();}
function pan(f){var h=(v[1]-v[0])*f;v=[v[0]+h,v[1]+h];draw();}
z.querySelector('.tl-in').onclick=function(){zoom(0.5);};
z.querySelector('.tl-outz').onclick=function(){zoom(2);};
z.querySelector('.tl-left').onclick=function(){pan(-0.5);};
z.querySelector('.tl-right').onclick=function(){pan(0.5);};
z.querySelector('.tl-run').onclick=function(){v=run.slice();draw();};
z.hidden=false;draw();})();
"""


def _colour(plane: str) -> str:
    return PALETTE.get(plane, "#7f7f7f")


@dataclass(frozen=True)
class _Scale:
    """A page's time span on the plot's x axis (px)."""
    lo: int
    span: int

    def x(self, t: int) -> float:
        """t's x, held inside the plot (an interval reaching past the run's span ends at its
        edge)."""
        return min(max(LABEL_PX + (t - self.lo) / self.span * PLOT_PX, LABEL_PX),
                   LABEL_PX + PLOT_PX)


def _page_svg(rows: list[dict], t0: int, span: tuple[int, int] | None = None) -> str:
    """One page: lanes by plane (in order of first appearance), one row per entry; its x axis
    over `span` (the run's: a `tl-run` page the zoom redraws), else over its own entries."""
    lanes: dict[str, list[dict]] = {}
    for r in rows:
        lanes.setdefault(r["entry"].plane or r["entry"].source, []).append(r)
    lo, hi = span or (min(r["entry"].lo_ns for r in rows), max(r["entry"].hi_ns for r in rows))
    sc = _Scale(lo, max(hi - lo, 1))
    height = 18 + (len(rows) + len(lanes)) * ROW_PX + 24
    parts, y = _block_rects(rows, sc, height, t0), 18
    for lane, members in lanes.items():
        parts.append(f'<text class="lane" x="4" y="{y + 10}">{html.escape(lane)}</text>')
        y += ROW_PX
        for r in members:
            parts.append(_entry_svg(r, sc, y, t0))
            y += ROW_PX
    parts += _time_axis(sc, y, t0, resolution_ns(rows))
    width = LABEL_PX + PLOT_PX + 40
    kind = ' class="tl-run"' if span else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg"{kind} width="{width}" height="{y + 38}" '
            f'viewBox="0 0 {width} {y + 38}">' + "".join(parts) + "</svg>")


def resolution_ns(rows: list[dict]) -> int:
    """The precision tick labels keep to: the entries' median width (ns, at least 1)."""
    widths = sorted(max(int(r["entry"].hi_ns) - int(r["entry"].lo_ns), 1) for r in rows)
    return widths[len(widths) // 2] if widths else 1


def _s(t_ns: int, t0: int) -> str:
    """A data attribute's run seconds, exact to the ns."""
    return f"{(int(t_ns) - int(t0)) / 1e9:.9f}"


def _block_rects(rows: list[dict], sc: _Scale, height: int, t0: int) -> list[str]:
    """Proven-order bands: the x-extent of each block on this page, every other one grey."""
    blocks: dict[int, list[int]] = {}
    for r in rows:
        b = blocks.setdefault(r["block"], [r["entry"].lo_ns, r["entry"].hi_ns])
        b[0], b[1] = min(b[0], r["entry"].lo_ns), max(b[1], r["entry"].hi_ns)
    x = sc.x
    return [f'<rect class="block" x="{x(a):.1f}" y="14" width="{max(x(b) - x(a), 1):.1f}" '
            f'height="{height - 38}" fill="#eee" data-lo="{_s(a, t0)}" data-hi="{_s(b, t0)}"/>'
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
            f'fill="{fill}" stroke="{"#000" if user else c}" stroke-width="1.5" '
            f'data-lo="{_s(en.lo_ns, t0)}" data-hi="{_s(en.hi_ns, t0)}" data-min="2"/></g>')


def _time_axis(sc: _Scale, y: int, t0: int, res_ns: int = 1) -> list[str]:
    """Ticks on round steps of run seconds (1, 2 or 5 times a power of ten, about five, never
    finer than the entries' width `res_ns`), each with its UTC time below, both to the coarser of
    the step and that width: no µs digits on bounds of ms. The zoom stops at five widths."""
    step = nice_step(max(sc.span / 5, res_ns))      # never finer than the entries' width
    digits = tick_digits(step, res_ns)
    out = [f'<g class="tl-axis" data-y="{y}">']
    k = -(-(sc.lo - t0) // step)
    while t0 + k * step <= sc.lo + sc.span:
        t = t0 + k * step
        x = sc.x(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="14" y2="{y}" stroke="#ccc"/>'
                   f'<text class="tick" x="{x - 20:.1f}" y="{y + 14}">'
                   f'{k * step / 1e9:.{digits}f} s</text>'
                   f'<text class="utc" x="{x - 40:.1f}" y="{y + 28}">'
                   f'{utc_tick(t, digits)}</text>')
        k += 1
    return [*out, "</g>"]


def nice_step(x_ns: float) -> int:
    """The round step (1, 2 or 5 times a power of ten, ns, at least 1) nearest x_ns."""
    import math
    e = 10 ** math.floor(math.log10(max(x_ns, 1.0)))
    m = x_ns / e
    return max(1, int((1 if m < 1.5 else 2 if m < 3.5 else 5 if m < 7.5 else 10) * e))


def tick_digits(step_ns: int, res_ns: int) -> int:
    """Decimals of a seconds label: those of the coarser of the step and the resolution."""
    import math
    return max(0, min(9, -math.floor(math.log10(max(step_ns, res_ns, 1) / 1e9) + 1e-9)))


def utc_tick(t_ns: int, digits: int) -> str:
    """HH:MM:SS with `digits` decimals, rounded to them."""
    q = 10 ** (9 - digits)
    full = _utc(round(int(t_ns) / q) * q)
    return full[11:19] + (full[19:20 + digits] if digits else "")


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


def run_span(run) -> tuple[int, int] | None:
    """The run's first and last instants (probing's start and end, else the run's), ns."""
    m = run.manifest
    end = m.probed_until_ns or m.ended_ns
    return (int(m.started_ns), int(end)) if m.started_ns and end and end > m.started_ns else None


def timeline_html(rows: list[dict], t0: int, element_id: str = "timeline",
                  per_page: int = PER_PAGE, span: tuple[int, int] | None = None) -> str:
    """The paged timeline of bench.analysis.timeline_order.order's rows. `span` (the run's first and
    last instants, ns): its pages share an x axis over the run, zoomable, and the entries
    wholly before or after it are gathered apart, collapsed; without it each page is zoomed to
    its own entries."""
    before, inside, after = by_span(rows, span)
    pages = [inside[i:i + per_page] for i in range(0, len(inside), per_page)]
    out = _opening(element_id, len(inside), len(pages), per_page, span is not None)
    if span:
        out.append(_zoom_bar())
        out.append(_apart(before, t0, span[0], "before", per_page))
    for k, page in enumerate(pages):
        a, b = page[0]["index"], page[-1]["index"]
        out.append(f"<section class='tl-page' data-page='{k}'><p class='tl-legend'>entries "
                   f"{a}–{b}</p>{_page_svg(page, t0, span)}</section>")
    if span:
        out.append(_apart(after, t0, span[1], "after", per_page))
    out.append(f"</div><script>{SCRIPT % {'id': element_id}}</script>")
    if span:
        out.append(f"<script>{_zoom_script(element_id, t0, span, resolution_ns(inside))}</script>")
    return "".join(out)


def by_span(rows: list[dict], span: tuple[int, int] | None
             ) -> tuple[list[dict], list[dict], list[dict]]:
    """(the rows wholly before the span, those that meet it, those wholly after); all meet it
    without a span."""
    before = [r for r in rows if span and r["entry"].hi_ns < span[0]]
    after = [r for r in rows if span and r["entry"].lo_ns > span[1]]
    apart = {id(r) for r in before + after}
    return before, [r for r in rows if id(r) not in apart], after


def _opening(element_id: str, n_inside: int, n_pages: int, per_page: int,
             spanned: bool) -> list[str]:
    """The timeline's style, navigation buttons and legend."""
    return [f"<style>{STYLE}</style><div id='{element_id}' class='tl'>",
            "<div class='tl-nav' hidden><button class='tl-prev'>◀ earlier</button>"
            "<span class='tl-at'></span><button class='tl-next'>later ▶</button>"
            "<button class='tl-all'>show all</button></div>",
            "<p class='tl-legend'>Bars: proven reference-time intervals (filled: order against "
            "every other entry proven; hollow: unordered against another, see its tooltip). "
            "✎ and a black outline: a line of your own log files. The axis gives seconds from "
            "the run's start and, below, UTC, to the entries' precision. "
            f"Grey and white bands: proven-ordered blocks. {n_inside} entries on "
            f"{n_pages} page(s) of up to {per_page}, "
            + ("each over the run's span (zoom below)." if spanned else
               "each zoomed to its own span.") + "</p>"]


def _zoom_bar() -> str:
    return ("<div class='tl-zoom' hidden>time axis: <button class='tl-in'>zoom in</button>"
            "<button class='tl-outz'>zoom out</button><button class='tl-left'>◀</button>"
            "<button class='tl-right'>▶</button><button class='tl-run'>the run</button> "
            "<span class='tl-view'></span></div>")


def _zoom_script(element_id: str, t0: int, span: tuple[int, int], res_ns: int) -> str:
    return ZOOM % {"id": element_id, "left": LABEL_PX, "plot": PLOT_PX,
                   "a": _s(span[0], t0), "b": _s(span[1], t0), "t0s": int(t0) // 10**9,
                   "t0f": f"{int(t0) % 10**9 / 1e9:.9f}", "res": f"{res_ns / 1e9:.9g}"}


def apart_text(rows: list[dict], edge: int, side: str) -> str:
    """'5 records from 2.0 h to 59.6 min before the run': how many and how far."""
    far = [abs(int(r["entry"].lo_ns if side == "before" else r["entry"].hi_ns) - edge)
           for r in rows]
    near = [abs(int(r["entry"].hi_ns if side == "before" else r["entry"].lo_ns) - edge)
            for r in rows]
    a, b = ago(max(far)), ago(min(near))
    when = a if a == b else (f"{a} to {b}" if side == "before" else f"{b} to {a}")
    return f"{len(rows)} record{'s' if len(rows) != 1 else ''} from {when} {side} the run"


def ago(ns: int) -> str:
    """A distance in the unit a reader takes in: '2.0 h', '59.6 min', '12 s', '340 ms'."""
    for scale, unit in ((3600e9, "h"), (60e9, "min"), (1e9, "s")):
        if ns >= scale:
            return f"{ns / scale:.1f} {unit}" if ns < 100 * scale else f"{ns / scale:.0f} {unit}"
    return f"{ns / 1e6:.0f} ms"


def _apart(rows: list[dict], t0: int, edge: int, side: str, per_page: int) -> str:
    """The entries wholly before (or after) the run, collapsed under a line that counts them;
    opened, their pages, each zoomed to its own span."""
    if not rows:
        return ""
    pages = [rows[i:i + per_page] for i in range(0, len(rows), per_page)]
    return (f"<details class='tl-out' data-side='{side}'><summary>{apart_text(rows, edge, side)}"
            " (collapsed: open to see them, each page zoomed to its own span)</summary>"
            + "".join(f"<section class='tl-opage'>{_page_svg(p, t0)}</section>" for p in pages)
            + "</details>")
