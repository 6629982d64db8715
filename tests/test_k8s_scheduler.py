"""The scheduler plane: the official `kubernetes` client (through the driver and directly) against
the control-plane emulator over real HTTPS sockets."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
import time
import tomllib

import pytest
from aiohttp import web
from racks import sim_rack_text

from bench.config.inventory import rack_from_dict
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.rack import read_samples, samples_in
from drivers.base import DeviceError
from drivers.k8s_scheduler import K8sScheduler, parse_http_date_ns

NS = 1_000_000_000
TOKEN_ENV = "RACKCLOCK_SIM_K8S_TOKEN"


@pytest.fixture
def k8s(sim_rack):
    def make(**sim):
        os.environ.setdefault(TOKEN_ENV, "test-token-" + os.urandom(6).hex())
        text = sim_rack_text(["k8s-1"], changes={"k8s-1": {"sim": sim}} if sim else None)
        s = sim_rack(text)
        assert not s.failed, s.failed
        return s, s.rack.devices[0]
    return make


def run(coro):
    return asyncio.run(coro)


async def with_driver(dev, fn, armed=True):
    d = K8sScheduler(dev, Reference.now_ns, armed=armed)
    await d.open()
    try:
        return await fn(d)
    finally:
        await d.close()


async def wait_for_entries(d, cursor, pred, deadline_s=10.0):
    got, t = [], time.monotonic()
    while time.monotonic() - t < deadline_s:
        new, cursor = await d.log_entries(cursor)
        got += new
        if any(pred(x) for x in got):
            return got, cursor
        await asyncio.sleep(0.05)
    raise AssertionError(f"no matching entry in {got}")


def test_the_kubernetes_client_reads_the_emulator_directly(k8s):
    from kubernetes import client, config
    sim, dev = k8s()
    cfg = client.Configuration()
    config.load_kube_config(config_file=dev.options["kubeconfig"], client_configuration=cfg,
                            persist_config=False)
    api = client.ApiClient(cfg)
    try:
        v = client.VersionApi(api).get_code()
        assert v.git_version == "v1.31.4" and v.major == "1"
        nodes = client.CoreV1Api(api).list_node().items
        assert [n.metadata.name for n in nodes] == ["gpu-node-1", "gpu-node-2"]
        assert nodes[0].status.conditions[0].type == "Ready"
        pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p1"),
                           spec=client.V1PodSpec(containers=[client.V1Container(name="c",
                                                                                image="x")]))
        created = client.CoreV1Api(api).create_namespaced_pod("default", pod)
        assert created.status.phase == "Pending" and created.metadata.uid
        with pytest.raises(client.ApiException) as e:
            client.CoreV1Api(api).create_namespaced_pod("default", pod)
        assert e.value.status == 409
        with pytest.raises(client.ApiException) as e:
            client.CoreV1Api(api).read_namespaced_pod("nope", "default")
        assert e.value.status == 404
        client.CoreV1Api(api).delete_namespaced_pod("p1", "default")
    finally:
        api.close()


def test_every_date_bracket_holds_the_sample_and_the_value(k8s):
    sim, dev = k8s()

    async def go(d):
        out = []
        for k in range(30):
            out.append(await d.read_clock("apiserver"))
            await asyncio.sleep(0.03 * (1 + k % 3))
        return out

    reads = run(with_driver(dev, go))
    taken = read_samples(sim.out_dir / "sim_samples.csv")[(dev.name, "apiserver")]
    model = sim.ctx.models(dev, ())["apiserver"]
    for r in reads:
        inside = samples_in(taken, r.s_ns, r.e_ns)
        assert len(inside) == 1, (r, inside)
        assert r.value_ns == inside[0][1] == model.read_ns(inside[0][0])
        assert r.resolution_ns == NS and r.raw.startswith("Date: ") and r.raw.endswith("GMT")
    assert abs((reads[0].value_ns - reads[0].s_ns) / NS + 0.41) < 1.01


def test_scheduled_event_of_the_probe_pod_maps_through_the_apiserver_clock(k8s):
    sim, dev = k8s(schedule_latency_s=[0.01, 0.02])

    async def go(d):
        _, cursor = await d.log_entries(None)
        st = await d.stimulate("schedule_pod")
        got, _ = await wait_for_entries(d, cursor, lambda x: "Scheduled" in x.message)
        st2 = await d.stimulate("schedule_pod")       # deletes the first probe pod
        return st, st2, got

    st, st2, got = run(with_driver(dev, go))
    (en,) = [x for x in got if "Scheduled" in x.message]
    assert st.sent and st.s_ns < st.e_ns and en.clock == "apiserver" and en.resolution_ns == NS
    ev = [e for e in sim.ctx.events[dev.name] if e["kind"] == "scheduled"][0]
    api = sim.ctx.models(dev, ())["apiserver"]
    sched = sim.ctx.models(dev, ())["scheduler"]
    assert en.value_ns == api.read_ns(ev["t_ns"])               # creationTimestamp
    assert st.s_ns <= ev["t_ns"] <= en.e_ns
    assert ev["pod"] in en.message and "eventTime" in en.message and "default-scheduler" in en.message
    us = ev["event_time_ns"] // 1000 % 1_000_000
    assert f".{us:06d}" in en.message and ev["event_time_ns"] == sched.read_ns(ev["t_ns"])
    names = [e["pod"] for e in sim.ctx.events[dev.name] if e["kind"] == "pod_created"]
    assert len(names) == 2
    deleted = [e["pod"] for e in sim.ctx.events[dev.name] if e["kind"] == "pod_deleted"]
    assert deleted == names                   # the first by the second stimulus, the second at close


def test_node_not_ready_is_a_condition_and_an_event(k8s):
    sim, dev = k8s(not_ready=[{"at_s": 0.5, "node": "gpu-node-2", "for_s": 60.0}])

    async def go(d):
        return await wait_for_entries(d, None, lambda x: "Ready=False" in x.message)

    got, _ = run(with_driver(dev, go))
    cond = [x for x in got if "gpu-node-2 Ready=False" in x.message]
    evs = [x for x in got if x.message.startswith("NodeNotReady")]
    assert len(cond) == 1 and cond[0].clock == "nodes"
    flip = [e for e in sim.ctx.events[dev.name] if e["kind"] == "node_not_ready"][0]
    api = sim.ctx.models(dev, ())["apiserver"]
    assert cond[0].value_ns == api.read_ns(flip["t_ns"]) // NS * NS
    if evs:
        assert evs[0].clock == "apiserver" and evs[0].value_ns == cond[0].value_ns


def test_stimulus_not_allowed_is_refused(k8s):
    sim, dev = k8s()
    with pytest.raises(DeviceError) as e:
        run(with_driver(dataclasses.replace(dev, stimuli=()), lambda d: d.stimulate("schedule_pod")))
    assert e.value.kind == "refused"
    assert not [e for e in sim.ctx.events[dev.name] if e["kind"] == "pod_created"]


# -- failures ------------------------------------------------------------------------------------
def _kubeconfig(tmp_path, server: str, token: str, ca: str | None = None) -> str:
    from bench.sim.k8s_scheduler_emu import write_kubeconfig
    path = tmp_path / f"kc-{abs(hash((server, token)))}"
    write_kubeconfig(path, server, ca, token, "t")
    return str(path)


def test_wrong_token_is_an_auth_error_without_the_token(k8s, tmp_path):
    sim, dev = k8s()
    with open(dev.options["kubeconfig"]) as f:
        ca = json.load(f)["clusters"][0]["cluster"]["certificate-authority"]
    wrong = "wrong-" + os.urandom(8).hex()
    bad = dataclasses.replace(dev, options={**dev.options,
                                            "kubeconfig": _kubeconfig(tmp_path, dev.address, wrong, ca)})
    with pytest.raises(DeviceError) as e:
        run(with_driver(bad, lambda d: d.identity()))
    assert e.value.kind == "auth" and "401" in e.value.message
    assert wrong not in str(e.value) and os.environ[TOKEN_ENV] not in str(e.value)
    missing = dataclasses.replace(dev, options={**dev.options, "kubeconfig": str(tmp_path / "no")})
    with pytest.raises(DeviceError) as e:
        run(with_driver(missing, lambda d: d.identity()))
    assert "kubeconfig" in e.value.message


def test_closed_port_is_unreachable_at_once(k8s, tmp_path):
    sim, dev = k8s()
    port = free_port()
    closed = dataclasses.replace(dev, options={
        **dev.options, "timeout_s": 600.0,
        "kubeconfig": _kubeconfig(tmp_path, f"http://127.0.0.1:{port}", "x")})
    with pytest.raises(DeviceError) as e:     # kind unreachable: not the timeout's
        run(with_driver(closed, lambda d: d.identity()))
    assert e.value.kind == "unreachable" and str(port) in e.value.message


@pytest.fixture
def bad_server():
    """An HTTP server answering /version with what the test sets: (status, body, Date)."""
    answer = {"v": (200, "{}", None)}

    async def version(request):
        status, body, date = answer["v"]
        headers = {"Date": date} if date else {}
        return web.Response(status=status, text=body, content_type="application/json",
                            headers=headers)

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/version/", version)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    yield answer, port
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    t.join(5)


GOOD_VERSION = json.dumps({"major": "1", "minor": "31", "gitVersion": "v1.31.4", "gitCommit": "0",
                           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                           "goVersion": "go1.22", "compiler": "gc", "platform": "linux/amd64"})


def test_malformed_answers_are_malformed_errors(k8s, bad_server, tmp_path):
    sim, dev = k8s()
    answer, port = bad_server
    dev = dataclasses.replace(dev, options={
        **dev.options, "kubeconfig": _kubeconfig(tmp_path, f"http://127.0.0.1:{port}", "t")})
    answer["v"] = (200, GOOD_VERSION, "Mon, 30 Nov 2026 11:40:00 GMT")
    r = run(with_driver(dev, lambda d: d.read_clock("apiserver")))
    assert r.value_ns == parse_http_date_ns("Mon, 30 Nov 2026 11:40:00 GMT")
    for body, date in ((GOOD_VERSION, "yesterday"), ('{"major": 1', "Mon, 30 Nov 2026 11:40:00 GMT"),
                       ('{"major": "1"}', "Mon, 30 Nov 2026 11:40:00 GMT")):
        answer["v"] = (200, body, date)
        with pytest.raises(DeviceError) as e:
            run(with_driver(dev, lambda d: d.read_clock("apiserver")))
        assert e.value.kind == "malformed", (body, date, e.value)
    answer["v"] = (500, '{"kind": "Status", "message": "etcd down"}', None)
    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, lambda d: d.identity()))
    assert e.value.kind == "protocol" and "500" in e.value.message and "etcd down" in e.value.message


def test_default_rack_entry_is_served_with_a_kubeconfig():
    from bench.sim.serve import DEFAULT_RACK
    rack = rack_from_dict(tomllib.loads(DEFAULT_RACK.read_text()))
    d = rack.device("k8s-1")
    assert d.driver == "k8s_scheduler" and d.stimuli == ("schedule_pod",)
