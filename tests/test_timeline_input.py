"""Log input the timeline must survive (issue 31): only regular files are read (a device, a FIFO
or a directory is one error for that log and the rest goes on), lines are read one at a time
and capped, and no log line or option gives a traceback. And the rack file's zones, the UTC
column and the user's lines in timeline.html (issue 30)."""
import json
import os
import resource
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from test_timeline_formats import NS, T, _run_folder

from bench.commands.timeline import main
from bench.logs.logparse import parse_log
from bench.logs.logstamps import Context

ROOT = Path(__file__).resolve().parents[1]


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def test_devices_fifos_and_folders_are_refused_at_once_and_the_rest_goes_on(tmp_path):
    """Old code: /dev/zero grew without bound (here a MemoryError under a 3 GiB cap) and a FIFO
    blocked forever (here the deadline)."""
    run, bmc, _, t0 = _run_folder(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    good = tmp_path / "good.log"
    shown = datetime.fromtimestamp(bmc.read_ns(t0 + 30 * NS) // NS, UTC)
    good.write_text(f"{shown:%Y-%m-%dT%H:%M:%S}Z fan fault\n")
    bad = ["/dev/zero", "/dev/urandom", str(fifo), str(tmp_path)]
    r = subprocess.run([sys.executable, "-m", "bench.commands.timeline", str(run),
                        *(f"bmc-1={p}" for p in bad), f"bmc-1={good}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, preexec_fn=_limit_memory)
    assert r.returncode == 2, r.stderr[-3000:]
    err = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr and len(err) == 4, err
    for path, kind in zip(bad, ("a character device", "a character device", "a FIFO",
                                "a directory")):
        assert any(path in ln and kind in ln and "regular files" in ln for ln in err), (path, err)
    data = json.loads((run / "timeline.json").read_text())
    assert [e["label"] for e in data["entries"]] == ["good.log:1 fan fault"]
    assert sum("error" in rep for rep in data["logs"]) == 4


def test_long_lines_are_counted_and_skipped_not_held(tmp_path, capsys):
    """A first line and a middle line over the limit (old code: _csv.Error from detection on a
    first line over 131,072 characters); the others parse."""
    run, bmc, _, t0 = _run_folder(tmp_path)
    shown = datetime.fromtimestamp(bmc.read_ns(t0 + 30 * NS) // NS, UTC)
    ok = f"{shown:%Y-%m-%dT%H:%M:%S}Z"
    log = tmp_path / "long.log"
    log.write_text("x," * 70_000 + "\n" + f"{ok} first\n" + "y" * 200_000 + "\n"
                   + f"{ok} second\n")
    assert main([str(run), f"bmc-1={log}", "--line-limit", "65536"]) == 0
    out = capsys.readouterr().out
    assert "lines over 65536 bytes: 2 (skipped, not read; line 1, 3)" in out
    rep = json.loads((run / "timeline.json").read_text())["logs"][0]
    assert rep["lines_over_limit"] == 2 and rep["mapped"] == 2 and rep["lines"] == 4


def test_a_csv_field_over_the_csv_limit_is_one_unparsed_row():
    t = "2026-11-30T09:51:14Z"
    text = f'timestamp,message\n{t},a\n{t},"' + ("z" * 60_000 + "\n") * 3 + f'"\n{t},b\n'
    log = parse_log(text, "csv", Context())       # old code: _csv.Error, a traceback
    assert [s.text for s in log.stamps][:1] == ["a"]
    assert "field larger than field limit" in log.unparsed[0][2] and log.unparsed[0][0] == 5


@pytest.mark.parametrize("text, fmt, why", [
    ("9999-12-31T23:59:59Z far future\n", "iso8601", "int64"),
    ("2263-01-01T00:00:00Z past 2262\n", "iso8601", "int64"),
    ('{"__REALTIME_TIMESTAMP": "99999999999999999999"}\n', "journald", "int64"),
    ("[99999999999999999999.000001] x\n", "dmesg", "int64"),
    ("<13>1 9999-12-31T23:59:59+14:00 h a - - x\n", "rfc5424", "int64"),
    ("   1 | 12/31/9999 | 23:59:59 | x | y\n", "ipmi-sel", ""),
    ('{"a": ' * 5_000 + "1" + "}" * 5_000 + "\n", "journald", "nested too deeply"),
    ('{"Members": ' + "[" * 100_000 + "]" * 100_000 + "}", "redfish", "nested too deeply"),
])
def test_bad_stamps_and_deep_json_are_unparsed_lines_not_tracebacks(text, fmt, why):
    ctx = Context(zone="Pacific/Kiritimati") if fmt == "ipmi-sel" else Context()
    log = parse_log(text, fmt, ctx)
    assert log.unparsed_count == 1 and not len(log.stamps), log.unparsed
    assert why in log.unparsed[0][2]


def test_detection_survives_deep_json_and_huge_first_lines():
    from bench.logs.logfile import LogError
    with pytest.raises(LogError, match="not recognised"):
        parse_log("[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(LogError, match="no line to read: lines over 65536 bytes: 1"):
        parse_log("a," * 100_000 + "\n")


@pytest.mark.parametrize("opt, said", [
    ("year=abc", "year='abc'"), ("year=-5", "year='-5'"), ("year=99999", "year='99999'"),
    ("order=", "order=''"), ("order=sideways", "order='sideways'"), ("stamp=", "stamp=''"),
    ("boot=yesterday", "boot='yesterday'"), ("boot=9999-12-31T23:59:59Z", "boot="),
    ("presync_before=x", "presync_before='x'"), ("tz=Nowhere/Atlantis", "Nowhere/Atlantis"),
])
def test_bad_options_are_one_error_for_that_log_and_the_rest_goes_on(tmp_path, capsys, opt,
                                                                      said):
    run, bmc, _, t0 = _run_folder(tmp_path)
    shown = datetime.fromtimestamp(bmc.read_ns(t0 + 30 * NS) // NS, UTC)
    good = tmp_path / "good.log"
    good.write_text(f"{shown:%Y-%m-%dT%H:%M:%S}Z fan fault\n")
    assert main([str(run), f"bmc-1={good},{opt}", f"bmc-1={good}"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and "Traceback" not in cap.err, err
    data = json.loads((run / "timeline.json").read_text())
    assert [e["label"] for e in data["entries"]] == ["good.log:1 fan fault"]


def _with_zone(run: Path, zone: str) -> None:
    """The run's manifest inventory as the bench records it: bmc-1's rack-file zone."""
    p = run / "manifest.json"
    m = json.loads(p.read_text())
    m["inventory"] = {"name": "lab", "devices": {"bmc-1": {"plane": "bmc", "driver": "ipmi_bmc",
                                                           "sel_timezone": zone}}}
    p.write_text(json.dumps(m))


def test_the_rack_files_zone_reads_a_local_time_log(tmp_path, capsys):
    """A SEL list in Berlin time (the rack file's sel_timezone): old code assumed UTC and
    dropped both lines as never shown."""
    run, bmc, _, t0 = _run_folder(tmp_path)
    _with_zone(run, "Europe/Berlin")
    ev = [t0 + 20 * NS + 250_000_000, t0 + 40 * NS + 700_000_000]
    lines = []
    for k, t in enumerate(ev, 1):
        local = datetime.fromtimestamp(bmc.read_ns(t) // NS, ZoneInfo("Europe/Berlin"))
        lines.append(f"   {k:x} | {local:%m/%d/%Y} | {local:%H:%M:%S} | Temp #0x30 | event {k}")
    log = tmp_path / "sel.txt"
    log.write_text("\n".join(lines) + "\n")
    assert main([str(run), f"bmc-1={log}"]) == 0
    out = capsys.readouterr().out
    assert "zone: Europe/Berlin (the rack file's sel_timezone)" in out
    data = json.loads((run / "timeline.json").read_text())
    got = sorted((e for e in data["entries"] if e["log"]), key=lambda e: e["lo_ns"])
    assert len(got) == 2
    for e, t in zip(got, ev):
        assert e["lo_ns"] <= t <= e["hi_ns"] and e["status"] == "proven"
    # tz= given still wins over the rack file
    assert main([str(run), f"bmc-1={log},tz=UTC"]) == 0
    assert "zone: UTC (given)" in capsys.readouterr().out


def test_utc_beside_run_time_journald_stamps_as_time_and_the_users_lines_in_html(tmp_path,
                                                                                 capsys):
    run, bmc, _, t0 = _run_folder(tmp_path)
    t = t0 + 30 * NS
    shown = bmc.read_ns(t)
    log = tmp_path / "journal.json"
    log.write_text(json.dumps({"__REALTIME_TIMESTAMP": str(shown // 1000), "__SEQNUM": "1",
                               "MESSAGE": "thermal trip"}) + "\n"
                   + json.dumps({"__REALTIME_TIMESTAMP": "1000000", "__SEQNUM": "2",
                                 "MESSAGE": "before the clock was set"}) + "\n")
    assert main([str(run), f"bmc-1={log}", "--wide"]) == 0      # every column
    out = capsys.readouterr().out
    assert "line 2 (1970-01-01T00:00:01.000000Z): stamped before the clock was set" in out
    # (to the µs it was written with)
    row = next(ln for ln in out.splitlines() if "thermal trip" in ln)
    dev_time = datetime.fromtimestamp(shown // NS, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert dev_time in row and str(shown // 1000) not in row      # printed as a time
    data = json.loads((run / "timeline.json").read_text())
    (e,) = [x for x in data["entries"] if x["log"] == "journal.json"]
    utc = datetime.fromtimestamp(e["lo_ns"] // NS, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    # UTC beside run time (the table rounds a lower end down to the µs: outward)
    assert utc in row and f"{(e['lo_ns'] - t0) // 1000 / 1e6:.6f}" in row
    assert e["raw"] == str(shown // 1000) and e["device_time"].startswith(dev_time)
    page = (run / "timeline.html").read_text()
    assert page.count('class="ev user"') == 1 and "✎ bmc-1: thermal trip" in page   # file:line in the tip
    assert ">bmc</text>" in page and "UTC: " in page
    assert abs(T - t) < 3600 * NS


def test_outputs_replace_a_planted_symlink_never_write_through_it(tmp_path):
    run, bmc, _, t0 = _run_folder(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (run / "timeline.json").symlink_to(victim)
    assert main([str(run)]) == 0
    assert victim.read_text() == "keep me\n"
    assert not (run / "timeline.json").is_symlink()
    assert json.loads((run / "timeline.json").read_text())["schema"] == 2
    assert not [p for p in run.iterdir() if p.name.startswith(".timeline")]


@pytest.mark.parametrize("columns", [80, 100])
def test_the_table_fits_the_terminal_and_names_what_it_left_out(tmp_path, capsys, monkeypatch,
                                                                 columns):
    """Issue 45 item 2: rows were 200 columns at any width; columns give way in a stated order
    (device time, UTC, the interval's end and width; the order last) and the table says
    which."""
    run, bmc, _, t0 = _run_folder(tmp_path)
    log = tmp_path / "bmc.log"
    shown = bmc.read_ns(t0 + 30 * NS)
    log.write_text(datetime.fromtimestamp(shown / NS, UTC).isoformat() + " thermal trip on the "
                   "second shelf's inlet, fans at full speed since the last poll\n")
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main([str(run), f"bmc-1={log}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(ln for ln in lines if ln.lstrip().startswith("#"))
    rows = [ln for ln in lines if "bmc.log:1 thermal" in ln]
    assert rows and all(len(ln) <= columns for ln in [head, *rows]), [head, *rows]
    left = next(ln for ln in lines if ln.startswith("(left out for the terminal's width:"))
    assert "device time" in left and "device time" not in head and "from (s)" in head


def test_a_counter_stamp_is_printed_to_its_resolution():
    """Issue 45 item 5: a 1 s counter printed as 4394.000000000 s, a 10 ms sysUpTime cut to
    0.1 s by 9 significant digits."""
    from bench.model.timeline_build import device_value_text
    from bench.model.timeline_table import decimals_of, device_times
    assert decimals_of([10**9, 10**7, 10**6, 1, 0, 3 * 10**8]).tolist() == [0, 2, 3, 9, 9, 1]
    assert device_times([4394 * NS, 42_949_670_430_000_000], [True, True], [NS, 10**7],
                        [False, False]) == ["4394 s (counter)", "42949670.43 s (counter)"]
    assert device_value_text(42_949_670_430_000_000, True, 10**7) == "42949670.43 s (counter)"


def test_your_own_log_lines_are_never_gathered_away_from_the_axis(tmp_path, capsys):
    """timeline.html's axis spans the run, but a line of your own log from two hours before it
    widens the axis to it rather than going into the collapsed 'before the run' group."""
    import re
    run, bmc, _, t0 = _run_folder(tmp_path)
    man = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**man, "probed_until_ns": t0 + 600 * NS}))
    log = tmp_path / "bmc.log"
    lines = []
    for at in (-7200, 30):
        shown = datetime.fromtimestamp(bmc.read_ns(t0 + at * NS) // NS, UTC)
        lines.append(f"{shown:%Y-%m-%dT%H:%M:%S}Z fan fault at {at}\n")
    log.write_text("".join(lines))
    assert main([str(run), f"bmc-1={log}"]) == 0
    page = (run / "timeline.html").read_text()
    svg = re.search(r'<svg[^>]* class="tl-run".*?</svg>', page, flags=re.S).group(0)
    assert "fan fault at -7200" in svg and "fan fault at 30" in svg
    ticks = [float(x) for x in re.findall(r'<text class="tick"[^>]*>([^<]*) s</text>', svg)]
    assert ticks[0] <= -6000 and ticks[-1] >= 0, ticks           # the axis reaches back to it
    assert "fan fault at -7200" not in "".join(re.findall(r"<details.*?</details>", page, re.S))
