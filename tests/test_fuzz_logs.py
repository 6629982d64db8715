"""Property-based fuzzing (Hypothesis): every log format's parser (bench/logs/)
and the run-folder readers (bench/model/rundata.py and the record modules) on arbitrary and near-valid
input never raise anything but the project's own one-line errors (RackclockError). Short and
reproducible in the suite (derandomized, RACKCLOCK_FUZZ_EXAMPLES examples a test, default 40);
benchmarks/fuzz_logs.py runs the same properties longer, randomized, and counts."""
import csv
import io
import json
import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.errors import RackclockError
from bench.logs.formats import FORMATS
from bench.logs.logparse import parse_log
from bench.logs.logstamps import Context
from bench.model.manifest_records import Manifest
from bench.model.summary_records import Summary
from bench.model.truth_records import Truth

EXAMPLES = int(os.environ.get("RACKCLOCK_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=EXAMPLES <= 100, deadline=None,
                database=None, suppress_health_check=list(HealthCheck))

NEAR = {   # lines near each format's own (every field may be out of range)
    "rfc5424": r"<\d{1,3}>\d{1,2} (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,12})?)?"
               r"(Z|[+-]\d{2}:\d{2})?|-) \S{1,8} \S{1,8} \S{1,3} \S{1,3} ?.{0,20}",
    "rfc3164": r"(<\d{1,3}>)?(Jan|Feb|Nov|Xyz) [ \d]\d \d{2}:\d{2}:\d{2}([.,]\d{1,12})? .{0,20}",
    "dmesg": r"(<\d{1,3}>)?\[ {0,4}\d{1,25}\.\d{3,12}\] ?.{0,20}",
    "ipmi-sel": r" {0,3}[0-9a-f]{1,24} \| (\d{2}/\d{2}/\d{4} \| \d{2}:\d{2}:\d{2}( ?(AM|PM))?|"
                r"Pre-Init {0,2}\|\d{1,12}) \| .{0,20}",
    "snmptrapd": r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S{1,8} \[.{0,12}\]:.{0,12}|"
                 r"  \.1\.3\.6\.1\.2\.1\.1\.3\.0 = Timeticks: \(\d{1,20}\) .{0,8}|"
                 r"DISMAN-EVENT-MIB::sysUpTimeInstance = Timeticks: \(\d{1,20}\))",
    "iso8601": r".{0,8}\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}([.,]\d{1,12})?)?"
               r"(Z|[+-]\d{2}(:?\d{2})?)?.{0,8}",
    "rfc2822": r"([A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} "
               r"([+-]\d{4}|GMT|UTC|UT) .{0,12}",
}
ISO_NEAR = st.from_regex(NEAR["iso8601"][6:-6], fullmatch=True)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
                    | ISO_NEAR, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
KEYS = ("__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "__SEQNUM", "_BOOT_ID", "MESSAGE",
        "Created", "Id", "Message", "MessageId", "Members", "EventTimestamp", "Events",
        "metadata", "creationTimestamp", "eventTime", "reportingComponent", "items", "object",
        "resourceVersion", "involvedObject", "kind")
RECORD = st.dictionaries(st.sampled_from(KEYS), JSON | st.integers() | st.text(string.digits),
                         max_size=6)
CONTEXTS = st.builds(Context, zone=st.sampled_from(["", "UTC", "Europe/Berlin",
                                                    "Pacific/Kiritimati", "America/St_Johns"]),
                     year=st.none() | st.integers(1678, 2261),
                     near_ns=st.none() | st.integers(-(2**62), 2**62),
                     boot_ns=st.none() | st.integers(-(2**62), 2**62),
                     stamp=st.sampled_from(["auto", "wall", "monotonic"]),
                     field=st.sampled_from(["auto", "eventTime", "creationTimestamp",
                                            "EventTimestamp"]),
                     clocks=st.sampled_from([(), ("scheduler",), ("apiserver",)]))


def _csv_text(rows) -> str:
    b = io.StringIO()
    csv.writer(b).writerows(rows)
    return b.getvalue()


def texts(fmt: str):
    """Whole logs of format `fmt`: arbitrary text, near-valid lines, and mixtures."""
    if fmt == "journald":
        line = st.one_of(RECORD.map(json.dumps), JSON.map(json.dumps), st.text(max_size=40))
    elif fmt == "redfish":
        member = st.one_of(RECORD, JSON, st.fixed_dictionaries({"Created": ISO_NEAR,
                                                                "Id": st.text(string.digits)}))
        return st.one_of(st.lists(member, max_size=6).map(lambda m: json.dumps({"Members": m})),
                         JSON.map(json.dumps), st.text(max_size=200))
    elif fmt == "k8s-events":
        event = st.one_of(RECORD, JSON, st.fixed_dictionaries({
            "kind": st.just("Event"), "eventTime": ISO_NEAR | st.none(),
            "reportingComponent": st.text(max_size=12),
            "metadata": st.fixed_dictionaries({"creationTimestamp": ISO_NEAR,
                                               "resourceVersion": st.text(string.digits)})}))
        return st.one_of(st.lists(event, max_size=6).map(lambda e: json.dumps({"items": e})),
                         st.lists(event, max_size=6).map(
                             lambda e: "\n".join(json.dumps({"object": x}) for x in e)),
                         JSON.map(json.dumps), st.text(max_size=200))
    elif fmt == "csv":
        cell = st.one_of(st.text(max_size=12), ISO_NEAR)
        head = st.lists(st.sampled_from(["timestamp", "time", "message", "x", ""]) | cell,
                        min_size=1, max_size=4)
        return st.tuples(head, st.lists(st.lists(cell, max_size=4), max_size=8)).map(
            lambda hr: _csv_text([hr[0], *hr[1]])) | st.text(max_size=200)
    else:
        line = st.one_of(st.from_regex(NEAR[fmt], fullmatch=True), st.text(max_size=40))
    return st.lists(line, max_size=12).map("\n".join)


def _parse(text: str, fmt: str, ctx: Context) -> None:
    try:
        log = parse_log(text, fmt, ctx)
    except RackclockError:
        return
    n = text.count("\n") + 1
    assert log.lines == len(log.stamps) + log.unparsed_count + log.over.over
    for s in log.stamps:
        assert -(2**63) < s.value_ns and s.value_ns + s.resolution_ns < 2**63
        assert 1 <= s.line <= max(n, len(log.stamps)) and s.kind in ("wall", "monotonic")


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_every_format_parses_anything_without_a_traceback(fmt, data):
    _parse(data.draw(texts(fmt)), fmt, data.draw(CONTEXTS))


@FUZZ
@given(text=st.one_of(*(texts(f) for f in FORMATS)), ctx=CONTEXTS)
def test_detection_reads_anything_without_a_traceback(text, ctx):
    _parse(text, "auto", ctx)


SAMPLE_HEADER = "seq,kind,clock,s_ns,e_ns,value_ns,resolution_ns,stamp,status,raw"
NUM = st.one_of(st.integers(-(2**70), 2**70).map(str), st.text(max_size=6),
                st.sampled_from(["", "1e30", "nan", "-0", "0x10"]))
SAMPLE_ROW = st.tuples(NUM, st.sampled_from(["read", "event", "stimulus", "x", ""]),
                       st.text(max_size=8), NUM, NUM, NUM, NUM, st.text(max_size=8),
                       st.sampled_from(["ok", "timeout", "", "x"]), st.text(max_size=20))


@FUZZ
@given(rows=st.lists(SAMPLE_ROW | st.lists(st.text(max_size=8), max_size=12), max_size=12),
       header=st.sampled_from([SAMPLE_HEADER, "t_ns,device,level,kind,message", "a,b"]),
       tail=st.text(max_size=30))
def test_samples_and_events_files_read_back_without_a_traceback(tmp_path_factory, rows, header,
                                                                tail):
    from bench.model.event_records import load_events
    from bench.model.rundata import load_samples
    p = tmp_path_factory.mktemp("fz") / "x.csv"
    p.write_text(header + "\n" + _csv_text(rows) + tail, encoding="utf-8", errors="surrogatepass")
    for read in (load_samples, load_events):
        try:
            read(p)
        except RackclockError:
            pass


@FUZZ
@given(doc=JSON | st.dictionaries(st.sampled_from(
    ["devices", "inventory", "calibration", "started_ns", "reference", "clocks", "segments",
     "breaks", "latency", "status", "run_id", "offset_ns", "drift_ppm", "lo", "hi"]),
    JSON, max_size=6))
def test_run_documents_read_back_without_a_traceback(doc):
    for cls in (Manifest, Summary, Truth):
        try:
            rec = cls.of(doc)
        except RackclockError:
            continue
        if isinstance(rec, Manifest):
            rec.uncertainty_ns()
            [rec.device(n) for n in rec.devices]


@FUZZ
@given(manifest=st.one_of(JSON.map(json.dumps), st.text(max_size=60)),
       summary=st.one_of(JSON.map(json.dumps), st.text(max_size=60)))
def test_run_folders_load_without_a_traceback(tmp_path_factory, manifest, summary):
    from bench.model.rundata import load_run
    d = tmp_path_factory.mktemp("run")
    (d / "manifest.json").write_text(manifest, encoding="utf-8", errors="surrogatepass")
    (d / "summary.json").write_text(summary, encoding="utf-8", errors="surrogatepass")
    try:
        run = load_run(d)
    except RackclockError:
        return
    assert run.run_id
