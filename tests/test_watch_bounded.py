"""The watch's per-device state stays bounded however long it runs (issue 33: memory flat)."""
from __future__ import annotations

import threading

from bench.config.inventory import DeviceConfig
from bench.run.runner import DeviceWorker
from bench.watch.supervisor import TRAFFIC_MINUTES, Probed, Supervisor, watch_plan

NS_PER_MIN = 60 * 10**9


def test_trim_keeps_the_last_hour_of_the_runners_per_minute_traffic():
    """The runner adds a traffic row a minute for a run's manifest (a Redfish driver counts every
    request through `on_traffic`); a watch never ends, so its fitter's trim keeps the last
    TRAFFIC_MINUTES rows, the totals untouched. Before the trim existed the rows grew a minute at
    a time without end."""
    now = [0]
    cfg = DeviceConfig("bmc-1", "bmc", "redfish_bmc", "https://127.0.0.1:1")
    w = DeviceWorker(cfg, lambda: now[0], None, watch_plan(), False, threading.Event())
    sup = Supervisor(lambda: now[0], None, watch_plan())
    sup.probed[cfg.name] = Probed(cfg, w, threading.Thread(target=lambda: None), threading.Event())
    minutes = 3 * TRAFFIC_MINUTES + 7
    for m in range(minutes):          # what the driver's on_traffic calls, a minute apart
        now[0] = m * NS_PER_MIN
        w._count("requests")
        w._count("requests")
        if m % 10 == 0:
            sup.trim()                # the fitter trims every pass
    sup.trim()
    rows = w.status.traffic["per_minute"]
    assert len(rows) == TRAFFIC_MINUTES
    assert [r["minute"] for r in rows] == list(range(minutes - TRAFFIC_MINUTES, minutes))
    assert all(r["requests"] == 2 for r in rows)
    assert w.status.traffic["requests"] == 2 * minutes
