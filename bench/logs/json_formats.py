"""Whole-file JSON formats: journald (`journalctl -o json`, one record a line), a Redfish
LogEntryCollection or event document, and Kubernetes Event objects (a list, or `kubectl get
events --watch -o json`)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bench.logs.logstamps import (
    BAD_INPUT,
    ISO,
    TEXT_KEEP,
    US,
    Context,
    Notes,
    ParsedLog,
    Unparsed,
    _why,
    iso_stamp,
)

# -- whole-file formats ----------------------------------------------------------------------

def parse_journald(src: Iterable[tuple[int, str]], ctx: Context, out: ParsedLog) -> None:
    """`journalctl -o json`: __REALTIME_TIMESTAMP (µs, wall) or __MONOTONIC_TIMESTAMP (µs since
    that boot), __SEQNUM as the log's own order. The raw stamp is the integer as written."""
    use_mono = ctx.stamp == "monotonic"
    key = "__MONOTONIC_TIMESTAMP" if use_mono else "__REALTIME_TIMESTAMP"
    for n, line in src:
        if not line.strip():
            continue
        try:
            _journald_record(n, json.loads(line), key, use_mono, out)
        except BAD_INPUT as exc:
            out.reject(n, line, _why(exc))


def _one_json(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _journald_record(n: int, r: Any, key: str, use_mono: bool, out: ParsedLog) -> None:
    """Line n's record (decoded JSON) as a stamp: its `key` in µs, wall or monotonic."""
    if not isinstance(r, dict):
        raise Unparsed("not a JSON object")
    if key not in r:
        raise Unparsed(f"no {key}")
    raw = str(r[key])[:40]
    us = int(r[key])
    seq = r.get("__SEQNUM")
    msg = r.get("MESSAGE", "")
    if isinstance(msg, list):              # journald writes non-UTF-8 as a byte list
        msg = bytes(msg[:4 * TEXT_KEEP]).decode(errors="replace")
    out.stamps.add(n, us * US, US, "monotonic" if use_mono else "wall", raw, str(msg)[:TEXT_KEEP],
                   int(seq) if seq is not None else None,
                   (f"boot {str(r.get('_BOOT_ID', '?'))[:40]}",) if use_mono else ())


REDFISH_FIELDS = ("Created", "EventTimestamp")


def parse_redfish(text: str, ctx: Context, out: ParsedLog) -> None:
    """A Redfish LogEntryCollection (or a list of LogEntry), or an Event's `Events`: `Created`
    (when the service logged the entry) or `EventTimestamp` (when the event occurred), RFC 3339
    (without seconds or an offset read as such and said so); field "auto": Created where the
    record has one. Id as the log's order."""
    doc = _json_document(text, out)
    if doc is None:
        return
    members = (doc.get("Members", doc.get("Events", [])) if isinstance(doc, dict) else doc)
    if not isinstance(members, list):
        out.reject(1, text, "no Members list")
        return
    for n, m in enumerate(members, 1):
        try:
            _redfish_member(n, m, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, _member_text(m), _why(exc))


def _redfish_member(n: int, m: Any, ctx: Context, out: ParsedLog) -> None:
    """Member n (a LogEntry or an Event record) as a stamp."""
    if not isinstance(m, dict):
        raise Unparsed("member is not an object")
    key = _redfish_field(m, ctx)
    created, v, q, notes = _iso_field(key, m.get(key), ctx)
    rid = str(m.get("Id", m.get("EventId", "")))[:40]
    msg = " ".join(str(x) for x in (rid, m.get("MessageId"), m.get("Message"))
                   if x)[:TEXT_KEEP]
    out.stamps.add(n, v, q, "wall", created, msg.strip(),
                   int(rid) if rid.isdigit() else None, notes, f"origin|{key}")


def _iso_field(key: str, value: Any, ctx: Context) -> tuple[str, int, int, Notes]:
    """A record's ISO 8601 stamp field `key` (its `value`): (its text, ns, resolution, notes)."""
    if not isinstance(value, str):
        raise Unparsed(f"no {key}")
    im = ISO.fullmatch(value.strip())
    if not im:
        raise Unparsed(f"{key} {value[:60]!r} is not ISO 8601")
    return (value, *iso_stamp(im, ctx))


def _redfish_field(m: dict[str, Any], ctx: Context) -> str:
    """The member's stamp field: the one given, else the first of REDFISH_FIELDS it holds as
    text, else Created."""
    if ctx.field in REDFISH_FIELDS:
        return ctx.field
    return next((k for k in REDFISH_FIELDS if isinstance(m.get(k), str)), "Created")


def _json_document(text: str, out: ParsedLog) -> Any:
    """A whole-file JSON document, or None with the reason said as an unparsed line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        ln = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        out.reject(exc.lineno, ln, f"not JSON: {exc.msg}")
    except RecursionError:
        out.reject(1, text, "JSON nested too deeply to read")
    return None


K8S_FIELDS = ("creationTimestamp", "eventTime", "firstTimestamp", "lastTimestamp")


def k8s_component(ev: dict[str, Any]) -> str:
    """The clock name of the component that reported a Kubernetes event ("default-scheduler"
    -> "scheduler"), "" when the event names none."""
    src = ev.get("source") if isinstance(ev.get("source"), dict) else {}
    name = ev.get("reportingComponent") or ev.get("reportingController") or \
        (src or {}).get("component") or ""
    name = str(name).lower().rsplit("/", 1)[-1]
    for pre in ("default-", "kube-"):
        name = name.removeprefix(pre)
    return name[:40]


def k8s_field(ev: dict[str, Any], ctx: Context) -> tuple[str, str]:
    """(field, stamping source) of one event: the field given, else eventTime where the event has
    one and the device has the reporting component's clock, else creationTimestamp."""
    comp = k8s_component(ev)
    key = ctx.field
    if key not in K8S_FIELDS:
        has_own = bool(ev.get("eventTime")) and (not ctx.clocks or comp in ctx.clocks)
        key = "eventTime" if has_own else "creationTimestamp"
    role = "apiserver" if key == "creationTimestamp" else f"component:{comp or '?'}"
    return key, f"{role}|{key}"


def parse_k8s_events(text: str, ctx: Context, out: ParsedLog) -> None:
    """Kubernetes events: an EventList (`kubectl get events -o json`), a list, or JSON lines (one
    Event, or a watch's {"type", "object"}, per line). `metadata.creationTimestamp` is the API
    server's (whole seconds); `eventTime` (µs) and first/lastTimestamp the reporting
    component's own clock (a scheduler on another host). resourceVersion as the log's order."""
    doc = _one_json(text)
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        records: Iterable[tuple[int, Any]] = enumerate(doc["items"], 1)
    elif isinstance(doc, list):
        records = enumerate(doc, 1)
    else:
        records = ((n, _one_json(ln)) for n, ln in enumerate(text.splitlines(), 1) if ln.strip())
    for n, ev in records:
        try:
            _k8s_event(n, ev, ctx, out)
        except BAD_INPUT as exc:
            out.reject(n, _member_text(ev), _why(exc))


def _k8s_event(n: int, ev: Any, ctx: Context, out: ParsedLog) -> None:
    """Record n (an Event, or a watch's {"type", "object"}) as a stamp."""
    ev = _watched_object(ev)
    if not isinstance(ev, dict):
        raise Unparsed("not a Kubernetes Event object")
    meta: dict[str, Any] = ev["metadata"] if isinstance(ev.get("metadata"), dict) else {}
    key, src = k8s_field(ev, ctx)
    stamp, v, q, notes = _iso_field(
        key, meta.get(key) if key == "creationTimestamp" else ev.get(key), ctx)
    rv = str(meta.get("resourceVersion", ""))
    out.stamps.add(n, v, q, "wall", stamp, _k8s_text(ev),
                   int(rv) if rv.isdigit() else None, notes, src)


def _watched_object(ev: Any) -> Any:
    """A watch's {"type", "object"} as its object; anything else as it is."""
    if isinstance(ev, dict) and isinstance(ev.get("object"), dict):
        return ev["object"]
    return ev


def _k8s_text(ev: dict[str, Any]) -> str:
    """An event's text: its reason, the object it is about (kind/name) and its message."""
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    what = f"{obj.get('kind', '')}/{obj.get('name', '')}" if isinstance(obj, dict) else ""
    msg = f"{ev.get('reason', '')} {what}: {ev.get('message', ev.get('note', ''))}"
    return msg.strip()[:TEXT_KEEP]


def _member_text(m: Any) -> str:
    try:
        return json.dumps(m)[:TEXT_KEEP]
    except (ValueError, TypeError, RecursionError):
        return "(a member nested too deeply to show)"
