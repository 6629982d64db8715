"""A log read whole: its format given or detected (bench/logs/formats.py), every line parsed
into stamps, each line that does not parse kept with its number and why."""
from __future__ import annotations

import io
import itertools
from collections.abc import Iterable, Iterator
from os import PathLike
from typing import BinaryIO

from bench.logs.device_formats import (
    PENDING,
    SNMPTRAPD_CONT,
    UPTIME_NOTE,
    UPTIME_VB,
    trap_text,
)
from bench.logs.formats import (
    BATCH_FORMATS,
    DOC_FORMATS,
    FORMATS,
    LINE_FORMATS,
    STREAM_FORMATS,
    _is_redfish,
    detect,
)
from bench.logs.json_formats import _one_json
from bench.logs.logfile import (
    LineBatch,
    LineStats,
    LogError,
    line_batches,
    numbered,
    open_regular,
    read_document,
)
from bench.logs.logstamps import (
    BAD_INPUT,
    KINDS,
    NO_ZONE,
    Context,
    ParsedLog,
    Stamps,
    _why,
)


def _parse_lines(fmt: str, batches: Iterable[LineBatch], ctx: Context, out: ParsedLog) -> None:
    """A line format's batches (bench.logs.logfile.line_batches): a whole batch at once where
    the format has a fast path and every line of it takes it, else a line at a time."""
    fast = BATCH_FORMATS.get(fmt)
    trapd_mono = fmt == "snmptrapd" and ctx.stamp == "monotonic"
    for batch in batches:
        if fast is None or not fast(batch, out.stamps):
            _parse_each(fmt, numbered((batch,)), ctx, out)
    if trapd_mono:
        _drop_wall_trap(out)
    if fmt == "snmptrapd":
        _drop_pending(out)
        out.unparsed.sort()


def _parse_each(fmt: str, src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """Lines (number, text) one at a time: each a stamp, or an unparsed line with why (an
    snmptrapd varbind line joins the trap above it)."""
    fn = LINE_FORMATS[fmt]
    add = out.stamps.add
    trapd, mono = fmt == "snmptrapd", ctx.stamp == "monotonic"
    for n, line in src:
        if not line.strip():
            continue
        try:
            st = fn(line, ctx)
            if trapd and mono:      # a new trap: the one above is done
                _drop_wall_trap(out)
            elif trapd:
                _drop_pending(out)
            add(n, *st)
        except BAD_INPUT as exc:
            if trapd and len(out.stamps) and SNMPTRAPD_CONT.match(line):
                _with_varbind(out.stamps, line, ctx)      # a varbind line of the trap above
                continue
            out.reject(n, line, _why(exc))


def _drop_wall_trap(out: ParsedLog) -> None:
    """stamp=monotonic: the trap above, if no varbind gave it the agent's uptime, is unparsed."""
    st = out.stamps
    if len(st) and st.kind[-1] != KINDS.index("monotonic"):
        last = st.pop()
        out.reject(last.line, last.text, "trap without a sysUpTime varbind")


def _drop_pending(out: ParsedLog) -> None:
    """The trap above, if it is still a zone-less receive time (no varbind gave the agent's
    uptime), is unparsed: no zone to read it in."""
    st = out.stamps
    if len(st) and st.note_sets[st.note_id[-1]] == (PENDING,):
        last = st.pop()
        out.reject(last.line, last.text, NO_ZONE)


def _with_varbind(st: Stamps, line: str, ctx: Context) -> None:
    last = st.pop()
    more = trap_text(line)
    text = f"{last.text}: {more}" if last.text.count(" ") == 0 else \
        (f"{last.text}; {more}" if more else last.text)
    up = UPTIME_VB.search(line)
    if ctx.stamp in ("monotonic", "auto") and up and last.kind != "monotonic":
        st.add(last.line, int(up.group(1)) * 10_000_000, 10_000_000, "monotonic", up.group(0),
               text, None, UPTIME_NOTE)
    else:
        st.add(last.line, last.value_ns, last.resolution_ns, last.kind, last.raw, text,
               last.order, last.notes, last.src)


def _first_batches(batches: Iterator[LineBatch], sample: int) -> list[LineBatch]:
    """The batches holding the first `sample` non-empty lines (all of them in a shorter file)."""
    out, seen = [], 0
    for b in batches:
        out.append(b)
        seen += sum(1 for ln in b.lines if ln is not None and ln.strip())
        if seen >= sample:
            break
    return out


def parse_file(f: BinaryIO, fmt: str = "auto", ctx: Context = Context(), line_limit: int | None = None,
               sample: int = 200, spill: str | PathLike[str] | None = None) -> ParsedLog:
    """Every line of a log (a binary file object, read from its start, bounded as
    bench/logs/logfile.py says): its stamps, and each line that did not parse with its number.
    `spill`: a folder the texts of a big log move to as they are read (then the stamps'
    `spill` must end them; bench.logs.logfile.TextStore.stream)."""
    stats = LineStats(line_limit) if line_limit else LineStats()
    batches = line_batches(f, stats)
    first = _first_batches(batches, sample)
    head = list(itertools.islice(((n, ln) for n, ln in numbered(first) if ln.strip()), sample))
    fmt, how = _format_of(f, fmt, [ln for _, ln in head], stats)
    out = ParsedLog(fmt, how, over=stats)
    if spill is not None:
        out.stamps.stream(spill)
    whole = itertools.chain(first, batches)
    if fmt in DOC_FORMATS:
        DOC_FORMATS[fmt](read_document(f), ctx, out)
    elif fmt in STREAM_FORMATS:
        STREAM_FORMATS[fmt](numbered(whole), ctx, out)
    else:
        _parse_lines(fmt, whole, ctx, out)
    out.notes = _used_notes(out)
    return out


def _used_notes(out: ParsedLog) -> list[str]:
    """The notes the stamps use, each once, in order (a boot's name is not a note)."""
    used = [out.stamps.note_sets[k] for k in sorted(set(out.stamps.note_id))]
    return list(dict.fromkeys(nt for notes in used for nt in notes
                              if not nt.startswith("boot ")))


def _format_of(f: BinaryIO, fmt: str | None, head: list[str], stats: LineStats) -> tuple[str, str]:
    """The log's format and how it was known (given, or detected from `head`)."""
    if fmt not in ("auto", "", None):
        if fmt not in FORMATS:
            raise LogError(f"unknown log format {fmt!r} (one of {', '.join(FORMATS)})")
        if not head and stats.over and fmt != "redfish":
            raise LogError(f"no line to read: {stats.note()}")
        return fmt, "given"
    if not head and stats.over:
        if _is_redfish(_one_json(read_document(f))):
            return "redfish", "detected: a one-line JSON document with Redfish members"
        raise LogError(f"no line to read: {stats.note()}")
    return detect(head, lambda: read_document(f))


def parse_path(path: str | PathLike[str], fmt: str = "auto", ctx: Context = Context(),
               line_limit: int | None = None, spill: str | PathLike[str] | None = None
               ) -> ParsedLog:
    """A log file by path: a regular file only (bench.logs.logfile.open_regular)."""
    with open_regular(path) as f:
        return parse_file(f, fmt, ctx, line_limit, spill=spill)


def parse_log(text: str, fmt: str = "auto", ctx: Context = Context()) -> ParsedLog:
    """A log given as text (tests, notebooks): as parse_file reads a file."""
    return parse_file(io.BytesIO(text.encode("utf-8", "surrogatepass")), fmt, ctx)
