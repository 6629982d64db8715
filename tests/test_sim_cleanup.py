"""The simulated rack leaves no litter: its temp folder (the TLS key among others) is removed when
it stops, on a signal and after an error; and rack-file faults fire on the device's progress."""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w
from racks import sim_rack_dict, sim_rack_text

from bench.config.inventory import load_rack, rack_from_dict
from bench.reference.clock import Reference
from bench.run.simproc import SimProcess
from bench.sim.rack import read_samples
from bench.sim.thread import SimRackThread
from drivers.snmp_pdu import SnmpPdu

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """A TMPDIR of the test's own, watched for what the simulator leaves there."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def small_rack(path: Path, monkeypatch, text: str | None = None) -> Path:
    path.write_text(text or sim_rack_text(["bmc-1", "pdu-2"]))        # bmc-1: HTTPS, a TLS key
    for d in load_rack(path).devices:
        for var in [d.password_env] + [v for k, v in d.options.items() if k.endswith("_env")]:
            if var:
                monkeypatch.setenv(var, secrets.token_urlsafe(9))
    return path


def serve(rack: Path, out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "bench.commands.sim", "--rack", str(rack),
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return proc


def wait_for(cond, proc, deadline_s=60.0):
    end = time.monotonic() + deadline_s
    while not cond():
        assert proc.poll() is None and time.monotonic() < end, proc.stdout.read()
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_served_rack_removes_its_temp_folder_on_a_signal(tmp_path, tmpdir_env, monkeypatch, sig):
    rack = small_rack(tmp_path / "rack.toml", monkeypatch)
    proc = serve(rack, tmp_path / "out")
    wait_for(lambda: (tmp_path / "out" / "rack.toml").exists(), proc)
    [work] = list(tmpdir_env.glob("rackclock-sim-*"))
    assert list(work.glob("*.key"))                       # the TLS key, while it serves
    proc.send_signal(sig)
    assert proc.wait(60) == 0
    assert list(tmpdir_env.iterdir()) == []
    assert (tmp_path / "out" / "truth.json").exists()


def test_served_rack_removes_its_temp_folder_after_an_error(tmp_path, tmpdir_env, monkeypatch):
    rack = small_rack(tmp_path / "rack.toml", monkeypatch)
    (tmp_path / "out" / "rack.toml").mkdir(parents=True)   # fails once the emulators are up
    proc = serve(rack, tmp_path / "out")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "IsADirectoryError" in out, out
    assert list(tmpdir_env.iterdir()) == []


def test_a_fault_that_cannot_arm_leaves_its_device_out(tmp_path):
    """A rack-file fault the device's clocks cannot take (a wrap on a BMC: no counter) costs that
    device alone, with the reason; the simulator and the other devices go on."""
    data = sim_rack_dict(["bmc-1", "pdu-2"])
    data["devices"]["bmc-1"]["sim"]["faults"] = [{"kind": "wrap"}]
    with SimRackThread(rack_from_dict(data), tmp_path / "sim") as sim:
        assert [d.name for d in sim.rack.devices] == ["pdu-2"]
        assert "sim.faults" in sim.failed["bmc-1"] and "counter" in sim.failed["bmc-1"]


def test_simprocess_and_thread_leave_nothing(tmp_path, tmpdir_env, monkeypatch):
    rack = small_rack(tmp_path / "rack.toml", monkeypatch)
    with SimProcess(rack, tmp_path / "out") as sim:
        assert sim.rack.devices and list(tmpdir_env.glob("rackclock-sim-*"))
    assert list(tmpdir_env.iterdir()) == []
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir_env))   # this process' own temp folder
    source = rack_from_dict(tomllib.loads(rack.read_text()))
    with SimRackThread(source) as sim:                 # no out_dir: a temp one of its own
        assert sim.rack.devices and len(list(tmpdir_env.iterdir())) == 2
    assert list(tmpdir_env.iterdir()) == []


def test_rack_file_fault_fires_after_the_devices_samples(tmp_path, monkeypatch):
    """`faults = [{kind = "reboot", after_samples = 3}]`: the PDU reboots once it has answered
    three clock samples, wherever the machine's clock stands."""
    data = sim_rack_dict(["pdu-2"])
    data["devices"]["pdu-2"]["sim"].update(faults=[{"kind": "reboot", "after_samples": 3}],
                                            reboot_down_s=0.3)
    small_rack(tmp_path / "rack.toml", monkeypatch, tomli_w.dumps(data))
    with SimRackThread(rack_from_dict(data), tmp_path / "sim") as sim:
        dev = sim.rack.devices[0]

        async def go():
            d = SnmpPdu(dev, Reference.now_ns, armed=False)
            await d.open()
            try:
                return [await d.read_clock("sysuptime") for _ in range(3)]
            finally:
                await d.close()

        asyncio.run(go())
        [fired] = sim.ctx.faults.fired
        models = sim.ctx._models["pdu-2"]
        taken = sorted(t for (name, _c), ts in read_samples(sim.out_dir / "sim_samples.csv").items()
                       if name == "pdu-2" for t, _v in ts)
    assert fired["kind"] == "reboot"
    assert len([t for t in taken if t <= fired["t_ns"]]) == 3        # fired on the third
    assert all(fired["t_ns"] in m._reboots for m in models.values())
    reboot = {"t_ns": fired["t_ns"], "kind": "reboot", "size_ns": None}
    assert reboot in models["sysuptime"].breaks()


def test_fault_on_command_to_a_served_rack(tmp_path, tmpdir_env, monkeypatch):
    """A rack served from its own process takes faults on command (its control socket, here
    under a TMPDIR too long for a socket path): the reboot is in the truth it writes; a bad
    command is refused and the rack goes on."""
    long_tmp = tmpdir_env / ("long-" + "x" * 80)
    long_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(long_tmp))
    rack = small_rack(tmp_path / "rack.toml", monkeypatch, sim_rack_text(["pdu-2"]))
    with SimProcess(rack, tmp_path / "out") as sim:
        with pytest.raises(ValueError, match="fault kind 'melt'"):
            sim.fault("pdu-2", "melt")
        with pytest.raises(ValueError, match="no simulated device"):
            sim.fault("pdu-9", "reboot")
        at = sim.fault("pdu-2", "reboot")["t_ns"]
        assert sim.fault("pdu-2", "reboot", after_samples=5) == {"armed": True}
    truth = json.loads((tmp_path / "out" / "truth.json").read_text())
    breaks = truth["devices"]["pdu-2"]["clocks"]["sysuptime"]["breaks"]
    assert {"t_ns": at, "kind": "reboot", "size_ns": None} in breaks
    assert list(long_tmp.iterdir()) == []                     # its temp folder went


def test_a_killed_simulator_leaves_no_secrets_and_none_readable_by_others(tmp_path, tmpdir_env,
                                                                          monkeypatch):
    """Issue 31, Why 9: while the simulator serves, its folder of secrets (the Redfish TLS key,
    the kubeconfig with its token) is 0700 and every file in it 0600; SIGKILLed, it cannot clean
    up, and the SimProcess that started it removes the folder."""
    rack = small_rack(tmp_path / "rack.toml", monkeypatch, sim_rack_text(["bmc-1", "k8s-1"]))
    with SimProcess(rack, tmp_path / "out") as sim:
        secrets_seen = [p for p in tmpdir_env.rglob("*") if p.is_file()]
        assert any(p.name.endswith(".key") for p in secrets_seen)
        assert any(p.name.startswith("kubeconfig-") for p in secrets_seen)
        for p in tmpdir_env.rglob("*"):
            mode = p.lstat().st_mode & 0o777
            assert mode & 0o077 == 0, f"{p} is {mode:o}"
        sim.proc.send_signal(signal.SIGKILL)
        sim.proc.wait(60)
        assert any(tmpdir_env.iterdir())          # left by the killed simulator...
    assert list(tmpdir_env.iterdir()) == []       # ...and removed by the SimProcess


def test_a_run_whose_simulator_does_not_start_ends_failed_leaving_no_reserve(tmp_path, tmpdir_env,
                                                                             monkeypatch):
    """Issue 31, Why 9: a run folder of a failed start keeps no `.reserve` (nor the simulator's
    folder), and says `failed` in one line and its manifest."""
    # the simulator dies at start: a sitecustomize on its path ends a process run with the
    # simulator's own --realtime flag before it serves anything (the bench's process goes on)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nif '--realtime' in sys.argv:\n    sys.exit('simulator killed at start')\n")
    rack = small_rack(tmp_path / "rack.toml", monkeypatch)
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                        "--duration", "5", "--out", str(tmp_path / "runs"), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(site)})
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    [folder] = list((tmp_path / "runs").iterdir())
    assert not (folder / ".reserve").exists()
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "failed" and "did not start" in m["error"], m
    assert p.stderr.strip() == f"experiment clock_offset failed: {m['error']}"
    assert list(tmpdir_env.iterdir()) == []
