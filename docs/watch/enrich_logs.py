"""Example: enrich Python log records with the reference interval of a device's own stamp, asked
of a running `rackclock watch` (GET /v1/map). Tested by tests/test_watch_prometheus.py.

    import logging
    from enrich_logs import ReferenceTime

    log = logging.getLogger("bmc-ingest")
    log.addFilter(ReferenceTime("http://127.0.0.1:9473", device="bmc-1", clock="datetime"))
    log.warning("fan failure", extra={"device_stamp": "2026-12-01T13:00:00Z"})
    # the record now carries ref_lo_ns, ref_hi_ns, ref_status, ref_model:
    # "%(message)s stamped %(device_stamp)s = [%(ref_lo_ns)s, %(ref_hi_ns)s] (%(ref_status)s)"

A record without `device_stamp` passes untouched; when the service cannot answer, the record
still passes, with `ref_status` saying why (a log pipeline must never lose a line to its
enrichment). Stamps already asked are remembered (at most `cache` of them).
"""
from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict


class ReferenceTime(logging.Filter):
    def __init__(self, url: str, device: str, clock: str, timeout_s: float = 2.0,
                 cache: int = 4096):
        super().__init__()
        self.url, self.device, self.clock = url.rstrip("/"), device, clock
        self.timeout_s, self.cache_size = timeout_s, cache
        self._cache: OrderedDict = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        stamp = getattr(record, "device_stamp", None)
        if stamp is None:
            return True
        got = self._ask(str(stamp))
        record.ref_lo_ns = got.get("lo_ns")
        record.ref_hi_ns = got.get("hi_ns")
        record.ref_status = got.get("status") or f"error: {got.get('error', '?')}"
        record.ref_model = got.get("model", "")
        return True

    def _ask(self, stamp: str) -> dict:
        if stamp in self._cache:
            return self._cache[stamp]
        q = urllib.parse.urlencode({"device": self.device, "clock": self.clock, "stamp": stamp})
        try:
            with urllib.request.urlopen(f"{self.url}/v1/map?{q}", timeout=self.timeout_s) as r:
                got = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return {"error": json.loads(exc.read() or b"{}").get("error", str(exc))}
        except (OSError, ValueError) as exc:
            return {"error": str(exc)}
        self._cache[stamp] = got
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return got
