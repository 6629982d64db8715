"""A small run folder and two RFC 5424 logs made the same way every time (seeded), for
tests/test_timeline_stream.py: one BMC clock (1 s ticks, 20 ppm) stepped back 750 ms half-way
through a three-minute run read 360 times, so it has two segments; 400 log lines at random
instants, ms stamps of that clock (file order); a second log of the same lines read with
order=none. tests/data/timeline_stream/ holds what `rackclock timeline` wrote for them before
issue 46 item 4 (commit fc3c331), paths replaced by TMP: `python tests/timeline_stream_case.py
DIR` writes them again with the tree it is run from."""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_796_000_000 * NS
OUTPUTS = ("timeline.json", "timeline.csv")


def make_case(folder: Path) -> tuple[Path, list[str]]:
    """The run folder and the timeline's log arguments."""
    from bench.model.store import RunStore
    from bench.sim.clock import ClockModel, ClockParams
    model = ClockModel(ClockParams(offset_s=12.3456, drift_ppm=20, resolution_s=1.0,
                                   steps=((90.0, -0.75),)), T0, seed=1)
    store = RunStore(folder, "run")
    rng = np.random.default_rng(3)
    w = store.samples("bmc-1")
    t = T0
    for _ in range(360):
        t += int(rng.uniform(0.3, 0.7) * NS)
        s, e = t, t + int(rng.uniform(0.5, 3) * MS)
        w.write("read", "datetime", s, e, model.read_ns(int(rng.integers(s, e + 1))), NS,
                "user", "ok", "")
    w.close()
    store.write_manifest({"started_ns": T0, "run_id": "run", "devices": {"bmc-1": {
        "plane": "bmc", "clocks": [{"name": "datetime", "resolution_ns": NS}]}}})
    store.close()
    truth = np.sort(T0 + rng.integers(5 * NS, 175 * NS, 400))
    shown = np.array([model.true_ns(int(x)) for x in truth]) // MS * MS
    text = np.datetime_as_string(shown.astype("datetime64[ns]"), unit="ms")
    log = folder / "bmc.log"
    log.write_text("".join(f"<134>1 {s}Z bmc-1 thermald 42 TEMP - inlet {i}, \"over\" limit\n"
                           for i, s in enumerate(text.tolist())), encoding="utf-8")
    return folder / "run", [f"bmc-1={log}", f"bmc-1={log},order=none"]


def outputs(folder: Path, run: Path) -> dict[str, bytes]:
    """The timeline's files, the folder's path replaced by TMP."""
    return {name: (run / name).read_bytes().replace(str(folder).encode(), b"TMP")
            for name in OUTPUTS}


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path.cwd()))
    from bench.commands import timeline as timeline_cli
    folder, dest = Path(argv[0]).resolve(), Path(__file__).parent / "data" / "timeline_stream"
    run, logs = make_case(folder)
    rc = timeline_cli.main([str(run), *logs, "--rows", "5"])
    for name, data in outputs(folder, run).items():
        (dest / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
