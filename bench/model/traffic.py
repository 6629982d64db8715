"""Requests per minute per device, by kind, from the runner's counts in the manifest.

The Redfish drivers count each request by what it was for (drivers/redfish_session.py:
`requests_clock`, `requests_log`, `requests_events`, `requests_stimulus`,
`requests_discovery`); the runner keeps the totals in the manifest (`devices.<d>.traffic`).
The summary gives their rate over the probing window, so a device's cost to the service it
reads is a figure, not a guess.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NS = 1_000_000_000
PREFIX = "requests_"


def _window(start_ns: int | None, end_ns: int | None) -> bool:
    return start_ns is not None and end_ns is not None and end_ns > start_ns


def request_rates(traffic: Mapping[str, Any] | None, start_ns: int | None,
                  end_ns: int | None) -> dict[str, Any] | None:
    """{"minutes", "total", "by_kind": {kind: requests per minute}, "reconnects"} over
    [start_ns, end_ns]; None when nothing was counted by kind or the window is unknown."""
    if not traffic or not traffic.get("requests") or not _window(start_ns, end_ns):
        return None
    assert start_ns is not None and end_ns is not None
    minutes = (end_ns - start_ns) / (60 * NS)
    by_kind = {k[len(PREFIX):]: round(float(v) / minutes, 1) for k, v in sorted(traffic.items())
               if k.startswith(PREFIX) and isinstance(v, int)}
    if not by_kind:              # a folder from before requests were counted by kind
        return None
    return {"minutes": round(minutes, 3),
            "total": round(float(traffic["requests"]) / minutes, 1), "by_kind": by_kind,
            "reconnects": int(traffic.get("reconnects", 0) or 0)}
