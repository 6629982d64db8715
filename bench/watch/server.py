"""The watch's HTTP endpoint (aiohttp, on its own thread and loop): `/metrics` (Prometheus text,
or OpenMetrics when the scraper asks for it), `GET /v1/map?device=&clock=&stamp=` (or
`value_ns=`), `POST /v1/map` with a JSON list of such queries (at most MAX_BATCH), `/healthz`.
Loopback by default: the mapping and the metrics say nothing secret, but a lab decides who may
ask."""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web
from prometheus_client.exposition import choose_encoder

from bench.watch.acceptor import DEFER_S, SILENT_S, Acceptor, listen_socket
from bench.watch.guard import KEEPALIVE_S, Guard, OncePer, quiet_loggers
from bench.watch.mapping import MapError, UnknownDevice, parse_many, parse_query

log = logging.getLogger(__name__)
MAX_BATCH = 10_000
MAX_BODY = 4 << 20
MAP_QUEUE = 4           # mapping requests at once (one maps, the others wait); more: 503


class MapBusy(MapError):
    """The mapping's queue is full: 503, ask again."""


class Server:
    """`Server(registry, mapper, host, port).start()` -> `.port`; `.stop()`."""

    def __init__(self, registry, mapper, host: str = "127.0.0.1", port: int = 0,
                 silent: int | None = None, silent_s: float = SILENT_S, defer_s: int = DEFER_S,
                 **guard_args):
        self.registry, self.mapper, self.host, self.port = registry, mapper, host, port
        self.guard_args = guard_args          # Guard's limit, header_s, idle_s
        self.silent, self.silent_s = silent, silent_s         # the Acceptor's
        self.defer_s = defer_s
        self.acceptor: Acceptor | None = None
        self._adopting: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._sweeper: asyncio.Task | None = None
        self.guard: Guard | None = None
        self._stopping = False
        # the scrapes' thread apart from the mapping's: a mapping never queues a scrape
        self._pools = (ThreadPoolExecutor(1, "watch-scrape"), ThreadPoolExecutor(1, "watch-map"))
        self._mapping = 0              # mapping requests in the pool or waiting for it
        self.once = OncePer()          # bad clients: a log line a minute each

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.add_routes([web.get("/metrics", self.metrics), web.get("/v1/map", self.map_one),
                        web.post("/v1/map", self.map_batch), web.get("/healthz", self.health),
                        web.get("/v1/now", self.offset_now)])
        return app

    async def metrics(self, request: web.Request) -> web.Response:
        encode, ctype = choose_encoder(request.headers.get("Accept", ""))
        body = await asyncio.get_running_loop().run_in_executor(self._pools[0], encode,
                                                                self.registry)
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def health(self, request: web.Request) -> web.Response:
        """200 when every declared device gave a good read lately, else 503 naming the others
        (a watch measuring nothing, or fewer devices than its rack file declares, is not ok)."""
        st = self.mapper.state
        if st is None:
            return web.json_response({"ok": True, "devices": {}})
        declared, measured = st.measured()
        ok = bool(declared) and len(measured) == len(declared)
        return web.json_response({"ok": ok, "declared": len(declared), "measured": len(measured),
                                  "not_measured": sorted(set(declared) - set(measured)),
                                  "devices": self.mapper.known()}, status=200 if ok else 503)

    async def offset_now(self, request: web.Request) -> web.Response:
        q = request.query
        try:
            return web.json_response(self.mapper.now(q.get("device", ""), q.get("clock", "")))
        except UnknownDevice as exc:
            return web.json_response({"error": str(exc)}, status=404)
        except MapError as exc:
            return web.json_response({"error": str(exc)}, status=400)

    async def _in_map_pool(self, fn, *args):
        """fn(*args) on the mapping's own thread; MapBusy when MAP_QUEUE requests wait."""
        if self._mapping >= MAP_QUEUE:
            raise MapBusy(f"{MAP_QUEUE} mapping requests are in progress: ask again shortly")
        self._mapping += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pools[1], fn, *args)
        finally:
            self._mapping -= 1

    def _bad(self, request: web.Request, status: int, message: str) -> web.Response:
        """A bad request's answer; its client logged at most once a minute."""
        peer = request.remote or "?"
        if self.once.ok(peer):
            log.info("watch endpoint: %s %s from %s: %d %s%s", request.method, request.path,
                     peer, status, message[:120], self.once.said(peer))
        return web.json_response({"error": message}, status=status)

    async def map_one(self, request: web.Request) -> web.Response:
        try:
            q = parse_query(dict(request.query))
            got = (await self._in_map_pool(self._map_many, [q]))[0]
        except MapBusy as exc:
            return web.json_response({"error": str(exc)}, status=503)
        except MapError as exc:
            got = exc
        if isinstance(got, MapError):
            return self._bad(request, 404 if isinstance(got, UnknownDevice) else 400, str(got))
        return web.json_response(got)

    async def map_batch(self, request: web.Request) -> web.Response:
        try:
            items = json.loads(await request.read())
        except (ValueError, RecursionError):
            return self._bad(request, 400, "the body is not JSON (or nested too deep)")
        except web.HTTPRequestEntityTooLarge:
            return self._bad(request, 413, f"the body is over {MAX_BODY} bytes")
        if not isinstance(items, list) or len(items) > MAX_BATCH:
            return self._bad(request, 400, f"expected a JSON list of at most {MAX_BATCH} "
                                           f"queries")
        try:
            return web.json_response(await self._in_map_pool(self._batch, items))
        except MapBusy as exc:
            return web.json_response({"error": str(exc)}, status=503)

    def _batch(self, items: list) -> list:
        qs: list = []
        out: list[dict | None] = []
        for it, q in zip(items, parse_many(items)):
            if isinstance(q, MapError):
                out.append({"error": str(q), "query": it if isinstance(it, dict) else None})
            else:
                qs.append(q)
                out.append(None)
        got = iter(self._map_many(qs))
        for k, o in enumerate(out):
            if o is None:
                g = next(got)
                out[k] = {"error": str(g), "status": 404 if isinstance(g, UnknownDevice)
                          else 400} if isinstance(g, MapError) else g
        return out

    def _map_many(self, qs: list) -> list:
        """The mapper's answers; anything else it raises is one error line a minute."""
        try:
            return self.mapper.map_many(qs)
        except Exception as exc:
            if self.once.ok(type(exc).__name__):
                log.warning("watch endpoint: mapping failed: %r%s", exc,
                            self.once.said(type(exc).__name__))
            return [MapError(f"cannot map: {type(exc).__name__}: {str(exc)[:120]}")] * len(qs)

    def start(self) -> Server:
        quiet_loggers()
        self._thread = threading.Thread(target=self._serve, name="watch-http", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self.error is not None:
            raise self.error
        return self

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._open())
        except BaseException as exc:
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._close())
        self._loop.close()
        self._pools[0].shutdown(wait=False, cancel_futures=True)
        self._pools[1].shutdown(wait=False, cancel_futures=True)

    async def _close(self) -> None:
        """Every client dropped and every task ended before the loop closes (no "Task was
        destroyed" per idle connection)."""
        if self.acceptor is not None:
            self.acceptor.stop()
        if self.guard is not None:
            for c in [*self.guard.silent, *self.guard.conns]:
                c.drop()
        await asyncio.sleep(0)
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._runner.cleanup(), 10)
        me = asyncio.current_task()
        rest = [t for t in asyncio.all_tasks() if t is not me]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    async def _open(self) -> None:
        runner = self._runner = web.AppRunner(self.app(), access_log=None,
                                              keepalive_timeout=KEEPALIVE_S,
                                              max_line_size=8190, max_field_size=8190)
        await runner.setup()
        assert runner.server is not None
        self.guard = Guard(runner.server, **self.guard_args)
        loop = asyncio.get_running_loop()
        sock = listen_socket(self.host, self.port, self.defer_s)
        self.port = sock.getsockname()[1]          # 0: the kernel's choice

        def hand(c) -> None:
            try:
                loop.call_soon_threadsafe(self._adopt, c)
            except RuntimeError:               # the loop closed: stopping
                c.close()
        self.acceptor = Acceptor(sock, hand, self.silent, self.silent_s)
        self.acceptor.start()
        self._sweeper = loop.create_task(self.guard.sweeping())

    def _adopt(self, sock) -> None:
        """A connection with its first byte, from the accepting thread: to the guard and aiohttp."""
        if self._stopping or self.guard is None:
            sock.close()
            return
        t = asyncio.get_running_loop().create_task(self._connect(sock))
        self._adopting.add(t)                  # held until done (the loop keeps weak refs)
        t.add_done_callback(self._adopting.discard)

    async def _connect(self, sock) -> None:
        assert self.guard is not None
        try:
            await asyncio.get_running_loop().connect_accepted_socket(self.guard, sock)
        except OSError:
            sock.close()

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running() and not self._stopping:
            self._stopping = True
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
