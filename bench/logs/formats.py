"""Which parser reads which log format (the tables), and the format of a log detected from a
sample of its first lines, with the share that matched it; nothing is guessed from "any leading
number"."""
from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from typing import Any

from bench.logs import lognames
from bench.logs.csv_format import CSV_TIME, parse_csv
from bench.logs.device_formats import (
    SNMPTRAPD_CONT,
    parse_ipmi_sel,
    parse_snmptrapd,
)
from bench.logs.json_formats import (
    _one_json,
    parse_journald,
    parse_k8s_events,
    parse_redfish,
)
from bench.logs.logfile import (
    LogError,
)
from bench.logs.logstamps import (
    BAD_INPUT,
    Context,
    ParsedLog,
)
from bench.logs.syslog_formats import (
    parse_dmesg,
    parse_iso,
    parse_rfc2822,
    parse_rfc3164,
    parse_rfc5424,
    rfc5424_batch,
)

LINE_FORMATS = {"rfc5424": parse_rfc5424, "rfc3164": parse_rfc3164, "dmesg": parse_dmesg,
                "ipmi-sel": parse_ipmi_sel, "snmptrapd": parse_snmptrapd, "iso8601": parse_iso,
                "rfc2822": parse_rfc2822}


FILE_FORMATS = {"journald": parse_journald, "redfish": parse_redfish, "csv": parse_csv,
                "k8s-events": parse_k8s_events}
StreamParser = Callable[[Iterable[tuple[int, str]], Context, ParsedLog], None]
DOC_FORMATS: dict[str, Callable[[str, Context, ParsedLog], None]] = {
    "redfish": parse_redfish, "k8s-events": parse_k8s_events}
STREAM_FORMATS: dict[str, StreamParser] = {"journald": parse_journald, "csv": parse_csv}
BATCH_FORMATS = {"rfc5424": rfc5424_batch}        # a fast path for a batch of lines
FORMATS = tuple(FILE_FORMATS) + tuple(LINE_FORMATS)
assert FORMATS == lognames.FORMATS, "bench/logs/lognames.py names the formats the parsers read"
# detection tries the most specific first; iso8601 last (it matches inside other formats' lines)
DETECT_ORDER = ("rfc5424", "ipmi-sel", "snmptrapd", "dmesg", "rfc3164", "rfc2822", "iso8601")


def _is_redfish(doc: Any) -> bool:
    if isinstance(doc, list):
        doc = doc[0] if doc else {}
    if not isinstance(doc, dict):
        return False
    ev = doc.get("Events")
    return "Members" in doc or "Created" in doc or (
        isinstance(ev, list) and bool(ev) and isinstance(ev[0], dict) and "EventTimestamp" in ev[0])


def _is_k8s(doc: Any) -> bool:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        doc = doc["items"]
    if isinstance(doc, list):
        doc = doc[0] if doc else {}
    if isinstance(doc, dict) and isinstance(doc.get("object"), dict):
        doc = doc["object"]
    return isinstance(doc, dict) and (doc.get("kind") == "Event" or "involvedObject" in doc
                                      or "regarding" in doc)


def detect(head: list[str], document: Callable[[], str] | None = None) -> tuple[str, str]:
    """(format, how sure) from the file's first non-empty lines (and, for a JSON document that
    spans lines, `document()` giving it whole), or raise LogError naming what was tried."""
    if not head:
        raise LogError("empty log: nothing to read")
    if head[0].lstrip().startswith(("{", "[")):
        got = _detect_json(head, document)
        if got is not None:
            return got
    try:
        cells = [c.strip().lower() for c in next(csv.reader([head[0]]), [])]
    except csv.Error:
        cells = []
    if len(cells) > 1 and any(c in CSV_TIME for c in cells):
        return "csv", f"detected: CSV header with a timestamp column ({head[0][:60]!r})"
    return _detect_lines(head)


def _detect_json(head: list[str], document: Callable[[], str] | None) -> tuple[str, str] | None:
    """redfish or journald, from a log whose first line opens JSON; None if neither."""
    first = head[0].lstrip()
    doc = _first_document(head, document)
    if _is_redfish(doc):
        return "redfish", "detected: a JSON document with Redfish LogEntry members"
    if _is_k8s(doc if doc is not None else _one_json(first)):
        return "k8s-events", "detected: Kubernetes Event objects"
    ok = sum(isinstance(r, dict) and "__REALTIME_TIMESTAMP" in r for r in map(_one_json, head))
    if ok >= 0.5 * len(head):
        return "journald", f"detected: {ok} of {len(head)} sampled lines are journald JSON"
    return None


def _first_document(head: list[str], document: Callable[[], str] | None) -> Any:
    """The JSON of the first line, else (where the line opens a list or more lines follow) of
    the whole document; None where neither is JSON."""
    first = head[0].lstrip()
    doc = _one_json(first)
    if doc is None and document is not None and (first.startswith("[") or len(head) > 1):
        doc = _one_json(document())
    return doc


def _lines_matched(fmt: str, head: list[str], ctx: Context) -> int:
    """How many of the sampled lines line format `fmt` reads (a trap's varbind lines count with
    the header above them)."""
    fn = LINE_FORMATS[fmt]
    ok, prev = 0, False
    for ln in head:
        try:
            fn(ln, ctx)
            ok, prev = ok + 1, True
        except BAD_INPUT:      # a trap's varbind lines belong to the header above them
            cont = fmt == "snmptrapd" and prev and bool(SNMPTRAPD_CONT.match(ln))
            ok += cont
            prev = cont
    return ok


def _detect_lines(head: list[str]) -> tuple[str, str]:
    ctx = Context(year=2000, zone="UTC")      # the shape of a line, not its instant
    scores = [(_lines_matched(fmt, head, ctx), fmt) for fmt in DETECT_ORDER]
    best_ok = max(k for k, _ in scores)
    best = next(f for k, f in scores if k == best_ok)    # ties: the earlier (more specific) wins
    if best_ok < 0.5 * len(head):
        tried = ", ".join(f"{f} {k}/{len(head)}" for k, f in scores)
        raise LogError(f"log format not recognised (lines matched: {tried}); give it with "
                       f"format=NAME (one of {', '.join(FORMATS)})")
    return best, f"detected: {best_ok} of {len(head)} sampled lines match {best}"
