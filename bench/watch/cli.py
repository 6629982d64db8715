"""`rackclock watch` and `rackclock map`."""
from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from bench.units import parse_duration_ns


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n")


def _rates(items: list[str]) -> dict[str, float]:
    out = {}
    for it in items:
        k, _, v = it.rpartition("=")
        k = k or "*"                       # --rate HZ: every device
        try:
            hz = float(v)
        except ValueError:
            hz = -1.0
        if not k or not 0 < hz <= 50:
            raise ValueError(f"--rate {it!r}: expected [DEVICE_OR_DRIVER=]HZ with 0 < HZ <= 50")
        out[k] = hz
    return out


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT (port 0: any free port)")
    return host.strip("[]"), int(port)


def watch_main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="rackclock watch", description="probe the rack until stopped: day "
                 "folders, metrics (/metrics) and the mapping service (/v1/map)")
    ap.add_argument("--rack", type=Path, default=None,
                    help="rack file (default: start the simulated rack)")
    ap.add_argument("--out", type=Path, default=Path("results"), help="folder for day folders")
    ap.add_argument("--listen", default="127.0.0.1:9473",
                    help="HOST:PORT of the metrics and mapping endpoint (default 127.0.0.1:9473)")
    ap.add_argument("--rate", action="append", default=[], metavar="[DEVICE_OR_DRIVER=]HZ",
                    help="probe rate, repeatable (default: polite per driver, 0.2 Hz for Redfish)")
    ap.add_argument("--reference-allowance", default=None,
                    help="bound on the reference's own error when linuxptp cannot be read")
    ap.add_argument("--fit-every", default="30s",
                    help="refit the live bounds this often (default 30s; a fit of a clock's "
                         "window costs 0.1-0.2 s of CPU)")
    ap.add_argument("--pack-after-days", type=float, default=1.0,
                    help="pack a closed day folder's samples into <day>.tar.gz this many days "
                         "after it ended (default 1: yesterday stays as it is)")
    ap.add_argument("--keep-days", type=float, default=90.0,
                    help="remove day folders this many days after they ended (default 90)")
    ap.add_argument("--roll-every", default=None, help=argparse.SUPPRESS)   # dev/tests: day length
    a = ap.parse_args(argv)
    # the watch after the arguments: `rackclock watch --help` imports no drivers
    from bench.model.inventory import InventoryError
    from bench.model.rackfile import parse_allowance
    from bench.model.racklock import RackBusy
    from bench.reference.clock import ReferenceRefused
    from bench.watch.watch import Options, watch
    try:
        host, port = _listen(a.listen)
        roll = parse_duration_ns(a.roll_every) / 1e9 if a.roll_every else None
        fit = parse_duration_ns(a.fit_every) / 1e9
        opts = Options(a.rack, a.out, host, port, _rates(a.rate), roll, fit,
                       allowance_ns=parse_allowance(a.reference_allowance),
                       argv=["rackclock", "watch", *(argv or [])],
                       pack_after_days=a.pack_after_days, keep_days=a.keep_days)
        if not 0 <= a.pack_after_days <= a.keep_days:
            raise ValueError("expected 0 <= --pack-after-days <= --keep-days")
        return watch(opts, say=lambda text: print(text, file=sys.stderr, flush=True))
    except (ValueError, InventoryError, RackBusy, ReferenceRefused) as exc:
        print(f"rackclock watch: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:              # the endpoint's port taken, the folder unwritable
        print(f"rackclock watch: {exc.strerror or exc}"
              f"{f': {exc.filename}' if exc.filename else ''} (--listen {a.listen})",
              file=sys.stderr)
        return 2


def map_main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="rackclock map", description="the reference interval of a device stamp: "
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
