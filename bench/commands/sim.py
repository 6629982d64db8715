"""`rackclock sim`: serve the simulated rack on loopback for other clients. The parser is built
before the simulator is imported, so `--help` loads nothing else."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.sim import DEFAULT_RACK

HELP = "serve the simulated rack on loopback for other clients"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rackclock sim", description="serve the simulated rack")
    ap.add_argument("--rack", type=Path, default=DEFAULT_RACK, help="simulated rack file")
    ap.add_argument("--out", type=Path, default=Path("results/sim"), help="folder for rack.toml, truth")
    ap.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--realtime", action="store_true",
                    help="serve at real-time priority where allowed (bench/priority.py)")
    a = ap.parse_args(argv)
    import asyncio

    from bench import safeio
    from bench.config.inventory import load_rack
    from bench.sim.serve import ensure_secrets, serve
    safeio.make_folder(a.out)
    made = ensure_secrets(load_rack(a.rack))
    if made:
        print("simulated credentials (export these for other clients):", file=sys.stderr)
        for k, v in made.items():
            print(f"  export {k}={v}", file=sys.stderr)

    def say(words: str) -> None:
        print(words, file=sys.stderr, flush=True)

    return asyncio.run(serve(a.rack, a.out, a.duration, a.realtime, say))


if __name__ == "__main__":
    sys.exit(main())
