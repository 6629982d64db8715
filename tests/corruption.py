"""The corruption matrix of issue 42 (tests/test_corruption.py): run-folder files, the ways a
crash, a full disk or a careless copy leave them, and a worker that runs rackclock's commands
in-process on corrupted copies of one recorded run, one case after another, reporting each.

`python tests/corruption.py WORKDIR CASES.json` (a subprocess of the test): each case {"cmd",
"file", "fault"} is run on WORKDIR/<case id>/run (made by the test) in a child of its own (forked
from this worker, which imports nothing of the bench, so the child starts from the bare
interpreter) and answered with one JSON line: exit status, the last line of stderr, the verdict
line of stdout (PASS, FAIL, REGRESSED or UNDECIDED ...), whether a traceback was printed,
seconds, and the case's own peak memory (MB): the child's maximum resident set, from wait4's
rusage, so that no case is charged with another's high-water mark (ru_maxrss of one process
running every case is the largest of them all).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
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
            "trend": ["trend", "--as-given", str(others[0]), str(others[1]), str(run), "--figure"],
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
    err, out = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
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
            "verdict": verdict(out.getvalue()),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


VERDICTS = ("PASS", "FAIL", "REGRESSED", "UNDECIDED")


def verdict(stdout: str) -> str:
    """The last line of a command's output that states its outcome (bench.model.outcomes'
    words, then a colon or a space), or ""."""
    found = [ln.strip() for ln in stdout.splitlines()
             if ln.strip().split(":")[0].split(" ")[0] in VERDICTS]
    return found[-1] if found else ""


def run_isolated(case: dict, workdir: Path) -> dict:
    """run_case in a forked child; its peak memory is the child's own (wait4's rusage)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child: the case, its answer into the pipe, no more
        code = 0
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)            # anything written to fd 1 cannot spoil the JSON lines
            got = json.dumps(run_case(case, workdir)).encode()
            while got:
                got = got[os.write(w, got):]
        except BaseException:           # noqa: BLE001  (reported by the parent as a death)
            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read()
    _, status, usage = os.wait4(pid, 0)
    peak = usage.ru_maxrss // 1024
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and text:
        return {**json.loads(text), "peak_mb": peak}
    why = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exit {os.waitstatus_to_exitcode(status)}")
    return {**case, "rc": -1, "seconds": 0, "changed": [], "traceback": True,
            "last": f"the case's child died ({why})", "lines": 0, "verdict": "",
            "peak_mb": peak}


def main() -> None:
    workdir, cases = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    resource.setrlimit(resource.RLIMIT_AS, (6 * GIB, 6 * GIB))   # a runaway reader dies alone
    for case in cases:
        print(json.dumps(run_isolated(case, workdir)), flush=True)


if __name__ == "__main__":
    main()
