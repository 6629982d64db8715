"""A timeline chunk's text columns as Arrow large-string arrays, made in C (pyarrow.compute) and
not a Python string per row: integers as decimal text, log labels and raw stamps taken straight
from the logs' UTF-8 text stores, index lists digit by digit with numpy. JSON escaping and CSV
quoting are Python's own (json's encode_basestring, csv's minimal quoting), applied only to the
rows that need them (found by a byte scan of the chunk). Rows are then joined element-wise and
their bytes written as they are."""
from __future__ import annotations

import re
from collections.abc import Callable
from json.encoder import encode_basestring as js
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.logs.logfile import TextStore
from bench.model.timeline_table import LABEL_KEEP, UNIX_AFTER_NS, EntryTexts, LogTexts, device_times

LS = pa.large_string()
NO_INDEX = np.iinfo(np.int64).max
NEEDS_QUOTE = re.compile(r'[",\r\n]')
JSON_RE, CSV_RE = r'[\x00-\x1f"\\]', r'[",\r\n]'    # what json escapes, what makes csv quote


def csv_field(s: str) -> str:
    """A CSV field as csv.writer's default dialect writes it."""
    return f'"{s.replace(chr(34), chr(34) * 2)}"' if NEEDS_QUOTE.search(s) else s


def lit(s: str) -> pa.Scalar:
    return pa.scalar(s, LS)


def join(*parts: pa.Array | pa.Scalar | str, sep: str = "") -> pa.Array:
    """Row-wise concatenation of arrays and constant strings."""
    return pc.binary_join_element_wise(*(lit(p) if isinstance(p, str) else p for p in parts),
                                       lit(sep))


def decimal(a: np.ndarray) -> pa.Array:
    """Integers as decimal text (Python's str of each)."""
    return pc.cast(pa.array(np.asarray(a, np.int64)), LS)


def time_texts(stamp: np.ndarray, has: np.ndarray, res: np.ndarray) -> pa.Array:
    """bench.model.timeline_table.device_times of each row, made once per run of rows that
    show the same text (a wall stamp's text is that of its whole unit, s to ns by its
    resolution; the rows come in time order, so runs are long)."""
    wall = has & (stamp > UNIX_AFTER_NS)
    q = np.select([res >= 10**9, res >= 10**6, res >= 10**3], [10**9, 10**6, 10**3], 1)
    key = np.where(wall, stamp // q, np.where(has, stamp, 0))
    kind = np.where(wall, q, np.where(has, -1, 0))
    new = np.ones(len(key), bool)
    new[1:] = (key[1:] != key[:-1]) | (kind[1:] != kind[:-1])
    first = np.flatnonzero(new)
    texts = device_times(stamp[first], has[first], res[first])
    return pa.array(texts, LS).take(pa.array(np.cumsum(new) - 1))


def pick(words: list[str], ix: np.ndarray) -> pa.Array:
    """words[ix] for each row."""
    return pa.array(words, LS).take(pa.array(np.asarray(ix, np.int64)))


def data_of(arr: pa.Array) -> memoryview:
    """The UTF-8 bytes of all the rows of a large-string array, concatenated (not copied)."""
    bufs = arr.buffers()
    if len(arr) == 0 or bufs[2] is None:
        return memoryview(b"")
    off = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + len(arr) + 1]
    return memoryview(bufs[2])[int(off[0]):int(off[-1])]


def write_rows(f: IO[bytes], arr: pa.Array, skip: int = 0) -> None:
    """The rows' bytes into `f`, the first `skip` bytes left out."""
    f.write(data_of(arr)[skip:])


def _fixed(arr: pa.Array, pattern: str, fix: Callable[[str], str]) -> pa.Array:
    """`arr` with fix(x) in place of each row x that matches `pattern`."""
    mask = pc.match_substring_regex(arr, pattern)
    if not pc.any(mask).as_py():
        return arr
    fixed = [fix(x) for x in arr.filter(mask).to_pylist()]
    return pc.replace_with_mask(arr, mask, pa.array(fixed, LS))


def json_csv(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each row as the inside of its JSON string (json's escapes, no quotes) and as a CSV field
    (quoted where csv quotes it); rows are looked at one by one only in a chunk whose bytes hold
    a character either changes."""
    b = np.frombuffer(data_of(arr), np.uint8)
    if not ((b < 0x20) | (b == ord('"')) | (b == ord("\\")) | (b == ord(","))).any():
        return arr, arr
    return (_fixed(arr, JSON_RE, lambda x: js(x)[1:-1]), _fixed(arr, CSV_RE, csv_field))


def store_take(store: TextStore, ks: np.ndarray) -> pa.Array:
    """Strings `ks` of a text store (bench.logs.logfile.TextStore) as a large-string array."""
    off, data = store.take(ks)
    return pa.LargeStringArray.from_buffers(len(off) - 1, pa.py_buffer(off), pa.py_buffer(data))


def source_texts(source: LogTexts | EntryTexts, ks: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Labels and raw stamps of a source's entries `ks` (a log's from its text stores)."""
    if not isinstance(source, LogTexts):
        label, raw = source.labels_raws(ks.tolist())
        return pa.array(label, LS), pa.array(raw, LS)
    line = source.st.lines_at(ks)
    label = join(f"{source.log}:", decimal(line), " ", store_take(source.st.text, ks))
    if len(label) and pc.max(pc.utf8_length(label)).as_py() > LABEL_KEEP:
        label = pc.utf8_slice_codeunits(label, 0, LABEL_KEEP)
    return label, store_take(source.st.raw, ks)


def chunk_texts(sources: list[LogTexts | EntryTexts], src: np.ndarray,
                k: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Labels and raw stamps of a chunk of rows, fetched a source at a time."""
    if not len(src):
        return pa.array([], LS), pa.array([], LS)
    if (src == src[0]).all():
        return source_texts(sources[int(src[0])], k)
    groups = [np.flatnonzero(src == s) for s in np.unique(src).tolist()]
    parts = [source_texts(sources[int(src[g[0]])], k[g]) for g in groups]
    inv = np.empty(len(src), np.int64)
    inv[np.concatenate(groups)] = np.arange(len(src))
    back = pa.array(inv)
    return (pa.concat_arrays([p[0] for p in parts]).take(back),
            pa.concat_arrays([p[1] for p in parts]).take(back))


def index_arrays(near: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Each row's indices (-1: none), ascending, joined by ", " (JSON) and by " " (CSV): the
    values' text made once for the range they span (else one by one), taken into lists."""
    v = np.sort(np.where(near < 0, NO_INDEX, near.astype(np.int64)), axis=1)
    valid = v != NO_INDEX
    flat = v[valid]
    off = np.concatenate([[0], np.cumsum(valid.sum(axis=1))])
    if len(flat) and int(flat.max()) - int(flat.min()) < 4 * len(flat):
        lo = int(flat.min())
        vals = decimal(np.arange(lo, int(flat.max()) + 1)).take(pa.array(flat - lo))
    else:
        vals = decimal(flat)
    lists = pa.LargeListArray.from_arrays(pa.array(off), vals)
    return pc.binary_join(lists, lit(", ")), pc.binary_join(lists, lit(" "))


def index_lists(near: np.ndarray) -> list[str]:
    """Each row's indices as text joined by single spaces (index_arrays), a str per row."""
    return index_arrays(near)[1].to_pylist()
