"""One verdict per rack and one over the fleet, in the one outcome vocabulary and exit table of
every judging command (bench.model.outcomes): PASS 0, FAIL 1, UNDECIDED 3.

A rack's verdict is its own run's, judged on the host that ran it by `rackclock run`'s rule
(bench.cli.run_exit_status: FAIL when the run did not complete, a device gave no usable read or
the overall verdict fails; UNDECIDED when something is undecided or no clock was measured). A
rack without a completed run (refused, crashed, lost, unplaceable, interrupted, never gathered)
is FAIL, as `rackclock run` exits 1 on a run that did not complete: a rack the fleet could not
check is never a green gate. The fleet's verdict is the worst of its racks'.
"""
from __future__ import annotations

from pathlib import Path

from bench.model.outcomes import FAIL, PASS, REGRESSED, UNDECIDED, exit_code, worst

# rack statuses whose run completed (bench.fleet.gather); `summarised`: a run killed after its
# probing (ENOUGH of its duration) whose summary `fleet resume` rebuilt (bench.fleet.fleet_resume)
RAN = ("completed", "unusable", "summarised")
BY_EXIT = {0: PASS, 1: FAIL, 3: UNDECIDED}


def run_verdict(run_dir: str | Path, probed: bool = False) -> tuple[str, str]:
    """(PASS | FAIL | UNDECIDED, why) of a run folder, by `rackclock run`'s own rule; `probed`:
    judged as completed (its probing ran its course; the process died closing it)."""
    import dataclasses

    from bench.model.run_statuses import RunStatus
    from bench.model.rundata import load_run
    from bench.model.verdict import run_outcome

    run = load_run(run_dir)
    if probed:
        run = dataclasses.replace(run, manifest=dataclasses.replace(
            run.manifest, status=RunStatus.COMPLETED))
    r = run_outcome(run)
    reasons = [f"{n}: no usable read ({why})" for n, why in r.unusable.items()]
    if not r.measured:
        reasons.append("no clock was measured")
    reasons += [x for x in r.overall.reasons if x not in reasons]
    more = f" and {len(reasons) - 3} more" if len(reasons) > 3 else ""
    return (FAIL if r.word == REGRESSED else r.word), "; ".join(reasons[:3]) + more


def rack_verdict(record: dict) -> tuple[str, str]:
    """(PASS | FAIL | UNDECIDED, why) of a rack's entry of fleet.json."""
    status = record.get("status") or "?"
    if status not in RAN:
        why = record.get("error") or "no error recorded"
        return FAIL, f"not completed ({status}): {why}"
    if record.get("verdict") in (PASS, FAIL, UNDECIDED):
        return record["verdict"], record.get("reason") or ""
    code = record.get("exit_status")     # judged nowhere (an older fleet.json): the exit status
    word = BY_EXIT.get(code, FAIL) if isinstance(code, int) else FAIL
    return word, f"exit status {code} of its rackclock run"


def fleet_verdict(records: dict[str, dict]) -> tuple[str, str]:
    """(PASS | FAIL | UNDECIDED, why) over every rack: the worst of theirs."""
    words = {name: rack_verdict(rec)[0] for name, rec in records.items()}
    if not words:
        return UNDECIDED, "no racks"
    word = worst(words.values())
    word = FAIL if word == REGRESSED else word
    counts = []
    for w in (FAIL, UNDECIDED, PASS):
        names = sorted(n for n, x in words.items() if x == w)
        if names:
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            counts.append(f"{len(names)} {w} ({shown})")
    return word, f"{len(words)} rack(s): " + "; ".join(counts)


def fleet_exit(word: str, allow_undecided: bool = False) -> int:
    """The exit status of a fleet verdict, by the one exit table."""
    return exit_code(word, allow_undecided)
