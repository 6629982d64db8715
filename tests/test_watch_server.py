"""The watch's endpoint on bad input: each bad query is one JSON error (400), the server goes
on; a stamp the mapping cannot place says so. Against the real aiohttp server on loopback,
mapping from a real run folder."""
from __future__ import annotations

import json

import pytest
from racks import sim_rack_text
from watch_helpers import get_json

from bench.model.rundata import load_run
from bench.run.experiment import run_experiment
from bench.watch.mapping import Mapper
from bench.watch.metrics import registry
from bench.watch.server import MAX_BATCH, Server
from bench.watch.state import WatchState


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("day")
    rack = tmp / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-2"]))
    return run_experiment("clock_offset", rack, tmp / "runs",
                          {"duration_s": "8", "stimulus_every_s": "100"}, quiet=True)


def test_bad_queries_are_one_error_each_and_the_server_goes_on(day, caplog):
    import logging
    caplog.set_level(logging.INFO, logger="bench.watch.server")
    srv = Server(registry(WatchState(lambda: 0)), Mapper(None, lambda: [day])).start()
    url = f"http://127.0.0.1:{srv.port}/v1/map"
    try:
        for q, status, says in (
                ("", 400, "required"), ("?device=bmc-2", 400, "required"),
                ("?device=bmc-2&clock=datetime&stamp=yesterday", 400, "ISO 8601"),
                ("?device=bmc-2&clock=datetime&value_ns=12x", 400, "integer"),
                ("?device=bmc-2&clock=datetime&stamp=2026-13-45T99:00:00Z", 400, "no such"),
                ("?device=bmc-9&clock=datetime&value_ns=1", 404, "not watched"),
                ("?device=bmc-2&clock=rtc&value_ns=1", 404, "no clock 'rtc'"),
                ("?device=bmc-2&clock=datetime&stamp=2026-12-01T13:00:00", 400, "no zone"),
                ("?device=bmc-2&clock=datetime&value_ns=" + "9" * 30, 400, "out of range"),
                ("?device=bmc-2&clock=datetime&value_ns=1&resolution_ns=" + "9" * 30, 400,
                 "out of range"),
                ("?device=bmc-2&clock=datetime&stamp=9999-12-31T23:59:59Z", 400, "out of range")):
            got = get_json(url + q)
            assert got["status"] == status and says in got["error"], (q, got)
        got = get_json(url, b"not json")
        assert got["status"] == 400 and "JSON" in got["error"]
        got = get_json(url, b"[" * 100_000 + b"]" * 100_000)          # nested too deep
        assert got["status"] == 400 and "JSON" in got["error"]
        got = get_json(url, json.dumps([{}] * (MAX_BATCH + 1)).encode())
        assert got["status"] == 400
        got = get_json(url, json.dumps([1, {"device": "bmc-2"}]).encode())
        assert [("error" in x) for x in got] == [True, True]
        # a stamp of the day, and one the clock never showed (an hour before the run)
        run = load_run(day)
        s, e, v, q = run.clock_reads("bmc-2", "datetime")
        k = len(v) // 2                          # a read well inside the day's span
        ok = get_json(f"{url}?device=bmc-2&clock=datetime&value_ns={int(v[k])}")
        assert ok["source"] == str(day)          # the clock showed v[k] within [s_k, e_k]:
        assert ok["lo_ns"] <= int(e[k]) and ok["hi_ns"] >= int(s[k])
        far = get_json(f"{url}?device=bmc-2&clock=datetime&value_ns={int(v[0]) - 3600 * 10**9}")
        assert far["status"] == 400 and "no day folder places" in far["error"]
        assert get_json(f"http://127.0.0.1:{srv.port}/healthz")["ok"]
    finally:
        srv.stop()
    said = [r for r in caplog.records if r.name == "bench.watch.server"]
    assert len(said) == 1 and not said[0].exc_info, said      # one client: a line a minute


def test_leap_second_and_counter_stamps():
    import time

    from bench.watch.mapping import MapError, Query, parse_stamp
    v, q = parse_stamp("2016-12-31T23:59:60.5Z")          # RFC 3339 allows it
    assert v == parse_stamp("2017-01-01T00:00:00.5Z")[0] and q == 10**8
    assert parse_stamp("2016-12-31T23:59:60+00:00")[0] == parse_stamp("2017-01-01T00:00:00Z")[0]
    st = WatchState(lambda: 0)
    st.define("pdu-2", "pdu", [{"name": "sysuptime", "resolution_ns": 10**7, "counter": True,
                                "modulus_ns": 2**32 * 10**7}])
    c = st.devices["pdu-2"].clocks["sysuptime"]
    t = time.time_ns() // 10**9 * 10**9 - 100 * 10**9          # read before now
    for k in range(20):
        s = t + k * 10**9
        st.row("pdu-2", "read", "sysuptime", s, s + 10**6, 500 * 10**9 + k * 10**9, "ok")
    st.refit("pdu-2", "sysuptime", c)
    m = Mapper(st, lambda: [])
    got = m.map(Query("pdu-2", "sysuptime", 510 * 10**9, 10**7, "510000000000"))
    assert got["lo_ns"] <= t + 10 * 10**9 + 10**6 and got["hi_ns"] >= t + 10 * 10**9 - 10**7
    with pytest.raises(MapError, match="is a counter"):
        m.map(Query("pdu-2", "sysuptime", 510 * 10**9, 10**9, "2026-12-01T13:00:00Z", iso=True))


@pytest.mark.parametrize("args, says", [
    (["--listen", "nowhere"], "--listen 'nowhere': expected HOST:PORT"),
    (["--rate", "bmc-1=0"], "--rate 'bmc-1=0': expected"),
    (["--rate", "fast"], "--rate 'fast': expected"),
    (["--fit-every", "soon"], "rackclock watch:"),
])
def test_bad_command_line_is_one_line_and_exit_2(args, says, tmp_path):
    import subprocess
    import sys

    from watch_helpers import ROOT
    r = subprocess.run([sys.executable, "-m", "bench.cli", "watch", "--out", str(tmp_path),
                        *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, \
        r.stderr
    assert not list(tmp_path.iterdir())           # nothing started


def _closed(sock) -> bool:
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:           # aborted: reset
        return True


def test_idle_and_silent_clients_cannot_starve_a_scrape(caplog):
    """More idle connections than the limit of silent ones: the oldest make way and a scrape
    is answered; a silent one is reset after its time; a client that sends no complete headers
    is closed after the header timeout; each class of dropped client is one log line, never a
    traceback."""
    import logging
    import socket

    from watch_helpers import until
    srv = Server(registry(WatchState(lambda: 0)), Mapper(None, lambda: []), limit=20,
                 header_s=2.0, idle_s=30.0, silent=20, silent_s=3.0, defer_s=0).start()
    url = f"http://127.0.0.1:{srv.port}/healthz"
    socks = []
    caplog.set_level(logging.INFO)
    try:
        for _ in range(20):
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
        until(lambda: get_json(url), 10, "a scrape past 20 idle connections")
        for _ in range(40):              # each pushes out the oldest silent one (a flood)
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
        slow = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")        # never ends its headers
        got = until(lambda: get_json(url), 10, "a scrape past 60 idle connections")
        assert got["ok"]
        slow.settimeout(10)
        until(lambda: _closed(slow), 10, "the slow client closed")
        assert srv.acceptor.dropped and len(srv.acceptor.held) <= 20
        socks[-1].settimeout(10)
        until(lambda: _closed(socks[-1]), 15, "a silent connection reset after 3 s")
        assert srv.acceptor.accepted >= 60 and not srv.guard.silent
    finally:
        for s in socks:
            s.close()
        srv.stop()
    lines = [r for r in caplog.records if r.name in ("bench.watch.guard", "bench.watch.acceptor")]
    dropped = srv.guard.dropped + srv.acceptor.dropped
    assert len(lines) == len(dropped) and not any(r.exc_info for r in lines), lines
    assert dropped[next(k for k in dropped if k.startswith("over 20 connections that sent"))] >= 40
    assert any(k.startswith("no request headers") for k in dropped), dropped
    assert any(k.startswith("nothing sent within 3 s") for k in dropped), dropped


def test_the_endpoint_defers_silent_connections_to_the_kernel():
    """The listening socket has TCP_DEFER_ACCEPT: a silent connection is not queued for accept()
    before it sends (the kernel holds it); a scrape is answered."""
    import socket

    from bench.watch.acceptor import DEFER_S
    srv = Server(registry(WatchState(lambda: 0)), Mapper(None, lambda: [])).start()
    try:
        assert srv.acceptor is not None
        got = srv.acceptor.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT)
        assert got >= DEFER_S, got          # the kernel rounds it up to its retransmit steps
        assert get_json(f"http://127.0.0.1:{srv.port}/healthz")["ok"]
    finally:
        srv.stop()
