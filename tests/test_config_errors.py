"""Every configuration mistake is one line naming file, device and key, exit status 2, no run
folder, no traceback: `rackclock run` and `rackclock check` read the rack file the same way."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from bench.commands.check import main as check_main
from tests.racks import sim_rack_dict

ROOT = Path(__file__).resolve().parent.parent
REDFISH = {"plane": "bmc", "driver": "redfish_bmc", "address": "https://127.0.0.1:1",
           "username": "root", "password_env": "X_PASSWORD"}


def rack(**device_changes) -> dict:
    """A simulated one-BMC rack with changes to bmc-1 (None removes a key)."""
    data = sim_rack_dict(["bmc-1"])
    for k, v in device_changes.items():
        if v is None:
            data["devices"]["bmc-1"].pop(k, None)
        else:
            data["devices"]["bmc-1"][k] = v
    return data


def with_device(name: str, table: dict) -> dict:
    data = sim_rack_dict(["bmc-1"])
    data["devices"][name] = table
    return data


def sim(device: str, **changes) -> dict:
    """A simulated rack of one default-rack device with changes to its [sim] table."""
    return sim_rack_dict([device], changes={device: {"sim": changes}})


def limits(table) -> dict:
    return {**rack(), "limits": table}


def reference(spec: str) -> dict:
    return {**rack(), "rack": {"name": "x", "simulated": True, "reference": spec}}


def lab(name: str = "bmc-9", **changes) -> dict:
    """A lab rack (not simulated) of one device, REDFISH by default (None removes a key)."""
    table = {**REDFISH, **changes}
    return {"rack": {"name": "lab"}, "devices": {name: {k: v for k, v in table.items()
                                                        if v is not None}}}


K8S = {"plane": "scheduler", "driver": "k8s_scheduler", "address": "https://127.0.0.1:1",
       "password_env": None, "username": None}


# (case, rack file content: dict | str | None for "no file", extra argv, words the line must hold)
RACK_CASES = [
    ("malformed TOML", "[rack\nname = 'x'", [], ["rack.toml", "TOML", "line 1"]),
    ("duplicate device", tomli_w.dumps(sim_rack_dict(["bmc-1"])) + "\n[devices.bmc-1]\n"
     "plane = 'bmc'\n", [], ["rack.toml", "TOML", "bmc-1"]),
    ("missing address", rack(address=None), [], ["device 'bmc-1'", "key 'address'", "missing"]),
    ("missing driver", rack(driver=None), [], ["device 'bmc-1'", "key 'driver'", "missing"]),
    ("missing plane", rack(plane=None), [], ["device 'bmc-1'", "key 'plane'", "missing"]),
    ("rate_hz a word", rack(rate_hz="fast"), [], ["key 'rate_hz'", "'fast'", "0.01 to 20 Hz"]),
    ("rate_hz 1e6", rack(rate_hz=1e6), [], ["key 'rate_hz'", "0.01 to 20 Hz"]),
    ("rate_hz 1e-9", rack(rate_hz=1e-9), [], ["key 'rate_hz'", "0.01 to 20 Hz"]),
    ("rate_hz nan", rack(rate_hz=float("nan")), [], ["key 'rate_hz'", "0.01 to 20 Hz"]),
    ("rate_hz negative", rack(rate_hz=-2), [], ["key 'rate_hz'", "0.01 to 20 Hz"]),
    ("key typo", rack(rate_hzz=2), [], ["key 'rate_hzz'", "did you mean 'rate_hz'"]),
    ("verify_tls a word", rack(verify_tls="no"), [], ["key 'verify_tls'", "true or false"]),
    ("timeout out of range", rack(timeout_s=0), [], ["key 'timeout_s'", "0.01 to 60 s"]),
    ("unknown stimulus", rack(stimuli=["reboot"]), [], ["key 'stimuli'", "no stimulus 'reboot'",
                                                        "test_event"]),
    ("stimuli not a list", rack(stimuli="test_event"), [], ["key 'stimuli'", "list[str]"]),
    ("unknown driver", rack(driver="redfsh_bmc"), [], ["key 'driver'", "did you mean "
                                                       "'redfish_bmc'"]),
    ("driver path", rack(driver="../bench/cli"), [], ["key 'driver'", "no driver"]),
    ("wrong scheme", rack(address="http://127.0.0.1:0"), [], ["key 'address'", "https://"]),
    ("escaping name", with_device("../../../escaped", dict(REDFISH)), [],
     ["device '../../../escaped'", "letters, digits"]),
    ("name with slash", with_device("a/b", dict(REDFISH)), [], ["device 'a/b'"]),
    ("inline password", rack(password="hunter2"), [], ["key 'password'", "password_env"]),
    ("inline community", with_device("pdu-9", {"plane": "pdu", "driver": "snmp_pdu",
                                               "address": "udp://127.0.0.1:1",
                                               "community": "private"}),
     [], ["key 'community'", "community_env"]),
    ("inline privacy_key", rack(privacy_key="k"), [], ["key 'privacy_key'", "privacy_key_env"]),
    ("inline token", rack(token="t"), [], ["key 'token'", "token_env"]),
    ("userinfo in address", rack(address="https://user:pw@127.0.0.1:0"), [],
     ["key 'address'", "a password in the address"]),
    ("bad env name", rack(password_env="not a name"), [], ["key 'password_env'",
                                                           "environment variable"]),
    ("empty rack", {"rack": {"name": "x", "simulated": True}}, [], ["no devices"]),
    ("unknown rack key", {**rack(), "rack": {"name": "x", "simulatd": True}}, [],
     ["key 'simulatd'", "did you mean 'simulated'"]),
    ("bad reference", {**rack(), "rack": {"name": "x", "reference": "gps"}}, [],
     ["key 'reference'", "realtime"]),
    ("unknown top table", {**rack(), "device": {}}, [], ["key 'device'", "did you mean"]),
    ("unknown modbus map", with_device("cdu-9", {"plane": "cooling", "driver": "modbus_cooling",
                                                 "address": "tcp://127.0.0.1:1",
                                                 "map": "family_z"}),
     [], ["device 'cdu-9'", "family_z", "known maps"]),
    # issue 31, Why 4: every [sim] key has a type and a range that bounds memory
    ("sim outlets 1e9", sim("pdu-1", outlets=10**9), [], ["device 'pdu-1'", "key 'sim.outlets'",
                                                          "1 to 256"]),
    ("sim log_capacity 1e9", sim("bmc-1", log_capacity=10**9), [], ["key 'sim.log_capacity'"]),
    ("sim 10^5 steps", sim("bmc-1", steps=[[1.0, 0.1]] * 100_000), [],
     ["key 'sim.steps'", "at most 1000"]),
    ("sim 10^5 reboots", sim("pdu-1", reboots=[1.0] * 100_000), [], ["key 'sim.reboots'"]),
    ("sim slews entry short", sim("bmc-1", slews=[[1.0, 2.0]]), [], ["key 'sim.slews[0]'"]),
    ("sim seed negative", sim("bmc-1", seed=-1), [], ["key 'sim.seed'"]),
    ("sim offset 1e300", sim("bmc-1", offset_s=1e300), [], ["key 'sim.offset_s'"]),
    ("sim key typo", sim("bmc-1", ofset_s=1.0), [], ["key 'sim.ofset_s'",
                                                      "did you mean 'offset_s'"]),
    ("sim wrap every tick", sim("pdu-2", clocks={"sysuptime": {"wrap_ticks": 1,
                                                               "resolution_s": 1e-9}}), [],
     ["key 'sim.clocks.sysuptime.wrap_ticks'", "at least 1 s"]),
    ("sim steps past a century", sim("bmc-1", offset_s=3e9, steps=[[1.0, 3e9]]), [],
     ["key 'sim.steps'", "about a century"]),
    ("sim module port 0", sim("optic-1", modules={"0": {"vendor": "X"}}), [],
     ["key 'sim.modules'", "ports 1 to 255"]),
    ("sim not a table", rack(sim=[1, 2]), [], ["key 'sim'", "a table"]),
    # Why 6: rack files that gave tracebacks
    ("nested arrays", "a = " + "[" * 5000 + "]" * 5000 + "\n", [], ["rack.toml",
                                                                     "nested too deeply"]),
    ("limits planes a string", limits({"planes": "x"}), [], ["[limits.planes]", "a table"]),
    ("limits devices a list", limits({"devices": [1]}), [], ["[limits.devices]", "a table"]),
    ("limits a number", {**rack(), "limits": 5}, [], ["[limits]", "a table"]),
    ("sim fault kind", sim("pdu-2", faults=[{"kind": "melt"}]), [],
     ["key 'sim.faults[0].kind'", "'reboot'"]),
    ("sim fault a word", sim("pdu-2", faults=["reboot"]), [], ["key 'sim.faults[0]'", "a table"]),
    ("sim fault key typo", sim("pdu-2", faults=[{"kind": "reboot", "after": 3}]), [],
     ["key 'sim.faults[0].after'", "after_samples"]),
    ("sim offset a word", sim("bmc-1", offset_s="soon"), [], ["key 'sim.offset_s'", "'soon'"]),
    ("sim resolution a string", sim("bmc-1", resolution_s="1s"), [], ["key 'sim.resolution_s'"]),
    ("sim log latency words", sim("bmc-1", log_latency_s=["a", "b"]), [],
     ["key 'sim.log_latency_s[0]'"]),
    ("sim log latency reversed", sim("bmc-1", log_latency_s=[2.0, 1.0]), [],
     ["key 'sim.log_latency_s'", "lo <= hi"]),
    ("sim by_firmware a word", sim("bmc-1", by_firmware={"2.14.0": "fast"}), [],
     ["key 'sim.by_firmware.2.14.0'", "a table"]),
    ("sim k8s not_ready no node", sim("k8s-1", not_ready=[{"at_s": 1.0}]), [],
     ["key 'sim.not_ready[0].node'", "missing"]),
    ("sim time zone unknown", sim("cdu-1", rtc_timezone="Mars/Olympus"), [],
     ["key 'sim.rtc_timezone'", "time zone"]),
    ("sim emulator unknown", sim("bmc-1", emulator="serve"), [], ["key 'sim.emulator'",
                                                                  "redfish_bmc"]),
    # Why 8: what failed at open is refused at load
    ("lab ca_file missing", lab(ca_file="nowhere/ca.pem"), [],
     ["device 'bmc-9'", "key 'ca_file'", "no readable file"]),
    ("lab username missing", lab(username=None), [], ["key 'username'", "needs username"]),
    ("lab password_env missing", lab(password_env=None), [], ["key 'password_env'",
                                                              "needs password_env"]),
    ("lab password variable unset", lab(), [], ["key 'password_env'", "X_PASSWORD is not set"]),
    ("lab kubeconfig missing", lab("k8s-9", **K8S), [], ["key 'kubeconfig'",
                                                         "needs kubeconfig"]),
    ("lab kubeconfig absent", lab("k8s-9", **K8S, kubeconfig="nowhere.yaml"), [],
     ["key 'kubeconfig'", "no readable file"]),
    ("lab kubeconfig a word", lab("k8s-9", **K8S, kubeconfig="plain.txt"), [],
     ["key 'kubeconfig'", "not a kubeconfig"]),
    ("lab snmp v3 no user", lab("pdu-9", plane="pdu", driver="snmp_pdu", address="udp://h:161",
                                version="3", username=None), [], ["key 'username'"]),
    ("lab snmp v2c no community", lab("pdu-9", plane="pdu", driver="snmp_pdu",
                                      address="udp://h:161", username=None, password_env=None),
     [], ["key 'community_env'", "community_env or password_env"]),
    ("reference virtual", reference("virtual:5"), [], ["key 'reference'", "phc:/dev/ptpN"]),
    ("reference phc escape", reference("phc:/dev/../etc/passwd"), [], ["key 'reference'"]),
    ("reference phc absent", reference("phc:/dev/ptp97"), [], ["key 'reference'",
                                                                "not a PTP hardware clock"]),
    ("limit latency negative", limits({"planes": {"bmc": {"latency_max": "-5ms"}}}), [],
     ["latency_max", "'-5ms'"]),
    ("limit drift nan", limits({"planes": {"bmc": {"drift_within_ppm": float("nan")}}}), [],
     ["drift_within_ppm", "nan"]),
    ("limit offset inf", limits({"devices": {"bmc-1": {"offset_within": "1e400s"}}}), [],
     ["offset_within", "1e400s"]),
    ("kmsg a regular file", sim_rack_dict(["host-1"], changes={"host-1": {"kmsg": "/etc/passwd"}}),
     [], ["key 'kmsg'", "character device"]),
    ("kmsg escaping /dev", sim_rack_dict(["host-1"], changes={"host-1": {
        "kmsg": "/dev/../etc/passwd"}}), [], ["key 'kmsg'", "character device"]),
    ("rack file /dev/zero", "DEVZERO", [], ["not a regular file"]),
    ("missing rack file", None, [], ["no such rack file"]),
    ("rack file a folder", "FOLDER", [], ["is a folder"]),
    ("rack file not text", b"\xff\xfe\x00garbage", [], ["rack.toml"]),
]
CLI_CASES = [
    ("duration 0", ["--duration", "0"], ["--duration", "0.5 to 604800 s"]),
    ("duration -5", ["--duration", "-5"], ["--duration", "0.5 to 604800 s"]),
    ("duration nan", ["--duration", "nan"], ["--duration"]),
    ("duration inf", ["--duration", "inf"], ["--duration"]),
    ("duration a word", ["--duration", "soon"], ["--duration", "'soon'"]),
    ("allowance a word", ["--reference-allowance", "banana"], ["--reference-allowance", "banana"]),
    ("allowance negative", ["--reference-allowance", "-1ms"], ["--reference-allowance"]),
    ("allowance a year", ["--reference-allowance", "1e9s"], ["--reference-allowance"]),
    ("unknown param", ["--param", "duraton_s=3"], ["duraton_s", "did you mean 'duration_s'"]),
    ("param bad value", ["--param", "burst=many"], ["burst=many"]),
    ("param not key=value", ["--param", "burst"], ["KEY=VALUE"]),
    ("param timeout 0", ["--param", "timeout_s=0"], ["timeout_s"]),
    ("unknown option", ["--durration", "3"], ["--durration"]),
    ("unwritable out", ["--out", "/proc/rackclock-runs"], ["--out", "/proc/rackclock-runs"]),
    ("out under a file", ["--out", "FILE/runs"], ["--out"]),
]


def _write_rack(tmp_path: Path, content) -> Path:
    p = tmp_path / "rack.toml"
    (tmp_path / "plain.txt").write_text("just words, no kubeconfig\n")
    if content is None:
        return p
    if content == "DEVZERO":
        p.symlink_to("/dev/zero")
    elif content == "FOLDER":
        p.mkdir()
    elif isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content if isinstance(content, str) else tomli_w.dumps(content))
    return p


def _rackclock(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _assert_one_line(p: subprocess.CompletedProcess, words: list[str], out: Path):
    lines = [x for x in (p.stdout + p.stderr).splitlines() if x.strip()]
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(lines) == 1, lines
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not out.exists() or not any(out.iterdir()), "a run folder was made"


@pytest.mark.parametrize("case, content, argv, words", RACK_CASES, ids=[c[0] for c in RACK_CASES])
def test_rack_file_mistake_is_one_line_exit_2(tmp_path, case, content, argv, words, capsys):
    rack_file = _write_rack(tmp_path, content)
    out = tmp_path / "runs"
    p = _rackclock(["run", "--rack", "rack.toml", "--out", str(out), "--quiet", *argv], tmp_path)
    _assert_one_line(p, words, out)
    if case == "empty rack":          # `check` of no devices checks the reference alone
        return
    # `check` reads the file with the same loader: the same line
    capsys.readouterr()
    assert check_main(["--rack", str(rack_file)]) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err.count("\n") == 1
    for w in words:
        assert w in err.err, (w, err.err)


@pytest.mark.parametrize("case, argv, words", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_command_line_mistake_is_one_line_exit_2(tmp_path, case, argv, words):
    rack_file = _write_rack(tmp_path, rack())
    (tmp_path / "FILE").write_text("")
    out = tmp_path / "runs"
    argv = [a.replace("FILE", str(tmp_path / "FILE")) for a in argv]
    if "--out" not in argv:
        argv += ["--out", str(out)]
    p = _rackclock(["run", "--rack", str(rack_file), "--quiet", *argv], tmp_path)
    _assert_one_line(p, words, out)


def test_unknown_experiment_is_one_line(tmp_path):
    p = _rackclock(["run", "clock_ofset", "--out", str(tmp_path / "runs")], tmp_path)
    _assert_one_line(p, ["no experiment 'clock_ofset'", "did you mean 'clock_offset'"],
                     tmp_path / "runs")


def test_relative_paths_resolve_against_the_rack_file(tmp_path):
    """A relative ca_file or map path means the file beside the rack file, whatever the cwd."""
    from bench.config.loader import load_checked

    sub = tmp_path / "racks"
    sub.mkdir()
    data = rack(ca_file="certs/ca.pem")
    data["devices"]["cdu-9"] = {"plane": "cooling", "driver": "modbus_cooling",
                                "address": "tcp://127.0.0.1:1", "map": "maps/mine.toml",
                                "timezone": "UTC"}
    (sub / "maps").mkdir()
    (sub / "maps" / "mine.toml").write_text(
        (ROOT / "drivers/maps/cooling/family_a.toml").read_text())
    (sub / "r.toml").write_text(tomli_w.dumps(data))
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        r = load_checked("racks/r.toml")
    finally:
        os.chdir(cwd)
    assert r.device("bmc-1").options["ca_file"] == str(sub / "certs" / "ca.pem")
    assert r.device("cdu-9").options["map"] == str(sub / "maps" / "mine.toml")
    assert r.source == str(sub / "r.toml")


@pytest.mark.skipif(not shutil.which("pmc"), reason="linuxptp's pmc is not installed")
def test_check_honours_the_rack_files_ptp_uds(tmp_path, monkeypatch):
    """`check` looks for ptp4l where the rack file says, as `run` does."""
    monkeypatch.setenv("X_PASSWORD", "x")           # a lab rack's variables must be set
    data = {"rack": {"name": "real", "ptp_uds": "ptp/sock"},
            "devices": {"bmc-9": dict(REDFISH)}}
    f = _write_rack(tmp_path, data)
    p = _rackclock(["check", "--rack", str(f), "--timeout", "1"], tmp_path)
    assert str(tmp_path / "ptp" / "sock") in p.stdout, p.stdout + p.stderr
    assert "Traceback" not in p.stderr


def test_a_simulated_rack_file_given_relative_runs(tmp_path):
    """`run --rack rel.toml` from the rack's folder: the simulator child (which runs elsewhere)
    gets the file's absolute path."""
    (tmp_path / "rel.toml").write_text(tomli_w.dumps(sim_rack_dict(["cdu-1"])))
    p = _rackclock(["run", "--rack", "rel.toml", "--duration", "4", "--out", "runs", "--quiet"],
                   tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr


def test_a_broken_kubeconfig_is_refused_without_quoting_it(tmp_path):
    """A kubeconfig the YAML parser cannot read is one line at load that names the line, not
    the file's text (which holds the token)."""
    from bench.config.inventory import InventoryError
    from bench.config.loader import load_checked

    (tmp_path / "kc.yaml").write_text("users: [{name: u, user: {token: s3cr3t-T0KEN}}\n"
                                      "contexts: [\n")
    f = _write_rack(tmp_path, lab("k8s-9", **K8S, kubeconfig="kc.yaml"))
    with pytest.raises(InventoryError) as caught:
        load_checked(f)
    line = str(caught.value)
    assert "key 'kubeconfig'" in line and "not YAML (line 2)" in line
    assert "s3cr3t" not in line
