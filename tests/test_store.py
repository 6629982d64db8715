"""The run folder: rows flushed as written, read back exactly, truncated tails survived."""
import json

from bench.model.rundata import load_run, load_samples
from bench.model.store import SAMPLE_COLUMNS, RunStore
from bench.units import fmt_ns, parse_duration_ns


def test_rows_are_on_disk_before_close(tmp_path):
    store = RunStore(tmp_path, "r1")
    w = store.samples("dev")
    w.write("read", "datetime", 10, 20, 1_700_000_000_000_000_000, 10**9, "user", "ok", "a\nb")
    text = (tmp_path / "r1" / "samples" / "dev.csv").read_text()   # not closed yet
    assert text.splitlines()[0] == ",".join(SAMPLE_COLUMNS)
    assert "1700000000000000000" in text and "a b" in text
    w.write("read", "datetime", 30, 40, None, 10**9, "user", "timeout", "no answer")
    w.close()
    smp = load_samples(tmp_path / "r1" / "samples" / "dev.csv")
    assert list(smp.seq) == [1, 2] and smp.status == ["ok", "timeout"]
    s, e, v, q = smp.reads("datetime")
    assert list(s) == [10] and list(v) == [1_700_000_000_000_000_000] and list(q) == [10**9]


def test_truncated_last_line_is_skipped(tmp_path):
    store = RunStore(tmp_path, "r2")
    w = store.samples("dev")
    w.write("read", "c", 1, 2, 3, 1, "user", "ok", "")
    w.close()
    with open(tmp_path / "r2" / "samples" / "dev.csv", "a") as f:
        f.write("2,read,c,5")          # a run killed mid-write
    assert len(load_samples(tmp_path / "r2" / "samples" / "dev.csv")) == 1


def test_manifest_and_journal(tmp_path):
    store = RunStore(tmp_path, "r3")
    store.write_manifest({"experiment": "x"})
    store.update_manifest(status="completed")
    store.journal("dev", "error", "timeout", "line one\nline two")
    store.close()
    run = load_run(tmp_path / "r3")
    assert run.manifest["schema"] == 1 and run.manifest["status"] == "completed"
    assert "line one line two" in (tmp_path / "r3" / "events.csv").read_text()
    assert json.loads((tmp_path / "r3" / "manifest.json").read_text())["experiment"] == "x"


def test_units():
    assert fmt_ns(12_345_678) == "12.3 ms" and fmt_ns(950) == "950 ns" and fmt_ns(-2.5e9) == "-2.5 s"
    assert parse_duration_ns("1ms") == 1_000_000 and parse_duration_ns("250 us") == 250_000
    assert parse_duration_ns("2.5s") == 2_500_000_000 and parse_duration_ns(0.001) == 1_000_000


def test_a_value_outside_int64_costs_only_its_row(tmp_path):
    """A stamp in year 1, 2569 or 9999 is a malformed row with its raw text; the device's other
    reads are kept and fitted."""
    from bench.model.summary import summarize_device

    store = RunStore(tmp_path, "r4")
    w = store.samples("dev")
    base = 1_700_000_000_000_000_000
    for i in range(20):
        t = base + i * 10**9
        w.write("read", "datetime", t, t + 1_000_000, t + 3_000_000, 1_000_000, "user", "ok", "")
    for year_ns in (-62_135_596_800 * 10**9, 18_851_088_000 * 10**18 // 10**9,
                    253_402_300_799 * 10**9):
        w.write("read", "datetime", base, base + 1, year_ns, 1_000_000, "user", "ok", "RTC")
    w.write("event", "datetime", base, base + 1, 253_402_300_799 * 10**9, 10**9, "user", "ok",
            "7 log entry")
    w.close()
    smp = load_samples(tmp_path / "r4" / "samples" / "dev.csv")
    assert len(smp) == 24
    assert smp.status.count("malformed") == 4
    assert "value out of range: 253402300799000000000 ns" in smp.raw[-1]
    out = summarize_device("dev", smp, {"clocks": [{"name": "datetime",
                                                    "resolution_ns": 1_000_000}]})
    assert out["clocks"]["datetime"]["reads"] == 20
    assert out["errors"] == {"malformed": 4}
