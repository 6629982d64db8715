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
from typing import Any

import numpy as np

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_796_000_000 * NS
OUTPUTS = ("timeline.json", "timeline.csv")


def make_run(folder: Path, model: Any, reads: int, gap_s: tuple[float, float],
             rng: np.random.Generator) -> Path:
    """A run folder of one BMC clock (bmc-1, 1 s ticks) read `reads` times, a gap drawn from
    `gap_s` (seconds) before each read; its path. Shared with benchmarks/timeline_logs.py."""
    from bench.model.store import RunStore
    store = RunStore(folder, "run")
    w = store.samples("bmc-1")
    t = T0
    for _ in range(reads):
        t += int(rng.uniform(*gap_s) * NS)
        s, e = t, t + int(rng.uniform(0.5, 3) * MS)
        w.write("read", "datetime", s, e, model.read_ns(int(rng.integers(s, e + 1))), NS,
                "user", "ok", "")
    w.close()
    store.write_manifest({"started_ns": T0, "run_id": "run", "devices": {"bmc-1": {
        "plane": "bmc", "clocks": [{"name": "datetime", "resolution_ns": NS}]}}})
    store.close()
    return folder / "run"


def write_log(path: Path, shown_ns: np.ndarray, message: str) -> None:
    """An RFC 5424 log of bmc-1, a line per stamp (ns, shown to the ms), line i's message
    `message` with {i} filled in; written 100,000 lines at a time."""
    text = np.datetime_as_string(np.asarray(shown_ns).astype("datetime64[ns]"), unit="ms")
    with open(path, "w", encoding="utf-8") as f:
        for k in range(0, len(text), 100_000):
            f.write("".join(f"<134>1 {s}Z bmc-1 thermald 42 TEMP - {message.format(i=i)}\n"
                            for i, s in enumerate(text[k:k + 100_000].tolist(), k)))


def make_case(folder: Path) -> tuple[Path, list[str]]:
    """The run folder and the timeline's log arguments."""
    from bench.sim.clock_model import ClockModel, ClockParams
    model = ClockModel(ClockParams(offset_s=12.3456, drift_ppm=20, resolution_s=1.0,
                                   steps=((90.0, -0.75),)), T0, seed=1)
    rng = np.random.default_rng(3)
    run = make_run(folder, model, 360, (0.3, 0.7), rng)
    truth = np.sort(T0 + rng.integers(5 * NS, 175 * NS, 400))
    log = folder / "bmc.log"
    write_log(log, np.array([model.true_ns(int(x)) for x in truth]) // MS * MS,
              'inlet {i}, "over" limit')
    return run, [f"bmc-1={log}", f"bmc-1={log},order=none"]


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
