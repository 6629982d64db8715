"""The timeline's files as their rows are made in C (bench/output/timeline_columns.py): every
JSON row is what json.dumps writes for it, every CSV row what csv.writer writes, escapes and
quotes applied only where a text needs them; the text store keeps UTF-8 and gives back what
it was given."""
from __future__ import annotations

import csv
import io
import json
import os
from datetime import UTC, datetime

import pytest
from test_timeline_formats import NS, _run_folder

from bench.commands.timeline import main
from bench.logs.logfile import TextStore

TRICKY = ['say "hi", then go', "back\\slash", "tab\there", "bell\x07 and \x1f unit sep",
          "non-ASCII é ü ✓", "x" * 300, "trailing space   ", "comma,only", "", "semi;colon"]


def _lines_log(tmp_path, bmc, t0):
    """An RFC 5424 log of the tricky messages (one batch) and a journald log beside it."""
    lines, recs = [], []
    for k, msg in enumerate(TRICKY):
        shown = bmc.read_ns(t0 + (20 + k) * NS)
        stamp = datetime.fromtimestamp(shown // NS, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        lines.append(f"<134>1 {stamp}.{k:03d}Z bmc-1 app{k} 42 ID - {msg}")
        recs.append(json.dumps({"__REALTIME_TIMESTAMP": str(shown // 1000 + 500_000),
                                "__SEQNUM": str(k + 1), "MESSAGE": msg}))
    (tmp_path / "bmc.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "journal.json").write_text("\n".join(recs) + "\n", encoding="utf-8")
    return tmp_path / "bmc.log", tmp_path / "journal.json"


def test_rows_are_what_json_and_csv_write_for_them(tmp_path, capsys):
    run, bmc, _, t0 = _run_folder(tmp_path)
    log, journal = _lines_log(tmp_path, bmc, t0)
    assert main([str(run), f"bmc-1={log}", f"bmc-1={journal}", "--formats",
                 "json,csv,otel"]) == 0
    text = (run / "timeline.json").read_text(encoding="utf-8")
    entries = json.loads(text)["entries"]
    assert len(entries) == 2 * len(TRICKY)
    rows = text[text.index('"entries": [\n') + 13:].removesuffix("]}\n").split(",\n")
    assert rows == [json.dumps(e, ensure_ascii=False) for e in entries]
    labels = {e["label"] for e in entries}
    for k, msg in enumerate(TRICKY):
        assert f"bmc.log:{k + 1} bmc-1 app{k}: - {msg}".rstrip()[:200] in labels
        assert f"journal.json:{k + 1} {msg}"[:200] in labels
    raw = (run / "timeline.csv").read_bytes()
    parsed = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    again = io.StringIO(newline="")
    csv.writer(again).writerows(parsed)
    assert again.getvalue().encode("utf-8") == raw
    assert [r[4] for r in parsed[1:]] == [e["label"] for e in entries]
    otel = (run / "timeline.otel.json").read_text(encoding="utf-8")
    doc = json.loads(otel)
    recs = [r for res in doc["resourceLogs"] for r in res["scopeLogs"][0]["logRecords"]]
    assert [json.dumps(r, ensure_ascii=False) for r in recs] == [
        ln.rstrip(",").removesuffix("]}]}]}").removesuffix("]}]}")
        for ln in otel.split("\n")[1:-1]]


def test_a_lone_surrogate_in_a_message_is_written_as_a_question_mark(tmp_path, capsys):
    run, bmc, _, t0 = _run_folder(tmp_path)
    shown = bmc.read_ns(t0 + 30 * NS)
    log = tmp_path / "journal.json"
    log.write_text(json.dumps({"__REALTIME_TIMESTAMP": str(shown // 1000),
                               "MESSAGE": "bad \ud800 half"}) + "\n")
    assert main([str(run), f"bmc-1={log}"]) == 0
    data = json.loads((run / "timeline.json").read_text(encoding="utf-8"))
    assert [e["label"] for e in data["entries"] if e["log"]] == ["journal.json:1 bad ? half"]
    assert "bad ? half" in (run / "timeline.csv").read_text(encoding="utf-8")


def test_text_store_gives_back_its_strings_in_memory_and_spilled(tmp_path, monkeypatch):
    from bench.logs import logfile
    st = TextStore()
    items = ["a", "", "é✓", "x" * 5000, "tail"]
    st.extend(items[:3])
    for s in items[3:]:
        st.append(s)
    assert len(st) == 5 and [st[i] for i in range(5)] == items and st[-1] == "tail"
    assert st.many([4, 0, 2, 2]) == ["tail", "a", "é✓", "é✓"]
    off, data = st.take(range(5))
    assert off.tolist()[-1] == len(data) == sum(len(s.encode()) for s in items)
    assert data[off[2]:off[3]].decode() == "é✓"
    assert st.pop() == "tail" and len(st) == 4 and st[3] == "x" * 5000
    st.append("after")
    assert st.many([3, 4]) == ["x" * 5000, "after"]
    st.spill()                                  # small: stays in memory
    assert st._file is None
    monkeypatch.setattr(logfile, "SPILL_BYTES", 0)
    monkeypatch.setattr(logfile, "READ_GAP", 0)   # every string apart its own span
    want = st.many(range(5))
    st.spill(tmp_path)                          # beside the files the timeline writes
    assert st._file is not None and not st._data and not list(tmp_path.iterdir())
    assert os.readlink(f"/proc/self/fd/{st._file.fileno()}").startswith(str(tmp_path))
    assert [st[i] for i in range(5)] == want and st[-1] == "after"
    ks = [4, 0, 2, 2, 3, 1, 0]
    assert st.many(ks) == [want[k] for k in ks] and st.many([1]) == [""]
    with pytest.raises(ValueError, match="read-only"):
        st.append("more")
    off, data = st.take(ks)
    assert data == "".join(want[k] for k in ks).encode()
    other = TextStore()
    other.extend(["z" * 10])
    other.spill("/proc")                        # a folder that cannot be written: /tmp's
    assert other._file is not None and other.many([0]) == ["z" * 10]

    class Full(io.BytesIO):                     # a disk with no room: kept in memory
        def write(self, b):
            raise OSError(28, "No space left on device")

    import tempfile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: Full())
    full = TextStore()
    full.extend(["y" * 3, "é"])
    full.spill(tmp_path)
    assert full._file is None and full.many([1, 0]) == ["é", "yyy"]
    full.append("still writable")


def test_text_store_streamed_while_filled_gives_back_the_same(tmp_path, monkeypatch):
    """A store told where (stream) moves its bytes to a file as it grows: every string reads
    back the same before and after spill, a pop takes back bytes already in the file, and the
    file is the one a spill makes (bytes, then offsets)."""
    from bench.logs import logfile
    monkeypatch.setattr(logfile, "SPILL_BYTES", 8)
    st = TextStore()
    st.stream(tmp_path)
    items = ["a", "", "é✓", "x" * 20, "tail"]
    st.extend(items[:3])
    for s in items[3:]:
        st.append(s)
    assert st._out is not None and st._flushed and not list(tmp_path.iterdir())
    assert [st[i] for i in range(5)] == items and st.many([4, 0, 3]) == ["tail", "a", "x" * 20]
    assert st.pop() == "tail" and st.pop() == "x" * 20     # the second one from the file
    st.extend(["y" * 9, "z"])
    want = items[:3] + ["y" * 9, "z"]
    assert [st[i] for i in range(5)] == want
    st.spill(tmp_path)
    assert st._file is not None and st._out is None and not st._data
    assert st.many(range(5)) == want and st[-1] == "z"
    small = TextStore()
    small.stream(tmp_path)
    small.extend(["ab"])
    small.spill(tmp_path)                       # never grew past SPILL_BYTES: in memory
    assert small._file is None and small._out is None and small[0] == "ab"
