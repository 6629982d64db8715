"""The Redfish driver against a service the project did not write: OpenStack's sushy-tools
(`sushy-emulator --fake`, PyPI `sushy-tools`), on loopback over HTTPS with an htpasswd file.
It has no SessionService: the driver finds that out and uses HTTP basic authentication. Its
Manager `DateTime` is the host's local time in whole seconds labelled `+00:00` (measured), so
its true offset from UTC is the host's local UTC offset: the process runs under a POSIX TZ
(`IST-5:30`, +05:30, no tzdata needed) and every bound the driver's reads give must hold it."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.config.inventory import DeviceConfig
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.tls import make_certificates
from drivers.redfish_bmc import RedfishBMC

NS = 1_000_000_000
TZ, TZ_OFFSET_NS = "IST-5:30", (5 * 3600 + 30 * 60) * NS


def sushy() -> str | None:
    here = Path(sys.executable).parent / "sushy-emulator"
    return str(here) if here.exists() else shutil.which("sushy-emulator")


@pytest.fixture
def sushy_service(tmp_path):
    exe = sushy()
    if exe is None:
        pytest.skip("sushy-emulator not installed (pip install sushy-tools)")
    import bcrypt
    password = "sushy-" + os.urandom(6).hex()
    (tmp_path / "htpasswd").write_text(
        "admin:" + bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode() + "\n")
    certs = make_certificates(tmp_path, "sushy")
    port = free_port()
    conf = tmp_path / "sushy.conf"
    conf.write_text(f"SUSHY_EMULATOR_AUTH_FILE = {str(tmp_path / 'htpasswd')!r}\n"
                    f"SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n")
    log = open(tmp_path / "sushy.log", "w")
    p = subprocess.Popen([exe, "--fake", "--config", str(conf), "-i", "127.0.0.1", "-p",
                          str(port), "--ssl-certificate", str(certs.cert), "--ssl-key",
                          str(certs.key)], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, env={**os.environ, "TZ": TZ})
    try:
        import socket
        end = time.monotonic() + 30
        while True:
            assert p.poll() is None, (tmp_path / "sushy.log").read_text()[-2000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < end, "sushy-emulator never listened"
                time.sleep(0.1)
        os.environ["RACKCLOCK_TEST_SUSHY_PASSWORD"] = password
        yield DeviceConfig(name="sushy", plane="bmc", driver="redfish_bmc",
                           address=f"https://127.0.0.1:{port}", username="admin",
                           password_env="RACKCLOCK_TEST_SUSHY_PASSWORD",
                           stimuli=("test_event",), options={"ca_file": str(certs.ca)})
    finally:
        p.terminate()
        p.wait(10)
        log.close()


def test_driver_reads_sushy_datetime_with_discovered_basic_auth(sushy_service):
    dev = sushy_service

    async def go():
        drv = RedfishBMC(dev, Reference.now_ns, armed=True)
        await drv.open()
        try:
            ident = await drv.identity()
            reads = [await drv.read_clock("datetime") for _ in range(12)]
            try:
                entries, _ = await drv.log_entries(None)
            except Exception as exc:            # a service with no log says so, once
                entries = exc
            return ident, reads, entries, dict(drv.meter.counts)
        finally:
            await drv.close()

    ident, reads, entries, counts = asyncio.run(go())
    assert ident.extra["auth"] == "basic" and "no SessionService" in ident.extra["auth_note"]
    assert counts["logins"] == 0
    # each read: the device's clock (host local time) lay in [v, v + 1 s) at some t in [s, e]
    lo = max(r.value_ns - r.e_ns for r in reads)
    hi = min(r.value_ns + r.resolution_ns - r.s_ns for r in reads)
    assert lo <= TZ_OFFSET_NS <= hi, (lo, hi)
    assert hi - lo < NS                         # the reads pin it inside one tick
    # sushy serves no LogService: the choice says so and nothing is read
    if ident.extra["log_choice"].startswith("none"):
        assert "no LogService" in ident.extra["log_choice"]
        assert entries == [] or "no LogService" in str(entries)
    else:
        assert isinstance(entries, list)


def test_session_auth_against_sushy_names_what_it_lacks(sushy_service):
    dev = dataclasses.replace(sushy_service, options={**sushy_service.options,
                                                      "auth": "session"})
    from drivers.base import DeviceError
    with pytest.raises(DeviceError) as e:
        asyncio.run(RedfishBMC(dev, Reference.now_ns).open())
    msg = str(e.value)
    assert "/redfish/v1/SessionService/Sessions" in msg and 'auth = "basic"' in msg
    assert os.environ["RACKCLOCK_TEST_SUSHY_PASSWORD"] not in msg
