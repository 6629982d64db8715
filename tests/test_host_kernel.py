"""The host kernel plane on this host: the kernel log's clock through markers in /dev/kmsg, the
host clocks (CLOCK_MONOTONIC against CLOCK_REALTIME is a real clock with a known truth), locally
and over SSH to a real `sshd` on loopback that the test starts."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

from bench.analysis.estimate import fit_clock
from bench.analysis.proven_segment import DEFAULT_DRIFT_PRIOR_PPM
from bench.config.inventory import device_from_table
from bench.ports import free_port
from bench.reference.clock import Reference
from bench.sim.host_clocks import host_clock_pair
from bench.sim.host_kernel_emu import kmsg_minus_monotonic_ns, kmsg_writable
from drivers.base import DeviceError
from drivers.host_kernel import MARKER, HostKernel, parse_record

NS = 1_000_000_000
SSHD = shutil.which("sshd") or shutil.which("sshd", path="/usr/sbin:/sbin")

needs_kmsg = pytest.mark.skipif(not kmsg_writable(), reason="/dev/kmsg not writable (needs root; "
                                                            "runs in CI)")


def device(address="local://", **options):
    return device_from_table("host-t", {"plane": "host", "driver": "host_kernel",
                                        "address": address, "stimuli": ["log_line"], **options})


def run(coro):
    return asyncio.run(coro)


async def with_driver(dev, fn):
    d = HostKernel(dev, Reference.now_ns, armed=True)
    await d.open()
    try:
        return await fn(d)
    finally:
        await d.close()


async def reads_of(d, clock, n=30, spacing_s=0.01):
    out = []
    for _ in range(n):
        out.append(await d.read_clock(clock))
        await asyncio.sleep(spacing_s)
    return out


def bound(reads, resolution_ns):
    s = np.array([r.s_ns for r in reads], dtype=np.int64)
    e = np.array([r.e_ns for r in reads], dtype=np.int64)
    v = np.array([r.value_ns for r in reads], dtype=np.int64)
    return fit_clock(s, e, v, resolution_ns).segments[-1].offset_at(int(e[-1]))


def mono_minus_real() -> int:
    """CLOCK_MONOTONIC - CLOCK_REALTIME: the kernel's exact figure as root (bench.sim.host_clocks)."""
    r, m, _ = host_clock_pair()
    return m - r


def test_record_parsing():
    assert parse_record("6,339,1155283705,-;hello world\n") == (339, 1155283705000, "hello world")
    assert parse_record("4,12,5,c,caller=T1;NVRM: Xid (PCI:0000:3b:00): 79\n")[2].startswith("NVRM")
    assert parse_record(" SUBSYSTEM=pci\n") is None and parse_record("garbage") is None


def test_not_opted_in_reads_no_log_clock_and_refuses_to_write():
    dev = device()

    async def go(d):
        return [c.name for c in d.clocks()], await d.read_clock("monotonic")

    names, mono = run(with_driver(dev, go))
    assert names == ["realtime", "monotonic"]
    r, m, u = host_clock_pair()            # u: 0 where the kernel shows its offset (root)
    assert mono.value_ns - mono.e_ns - u <= m - r <= mono.value_ns - mono.s_ns + u
    with pytest.raises(DeviceError) as e:
        run(with_driver(dataclasses.replace(dev, stimuli=("log_line",)),
                        lambda d: d.stimulate("log_line")))
    assert e.value.kind == "refused" and "write_kmsg" in e.value.message


@needs_kmsg
def test_local_clocks_bounds_contain_the_truth():
    dev = device(write_kmsg=True)

    async def go(d):
        return ([c.name for c in d.clocks()], await reads_of(d, "kmsg"),
                await reads_of(d, "monotonic"), await reads_of(d, "realtime"))

    d_before = kmsg_minus_monotonic_ns()
    names, kmsg, mono, real = run(with_driver(dev, go))
    d_after = kmsg_minus_monotonic_ns()
    assert names == ["kmsg", "realtime", "monotonic"]
    truth_mono = mono_minus_real()
    b = bound(mono, 1)
    last = mono[-1]           # the fit is no wider than its last read proves (drift over it)
    assert b.lo <= truth_mono <= b.hi
    # its bracket, the 1 ns resolution (a reading v means [v, v + 1)) and 1 ns a side rounded out
    assert b.hi - b.lo <= (last.e_ns - last.s_ns) * (1 + 2 * DEFAULT_DRIFT_PRIOR_PPM * 1e-6) + 3
    b = bound(real, 1)
    assert b.lo <= 0 <= b.hi
    b = bound(kmsg, 1000)
    assert all(r.resolution_ns == 1000 and r.value_ns % 1000 == 0 and MARKER in r.raw for r in kmsg)
    assert all(0 < r.e_ns - r.s_ns for r in kmsg)
    # the log clock is the kernel's local_clock(): within ms of CLOCK_MONOTONIC, not equal to it
    assert abs((b.lo + b.hi) / 2 - truth_mono) < 100_000_000
    if d_before is not None and d_after is not None:      # debugfs: the kernel's own figure
        lo, hi = sorted((truth_mono + d_before, truth_mono + d_after))
        assert b.lo - 1000 <= lo and hi <= b.hi + 1000, (b, lo, hi)


@needs_kmsg
def test_log_line_is_logged_between_two_markers_and_markers_are_not_entries():
    dev = device(write_kmsg=True)

    async def go(d):
        before = await d.read_clock("kmsg")
        st = await d.stimulate("log_line")
        after = await d.read_clock("kmsg")
        entries, cursor = await d.log_entries(None)
        again, _ = await d.log_entries(cursor)
        return before, st, after, entries, again

    before, st, after, entries, again = run(with_driver(dev, go))
    mine = [x for x in entries if "kmsg " + x.message == st.raw]   # the line it asked for
    assert len(mine) == 1 and again == []
    assert not [x for x in entries if x.message.startswith(MARKER)]
    (en,) = mine
    assert en.clock == "kmsg" and before.value_ns <= en.value_ns <= after.value_ns
    assert st.s_ns < st.e_ns and en.s_ns >= st.e_ns


def test_missing_device_is_unreachable_and_garbage_is_malformed(tmp_path):
    with pytest.raises(DeviceError) as e:
        run(with_driver(device(kmsg=str(tmp_path / "nope")), lambda d: d.identity()))
    assert e.value.kind == "unreachable"
    junk = tmp_path / "junk"
    junk.write_text("")
    dev = device(kmsg=str(junk))

    async def go(d):
        with open(junk, "a") as f:
            f.write("this is not a kernel log record\n")
        return await d.log_entries(None)

    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, go))
    assert e.value.kind == "malformed" and "not a kernel log record" in e.value.message


# -- over SSH ------------------------------------------------------------------------------------
@pytest.fixture
def sshd(tmp_path):
    """A real OpenSSH sshd on 127.0.0.1 accepting root with a key made here."""
    if SSHD is None:
        pytest.skip("sshd not installed (Debian package openssh-server)")
    if os.geteuid() != 0:
        pytest.skip("sshd on loopback needs root (runs in CI)")
    for name in ("host", "client", "other"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
                       check=True)
    (tmp_path / "authorized_keys").write_text((tmp_path / "client.pub").read_text())
    os.chmod(tmp_path / "authorized_keys", 0o600)
    os.makedirs("/run/sshd", exist_ok=True)
    port = free_port()
    cfg = tmp_path / "sshd_config"
    cfg.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp_path / 'host'}\n"
                   f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\nPermitRootLogin yes\n"
                   "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                   f"StrictModes no\nPidFile {tmp_path / 'sshd.pid'}\n")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "sshd.log", "wb"))
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2) as c:
                if c.recv(8).startswith(b"SSH-"):
                    break
        except OSError:
            pass
        assert proc.poll() is None, (tmp_path / "sshd.log").read_text()
        assert time.monotonic() < deadline, "sshd did not start"
        time.sleep(0.05)
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} " + (tmp_path / "host.pub").read_text())
    yield port, tmp_path
    proc.terminate()
    proc.wait(10)


def ssh_device(port, tmp_path, key="client", **options):
    return device(f"ssh://root@127.0.0.1:{port}", key_file=str(tmp_path / key),
                  known_hosts=str(tmp_path / "known_hosts"), **options)


@needs_kmsg
def test_ssh_reads_the_same_host_and_bounds_contain_the_truth(sshd):
    port, tmp = sshd
    dev = ssh_device(port, tmp, write_kmsg=True)

    async def go(d):
        ident = await d.identity()
        k = await reads_of(d, "kmsg", 15)
        r = await reads_of(d, "realtime", 15)
        st = await d.stimulate("log_line")
        got = []
        for _ in range(100):
            new, _ = await d.log_entries(None)
            got += new
            if any(x.message == st.raw for x in got):
                break
            await asyncio.sleep(0.02)
        return ident, [c.name for c in d.clocks()], k, r, st, got

    d_k = kmsg_minus_monotonic_ns()
    ident, names, k, r, st, got = run(with_driver(dev, go))
    assert names == ["kmsg", "realtime"] and ident.extra["via"] == "ssh"
    assert ident.model == " ".join(os.uname()[i] for i in (0, 1, 2))
    assert bound(r, 1).lo <= 0 <= bound(r, 1).hi                  # the same host's realtime
    b = bound(k, 1000)
    truth_mono = mono_minus_real()
    assert abs((b.lo + b.hi) / 2 - truth_mono) < 100_000_000
    if d_k is not None:
        assert b.lo - 2000 <= truth_mono + d_k <= b.hi + 2000
    assert [x for x in got if "kmsg " + x.message == st.raw] and not [x for x in got if MARKER in x.message]


def test_ssh_wrong_key_is_auth_and_closed_port_unreachable(sshd):
    port, tmp = sshd
    with pytest.raises(DeviceError) as e:
        run(with_driver(ssh_device(port, tmp, key="other"), lambda d: d.identity()))
    assert e.value.kind == "auth" and "root" in e.value.message
    closed = free_port()
    t = time.monotonic()
    with pytest.raises(DeviceError) as e:
        run(with_driver(ssh_device(closed, tmp, timeout_s=20.0), lambda d: d.identity()))
    assert e.value.kind == "unreachable" and str(closed) in e.value.message
    assert time.monotonic() - t < 10


def test_ssh_garbage_log_is_malformed(sshd):
    port, tmp = sshd
    junk = tmp / "junk"
    junk.write_text("<not a record>\n")
    dev = ssh_device(port, tmp, kmsg=str(junk))

    async def go(d):
        for _ in range(200):
            await d.log_entries(None)
            await asyncio.sleep(0.02)

    with pytest.raises(DeviceError) as e:
        run(with_driver(dev, go))
    assert e.value.kind == "malformed"
