"""Bracket width (e - s) of a Redfish `DateTime` read: sync `redfish` client vs `redfish.aio`.

Serves one emulated BMC (no modelled sample delay or jitter) from `python -m bench.commands.sim` in a
separate process, HTTPS on loopback, TLS verified against the emulator's CA, session login, and
reads the Manager with:

- sync:        `redfish.redfish_client` (requests; max_retry=0), stamps around `client.get`
- aio:         `redfish.aio.AsyncRedfishClient`, stamps around `await client.get`
- aio+trace:   the driver (`drivers/redfish_bmc.py`) on a reference that is not CLOCK_REALTIME:
               stamps where aiohttp's trace hooks would take them, on the loop
- kernel:      the driver on CLOCK_REALTIME: `e` is the kernel's arrival stamp

in alternating blocks, and checks that every bracket holds the emulator's recorded sample instant.

    .venv/bin/python benchmarks/redfish_bracket.py [--reads 300] [--warmup 30]

Latest figures (2026-11-29, 2 vCPU VM, Python 3.11, redfish 3.4.2, aiohttp 3.14.5), median / p99
bracket in µs, every bracket holding its sample:
    300 reads:  sync 927 / 1302   aio 425 / 714   aio+trace 360 / 575
    600 reads:  sync 989 / 1889   aio 450 / 639   aio+trace 395 / 609
2026-12-01 (median / p90, 300 reads): sync 1660 / 2019, aio 743 / 1158, aio+trace 587 / 854,
kernel 399 / 554.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from spread import temp_dir  # noqa: E402

from bench.config.inventory import load_rack  # noqa: E402
from bench.reference.clock import Reference  # noqa: E402
from bench.sim.rack import read_samples, samples_in  # noqa: E402

RACK = """
[rack]
name = "bench-redfish"
seed = 1
[devices.bmc]
plane = "bmc"
driver = "redfish_bmc"
address = "https://127.0.0.1:0"
username = "root"
password_env = "RACKCLOCK_BENCH_BMC_PASSWORD"
[devices.bmc.sim]
offset_s = 0.25
"""
MANAGER = "/redfish/v1/Managers/bmc"
PW = "RACKCLOCK_BENCH_BMC_PASSWORD"
now_ns = Reference.now_ns


def start_sim(out: Path) -> tuple[subprocess.Popen, object]:
    (out / "rack.in.toml").write_text(RACK)
    proc = subprocess.Popen([sys.executable, "-m", "bench.commands.sim", "--rack", str(out / "rack.in.toml"),
                             "--out", str(out)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    for _ in range(200):
        if (out / "rack.toml").exists():
            return proc, load_rack(out / "rack.toml").devices[0]
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("emulator did not start")


def sync_reads(dev, n: int, warmup: int) -> list[tuple[int, int]]:
    import redfish
    c = redfish.redfish_client(dev.address, username=dev.username, password=os.environ[PW],
                               cafile=dev.options["ca_file"], timeout=3, max_retry=0)
    c.login(auth="session")
    out = []
    try:
        for i in range(warmup + n):
            s = now_ns()
            r = c.get(MANAGER)
            e = now_ns()
            assert r.status == 200 and "DateTime" in r.dict
            if i >= warmup:
                out.append((s, e))
    finally:
        c.logout()
    return out


async def aio_reads(dev, n: int, warmup: int) -> list[tuple[int, int]]:
    import ssl

    import aiohttp
    from redfish.aio import AsyncRedfishClient
    tls = ssl.create_default_context(cafile=dev.options["ca_file"])
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as session:
        async with AsyncRedfishClient(dev.address, dev.username, os.environ[PW], session=session,
                                      timeout=3) as c:
            out = []
            for i in range(warmup + n):
                s = now_ns()
                r = await c.get(MANAGER)
                e = now_ns()
                assert r.status == 200 and "DateTime" in r.dict
                if i >= warmup:
                    out.append((s, e))
            return out


async def driver_reads(dev, n: int, warmup: int, kernel: bool = False) -> list[tuple[int, int]]:
    from drivers.redfish_bmc import RedfishBMC
    drv = RedfishBMC(dev, now_ns if kernel else lambda: now_ns())
    await drv.open()
    try:
        out = []
        for i in range(warmup + n):
            r = await drv.read_clock("datetime")
            if i >= warmup:
                out.append((r.s_ns, r.e_ns))
        return out
    finally:
        await drv.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=300, help="reads per client")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=3, help="alternating blocks per client")
    a = ap.parse_args()
    os.environ.setdefault(PW, secrets.token_urlsafe(12))
    out = temp_dir("rackclock-bench-redfish-")
    proc, dev = start_sim(out)
    per = max(1, a.reads // a.blocks)
    got: dict[str, list[tuple[int, int]]] = {"sync": [], "aio": [], "aio+trace": [], "kernel": []}
    try:
        for _ in range(a.blocks):
            got["sync"] += sync_reads(dev, per, a.warmup)
            got["aio"] += asyncio.run(aio_reads(dev, per, a.warmup))
            got["aio+trace"] += asyncio.run(driver_reads(dev, per, a.warmup))
            got["kernel"] += asyncio.run(driver_reads(dev, per, a.warmup, kernel=True))
    finally:
        proc.terminate()
        proc.wait(10)
    samples = sorted(x for rows in read_samples(out / "sim_samples.csv").values() for x in rows)
    print(f"HTTPS, loopback, emulator in its own process; {per * a.blocks} reads per client "
          f"after {a.warmup} warm-up per block; bracket e - s in µs")
    print(f"{'client':<10} {'median':>8} {'p10':>8} {'p90':>8} {'p99':>8}  brackets holding the sample")
    for name, br in got.items():
        w = sorted((e - s) / 1e3 for s, e in br)
        held = sum(1 for s, e in br if samples_in(samples, s, e))
        q = statistics.quantiles(w, n=100)
        print(f"{name:<10} {statistics.median(w):8.0f} {q[9]:8.0f} {q[89]:8.0f} {q[98]:8.0f}  "
              f"{held}/{len(br)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
