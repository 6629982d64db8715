"""Every log format operators have: given or detected (never "any leading number"), the raw stamp
kept, assumptions said, and every line that does not parse reported with its number."""
import json
from datetime import UTC

import pytest

from bench.model.logfile import LogError
from bench.model.logformats import Context, parse_log

NS = 1_000_000_000
MS = 1_000_000
# 2026-11-30T09:51:14Z
T = 1796032274 * NS
RUN = Context(near_ns=T)


def one(text, fmt="auto", ctx=RUN, n_bad=0):
    log = parse_log(text, fmt, ctx)
    assert len(log.unparsed) == n_bad, log.unparsed
    return log


def test_rfc5424_with_fraction_and_zone_and_a_nil_timestamp():
    text = ("<34>1 2026-11-30T10:51:14.397+01:00 bmc-1 thermald 42 TEMP - Inlet over limit\n"
            "<34>1 - bmc-1 thermald 42 TEMP - no time\n"
            "<34>1 2026-11-30T09:51:15Z bmc-1 app - - [ex@1 a=\"b\"] msg\n")
    log = one(text, n_bad=1)
    assert log.format == "rfc5424" and log.detected.startswith("detected: 2 of 3")
    a, b = log.stamps
    assert (a.value_ns, a.resolution_ns, a.raw) == (T + 397 * MS, MS, "2026-11-30T10:51:14.397+01:00")
    assert b.value_ns == T + NS and "Inlet" in a.text
    assert log.unparsed[0][0] == 2 and "NILVALUE" in log.unparsed[0][2]


def test_rfc3164_year_from_the_run_and_zone_from_the_file_said_so():
    text = ("<13>Nov 30 09:51:14 cdu-1 pumpd[7]: pump 2 tripped\n"
            "Nov 30 10:51:15 cdu-1 pumpd[7]: coolant alarm\n"
            "404 not a timestamp\n"
            "Jan  5 00:00:01 cdu-1 x: nearest the run in the next year\n")
    # no zone known: zone-less stamps are refused, never read as UTC by default
    nozone = one(text, "rfc3164", ctx=Context(near_ns=T), n_bad=4)
    assert not nozone.stamps and all("zone-less stamp and no zone" in w
                                     for _, _, w in nozone.unparsed[:2] + nozone.unparsed[3:])
    log = one(text, ctx=Context(near_ns=T, zone="UTC"), n_bad=1)
    assert log.format == "rfc3164"
    assert log.stamps[0].value_ns == T and log.stamps[1].value_ns == T + 3601 * NS
    assert "year 2026 taken from the run" in log.notes
    assert "zone: UTC (given)" in log.notes
    assert log.unparsed[0][0] == 3
    assert log.stamps[2].raw == "Jan  5 00:00:01" and log.stamps[2].value_ns > T
    berlin = one(text, ctx=Context(near_ns=T, zone="Europe/Berlin"), n_bad=1)
    assert berlin.stamps[0].value_ns == T - 3600 * NS
    assert "zone: Europe/Berlin (given)" in berlin.notes


def test_iso8601_comma_and_dot_fractions_and_stamps_not_at_the_start():
    text = ("2026-11-30 09:51:14,397 INFO pump trip\n"
            "WARN [2026-11-30T09:51:14.5Z] optic LOS\n"
            "level=info ts=2026-11-30T09:51:14.123456789Z msg=x\n"
            "404 not a timestamp\n")
    assert one(text, n_bad=2).unparsed[0][2].startswith("a zone-less stamp and no zone")
    log = one(text, ctx=Context(near_ns=T, zone="UTC"), n_bad=1)
    assert log.format == "iso8601"
    a, b, c = log.stamps
    assert (a.value_ns, a.resolution_ns) == (T + 397 * MS, MS)
    assert (b.value_ns, b.resolution_ns) == (T + 500 * MS, 100 * MS)
    assert (c.value_ns, c.resolution_ns) == (T + 123_456_789, 1)
    assert b.text == "WARN [] optic LOS"
    assert log.unparsed == [(4, "404 not a timestamp", "no ISO 8601 date and time in the line")]


def test_dst_fold_keeps_both_readings_and_a_dst_change_within_one_file():
    # Europe/Berlin 2026-10-25: 02:30 happened twice (CEST then CET)
    text = ("2026-10-25 01:30:00 before\n2026-10-25 02:30:00 in the fold\n"
            "2026-10-25 03:30:00 after\n")
    log = one(text, "iso8601", Context(zone="Europe/Berlin"))
    a, fold, c = log.stamps
    assert c.value_ns - a.value_ns == 3 * 3600 * NS            # the day had 25 hours
    assert fold.resolution_ns == 3600 * NS + NS                 # both readings, one hour apart
    assert any("DST fold" in n for n in fold.notes)
    gap = one("2026-03-29 02:30:00 never happened\n", "iso8601", Context(zone="Europe/Berlin"))
    assert any("DST gap" in n for n in gap.stamps[0].notes)


def test_journald_json_realtime_and_monotonic_with_a_broken_record():
    recs = [{"__REALTIME_TIMESTAMP": str(T // 1000 + 1), "__MONOTONIC_TIMESTAMP": "5000000",
             "__SEQNUM": "7", "_BOOT_ID": "b1", "MESSAGE": "thermal event"},
            {"__REALTIME_TIMESTAMP": str(T // 1000 + 2), "__MONOTONIC_TIMESTAMP": "5000001",
             "__SEQNUM": "8", "MESSAGE": [104, 105]}]
    text = "\n".join(json.dumps(r) for r in recs) + '\n{"MESSAGE": "no stamp"}\n{broken\n'
    log = one(text, n_bad=2)
    assert log.format == "journald"
    assert [s.value_ns for s in log.stamps] == [T + 1000, T + 2000]
    assert [s.order for s in log.stamps] == [7, 8] and log.stamps[1].text == "hi"
    assert [n for n, _, _ in log.unparsed] == [3, 4]
    mono = one(text, "journald", Context(stamp="monotonic"), n_bad=2)
    assert [(s.value_ns, s.kind) for s in mono.stamps] == [(5 * NS, "monotonic"),
                                                          (5 * NS + 1000, "monotonic")]


def test_dmesg_monotonic_and_through_the_boot_instant():
    text = "[    5.123456] usb 1-1: new device\n[12345.000001] mlx5: link down\nnot dmesg\n"
    log = one(text, n_bad=1)
    assert log.format == "dmesg"
    assert [(s.value_ns, s.kind) for s in log.stamps] == [(5_123_456_000, "monotonic"),
                                                          (12345 * NS + 1000, "monotonic")]
    walled = one(text, "dmesg", Context(boot_ns=T), n_bad=1)
    assert walled.stamps[0].value_ns == T + 5_123_456_000 and walled.stamps[0].kind == "wall"


def test_redfish_log_entries_with_created_lacking_seconds_or_offset():
    doc = {"Members": [
        {"Id": "1", "Created": "2026-11-30T09:51:14+00:00", "Message": "a"},
        {"Id": "2", "Created": "2026-11-30T09:51", "Message": "no seconds, no offset"},
        {"Id": "3", "Created": "yesterday", "Message": "bad"},
        {"Id": "4", "Message": "no Created"}]}
    log = one(json.dumps(doc, indent=1), ctx=Context(near_ns=T, zone="UTC"), n_bad=2)
    assert log.format == "redfish"
    a, b = log.stamps
    assert (a.value_ns, a.resolution_ns, a.order) == (T, NS, 1)
    assert (b.value_ns, b.resolution_ns, b.order) == (T - 14 * NS, 60 * NS, 2)
    assert any("no seconds" in n for n in b.notes) and "zone: UTC (given)" in b.notes
    assert [n for n, _, _ in log.unparsed] == [3, 4]


def test_ipmitool_sel_list_and_elist_local_time_no_zone_and_pre_init():
    text = ("   1 | 11/30/2026 | 09:51:14 | Temperature #0x30 | Upper Critical going high | "
            "Asserted\n"
            "  1a | 11/30/2026 | 09:51:15 | Power Unit #0x01 | Power off/down | Asserted\n"
            "   2 | Pre-Init  |0000000012| System Event #0x01 | Timestamp Clock Sync | Asserted\n"
            "   3 | 13/45/2026 | 09:51:15 | bad date | x\n")
    log = one(text, ctx=Context(zone="America/New_York"), n_bad=1)
    assert log.format == "ipmi-sel"
    assert [s.order for s in log.stamps] == [1, 0x1a, 2]
    assert log.stamps[0].value_ns == T + 5 * 3600 * NS           # EST = UTC-5
    assert "SEL time is the BMC's local time" in log.notes
    # pre-init: the BMC's seconds since its init, a counter stamp (mapped through sel_init)
    pre = log.stamps[2]
    assert (pre.value_ns, pre.resolution_ns, pre.kind) == (12 * NS, NS, "monotonic")
    assert log.unparsed[0][0] == 4


def test_snmptrapd_log_with_varbind_lines_and_the_agent_uptime():
    text = ("2026-11-30 09:51:14 pdu-2 [UDP: [127.0.0.1]:50001->[127.0.0.1]:162]:\n"
            "DISMAN-EVENT-MIB::sysUpTimeInstance = Timeticks: (4294967) 11:55:49.67\t"
            "SNMPv2-MIB::snmpTrapOID.0 = OID: PowerNet-MIB::outletOff\n"
            "2026-11-30 09:51:15 pdu-2 [UDP: [127.0.0.1]:50001->[127.0.0.1]:162]:\n"
            "  .1.3.6.1.2.1.1.3.0 = Timeticks: (4295067) 11:55:50.67\n"
            "garbage line\n")
    from dataclasses import replace
    log = one(text, ctx=replace(RUN, stamp="wall", zone="UTC"), n_bad=1)   # the receiver's
    assert log.format == "snmptrapd"
    assert [s.value_ns for s in log.stamps] == [T, T + NS]
    assert "outletOff" in log.stamps[0].text
    assert log.unparsed[0][0] == 5
    # by default (auto) and with stamp=monotonic: the agent's sysUpTime where the trap has it
    for ctx in (RUN, Context(stamp="monotonic")):
        up = one(text, "snmptrapd", ctx, n_bad=1)
        assert [(s.value_ns, s.resolution_ns, s.kind) for s in up.stamps] == [
            (42949670 * MS, 10 * MS, "monotonic"), (42950670 * MS, 10 * MS, "monotonic")]


def test_csv_of_timestamp_and_text():
    text = ("timestamp,plane,message\n2026-11-30T09:51:14.25Z,cooling,pump trip\n"
            "not a time,cooling,x\n2026-11-30T09:51:15Z,bmc,\"thermal, event\"\n")
    log = one(text, n_bad=1)
    assert log.format == "csv"
    assert [s.value_ns for s in log.stamps] == [T + 250 * MS, T + NS]
    assert log.stamps[1].text == "bmc thermal, event"
    assert log.unparsed[0][0] == 3


def test_rfc2822_dates_through_email_utils():
    log = one("Mon, 30 Nov 2026 09:51:14 +0000 fan fault\n", "rfc2822")
    assert log.stamps[0].value_ns == T and log.stamps[0].text == "fan fault"


def test_no_format_is_any_leading_number():
    with pytest.raises(LogError, match="not recognised"):
        parse_log("404 not a timestamp\n1 2 3\n   1 | something\n", "auto", RUN)
    with pytest.raises(LogError, match="unknown log format"):
        parse_log("x", "numbers", RUN)


# -- the command ---------------------------------------------------------------------------------

def _run_folder(tmp_path, name="run", start_ns=None):
    """A run folder made in virtual time: bmc-1 (1 s wall clock) and pdu-1 (10 ms uptime)."""
    import numpy as np

    from bench.model.store import RunStore
    from bench.sim.clock_model import ClockModel, ClockParams
    t0 = T - 60 * NS
    bmc = ClockModel(ClockParams(offset_s=12.3456, drift_ppm=20, resolution_s=1.0), t0, seed=1)
    pdu = ClockModel(ClockParams(counter=True, uptime_s=1000.0, resolution_s=0.01), t0, seed=2)
    t0 = t0 if start_ns is None else start_ns
    store = RunStore(tmp_path, name)
    rng = np.random.default_rng(3)
    for dev, model, clock in (("bmc-1", bmc, "datetime"), ("pdu-1", pdu, "sysuptime")):
        w = store.samples(dev)
        t = t0
        for _ in range(1200):          # ~10 min of random reads: long enough to prove the drift
            t += int(rng.uniform(0.2, 0.8) * NS)
            s, e = t, t + int(rng.uniform(0.5, 3) * MS)
            w.write("read", clock, s, e, model.read_ns(int(rng.integers(s, e + 1))),
                    model.p.resolution_ns, "user", "ok", "")
        w.close()
    store.write_manifest({"started_ns": t0, "run_id": name, "devices": {
        "bmc-1": {"plane": "bmc", "clocks": [{"name": "datetime", "resolution_ns": NS}]},
        "pdu-1": {"plane": "pdu", "clocks": [{"name": "sysuptime", "resolution_ns": 10 * MS,
                                              "counter": True}]}}})
    store.close()
    return tmp_path / name, bmc, pdu, t0


def test_timeline_command_reads_formats_reports_unparsed_lines_and_writes_otel(tmp_path, capsys):
    from datetime import datetime

    from bench.commands.timeline import main
    run, bmc, pdu, t0 = _run_folder(tmp_path)
    t_ev = t0 + 30 * NS + 123 * MS
    shown = datetime.fromtimestamp(bmc.read_ns(t_ev) // NS, UTC)
    log = tmp_path / "bmc.log"
    log.write_text(f"<13>{shown:%b %d %H:%M:%S} bmc-1 thermald: thermal trip\n"
                   "404 not a timestamp\n"
                   f"<13>{shown:%b %d %H:%M:%S} bmc-1 thermald: power capped\n")
    dmesg = tmp_path / "dmesg.txt"
    up = pdu.read_ns(t_ev)
    dmesg.write_text(f"[{up // NS:5d}.{up % NS // 1000:06d}] outlet 5 off\n")
    assert main([str(run), f"bmc-1={log},tz=UTC", f"pdu-1={dmesg}"]) == 0
    assert not (run / "timeline.otel.json").exists()        # only when asked
    assert main([str(run), f"bmc-1={log}", f"pdu-1={dmesg}", "--formats", "json,otel",
                 "--tz", "UTC"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"written: {run / 'timeline.json'}, {run / 'timeline.otel.json'}")
    assert "rfc3164 (detected: 2 of 3 sampled lines" in out
    assert "line 2: not an RFC 3164 header" in out and "year 2026 taken from the run" in out
    data = json.loads((run / "timeline.json").read_text())
    lines = [e for e in data["entries"] if e["basis"] == "stamp"]
    assert len(lines) == 3
    for e in lines:
        assert e["lo_ns"] <= t_ev <= e["hi_ns"] + (1 if "outlet" in e["label"] else NS)
        assert e["calibration"] in ("run:datetime#0", "run:sysuptime#0") and e["status"] == "proven"
    trip = next(e for e in lines if "thermal trip" in e["label"])
    assert trip["raw"] == f"{shown:%b %d %H:%M:%S}"
    assert data["logs"][0]["unparsed"] == [{"line": 2, "text": "404 not a timestamp",
                                            "why": "not an RFC 3164 header ([<PRI>]Mmm dd "
                                                   "hh:mm:ss HOST ...)"}]
    otel = json.loads((run / "timeline.otel.json").read_text())
    recs = {r["resource"]["attributes"][0]["value"]["stringValue"]: r["scopeLogs"][0]["logRecords"]
            for r in otel["resourceLogs"]}
    rec = next(r for r in recs["bmc-1"] if "thermal trip" in r["body"]["stringValue"])
    attrs = {a["key"]: a["value"] for a in rec["attributes"]}
    assert rec["timeUnixNano"] == str(bmc.read_ns(t_ev) // NS * NS)
    assert attrs["rackclock.interval.lo_ns"]["intValue"] == str(trip["lo_ns"])
    assert attrs["rackclock.calibration"]["stringValue"] == "run:datetime#0"


def test_timeline_command_refuses_clearly(tmp_path, capsys):
    from bench.commands.timeline import main
    run, *_ = _run_folder(tmp_path)
    iso = tmp_path / "iso.log"
    iso.write_text("2026-11-30T09:51:14Z x\n")
    cases = [([str(tmp_path / "nope")], "is not a run folder"),
             ([str(run), f"bmc-1={tmp_path / 'missing.log'}"], "No such file"),
             ([str(run), f"pdu-1:sysuptime={iso}"], "is a counter"),
             ([str(run), f"nobody={iso}"], "no device 'nobody'"),
             ([str(run), f"bmc-1={iso},colour=red"], "unknown option")]
    for argv, msg in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_two_runs_calibrate_one_timeline_and_each_line_names_its_calibration(tmp_path, capsys):
    from datetime import datetime

    from bench.commands.timeline import main
    run, bmc, _, t0 = _run_folder(tmp_path)
    later, *_ = _run_folder(tmp_path, "later", start_ns=t0 + 7200 * NS)
    lines = []
    for t in (t0 - 3 * 86400 * NS, t0 + 30 * NS, t0 + 7230 * NS):
        shown = datetime.fromtimestamp(bmc.read_ns(t) // NS, UTC)
        lines.append(f"{shown:%Y-%m-%dT%H:%M:%S}Z event at {t}")
    log = tmp_path / "bmc.log"
    log.write_text("\n".join(lines) + "\n")
    assert main([str(run), f"bmc-1={log}", "--calibration", str(later)]) == 0
    data = json.loads((run / "timeline.json").read_text())
    got = sorted((e for e in data["entries"] if e["basis"] == "stamp"), key=lambda e: e["lo_ns"])
    assert [e["calibration"] for e in got] == ["run:datetime#0", "run:datetime#0",
                                               "later:datetime#0"]
    assert [e["status"] for e in got] == ["extrapolated", "proven", "proven"]
    assert got[0]["distance_ns"] > 2.9 * 86400 * NS
    for e in got:
        t = int(e["label"].rsplit(" ", 1)[1])
        assert e["lo_ns"] <= t <= e["hi_ns"]
    assert "extrapolated" in capsys.readouterr().out


def test_formats_option_names_the_files_written(tmp_path, capsys):
    import pytest

    from bench.commands import timeline as timeline_cli
    from bench.output import timeline_write as timeline
    assert timeline_cli.FILES == tuple(timeline.FILES)      # the command's list, without numpy
    assert timeline_cli.DEFAULT_FORMATS == timeline.DEFAULT_FORMATS
    run, *_ = _run_folder(tmp_path)
    with pytest.raises(SystemExit) as exc:
        timeline_cli.main([str(run), "--formats", "json,pdf"])
    assert exc.value.code == 2 and "--formats: a comma-separated list of" in capsys.readouterr().err
    assert timeline_cli.main([str(run), "--formats", " csv "]) == 0
    assert sorted(p.name for p in run.glob("timeline*")) == ["timeline.csv"]
