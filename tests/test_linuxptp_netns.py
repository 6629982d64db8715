"""A real linuxptp pair: the bench reads a ptp4l slave's health through pmc.

Two network namespaces joined by a veth pair, a grandmaster ptp4l in one and a slave ptp4l in the
other, both with software timestamping. Both namespaces share the machine's CLOCK_REALTIME, so the
slave runs with `free_running 1`: it measures and never adjusts the clock. A free-running ptp4l's
servo never locks, so its port would stay UNCALIBRATED; `SET SYNCHRONIZATION_UNCERTAIN_NP 0`
(linuxptp's own management message) tells it its local sync is certain, which makes it report
LOCKED and take the SLAVE state, still without touching any clock. (At start-up every ptp4l on
CLOCK_REALTIME writes back the frequency it has just read and clears the kernel's leap/status
bits; neither changes the clock's time or rate.)

Needs root and `ip netns` (CI runs as root); skipped otherwise.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from bench.reference.clock import Discipline, Reference, open_reference, reference_for_run
from bench.reference.monitor import HealthMonitor
from bench.reference.ptp_health import NS, Pmc, PtpThresholds

pytestmark = pytest.mark.root

FAST = """[global]
logSyncInterval -3
logAnnounceInterval -2
announceReceiptTimeout 3
logMinDelayReqInterval -2
uds_address {uds}
"""
# The test's thresholds: a 2 s sync age fails (the GM sends 8 Syncs a second here).
TH = PtpThresholds(sync_age_warn_ns=NS // 2, sync_age_fail_ns=2 * NS,
                   offset_warn_ns=250_000, offset_fail_ns=20_000_000)


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces); CI runs these as root"
    for tool in ("ip", "ptp4l", "pmc"):
        if not (shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")):
            return f"{tool} is not installed (apt-get install iproute2 linuxptp)"
    return None


class PtpPair:
    def __init__(self):
        tag = secrets.token_hex(3)
        self.ns = (f"rcgm{tag}", f"rcsl{tag}")
        self.veth = (f"rcg{tag}", f"rcs{tag}")
        self.dir = Path(tempfile.mkdtemp(prefix="rcptp"))
        self.uds = (str(self.dir / "gm.sock"), str(self.dir / "sl.sock"))
        self.procs: list[subprocess.Popen] = []
        self.created: list[str] = []

    def setup(self) -> None:
        for ns in self.ns:
            r = _run("ip", "netns", "add", ns)
            if r.returncode:
                raise RuntimeError(f"ip netns add: {r.stderr.strip()}")
            self.created.append(ns)
        steps = [("ip", "link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])]
        for i, (ns, dev) in enumerate(zip(self.ns, self.veth)):
            steps += [("ip", "link", "set", dev, "netns", ns),
                      ("ip", "-n", ns, "addr", "add", f"10.231.77.{i + 1}/24", "dev", dev),
                      ("ip", "-n", ns, "link", "set", dev, "up"),
                      ("ip", "-n", ns, "link", "set", "lo", "up")]
        for s in steps:
            r = _run(*s)
            if r.returncode:
                raise RuntimeError(f"{' '.join(s)}: {r.stderr.strip()}")
        gm = self.dir / "gm.cfg"
        gm.write_text(FAST.format(uds=self.uds[0]) + "priority1 1\nfree_running 1\n")
        sl = self.dir / "sl.cfg"
        sl.write_text(FAST.format(uds=self.uds[1]) + "slaveOnly 1\nfree_running 1\n")
        for ns, dev, cfg, name in zip(self.ns, self.veth, (gm, sl), ("gm", "sl")):
            log = open(self.dir / f"{name}.log", "w")
            self.procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "ptp4l", "-f", str(cfg),
                                                "-i", dev, "-S", "-m"], stdout=log,
                                               stderr=subprocess.STDOUT))

    def log(self, name: str) -> str:
        p = self.dir / f"{name}.log"
        return p.read_text()[-2000:] if p.exists() else ""

    def wait_slave(self, timeout_s: float = 30.0) -> None:
        """Wait for the slave's sockets, tell it its sync is certain, wait for SLAVE."""
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(self.uds[1]):
            if time.monotonic() > deadline or self.procs[1].poll() is not None:
                raise RuntimeError("slave ptp4l did not start:\n" + self.log("sl"))
            time.sleep(0.05)
        pmc = Pmc(self.uds[1])
        while time.monotonic() < deadline:
            _run("pmc", "-u", "-b", "0", "-s", self.uds[1], "-i", str(self.dir / "set.sock"),
                 "SET SYNCHRONIZATION_UNCERTAIN_NP 0")
            try:
                got = pmc.query("PORT_DATA_SET", "CURRENT_DATA_SET")
                states = [r.fields.get("portState") for r in got["PORT_DATA_SET"]]
                delay = float(got["CURRENT_DATA_SET"][0].fields.get("meanPathDelay", 0))
            except Exception:
                states, delay = [], 0
            if states == ["SLAVE"] and delay > 0:     # and the first delay measurement is in
                return
            time.sleep(0.3)
        raise RuntimeError("slave never reached SLAVE:\n" + self.log("sl") + "\nGM:\n" + self.log("gm"))

    def stop_gm(self) -> None:
        self.procs[0].terminate()
        self.procs[0].wait(10)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        for ns in self.created:
            _run("ip", "netns", "del", ns)
        _run("ip", "link", "del", self.veth[0])       # gone with its namespace; belt and braces
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def pair():
    why = _why_not()
    if why:
        pytest.skip(why)
    p = PtpPair()
    try:
        try:
            p.setup()
        except RuntimeError as exc:
            pytest.skip(f"network namespaces are not usable here: {exc}")
        p.wait_slave()
        yield p
    finally:
        p.close()


def test_slave_health_read_through_pmc_into_manifest(pair, tmp_path):
    ref = open_reference("realtime", None, ptp_uds=pair.uds[1], thresholds=TH)
    h = ref.health()
    d = h.detail
    assert h.basis == "linuxptp", h.note
    assert d["gm_present"] is True
    assert d["port_states"] == ["SLAVE"]
    assert isinstance(d["master_offset_ns"], int)
    assert isinstance(d["mean_path_delay_ns"], int) and d["mean_path_delay_ns"] > 0
    assert d["timestamping"] == ["SOFTWARE"] and d["interfaces"] == [pair.veth[1]]
    assert d["gm_identity"] and d["sync_age_ns"] is not None and d["sync_age_ns"] < 2 * NS
    assert h.grade in ("ok", "warn"), h.problems
    assert h.verified
    terms = d["uncertainty_terms"]
    # software stamps: ptp4l disciplines CLOCK_REALTIME itself, no phc2sys term
    assert terms["system_clock_ns"] == 0
    assert terms["offset_ns"] == d["abs_offset_ns"] >= abs(d["master_offset_ns"])
    assert terms["asymmetry_ns"] == d["mean_path_delay_ns"]
    assert h.uncertainty_ns == sum(terms.values())
    # the lead's path: reference_for_run, the snapshot into the manifest
    ref2, start = reference_for_run("realtime", None, False, ptp_uds=pair.uds[1], thresholds=TH)
    manifest = {"reference": start.as_dict(), "reference_end": ref2.health().as_dict()}
    back = json.loads(json.dumps(manifest))
    assert back["reference"]["detail"]["port_states"] == ["SLAVE"]
    assert back["reference"]["basis"] == "linuxptp" and back["reference"]["verified"] is True
    assert back["reference_end"]["detail"]["gm_identity"] == d["gm_identity"]
    print(f"\nveth, software stamps: master_offset {d['master_offset_ns']} ns, mean path delay "
          f"{d['mean_path_delay_ns']} ns, bound {h.uncertainty_ns} ns ({terms})")


def test_bench_reads_the_same_figures_as_pmc(pair):
    """The parsed snapshot agrees with pmc's own printout taken right after."""
    ref = Reference(None, Discipline(uds=pair.uds[1], thresholds=TH))
    h = ref.health()
    out = _run("pmc", "-u", "-b", "0", "-s", pair.uds[1], "-i", str(pair.dir / "raw.sock"),
               "GET TIME_STATUS_NP").stdout
    assert f"gmIdentity                 {h.detail['gm_identity']}" in out
    assert "gmPresent                  true" in out


def test_rackclock_check_shows_the_slave(pair, tmp_path, capsys):
    from bench.commands import check

    rack = tmp_path / "rack.toml"
    rack.write_text('[rack]\nname = "netns"\nreference = "realtime"\n')
    rc = check.main(["--rack", str(rack), "--ptp-uds", pair.uds[1]])
    out = capsys.readouterr().out
    assert "verified (linuxptp)" in out and "ports SLAVE" in out and "SOFTWARE stamps" in out, out
    assert rc == (0 if "grade fail" not in out else 1)


def test_stopping_the_grandmaster_degrades_the_grade(pair, tmp_path):
    ref = open_reference("realtime", None, ptp_uds=pair.uds[1], thresholds=TH)
    mon = HealthMonitor(ref, tmp_path, interval_s=0.2).start()
    try:
        deadline = time.monotonic() + 20
        while len(mon.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mon.worst()[0] in ("ok", "warn"), [h.problems for h in mon.samples]
        pair.stop_gm()
        t_stop = time.monotonic()
        # ptp4l's announce timeout here is 3 x 0.25 s, the test's sync-age fail threshold 2 s:
        # the grade must fail within those plus generous slack for a loaded machine.
        limit = 0.75 + TH.sync_age_fail_ns / NS + 8.0
        while mon.worst()[0] != "fail" and time.monotonic() - t_stop < limit:
            time.sleep(0.1)
        grade, max_off = mon.worst()
    finally:
        run = mon.stop()
    assert grade == "fail", [h.problems for h in mon.samples[-3:]]
    assert max_off is not None and max_off >= 0
    assert not run.verified and run.grade == "fail" and "UNVERIFIED" in run.note
    failed = [h for h in mon.samples if h.grade == "fail"]
    assert any("LISTENING" in p or "Sync" in p or "grandmaster" in p
               for h in failed for p in h.problems), failed[-1].problems
    rows = (tmp_path / "reference.csv").read_text().splitlines()
    assert rows[0].startswith("t_ns,grade,verified")
    assert len(rows) - 1 == len(mon.samples)
    grades = [r.split(",")[1] for r in rows[1:]]
    assert grades[0] in ("ok", "warn") and grades[-1] == "fail"
