"""Every device of the rack file has its series from the first scrape, also one that never
connects; a watch measuring fewer devices than declared is not healthy (/healthz and
rackclock_watch_healthy). The real aiohttp endpoint on loopback."""
from __future__ import annotations

import re

from prometheus_client.exposition import generate_latest
from watch_helpers import get_json

from bench.watch.mapping import Mapper
from bench.watch.metrics import registry
from bench.watch.server import Server
from bench.watch.state import WatchState

NS = 1_000_000_000


def _series(text: str, name: str, device: str) -> list[str]:
    return [ln for ln in text.splitlines() if re.match(rf'{name}\{{.*device="{device}"', ln)]


def test_declared_devices_have_series_before_they_connect_and_health_says_so():
    now = [1_800_000_000 * NS]
    st = WatchState(lambda: now[0])
    st.declare([("bmc-1", "bmc"), ("pdu-9", "pdu")])
    st.states = lambda: {"bmc-1": "measuring", "pdu-9": "unreachable"}
    srv = Server(registry(st), Mapper(st, lambda: [])).start()
    try:
        health = get_json(f"http://127.0.0.1:{srv.port}/healthz")
        assert health["status"] == 503 and not health["ok"] and health["measured"] == 0
        text = generate_latest(registry(st)).decode()
        for name in ("rackclock_device_requests_total", "rackclock_device_errors_total",
                     "rackclock_device_reads_total", "rackclock_device_last_read_age_seconds",
                     "rackclock_device_up", "rackclock_device_state"):
            assert _series(text, name, "pdu-9"), name
        assert "rackclock_watch_healthy 0.0" in text
        # bmc-1 reads its clock; pdu-9's connection is refused (an error row, as the runner
        # writes an open that failed)
        st.define("bmc-1", "bmc", [{"name": "datetime", "resolution_ns": NS}])
        now[0] += 400 * NS
        st.row("bmc-1", "read", "datetime", now[0] - 10**6, now[0], now[0], "ok")
        st.row("pdu-9", "read", "", now[0], now[0], None, "unreachable")
        text = generate_latest(registry(st)).decode()
        assert 'rackclock_device_errors_total{device="pdu-9",kind="unreachable",plane="pdu"} 1.0' \
            in text
        assert 'rackclock_device_last_read_age_seconds{device="pdu-9",plane="pdu"} 400.0' in text
        assert 'rackclock_device_up{device="bmc-1",plane="bmc"} 1.0' in text
        assert 'rackclock_device_state{device="pdu-9",plane="pdu",state="unreachable"} 1.0' \
            in text
        assert "rackclock_watch_devices_measured 1.0" in text
        health = get_json(f"http://127.0.0.1:{srv.port}/healthz")
        assert health["status"] == 503 and health["not_measured"] == ["pdu-9"]
        st.row("pdu-9", "read", "", now[0], now[0] + 1, None, "ok")       # not a clock read
        st.define("pdu-9", "pdu", [{"name": "sysuptime", "resolution_ns": 10**7}])
        st.row("pdu-9", "read", "sysuptime", now[0], now[0] + 10**6, 5 * NS, "ok")
        health = get_json(f"http://127.0.0.1:{srv.port}/healthz")
        assert health["ok"] and health["measured"] == 2
    finally:
        srv.stop()


def test_an_empty_watch_is_not_healthy():
    st = WatchState(lambda: 0)
    assert "rackclock_watch_healthy 0.0" in generate_latest(registry(st)).decode()
