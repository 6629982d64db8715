"""Zone-less stamps are read in the device's zone from the rack file (`log_timezone`, else the
driver's `timezone` / `sel_timezone`) or given with tz=; with none they are refused, never read
as UTC, and the reason says so; a line that cannot be placed names the zone it was read in."""
import json

import numpy as np
import pytest
from timeline_truth import NS, T0, entries_of, local, make_run, misses, report_of

from bench.commands.timeline import main
from bench.config.inventory import InventoryError, device_from_table
from bench.sim.clock_model import ClockParams

DEVICES = {"k8s-1": ("scheduler", {"apiserver": ClockParams(offset_s=-0.41, drift_ppm=4,
                                                            resolution_s=1.0)})}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("zones")
    return (make_run(base / "a", DEVICES),
            make_run(base / "b", DEVICES, zones={"k8s-1": "America/New_York"}))


def _log(rack, folder, zone):
    """Node events logged in `zone`'s local time, no zone in the text (as `kubectl get events`
    printed on a laptop in New York)."""
    t = np.sort(T0 + np.random.default_rng(7).integers(60 * NS, 540 * NS, 22))
    path = folder / "events.log"
    path.write_text("".join(f"{local(rack.read('k8s-1', 'apiserver', x), zone)} Warning "
                            f"NodeNotReady node/gpu-node-{k}\n" for k, x in enumerate(t.tolist())))
    return path, dict(enumerate(t.tolist(), 1))


def test_zone_less_stamps_are_refused_without_a_zone_and_read_in_the_rack_files(
        runs, tmp_path, capsys):
    bare, zoned = runs
    log, truth = _log(bare, tmp_path, "America/New_York")
    assert main([str(bare.path), f"k8s-1={log}"]) == 0
    out = capsys.readouterr().out
    assert not entries_of(bare.path, "events.log")          # old code: 22 lines 5 h early
    rep = report_of(bare.path, "events.log")
    assert rep["unparsed_count"] == 22
    assert {u["why"] for u in rep["unparsed"]} == {
        "a zone-less stamp and no zone for this device: give tz=ZONE (or log_timezone in the "
        "rack file); it is never read as UTC by default"}
    assert "22 lines not parsed: a zone-less stamp" in out and "UTC assumed" not in out
    # the rack file's log_timezone for the device
    assert main([str(zoned.path), f"k8s-1={log}"]) == 0
    out = capsys.readouterr().out
    assert len(entries_of(zoned.path, "events.log")) == 22
    assert not misses(zoned.path, "events.log", truth)
    assert "zone: America/New_York (the rack file's log_timezone)" in out
    # given: tz= wins over the rack file
    assert main([str(zoned.path), f"k8s-1={log},tz=America/New_York"]) == 0
    assert "zone: America/New_York (given)" in capsys.readouterr().out
    assert not misses(zoned.path, "events.log", truth)


def test_a_line_not_placed_names_the_zone_it_was_read_in(runs, tmp_path, capsys):
    _, zoned = runs
    # a log before the clock was ever set (1999), in New York time: not placed, and why
    log = tmp_path / "old.log"
    log.write_text("1999-12-31 12:00:00 Warning NodeNotReady node/gpu-node-1\n")
    assert main([str(zoned.path), f"k8s-1={log}"]) == 0
    rep = report_of(zoned.path, "old.log")
    (u,) = rep["unplaced"]
    assert "read as local time in America/New_York (the rack file's log_timezone)" in u["why"]
    assert "give tz=" in json.dumps(rep)


def test_log_timezone_is_a_rack_key_checked_like_the_others():
    base = {"plane": "pdu", "driver": "snmp_pdu", "address": "udp://127.0.0.1:161"}
    assert device_from_table("pdu-1", {**base, "log_timezone": "Europe/Berlin"})
    with pytest.raises(InventoryError, match="IANA time zone"):
        device_from_table("pdu-1", {**base, "log_timezone": "Mars/Olympus_Mons"})
