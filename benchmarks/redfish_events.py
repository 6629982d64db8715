"""Stimulus -> "seen by the bench" latency bounds on the simulated BMC: polling vs subscription.

One `rackclock run` (experiment clock_offset) of a simulated rack holding three copies of the
default rack's bmc-1, side by side in one run: `bmc-1` as in the default rack (its EventService
takes the driver's server-sent event stream), `bmc-1-push` (the driver subscribes by push to its
own HTTPS listener on loopback, with a certificate made for the bench whose CA the emulated BMC
is given) and `bmc-1-poll`, identical but for `event_subscriptions = false` (the service
refuses, so the driver polls the log as before: every 0.1 s after a stimulus, else every 2 s).
Each sends `test_event` every `--every` seconds. From the
run's summary, per device: the "seen by the bench after" bound over all events (the table's
column: [lowest lo, highest hi]) and its width, the median width of one event's bound, the
"stamped in log after" bound, and the ratio polling / subscription of the widths.

    .venv/bin/python benchmarks/redfish_events.py [--duration 60] [--every 2.5]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import tomllib
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.model.rundata import load_run  # noqa: E402
from bench.run.experiment import DEFAULT_RACK, run_experiment  # noqa: E402
from bench.sim.tls import make_certificates  # noqa: E402
from bench.units import fmt_ns  # noqa: E402

DEVICES = {"bmc-1": "subscription (SSE)", "bmc-1-push": "subscription (push)",
           "bmc-1-poll": "polling (subscription refused)"}


def rack_dict(out: Path) -> dict:
    data = tomllib.loads(DEFAULT_RACK.read_text())
    bmc = data["devices"]["bmc-1"]
    copy = lambda: json.loads(json.dumps(bmc))      # noqa: E731
    poll, push = copy(), copy()
    poll["sim"]["event_subscriptions"] = False
    certs = make_certificates(out, "bench-listener")
    push.update(events="push", event_listener="https://127.0.0.1:0",
                event_listener_cert=str(certs.cert), event_listener_key_file=str(certs.key))
    push["sim"]["event_ca_file"] = str(certs.ca)
    data["rack"]["name"] = "bench-redfish-events"
    data["devices"] = {"bmc-1": bmc, "bmc-1-push": push, "bmc-1-poll": poll}
    return data


def bounds(summary: dict, device: str) -> dict:
    lat = summary["devices"][device]["latency"]["test_event"]
    obs = lat.get("observed_ns") or {}
    per = [e["observed_ns"]["hi"] - e["observed_ns"]["lo"] for e in lat["events"]
           if "observed_ns" in e]
    return {"sent": lat["sent"], "seen": obs, "width": obs["hi"] - obs["lo"] if obs else None,
            "per_event_median": statistics.median(per) if per else None,
            "pushed": sum("pushed" in e for e in lat["events"]),
            "logged": lat.get("logged_ns"),
            }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0, help="run length, s")
    ap.add_argument("--every", type=float, default=2.5, help="seconds between test events")
    ap.add_argument("--out", type=Path, default=None, help="run folder parent (default: a temp dir)")
    a = ap.parse_args()
    os.environ.setdefault("RACKCLOCK_SIM_BMC_PASSWORD", secrets.token_urlsafe(12))
    out = a.out or Path(tempfile.mkdtemp(prefix="rackclock-events-"))
    out.mkdir(parents=True, exist_ok=True)
    rack = out / "rack.toml"
    rack.write_bytes(tomli_w.dumps(rack_dict(out)).encode())
    folder = run_experiment("clock_offset", rack, out, {"duration_s": str(a.duration),
                                                        "stimulus_every_s": str(a.every)},
                            quiet=True)
    run = load_run(folder)
    got = {d: bounds(run.summary, d) for d in DEVICES}
    for d, b in got.items():
        seen = b["seen"]
        print(f"{DEVICES[d]:32s} events {b['sent']:3d} (pushed {b['pushed']:3d})  seen by the bench "
              f"after [{fmt_ns(seen['lo'])}, {fmt_ns(seen['hi'])}] width {fmt_ns(b['width'])}; "
              f"one event's bound, median {fmt_ns(b['per_event_median'])}; stamped in log after "
              f"[{fmt_ns(b['logged']['lo'])}, {fmt_ns(b['logged']['hi'])}]")
    for d in DEVICES:
        ident = run.manifest["devices"][d].get("identity", {})
        print(f"{d}: events {ident.get('extra', {}).get('events', '?')}")
    for d in ("bmc-1", "bmc-1-push"):
        print(f"ratio of the 'seen by the bench after' widths, polling / {DEVICES[d]}: "
              f"{got['bmc-1-poll']['width'] / got[d]['width']:.1f}x")
    print(f"run folder: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
