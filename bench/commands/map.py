"""`rackclock map`: the reference interval of a device stamp (bench/watch/mapping.py)."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from bench.commands import OneLineParser

HELP = "the reference interval of a device stamp (a running watch, or day folders)"


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="rackclock map", description="the reference interval of a device stamp: "
                 "asked of a running watch (--url), or from day folders")
    ap.add_argument("folders", nargs="*", type=Path, help="day folders (run folders), oldest first")
    ap.add_argument("--url", default=None, help="a running watch, e.g. http://127.0.0.1:9473")
    ap.add_argument("--device", required=True)
    ap.add_argument("--clock", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--stamp", help="ISO 8601 wall stamp as the device wrote it")
    g.add_argument("--value-ns", help="the device's own value in ns (a counter's: since zero)")
    ap.add_argument("--resolution-ns", default=None)
    a = ap.parse_args(argv)
    q = {"device": a.device, "clock": a.clock, "stamp": a.stamp, "value_ns": a.value_ns,
         "resolution_ns": a.resolution_ns}
    q = {k: v for k, v in q.items() if v is not None}
    if a.url:
        got = _ask(a.url, q)
    elif a.folders:
        got = _offline(a.folders, q)
    else:
        ap.error("give --url of a running watch or day folders")
    print(json.dumps(got, indent=1))
    return 0 if "error" not in got else 1


def _ask(url: str, q: dict) -> dict:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/v1/map?{urllib.parse.urlencode(q)}",
                                    timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read() or b"{}") or {"error": str(exc)}
    except (OSError, ValueError) as exc:
        return {"error": f"{url}: {exc}"}


def _offline(folders: list[Path], q: dict) -> dict:
    from bench.watch.mapping import MapError, Mapper, parse_query
    try:
        return Mapper(None, lambda: folders).map(parse_query(q))
    except MapError as exc:
        return {"error": str(exc)}
