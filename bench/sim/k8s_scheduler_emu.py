"""A Kubernetes control plane for the simulated rack: the API paths the official `kubernetes` Python
client uses for the scheduler plane, served by aiohttp over HTTPS, with a bearer token.

No API server can be installed here, so this is an emulator; the tests drive it with the real
client. Two clock models: `apiserver` (the `Date` header of every answer, whole seconds, and every
object's `metadata.creationTimestamp`; the node lifecycle controller, which runs on the same
host, stamps node condition transitions with it) and `scheduler` (the `eventTime` of its
`Scheduled` events, microseconds).

Covered (what the driver uses, as a real API server answers it):
- `GET /version` (VersionInfo); every answer carries `Date` from the API server's clock.
- `GET /api/v1/nodes` (NodeList): nodes with a `Ready` condition (`lastHeartbeatTime`,
  `lastTransitionTime` in whole seconds); `not_ready` faults flip it to `False`
  (`KubeletNotReady`) and back, each flip with a `NodeNotReady`/`NodeReady` Event.
- `GET /api/v1/namespaces/{ns}/events` and `GET /api/v1/events` (EventList, increasing
  `resourceVersion`), core/v1 Events as the scheduler writes them through events.k8s.io:
  `eventTime` set, `firstTimestamp`/`lastTimestamp` null, `reportingComponent`.
- `POST /api/v1/namespaces/{ns}/pods` (201, Pod Pending); the scheduler binds it after
  `schedule_latency_s` to a Ready node and writes a `Scheduled` Event (`FailedScheduling` when
  no node is Ready). `GET`/`DELETE /api/v1/namespaces/{ns}/pods/{name}`.
- 401 `Status` without the right `Authorization: Bearer`; 404 `Status` for other paths.
Not covered: watches, field/label selectors, pagination (`continue`), patch, other kinds.

Sim keys: `nodes` (names), `not_ready = [{ at_s, node, for_s }]`, `schedule_latency_s`
(uniform [lo, hi]), `clocks.apiserver` / `clocks.scheduler` (clock models), `version`.
Overrides returned to the rack: `address` (the server URL) and `kubeconfig` (a file written here
with the server, its CA and the token; mode 0600).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import uuid
from email.utils import format_datetime

from aiohttp import web

from bench.config.inventory import DeviceConfig
from bench.config.schema import TEXT, list_of, num, span, table
from bench.sim.clock_model import AT_S, NS
from bench.sim.redfish_bmc_emu import _bind
from bench.sim.timing import hold, sample_clock
from bench.sim.tls import make_certificates, server_context

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
SIM_KEYS = {
    "version": TEXT, "schedule_latency_s": span(0.0, 60.0), "nodes": list_of(TEXT, 256),
    "not_ready": list_of(table({"at_s": AT_S, "node": TEXT, "for_s": num(0.0, 1e6, "s")},
                               required=("at_s", "node")))}

UTC = dt.UTC


def rfc3339(t_ns: int, micro: bool = False) -> str:
    d = dt.datetime.fromtimestamp(t_ns // NS, UTC)
    if micro:
        return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{(t_ns % NS) // 1000:06d}Z"
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Failure", "message": message, "reason": reason,
                              "code": code}, status=code)



def _is_namespaced(parts: list[str]) -> bool:
    """A path under /api/v1/namespaces/NS/KIND."""
    return parts[:2] == ["api", "v1"] and len(parts) >= 5 and parts[2] == "namespaces"

class ControlPlane:
    def __init__(self, device: DeviceConfig, ctx):
        self.name = device.name
        self.ctx = ctx
        sim = dict(device.sim or {})
        models = ctx.models(device, ("apiserver", "scheduler"))
        self.api, self.sched = models["apiserver"], models["scheduler"]
        self.token = device.secret() or ""
        self.version = str(sim.get("version", "v1.31.4"))
        lat = sim.get("schedule_latency_s", [0.005, 0.03])
        self.sched_latency = (float(lat[0]), float(lat[1])) if isinstance(lat, list) \
            else (float(lat), float(lat))
        self.rv = itertools.count(100)
        t0 = ctx.now_ns()
        boot = rfc3339(self.api.read_ns(t0) - 86400 * NS)
        self.nodes = {n: {"name": n, "uid": str(uuid.uuid4()), "created": boot, "ready": True,
                          "since": boot, "rv": next(self.rv)}
                      for n in sim.get("nodes", ["node-1"])}
        self.events: list[dict] = []
        self.pods: dict[tuple[str, str], dict] = {}
        self.pending = []
        loop = asyncio.get_running_loop()
        for f in sim.get("not_ready", []):
            at = ctx.t0_ns + int(float(f["at_s"]) * NS)
            node = str(f["node"])
            for when, ready in ((at, False), (at + int(float(f.get("for_s", 5)) * NS), True)):
                self.pending.append(loop.call_later(max(0.0, (when - ctx.now_ns()) / NS),
                                                    self.set_ready, node, ready))

    # -- clocks ----------------------------------------------------------------------------------
    def api_now(self, t_ns: int | None = None) -> int:
        return self.api.read_ns(self.ctx.now_ns() if t_ns is None else t_ns)

    def meta(self, name: str, namespace: str | None = None,
             created_ns: int | None = None) -> dict[str, str]:
        m = {"name": name, "uid": str(uuid.uuid4()), "resourceVersion": str(next(self.rv)),
             "creationTimestamp": rfc3339(self.api_now(created_ns))}
        if namespace:
            m["namespace"] = namespace
        return m

    def add_event(self, namespace: str, obj: dict, reason: str, message: str, component: str,
                  event_time_ns: int | None, t_ns: int, kind: str = "Normal") -> dict:
        meta = self.meta(f"{obj['name']}.{uuid.uuid4().hex[:16]}", namespace, t_ns)
        ev = {"apiVersion": "v1", "kind": "Event", "metadata": meta,
              "involvedObject": {"kind": obj["kind"], "name": obj["name"], "uid": obj["uid"],
                                 **({"namespace": namespace} if obj["kind"] == "Pod" else {})},
              "reason": reason, "message": message, "type": kind, "source": {},
              "firstTimestamp": None, "lastTimestamp": None,
              "eventTime": rfc3339(event_time_ns, micro=True) if event_time_ns is not None
              else None, "reportingComponent": component, "reportingInstance": f"{component}-0",
              "action": "Binding" if reason == "Scheduled" else reason}
        self.events.append(ev)
        self.ctx.record_event(self.name, "log", t_ns, reason=reason, object=obj["name"],
                              created=meta["creationTimestamp"],
                              event_time=ev["eventTime"])
        return ev

    # -- faults and the scheduler ----------------------------------------------------------------
    def set_ready(self, node: str, ready: bool) -> None:
        n = self.nodes.get(node)
        if n is None or n["ready"] == ready:
            return
        t = self.ctx.now_ns()
        n.update(ready=ready, since=rfc3339(self.api_now(t)), rv=next(self.rv))
        self.ctx.record_event(self.name, "node_ready" if ready else "node_not_ready", t, node=node,
                              since=n["since"])
        self.add_event("default", {"kind": "Node", "name": node, "uid": n["uid"]},
                       "NodeReady" if ready else "NodeNotReady",
                       f"Node {node} status is now: {'NodeReady' if ready else 'NodeNotReady'}",
                       "node-controller", None, t)

    def schedule(self, key: tuple[str, str]) -> None:
        pod = self.pods.get(key)
        if pod is None:
            return
        t = self.ctx.now_ns()
        v = self.sched.read_ns(t)
        self.ctx.record_sample(self.name, "scheduler", t, v)
        ready = sorted(n for n, x in self.nodes.items() if x["ready"])
        ns, name = key
        obj = {"kind": "Pod", "name": name, "uid": pod["metadata"]["uid"]}
        if not ready:
            self.add_event(ns, obj, "FailedScheduling", f"0/{len(self.nodes)} nodes are available: "
                           "node(s) were not ready.", "default-scheduler", v, t, "Warning")
            return
        node = ready[hash(name) % len(ready)]
        pod["spec"]["nodeName"] = node
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                        "lastTransitionTime": rfc3339(self.api_now(t))}]
        self.ctx.record_event(self.name, "scheduled", t, pod=name, node=node, event_time_ns=v)
        self.add_event(ns, obj, "Scheduled", f"Successfully assigned {ns}/{name} to {node}",
                       "default-scheduler", v, t)

    # -- HTTP ------------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.token}" or not self.token:
            resp = _status(401, "Unauthorized", "Unauthorized")
        else:
            try:
                resp = await self.route(request)
            except (ValueError, KeyError, TypeError) as exc:
                resp = _status(400, "BadRequest", f"bad request: {exc}")
        # the Date header is the API server's clock, sampled inside the request
        t, v = await sample_clock(self.ctx, self.name, "apiserver", self.api)
        resp.headers["Date"] = format_datetime(dt.datetime.fromtimestamp(v // NS, UTC),
                                               usegmt=True)
        await hold(self.api.p.reply_delay_s)
        return resp

    async def route(self, request: web.Request) -> web.Response:
        parts = [p for p in request.path.split("/") if p]
        found = self._cluster_read(parts) if request.method == "GET" else None
        if found is None and _is_namespaced(parts):
            found = await self.namespaced(request, parts[3], parts[4], parts[5:])
        if found is not None:
            return found
        return _status(404, "NotFound", "the server could not find the requested resource")

    def _cluster_read(self, parts: list[str]) -> web.Response | None:
        """GET of the version, the node list or every namespace's events; None for another
        path."""
        if parts == ["version"]:
            return self.version_obj()
        if parts == ["api", "v1", "nodes"]:
            return web.json_response({"apiVersion": "v1", "kind": "NodeList",
                                      "metadata": {"resourceVersion": str(next(self.rv))},
                                      "items": [self.node_obj(n) for n in self.nodes.values()]})
        if parts[:3] == ["api", "v1", "events"]:
            return self.event_list(None)
        return None

    def version_obj(self) -> web.Response:
        major, minor = self.version.lstrip("v").split(".")[:2]
        return web.json_response({
            "major": major, "minor": minor, "gitVersion": self.version,
            "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22.10", "compiler": "gc",
            "platform": "linux/amd64"})

    async def namespaced(self, request: web.Request, ns: str, kind: str, rest: list[str],
                         ) -> web.Response | None:
        """/api/v1/namespaces/NS/KIND[/NAME]: events, pods created, read and deleted; None when
        no resource answers (404)."""
        m = request.method
        if kind == "events" and not rest and m == "GET":
            return self.event_list(ns)
        if kind == "pods" and not rest and m == "POST":
            return self.create_pod(ns, await request.json())
        if kind != "pods" or len(rest) != 1:
            return None
        return self.pod(m, (ns, rest[0]))

    def pod(self, method: str, key: tuple[str, str]) -> web.Response | None:
        """GET or DELETE of one pod; None for another method (404)."""
        if key not in self.pods:
            return _status(404, "NotFound", f'pods "{key[1]}" not found')
        if method == "GET":
            return web.json_response(self.pods[key])
        if method == "DELETE":
            self.ctx.record_event(self.name, "pod_deleted", self.ctx.now_ns(), pod=key[1])
            return web.json_response(self.pods.pop(key))
        return None

    def node_obj(self, n: dict) -> dict:
        hb = rfc3339(self.api_now())
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n["name"], "uid": n["uid"], "resourceVersion": str(n["rv"]),
                             "creationTimestamp": n["created"]},
                "spec": {}, "status": {"conditions": [{
                    "type": "Ready", "status": "True" if n["ready"] else "False",
                    "reason": "KubeletReady" if n["ready"] else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if n["ready"]
                    else "container runtime network not ready",
                    "lastHeartbeatTime": hb, "lastTransitionTime": n["since"]}]}}

    def event_list(self, ns: str | None) -> web.Response:
        items = [e for e in self.events if ns is None or e["metadata"].get("namespace") == ns]
        return web.json_response({"apiVersion": "v1", "kind": "EventList",
                                  "metadata": {"resourceVersion": str(next(self.rv))},
                                  "items": items})

    def create_pod(self, ns: str, body: dict) -> web.Response:
        name = (body.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            return _status(422, "Invalid", "Pod is invalid: metadata.name: Required value")
        if (ns, name) in self.pods:
            return _status(409, "AlreadyExists", f'pods "{name}" already exists')
        t = self.ctx.now_ns()
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": self.meta(name, ns, t),
               "spec": body.get("spec") or {}, "status": {"phase": "Pending"}}
        self.pods[(ns, name)] = pod
        self.ctx.record_event(self.name, "pod_created", t, pod=name)
        lat = float(self.sched.rng.uniform(*self.sched_latency))
        loop = asyncio.get_running_loop()
        self.pending.append(loop.call_later(lat, self.schedule, (ns, name)))
        return web.json_response(pod, status=201)

    def cancel_pending(self) -> None:
        for h in self.pending:
            h.cancel()
        self.pending.clear()


def write_kubeconfig(path, server: str, ca_file: str | None, token: str, name: str) -> None:
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": name,
           "clusters": [{"name": name, "cluster": {"server": server,
                                                   **({"certificate-authority": ca_file}
                                                      if ca_file else {})}}],
           "users": [{"name": f"{name}-user", "user": {"token": token}}],
           "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-user"}}]}
    from bench import safeio  # JSON is YAML: the client's loader reads it
    safeio.write_text(path, json.dumps(cfg, indent=1), mode=0o600)


async def serve(devices: list[DeviceConfig], ctx) -> dict[str, dict]:
    certs = None
    out: dict[str, dict] = {}
    for device in devices:
        cp = ControlPlane(device, ctx)
        ctx.add_cleanup(cp.cancel_pending)
        sock, scheme, host = _bind(device.address)
        ssl_ctx = None
        if scheme == "https":
            certs = certs or make_certificates(ctx.workdir, "k8s")
            ssl_ctx = server_context(certs)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", cp.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5,
                               handler_cancellation=True)
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=ssl_ctx).start()
        ctx.add_cleanup(runner.cleanup)
        hostpart = f"[{host}]" if ":" in host else host
        server = f"{scheme}://{hostpart}:{sock.getsockname()[1]}"
        kubeconfig = ctx.workdir / f"kubeconfig-{device.name}"
        write_kubeconfig(kubeconfig, server, str(certs.ca) if certs and ssl_ctx else None, cp.token,
                         device.name)
        out[device.name] = {"address": server, "kubeconfig": str(kubeconfig)}
    return out
