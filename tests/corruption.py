"""The corruption matrix of issue 42 (tests/test_corruption.py): run-folder files, the ways a
crash, a full disk or a careless copy leave them, and a worker that runs rackclock's commands
in-process on corrupted copies of one recorded run, one case after another, reporting each.

`python tests/corruption.py WORKDIR CASES.json` (a subprocess of the test, so that its peak
memory is its own): each case {"cmd", "file", "fault"} is run on WORKDIR/<case id>/run (made by
the test) and answered with one JSON line: exit status, the last line of stderr, whether a
traceback was printed, seconds, and the process's peak memory so far (MB).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "data" / "recorded" / "20261201T161000Z-clock_offset"
FILES = ["manifest.json", "summary.json", "truth.json", "samples/bmc-1.csv", "events.csv",
         "reference.csv", "incident.json"]
FAULTS = ["truncated", "garbage", "empty", "folder", "dev_zero", "fifo", "sparse_1g", "nul_tail",
          "deep", "nan", "wrong_types"]
COMMANDS = ["summarize", "limits", "compare", "timeline", "trend", "report"]
GIB = 1 << 30


def corrupt(path: Path, fault: str) -> None:
    """Leave `path` as `fault` says."""
    good = path.read_bytes()
    path.unlink()
    if fault == "truncated":
        path.write_bytes(good[: len(good) * 2 // 3])
    elif fault == "garbage":
        path.write_bytes(bytes(range(256)) * 64 + b"\n{]\n" + os.urandom(4096))
    elif fault == "empty":
        path.write_bytes(b"")
    elif fault == "folder":
        path.mkdir()
    elif fault == "dev_zero":
        path.symlink_to("/dev/zero")
    elif fault == "fifo":
        os.mkfifo(path)
    elif fault == "sparse_1g":
        with open(path, "wb") as f:
            f.truncate(GIB)
    elif fault == "nul_tail":
        path.write_bytes(good + b"\0" * 200_000)
    elif fault == "deep":
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000 if path.suffix == ".json"
                         else good + b'"' * 70_000 + b"\n")
    elif fault == "nan":
        path.write_bytes(_nan(good) if path.suffix == ".json" else
                         good.replace(b",ok,", b",ok,NaN,", 3))
    elif fault == "wrong_types":
        path.write_bytes(_wrong(good) if path.suffix == ".json" else
                         good.replace(b"\n1,", b"\nseq,", 1).replace(b",ok,", b",[],", 5))
    else:
        raise ValueError(fault)


def _nan(good: bytes) -> bytes:
    doc = json.loads(good)
    doc["injected"] = {"a": [1.5, float("nan")], "b": float("inf")}
    text = json.dumps(doc)              # NaN and Infinity, as Python writes them
    return text.replace('"schema": 1', '"schema": 1e999', 1).encode()


def _wrong(good: bytes) -> bytes:
    doc = json.loads(good)
    for k in list(doc)[:12]:
        v = doc[k]
        doc[k] = ([v] if isinstance(v, dict) else {"x": v} if isinstance(v, list)
                  else [v] if isinstance(v, str) else "text")
    return json.dumps(doc).encode()


def argv(cmd: str, run: Path, others: list[Path]) -> list[str]:
    return {"summarize": ["summarize", "--quiet", str(run)],
            "limits": ["limits", str(run)],
            "compare": ["compare", str(others[0]), str(run)],
            "timeline": ["timeline", str(run), "--formats", "json"],
            "trend": ["trend", "--as-given", str(others[0]), str(others[1]), str(run)],
            "report": ["report", "--processes", "1", str(run)]}[cmd]


def snapshot(run: Path) -> dict[str, tuple]:
    """Each name under `run` with what it is: a regular file by its bytes' digest (a large one
    by size, inode and mtime), anything else by its kind and target."""
    import hashlib
    import stat
    out: dict[str, tuple] = {}
    for root, dirs, files in os.walk(run):
        for name in dirs + files:
            p = Path(root) / name
            st = p.lstat()
            rel = p.relative_to(run).as_posix()
            if stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_size, st.st_ino, st.st_mtime_ns) \
                    if st.st_size > 10 << 20 else ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def run_case(case: dict, workdir: Path) -> dict:
    from bench.cli import main
    run = workdir / case["id"] / "run"
    before = snapshot(run)
    others = [workdir / "good1", workdir / "good2"]
    err = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            rc = main(argv(case["cmd"], run, others))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException:           # noqa: BLE001  (what the test reports as a traceback)
            traceback.print_exc(file=err)
            rc = -1
    text = err.getvalue()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    seconds = round(time.monotonic() - t0, 2)
    return {**case, "rc": rc, "seconds": seconds, "changed": changed(before, snapshot(run)),
            "traceback": "Traceback (most recent call last)" in text,
            "last": lines[-1] if lines else "", "lines": len(lines),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    workdir, cases = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    resource.setrlimit(resource.RLIMIT_AS, (6 * GIB, 6 * GIB))   # a runaway reader dies alone
    for case in cases:
        print(json.dumps(run_case(case, workdir)), flush=True)


if __name__ == "__main__":
    main()
