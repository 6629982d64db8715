"""`rackclock watch`: probe the rack until stopped (bench/watch/)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.commands import OneLineParser
from bench.units import parse_duration_ns

HELP = "probe the rack until stopped: day folders, metrics, the mapping service"


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


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="rackclock watch", description="probe the rack until stopped: day "
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
    from bench.config.inventory import InventoryError
    from bench.config.rackfile import parse_allowance
    from bench.config.racklock import RackBusy
    from bench.reference.clock import ReferenceRefused
    from bench.watch.watcher import Options, watch
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
