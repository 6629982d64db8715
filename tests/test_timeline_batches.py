"""The batched log reader and the RFC 5424 batch fast path give exactly what the line-at-a-time
reader and parser give (bench/logs/logfile.py, bench/logs/logparse.py)."""
from __future__ import annotations

import io

import numpy as np

from bench.logs.logfile import LineStats, line_batches, numbered
from bench.logs.logparse import parse_file
from bench.logs.logstamps import Context, Stamps
from bench.logs.syslog_formats import parse_rfc5424
from bench.output.timeline_columns import index_lists


def _by_readline(data: bytes, limit: int) -> tuple[list, int]:
    """The reference: readline per line, as the reader did before batches."""
    out, over, n = [], 0, 0
    for b in io.BytesIO(data):
        n += 1
        if len(b.rstrip(b"\n")) > limit:
            over += 1
            continue
        out.append((n, b.decode("utf-8", "replace").rstrip("\r\n")))
    return out, over


def test_batches_cut_anywhere_give_the_same_lines_numbers_and_skips():
    rng = np.random.default_rng(5)
    lines = [("x" * int(rng.integers(0, 300))) + ("\r" if k % 7 == 0 else "") + "é"
             for k in range(400)]
    data = "\n".join(lines).encode() + b"\xe2\x82\n\n" + b"y" * 1000
    for block in (1, 17, 97, 4096, 1 << 20):
        stats = LineStats(250)
        got = list(numbered(line_batches(io.BytesIO(data), stats, block)))
        want, over = _by_readline(data, 250)
        assert got == want and stats.over == over > 0


def test_rfc5424_batch_equals_the_line_parser_and_falls_back_on_odd_lines():
    good = [f"<134>1 2026-11-30T0{k % 10}:5{k % 10}:4{k % 10}.{k:03d}{z} h app 42 M msg {k}  "
            for k, z in zip(range(300), ["Z", "+05:30", "-08:00"] * 100)]
    odd = good[:100] + ["<134>1 2026-02-30T00:00:00Z h a - - bad day", "",
                        "<134>1 2026-11-30T00:00:60Z h a - - leap"] + good[100:]
    for lines in (good, odd):
        log = parse_file(io.BytesIO("\n".join(lines).encode()), "rfc5424", Context())
        want = Stamps()
        for n, ln in enumerate(lines, 1):
            try:
                want.add(n, *parse_rfc5424(ln, Context()))
            except ValueError:
                pass
        assert [tuple(s.__dict__.values()) for s in log.stamps] == \
            [tuple(s.__dict__.values()) for s in want]
    assert log.unparsed_count == 2


def test_a_dmesg_log_led_by_a_bracket_keeps_every_line_after_the_sample():
    """Detection read the whole file to try it as JSON and left the reader at its end: only
    the first 200 lines were parsed."""
    text = "\n".join(f"[{k}.000001] kernel line {k}" for k in range(3000)) + "\n"
    log = parse_file(io.BytesIO(text.encode()))
    assert log.format == "dmesg" and len(log.stamps) == 3000


def test_index_lists_as_text():
    near = np.array([[5, -1, 10, 0], [-1, -1, -1, -1], [1234567, 9, 99, 100]], np.int32)
    assert index_lists(near) == ["0 5 10", "", "9 99 100 1234567"]
