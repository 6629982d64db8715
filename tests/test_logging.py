"""Library code logs (module loggers), the command line decides what reaches the terminal, and
every run keeps its log in bench.log with no credential in it."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bench import logsetup
from bench.model.runlog import RUN_LOG
from bench.model.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
# no print in library code: tests/test_house.py (its command modules and functions)


def test_log_options_anywhere_on_the_command_line():
    assert logsetup.take_log_options(["report", "r1"]) == (["report", "r1"], logging.WARNING)
    assert logsetup.take_log_options(["-v", "run"]) == (["run"], logging.INFO)
    assert logsetup.take_log_options(["run", "-vv"]) == (["run"], logging.DEBUG)
    assert logsetup.take_log_options(["check", "--log-level", "error"]) == (["check"], logging.ERROR)
    assert logsetup.take_log_options(["--log-level=debug"]) == ([], logging.DEBUG)
    with pytest.raises(logsetup.LogLevelError):
        logsetup.take_log_options(["--log-level", "loud"])


def test_bad_log_level_is_one_line_exit_2(capsys):
    from bench.cli import main

    assert main(["--log-level", "loud", "report"]) == 2
    assert capsys.readouterr().err.strip() == \
        "rackclock: --log-level 'loud': expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"


def test_terminal_shows_the_chosen_level_redacted(capsys, monkeypatch):
    monkeypatch.setenv("RACKCLOCK_TEST_PASSWORD", "hunter2-secret")
    handler = logsetup.configure(logging.WARNING)
    try:
        lg = logging.getLogger("drivers.test")
        lg.info("not shown")
        lg.warning("login as root:%s to https://root:pw@bmc/", "hunter2-secret")
        err = capsys.readouterr().err
        assert "not shown" not in err and "hunter2" not in err and "root:pw" not in err
        assert "WARNING drivers.test: login as root:*** to https://***@bmc/" in err
    finally:
        logging.getLogger().removeHandler(handler)


def test_a_run_folder_keeps_the_log_without_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("BMC_PW", "s3cr3t-value")          # named only by the inventory
    before = logging.getLogger("bench").level
    store = RunStore(tmp_path, "r")
    store.write_manifest({"inventory": {"devices": [{"name": "bmc-1", "password_env": "BMC_PW"}]}})
    logging.getLogger("bench.run.runner").info("bmc-1: read: auth: rejected s3cr3t-value")
    logging.getLogger("drivers.redfish_bmc").debug("below INFO: not kept")
    try:
        raise RuntimeError("with s3cr3t-value inside")
    except RuntimeError:
        logging.getLogger("drivers.redfish_bmc").exception("failed")
    logging.getLogger("unrelated.library").warning("not the bench's")
    logging.getLogger("experiments.incident").info("an experiment's own line")
    store.close()
    text = (store.path / RUN_LOG).read_text()
    assert "bmc-1: read: auth: rejected ***" in text and "RuntimeError: with *** inside" in text
    assert "s3cr3t" not in text and "below INFO" not in text and "not the bench's" not in text
    assert "experiments.incident INFO an experiment's own line" in text
    assert logging.getLogger("bench").level == before            # levels restored on close


def test_two_run_logs_open_at_once_both_keep_their_lines(tmp_path):
    before = logging.getLogger("drivers").level
    a, b = RunStore(tmp_path, "a"), RunStore(tmp_path, "b")
    logging.getLogger("drivers.x").info("both")
    a.close()
    logging.getLogger("drivers.x").info("only b")
    b.close()
    assert "both" in (a.path / RUN_LOG).read_text() and "only b" not in (a.path / RUN_LOG).read_text()
    assert "only b" in (b.path / RUN_LOG).read_text()
    assert logging.getLogger("drivers").level == before
