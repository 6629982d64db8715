"""Kubernetes scheduler plane: the API server's clock (`Date` header), Events and node conditions
as the log, and a pod whose scheduling the scheduler stamps, through the official `kubernetes`
Python client.

Client: `kubernetes` (37.x), configured from a kubeconfig file (`kubeconfig` key: its server, CA
and credentials; `context` selects one, else the file's current context). The client is
synchronous (urllib3): every call runs in `asyncio.to_thread`, and the bracket is stamped in that
thread around urllib3's `PoolManager.request` (wrapped below): `s` just before the request is
handed to urllib3, `e` when it returns, i.e. when the answer's headers are parsed (the client
asks urllib3 not to preload bodies). JSON (de)serialisation lies outside the bracket. urllib3's
own retries are switched off (`retries = False`), so nothing is re-sent silently.

Clocks: `apiserver`, the `Date` header of `GET /version` (RFC 1123, whole seconds: read with
tick-edge probing like Redfish `DateTime`). Log: core/v1 Events of `namespace` (all namespaces if
"*") stamped by `metadata.creationTimestamp` (set by the API server on its clock, whole seconds,
so the `apiserver` fit maps them); the reporting component's own `eventTime` (µs, e.g. the
scheduler's clock) is kept in the message, not mapped. Node `Ready` conditions'
`lastTransitionTime` are entries of clock `nodes`: stamped by a kubelet or the node controller,
on a clock this driver cannot read, so only the fetch that saw them bounds them; a condition is
state, so a flip there and back between two polls shows only in its Events.
Stimulus `schedule_pod`: create a pod (`probe_image`, never runs anything: `nodeName` unset,
`activeDeadlineSeconds` 60, deleted on the next stimulus and at close) in `namespace`; the
scheduler's `Scheduled` Event follows.

Pointing it at a real cluster: a rack entry with `driver = "k8s_scheduler"`, `address` = the API
server URL (informational), `kubeconfig = "/path/to/kubeconfig"` (a service account token with
`get` on `/version`, `list` on nodes and events, and `create`/`delete` on pods in `namespace`
if the stimulus is allowed), `stimuli = ["schedule_pod"]` and `--arm` to create pods.
Inventory keys: `kubeconfig`, `context`, `namespace`, `timeout_s` (default 3), `probe_image`.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import threading
import uuid
from collections.abc import Callable
from email.utils import parsedate_to_datetime

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from bench.config.inventory import DeviceConfig, Key
from drivers.base import (
    TIMEOUT_KEY,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    Read,
    Stimulated,
    Stimulus,
)

NS = 1_000_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class _StampedPool:
    """A urllib3 PoolManager whose `request` appends ("s", t) / ("e", t) to the calling
    thread's `stamps` list (if it has one)."""

    def __init__(self, pool, now_ns: Callable[[], int], local: threading.local):
        self._pool, self._now_ns, self._local = pool, now_ns, local

    def request(self, *args, **kwargs):
        stamps = getattr(self._local, "stamps", None)
        t = self._now_ns()
        try:
            return self._pool.request(*args, **kwargs)
        finally:
            e = self._now_ns()
            if stamps is not None:
                stamps += [("s", t), ("e", e)]

    def __getattr__(self, name):
        return getattr(self._pool, name)


def to_ns(t: dt.datetime) -> int:
    if t.tzinfo is None:
        raise ValueError(f"time {t!r} has no zone")
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * NS + d.microseconds * 1000


def parse_http_date_ns(text: str) -> int:
    """RFC 1123 `Date` (`Mon, 30 Nov 2026 11:40:00 GMT`) -> Unix ns."""
    return to_ns(parsedate_to_datetime(text))


def kubeconfig_problem(path: str) -> str | None:
    """What loading this kubeconfig would fail on, checked when the rack file is read."""
    import yaml
    try:
        with open(path, "rb") as f:
            doc = yaml.safe_load(f.read(1 << 20))
        if not isinstance(doc, dict):
            return "not a kubeconfig (a YAML mapping of clusters, contexts and users)"
        names = [c.get("name") for c in doc.get("contexts") or [] if isinstance(c, dict)]
        k8s_config.kube_config.KubeConfigLoader(
            config_dict=doc, active_context=doc.get("current-context") or next(iter(names), None))
    except yaml.YAMLError as exc:       # its text quotes the file, a token perhaps: not shown
        mark = getattr(exc, "problem_mark", None)
        return "not a kubeconfig: not YAML" + (f" (line {mark.line + 1})" if mark else "")
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        return f"not a usable kubeconfig: {type(exc).__name__}: {exc}"[:300]
    return None


class K8sScheduler(Stimulated, Driver):
    CREDENTIALS = (("kubeconfig",),)                        # checked at load (bench.config.loader)
    OPTIONS = {"kubeconfig": Key("path", exists="file", content=kubeconfig_problem),
               "context": Key("str"), "namespace": Key("str"),
               "timeout_s": TIMEOUT_KEY, "probe_image": Key("str")}
    SCHEDULE_POD = "schedule_pod"

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.kubeconfig = o.get("kubeconfig")
        self.context = o.get("context")
        self.namespace = str(o.get("namespace", "default"))
        self.timeout_s = float(o.get("timeout_s", 3.0))
        self.image = str(o.get("probe_image", "registry.k8s.io/pause:3.10"))
        self._api: k8s.ApiClient | None = None
        self._local = threading.local()
        self._seen_nodes: set[tuple[str, str, str]] = set()
        self._probe: str | None = None
        self._n = itertools.count(1)
        self._server = ""

    # -- errors ----------------------------------------------------------------------------------
    def _map(self, exc: BaseException, what: str) -> DeviceError:
        if isinstance(exc, DeviceError):
            return exc
        if isinstance(exc, ApiException):
            return self._api_error(exc, what)
        if isinstance(exc, urllib3.exceptions.MaxRetryError):
            exc = exc.reason or exc
        # urllib3's NewConnectionError is (for history) a ConnectTimeoutError: test it first
        if isinstance(exc, (urllib3.exceptions.NewConnectionError, ConnectionError)):
            return self.error("unreachable", f"{what}: cannot connect to {self._server}: "
                                             f"{getattr(exc, 'reason', None) or exc}")
        if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError,
                            urllib3.exceptions.ConnectTimeoutError)):
            return self.error("timeout", f"{what}: no answer from {self._server} within "
                                         f"{self.timeout_s:g} s")
        return self._other_error(exc, what)

    def _other_error(self, exc: BaseException, what: str) -> DeviceError:
        """TLS, a dropped connection, an undecodable answer, or anything else."""
        if isinstance(exc, urllib3.exceptions.SSLError):
            return self.error("protocol", f"{what}: TLS failed: {exc}")
        if isinstance(exc, (urllib3.exceptions.ProtocolError, urllib3.exceptions.HTTPError)):
            return self.error("reset", f"{what}: {exc}")
        if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)):
            return self.error("malformed", f"{what}: answer cannot be decoded: {exc!r}"[:300])
        return self.error("error", f"{what}: {exc!r}")

    def _api_error(self, exc: ApiException, what: str) -> DeviceError:
        """An HTTP error of the API server: credentials refused (auth), else protocol."""
        if exc.status in (401, 403):
            return self.error("auth", f"{what}: HTTP {exc.status} {exc.reason}: the API "
                                      f"server refused the kubeconfig's credentials")
        if exc.status == 0:
            return self.error("protocol", f"{what}: {str(exc.reason).splitlines()[0]}")
        return self.error("protocol", f"{what}: HTTP {exc.status} {exc.reason}"
                                      f"{self._status_message(exc)}")

    @staticmethod
    def _status_message(exc: ApiException) -> str:
        import json
        try:
            return f" ({json.loads(exc.body or '').get('message', '')})"
        except Exception:
            return ""

    # -- one call in a thread --------------------------------------------------------------------
    async def _call(self, fn, what: str, span: bool = False):
        """(result, s_ns, e_ns): `fn(api_client)` in a thread; the bracket is urllib3's request of
        the last call (`span`: from the first request to the last answer)."""
        if self._api is None:
            raise self.error("error", "not open")
        api = self._api

        def work():
            stamps: list = []
            self._local.stamps = stamps
            try:
                return fn(api), stamps
            finally:
                self._local.stamps = None

        try:
            result, stamps = await asyncio.to_thread(work)
        except Exception as exc:
            raise self._map(exc, what) from None
        sends = [t for k, t in stamps if k == "s"] or [self.now_ns()]
        answers = [t for k, t in stamps if k == "e"] or [self.now_ns()]
        return result, (sends[0] if span else sends[-1]), answers[-1]

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        if not self.kubeconfig:
            raise self.error("auth", "no kubeconfig: set the key `kubeconfig` to its path")
        cfg = k8s.Configuration()
        try:
            await asyncio.to_thread(k8s_config.load_kube_config, config_file=str(self.kubeconfig),
                                    context=self.context, client_configuration=cfg,
                                    persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
            raise self.error("auth" if isinstance(exc, ConfigException) else "error",
                             f"kubeconfig {self.kubeconfig}: {exc}"[:300]) from None
        cfg.retries = False
        self._server = cfg.host
        api = k8s.ApiClient(cfg)
        api.rest_client.pool_manager = _StampedPool(  # type: ignore[assignment]  # duck-typed stand-in
            api.rest_client.pool_manager, self.now_ns, self._local)
        self._api = api
        try:
            await self._date()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        api, self._api = self._api, None
        if api is None:
            return
        if self._probe:
            try:
                await asyncio.to_thread(self._delete_probe, api, self._probe)
            except Exception:
                pass
            self._probe = None
        try:
            await asyncio.to_thread(api.close)
        except Exception:
            pass

    def _delete_probe(self, api, name: str) -> None:
        try:
            k8s.CoreV1Api(api).delete_namespaced_pod(name, self._ns_for_pods(),
                                                     _request_timeout=self.timeout_s)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def _ns_for_pods(self) -> str:
        return "default" if self.namespace == "*" else self.namespace

    # -- the contract ----------------------------------------------------------------------------
    async def _date(self):
        (info, status, headers), s, e = await self._call(
            lambda a: k8s.VersionApi(a).get_code_with_http_info(_request_timeout=self.timeout_s),
            "GET /version")
        date = (headers or {}).get("Date") or (headers or {}).get("date")
        if not date:
            raise self.error("malformed", "GET /version: answer has no Date header")
        try:
            return info, parse_http_date_ns(date), s, e, date
        except (ValueError, TypeError) as exc:
            raise self.error("malformed", f"GET /version: Date {date!r}: {exc}") from None

    async def identity(self) -> Identity:
        info, *_ = await self._date()
        return Identity(vendor="Kubernetes", model=f"API server {info.platform}",
                        serial=self._server, firmware=str(info.git_version),
                        extra={"server": self._server, "namespace": self.namespace,
                               "major": info.major, "minor": info.minor})

    def clocks(self) -> list[ClockSpec]:
        return [ClockSpec("apiserver", NS)]

    async def read_clock(self, clock: str) -> Read:
        if clock != "apiserver":
            raise self.error("error", f"no clock {clock!r} (this driver reads 'apiserver')")
        _, v, s, e, date = await self._date()
        return Read("apiserver", s, e, v, NS, stamp="user", raw=f"Date: {date}")

    def stimuli(self) -> list[str]:
        return [self.SCHEDULE_POD]

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name != self.SCHEDULE_POD:
            return await super()._stimulate(name, target)
        old, self._probe = self._probe, None
        if old:
            await self._call(lambda a: self._delete_probe(a, old), "DELETE probe pod")
        pod_name = f"rackclock-probe-{uuid.uuid4().hex[:8]}-{next(self._n)}"
        body = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=pod_name,
                                                  labels={"app.kubernetes.io/name": "rackclock"}),
                         spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="probe",
                                                                         image=self.image)],
                                            active_deadline_seconds=60,
                                            restart_policy="Never"))
        pod, s, e = await self._call(
            lambda a: k8s.CoreV1Api(a).create_namespaced_pod(self._ns_for_pods(), body,
                                                             _request_timeout=self.timeout_s),
            "POST pod")
        self._probe = pod_name
        return Stimulus(name, None, s, e, sent=True, stamp="user",
                        raw=f"pod {self._ns_for_pods()}/{pod_name} uid {pod.metadata.uid}")

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Events newer than `cursor` (the last Event resourceVersion seen) and node condition
        transitions not seen before."""
        def fetch(a):
            core = k8s.CoreV1Api(a)
            if self.namespace == "*":
                events = core.list_event_for_all_namespaces(_request_timeout=self.timeout_s)
            else:
                events = core.list_namespaced_event(self.namespace, _request_timeout=self.timeout_s)
            return events, core.list_node(_request_timeout=self.timeout_s)

        (events, nodes), s, e = await self._call(fetch, "list events and nodes", span=True)
        after = int(cursor) if cursor and cursor.isdigit() else -1
        out: list[LogEntry] = []
        last = after
        for ev in sorted(events.items or [], key=lambda x: _rv(x.metadata)):
            rv = _rv(ev.metadata)
            if rv > after:
                last = max(last, rv)
                out.append(_event_entry(ev, rv, s, e))
        out += self._node_entries(nodes, s, e)
        return out, (str(last) if last >= 0 else cursor)

    def _node_entries(self, nodes, s: int, e: int) -> list[LogEntry]:
        """Node condition transitions not seen before, one entry each."""
        out = []
        for n in nodes.items or []:
            for c in (n.status.conditions if n.status else None) or []:
                if c.last_transition_time is None:
                    continue
                key = (n.metadata.name, c.type, c.last_transition_time.isoformat())
                if key in self._seen_nodes:
                    continue
                self._seen_nodes.add(key)
                out.append(LogEntry(f"node/{n.metadata.name}/{c.type}", "nodes",
                                    to_ns(c.last_transition_time), NS, s, e,
                                    f"node {n.metadata.name} {c.type}={c.status} ({c.reason})",
                                    key[2]))
        return out


def _event_entry(ev, rv: int, s: int, e: int) -> LogEntry:
    """One Event as a log entry: stamped with its creationTimestamp (1 s resolution)."""
    created = ev.metadata.creation_timestamp
    ev_time = ev.event_time.isoformat() if ev.event_time else ""
    obj = ev.involved_object
    msg = (f"{ev.reason} {obj.kind}/{obj.name}: {ev.message or ''}"
           f" [{ev.reporting_component or (ev.source.component if ev.source else '')}"
           + (f" eventTime {ev_time}" if ev_time else "") + "]")
    return LogEntry(str(rv), "apiserver", to_ns(created) if created else None, NS, s, e, msg,
                    f"{ev.metadata.namespace}/{ev.metadata.name}")


def _rv(meta) -> int:
    try:
        return int(meta.resource_version)
    except (TypeError, ValueError, AttributeError):
        return -1


DRIVER = K8sScheduler
