"""Hostile devices on loopback for the robustness tests and benchmarks: a Redfish BMC and a Modbus
TCP controller that answer like real ones but with the faults a test asks for. Each runs in its
own process (`python -m tests.hostile redfish|modbus --profile JSON`), prints `PORT <n>` when
up and its counters (`COUNTS {...}`) on SIGTERM, so the bench under test shares neither its CPU
nor its memory. The device clock is the host's CLOCK_REALTIME plus `offset_s`: the truth is known.

Redfish profile keys: offset_s, entries (log length), page_size, page_delay_s, top_skip
(advertise TopSkipQuery), big_every (every n-th Manager GET answers `big_bytes` of body with its
Content-Length), endless_every (every n-th: a chunked body without end), bad_year_every (every
n-th DateTime is `bad_year`-12-31T23:59:59), bad_created (Created of log entry 3),
unauthorized_every (every n-th authenticated GET answers 401 although the session is alive).
Modbus profile keys: offset_s, wrong_function_every, extra_registers_every, wrong_unit_every,
garbage_stream (answer every request with an endless byte stream).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import secrets
import signal
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import tomli_w

from bench.run.simproc import die_with_parent

ROOT = Path(__file__).resolve().parent.parent

NS = 1_000_000_000


def iso(t_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(int(t_s)))


# -- Redfish ------------------------------------------------------------------------------------
async def serve_redfish(profile: dict, certdir: Path) -> None:
    from aiohttp import web

    from bench.sim.tls import make_certificates

    certs = make_certificates(certdir, prefix="hostile")
    counts = {"logins": 0, "logouts": 0, "gets": 0, "manager_gets": 0, "log_gets": 0,
              "log_pages": 0, "log_rereads": 0}
    pages: set[int] = set()
    sessions: dict[str, str] = {}
    offset = float(profile.get("offset_s", 0.0))
    n_entries = int(profile.get("entries", 0))
    per_page = int(profile.get("page_size", 50))
    entries = [{"Id": str(i + 1), "Created": iso(time.time() + offset - 3600 + i),
                "MessageId": "Base.1.0.Success", "Message": f"old entry {i + 1}"}
               for i in range(n_entries)]
    if profile.get("bad_created") and len(entries) >= 3:
        entries[2]["Created"] = profile["bad_created"]
    entries_uri = "/redfish/v1/Systems/1/LogServices/EventLog/Entries"

    def every(key: str, n: int) -> bool:
        k = int(profile.get(key, 0))
        return k > 0 and n % k == 0

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/")
        if path == "/redfish/v1" or path == "":
            return web.json_response({
                "@odata.id": "/redfish/v1/", "Links": {"Sessions": {
                    "@odata.id": "/redfish/v1/SessionService/Sessions"}},
                "Managers": {"@odata.id": "/redfish/v1/Managers"},
                "Systems": {"@odata.id": "/redfish/v1/Systems"},
                "ProtocolFeaturesSupported": {"TopSkipQuery": bool(profile.get("top_skip"))}})
        if path == "/redfish/v1/SessionService/Sessions" and request.method == "POST":
            counts["logins"] += 1
            sid, token = secrets.token_hex(4), secrets.token_urlsafe(16)
            sessions[token] = sid
            return web.json_response({"@odata.id": f"{path}/{sid}", "Id": sid}, status=201,
                                     headers={"X-Auth-Token": token,
                                              "Location": f"{path}/{sid}"})
        token = request.headers.get("X-Auth-Token")
        if token not in sessions:
            return web.json_response({"error": {"message": "unauthorized"}}, status=401)
        if request.method == "DELETE" and path.startswith("/redfish/v1/SessionService/Sessions/"):
            sid = path.rsplit("/", 1)[1]
            for tok, s in list(sessions.items()):
                if s == sid:
                    del sessions[tok]
                    counts["logouts"] += 1
            return web.Response(status=204)
        counts["gets"] += 1
        if every("unauthorized_every", counts["gets"]):
            return web.json_response({"error": {"message": "unauthorized"}}, status=401)
        if path == "/redfish/v1/Managers":
            return web.json_response({"Members": [{"@odata.id": "/redfish/v1/Managers/bmc"}]})
        if path == "/redfish/v1/Managers/bmc":
            counts["manager_gets"] += 1
            n = counts["manager_gets"]
            if every("big_every", n) or every("endless_every", n):
                endless = every("endless_every", n)
                resp = web.StreamResponse()
                if not endless:
                    resp.content_length = int(profile.get("big_bytes", 100_000_000))
                resp.content_type = "application/json"
                await resp.prepare(request)
                chunk = b" " * 65536
                sent = 0
                try:
                    while endless or sent < resp.content_length:
                        tr = request.transport
                        if tr is None or tr.is_closing() or getattr(tr, "_conn_lost", 0) \
                                or sent > (1 << 33):
                            break                       # the client stopped reading
                        await resp.write(chunk)
                        await asyncio.sleep(0)          # a dead client cancels this handler
                        sent += len(chunk)
                except (ConnectionError, asyncio.CancelledError):
                    pass
                counts["big_bytes_sent"] = counts.get("big_bytes_sent", 0) + sent
                return resp
            dt = iso(time.time() + offset)
            if every("bad_year_every", n):
                dt = f"{int(profile.get('bad_year', 9999)):04d}-12-31T23:59:59+00:00"
            return web.json_response({"Id": "bmc", "Manufacturer": "Hostile", "Model": "H1",
                                      "SerialNumber": "H0001", "FirmwareVersion": "0.1",
                                      "DateTime": dt, "DateTimeLocalOffset": "+00:00"})
        if path == entries_uri:
            counts["log_gets"] += 1
            await asyncio.sleep(float(profile.get("page_delay_s", 0.0)))
            skip = int(request.query.get("$skip", 0))
            if skip + per_page < len(entries):      # a page before the end: read once, in order
                counts["log_rereads"] += skip in pages
                pages.add(skip)
                counts["log_pages"] = len(pages)
            page = entries[skip:skip + per_page]
            body = {"Members": page, "Members@odata.count": len(entries)}
            if skip + per_page < len(entries):
                body["Members@odata.nextLink"] = f"{entries_uri}?$skip={skip + per_page}"
            return web.json_response(body)
        if path == "/redfish/v1/EventService":
            return web.json_response({"Actions": {"#EventService.SubmitTestEvent": {
                "target": "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent"}}})
        if path.endswith("EventService.SubmitTestEvent") and request.method == "POST":
            entries.append({"Id": str(len(entries) + 1), "Created": iso(time.time() + offset),
                            "MessageId": "Base.1.0.Success", "Message": "test event"})
            return web.Response(status=204)
        return web.json_response({"error": {"message": "not found"}}, status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certs.cert, certs.key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"PORT {port} CA {certs.ca}", flush=True)
    await _until_stopped()
    counts["sessions_open"] = len(sessions)
    print("COUNTS " + json.dumps(counts), flush=True)
    await asyncio.wait_for(runner.cleanup(), 5)


# -- Modbus TCP ---------------------------------------------------------------------------------
async def serve_modbus(profile: dict) -> None:
    """Family A's RTC (holding 100+6: year, month, day, hour, minute, second, UTC) and a device
    identification answer, served by hand so that the faults are exactly the test's."""
    offset = float(profile.get("offset_s", 0.0))
    counts = {"requests": 0}

    def every(key: str) -> bool:
        k = int(profile.get(key, 0))
        return k > 0 and counts["requests"] % k == 0

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            while True:
                head = await reader.readexactly(7)
                tid, pid, length, unit = struct.unpack(">HHHB", head)
                pdu = await reader.readexactly(length - 1)
                counts["requests"] += 1
                fc = pdu[0]
                if profile.get("garbage_stream"):
                    while True:
                        writer.write(b"\x00\x01" * 32768)
                        await writer.drain()
                if fc == 0x2B:        # read device identification: basic objects
                    objs = [(0, b"Hostile"), (1, b"HM-1"), (2, b"0.1")]
                    body = bytes([0x2B, 0x0E, pdu[2], 0x01, 0, 0, len(objs)])
                    for oid, val in objs:
                        body += bytes([oid, len(val)]) + val
                elif fc == 0x03:
                    addr, count = struct.unpack(">HH", pdu[1:5])
                    t = time.gmtime(int(time.time() + offset))
                    regs = [t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec] \
                        if addr == 100 else []           # the RTC; anything else reads 0
                    regs = (regs + [0] * count)[:count]
                    if every("extra_registers_every"):
                        regs = regs + [0] * min(20, 127 - len(regs))
                    code = 0x04 if every("wrong_function_every") else 0x03
                    body = bytes([code, 2 * len(regs)]) + b"".join(struct.pack(">H", r)
                                                                   for r in regs)
                else:
                    body = bytes([fc | 0x80, 0x01])
                if every("wrong_unit_every"):
                    unit = (unit + 1) % 256
                writer.write(struct.pack(">HHHB", tid, 0, len(body) + 1, unit) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(client, "127.0.0.1", 0)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    await _until_stopped()
    print("COUNTS " + json.dumps(counts), flush=True)
    server.close()


# -- SNMP v2c ----------------------------------------------------------------------------------
async def serve_snmp(profile: dict) -> None:
    """A view-restricted v2c agent: sysUpTime, the system group and the APC identity answer; any
    GETNEXT beyond them (the outlet-log walk) answers endOfMibView, as net-snmp does for a
    community whose view ends there; hrSystemDate is noSuchObject."""
    from pyasn1.codec.ber import decoder, encoder
    from pysnmp.proto import api, rfc1902, rfc1905

    p = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]
    t0 = time.monotonic() - float(profile.get("uptime_s", 1000.0))
    counts = {"requests": 0, "end_of_view": 0}
    text = {"1.3.6.1.2.1.1.1.0": "hostile PDU", "1.3.6.1.2.1.1.5.0": "hostile",
            "1.3.6.1.4.1.318.1.1.12.1.5.0": "AP0000", "1.3.6.1.4.1.318.1.1.12.1.6.0": "HS0001",
            "1.3.6.1.4.1.318.1.1.12.1.3.0": "v0"}

    def value(oid: str):
        if oid == "1.3.6.1.2.1.1.3.0":
            return rfc1902.TimeTicks(int((time.monotonic() - t0) * 100) % 2**32)
        if oid == "1.3.6.1.2.1.1.2.0":
            return rfc1902.ObjectName("1.3.6.1.4.1.318.1.3.4.5")
        if oid in text:
            return rfc1902.OctetString(text[oid])
        return rfc1905.noSuchObject

    class Agent(asyncio.DatagramProtocol):
        def connection_made(self, transport):
            self.transport = transport

        def datagram_received(self, data, addr):
            counts["requests"] += 1
            msg, _ = decoder.decode(data, asn1Spec=p.Message())
            if str(p.apiMessage.get_community(msg)) != profile.get("community", "public"):
                return
            req = p.apiMessage.get_pdu(msg)
            rsp = p.apiMessage.get_response(msg)
            pdu = p.apiMessage.get_pdu(rsp)
            nxt = req.isSameTypeWith(p.GetNextRequestPDU())
            vbs = []
            for oid, _ in p.apiPDU.get_varbinds(req):
                if nxt:
                    counts["end_of_view"] += 1
                    vbs.append((oid, rfc1905.endOfMibView))
                else:
                    vbs.append((oid, value(str(oid))))
            p.apiPDU.set_varbinds(pdu, vbs)
            self.transport.sendto(encoder.encode(rsp), addr)

    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(Agent, local_addr=("127.0.0.1", 0))
    print(f"PORT {transport.get_extra_info('sockname')[1]}", flush=True)
    await _until_stopped()
    print("COUNTS " + json.dumps(counts), flush=True)
    transport.close()


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


# -- for tests and benchmarks -------------------------------------------------------------------
class HostileDevice:
    """`with HostileDevice("redfish", {...}) as dev:` -> dev.port, dev.ca; dev.counts after."""

    def __init__(self, kind: str, profile: dict | None = None):
        self.kind, self.profile = kind, dict(profile or {})
        self.port: int | None = None
        self.ca: str | None = None
        self.counts: dict = {}
        self._dir = tempfile.TemporaryDirectory(prefix="rackclock-hostile-")

    def __enter__(self) -> HostileDevice:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.hostile", self.kind, "--profile",
             json.dumps(self.profile), "--dir", self._dir.name], cwd=ROOT,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
            stdout=subprocess.PIPE, stderr=open(Path(self._dir.name) / "stderr.txt", "w"),
            text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "PORT":
            self.proc.kill()
            raise RuntimeError(f"hostile {self.kind} did not start")
        self.port = int(line[1])
        if len(line) > 3:
            self.ca = line[3]
        return self

    def __exit__(self, *exc) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        for line in out.splitlines():
            if line.startswith("COUNTS "):
                self.counts = json.loads(line[7:])
        self._dir.cleanup()

    def device(self, name: str, password_env: str = "HOSTILE_BMC_PASSWORD", **extra) -> dict:
        """The device's table for a rack file."""
        if self.kind == "redfish":
            return {"plane": "bmc", "driver": "redfish_bmc", "username": "root",
                    "address": f"https://127.0.0.1:{self.port}", "password_env": password_env,
                    "ca_file": self.ca, "rate_hz": 2.0, "stimuli": [],
                    "log_entries": "/redfish/v1/Systems/1/LogServices/EventLog/Entries", **extra}
        if self.kind == "snmp":
            return {"plane": "pdu", "driver": "snmp_pdu", "version": "2c", "vendor": "rackclock",
                    "address": f"udp://127.0.0.1:{self.port}", "rate_hz": 2.0, "stimuli": [],
                    "community_env": "HOSTILE_PDU_COMMUNITY", **extra}
        return {"plane": "cooling", "driver": "modbus_cooling", "map": "family_a",
                "timezone": "UTC", "address": f"tcp://127.0.0.1:{self.port}", "rate_hz": 2.0,
                "stimuli": [], **extra}


# -- a run of the bench against them ----------------------------------------------------------
PROFILES = {
    "clean": ("redfish", {"offset_s": 2.5}),
    "slowlog": ("redfish", {"offset_s": -1.25, "entries": 2000, "page_delay_s": 0.15}),
    "bigbody": ("redfish", {"offset_s": 0.75, "big_every": 5, "big_bytes": 300_000_000}),
    "endless": ("redfish", {"offset_s": 0.4, "endless_every": 7}),
    "badyear": ("redfish", {"offset_s": -3.0, "bad_year_every": 4, "bad_year": 9999,
                            "entries": 5, "bad_created": "0001-01-01T00:00:00+00:00"}),
    "relogin": ("redfish", {"offset_s": 1.0, "unauthorized_every": 10}),
    "modbus-flood": ("modbus", {"offset_s": 1.0, "garbage_stream": True}),
    "snmp-view": ("snmp", {"uptime_s": 1000.0}),
    "dead": ("redfish", {"offset_s": 0.0, "unauthorized_every": 1}),
    "modbus-clean": ("modbus", {"offset_s": 5.0}),
    "modbus-bad": ("modbus", {"offset_s": -7.0, "wrong_function_every": 3,
                              "extra_registers_every": 5}),
}


class RssSampler:
    """The resident memory of process `pid` (MiB) every 0.25 s while it lives: (seconds, MiB)
    pairs, so a failed memory check shows when the peak came (start, run or summary)."""

    def __init__(self, pid: int):
        self.series: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pid,), daemon=True)
        self._thread.start()

    def _run(self, pid: int) -> None:
        t0 = time.monotonic()
        while not self._stop.wait(0.25):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    self.series.append((round(time.monotonic() - t0, 2), int(line.split()[1]) >> 10))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_bench(names: list[str], duration_s: float, workdir: Path,
              bench_root: Path = ROOT) -> dict:
    """One run of the bench (its own process, from `bench_root`: another checkout measures
    another version) against the named hostile devices."""
    env = {**os.environ, "HOSTILE_BMC_PASSWORD": "hostile-pw-31d4",
           "HOSTILE_PDU_COMMUNITY": "public", "PYTHONPATH": str(bench_root)}
    with ExitStack() as stack:
        devs = {n: stack.enter_context(HostileDevice(*PROFILES[n])) for n in names}
        rack = {"rack": {"name": "hostile"},
                "devices": {n: d.device(n) for n, d in devs.items()}}
        (workdir / "rack.toml").write_text(tomli_w.dumps(rack))
        with open(workdir / "out.txt", "w") as fo, open(workdir / "err.txt", "w") as fe:
            proc = subprocess.Popen([sys.executable, "-m", "bench.cli", "run", "--rack",
                                     str(workdir / "rack.toml"), "--reference-allowance", "1ms",
                                     "--duration", str(duration_s), "--out",
                                     str(workdir / "runs"), "--quiet"], env=env, cwd=bench_root,
                                    stdout=fo, stderr=fe)
            rss = RssSampler(proc.pid)
            _, status, rusage = os.wait4(proc.pid, 0)     # its own peak memory, not ours
            proc.returncode = os.waitstatus_to_exitcode(status)
            rss.stop()
    out, err = (workdir / "out.txt").read_text(), (workdir / "err.txt").read_text()
    folder = Path(out.strip().splitlines()[-1].removeprefix("run folder: "))
    summary = json.loads((folder / "summary.json").read_text())
    result = {"folder": str(folder), "exit": proc.returncode, "stderr": err[-2000:],
              "peak_rss_mb": rusage.ru_maxrss / 1024, "rss_mb": rss.series, "devices": {}}
    for n, d in devs.items():
        s = summary["devices"][n]
        clocks = list(s["clocks"].values())
        c = clocks[0] if clocks else {}
        segs = c.get("segments") or []
        off = segs[-1]["offset_ns"] if segs else None
        truth = PROFILES[n][1].get("offset_s")      # None: a counter, no known offset
        result["devices"][n] = {
            "reads": c.get("reads", 0), "errors": s.get("errors", {}),
            "first_errors": s.get("first_errors", {}),
            "width_ms": (off["hi"] - off["lo"]) / 1e6 if off else None,
            "truth_inside": all(x["offset_ns"]["lo"] <= truth * 1e9 <= x["offset_ns"]["hi"]
                                for x in segs) if segs and truth is not None else None,
            "server": d.counts}
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["redfish", "modbus", "snmp"])
    ap.add_argument("--profile", default="{}")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    profile = json.loads(a.profile)
    if a.kind == "redfish":
        asyncio.run(serve_redfish(profile, Path(a.dir or tempfile.mkdtemp())))
    elif a.kind == "snmp":
        asyncio.run(serve_snmp(profile))
    else:
        asyncio.run(serve_modbus(profile))


if __name__ == "__main__":
    main()
