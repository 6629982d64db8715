"""IPMI BMCs of the simulated rack: OpenIPMI's `ipmi_sim` (Debian `openipmi`), one process per device.

Nothing here emulates IPMI: `ipmi_sim` is a real RMCP+ BMC simulator we did not write. This module
writes its `lan.conf` (one LAN channel on 127.0.0.1, the rack's user and password) and command file
(`mc_setbmc 0x20`, `mc_add`, `sel_enable`, `mc_enable`), starts it (`-n -s STATEDIR`, its own
session, stdin from /dev/null), waits until it answers, and stops it with the rack.

Its SEL clock (measured, and in OpenIPMI's lanserv source) is the host's CLOCK_MONOTONIC in whole
seconds plus an offset that Set SEL Time sets: `floor(mono_s) + off`. Until set, off = 0, so the
"pre-init" SEL time counts seconds since the host booted. The truth is therefore the host's own
clocks: `HostSelTruth` keeps (CLOCK_REALTIME, CLOCK_MONOTONIC) pairs taken while serving, and the
SEL clock's offset against the reference (CLOCK_REALTIME) is `mono - real + off` (minus the
declared zone's UTC offset when the driver reads SEL stamps as local time).

Sim keys (the device's [sim] table): `sel_set` ("none": stay pre-init, the default; "utc"; or
"local": local time in the device's `sel_timezone`), `sel_offset_s` (whole seconds added when
setting), `firmware` ("major.minor", the minor in BCD as Get Device ID carries it).
"""
from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from bench import safeio
from bench.config.inventory import DeviceConfig
from bench.config.schema import YEARS_100_S, choice, num
from bench.ports import free_port
from bench.sim.clock_model import exact_truth
from bench.sim.host_clocks import host_clock_pair

# this emulator's own keys of a device's [sim] table (bench/sim/simtable.py adds the clock's)
SIM_KEYS = {"sel_set": choice("none", "utc", "local"),
            "sel_offset_s": num(-YEARS_100_S, YEARS_100_S, "s", "int")}

NS = 1_000_000_000
PR_SET_PDEATHSIG = 1


def ipmi_sim_path() -> str | None:
    return shutil.which("ipmi_sim") or shutil.which("ipmi_sim", path="/usr/bin:/usr/sbin:/sbin")


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started us dies (no orphans)."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


class IpmiSim:
    """One `ipmi_sim` process serving one BMC on 127.0.0.1:`port` (UDP)."""

    def __init__(self, username: str, password: str, port: int | None = None,
                 firmware: str = "1.00", workdir: str | Path | None = None, name: str = "rackclock"):
        exe = ipmi_sim_path()
        if exe is None:
            raise RuntimeError("ipmi_sim is not installed (Debian package openipmi)")
        self.exe = exe
        if len(password.encode()) > 20 or not password:
            raise ValueError("an IPMI password is 1 to 20 bytes")
        self.username, self.password = username, password
        self.port = port or free_port(socket.SOCK_DGRAM)
        self.firmware = firmware
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="rackclock-ipmisim-"))
        safeio.make_folder(self.dir)
        self.name = name
        self.proc: subprocess.Popen | None = None

    def _files(self) -> tuple[Path, Path, Path]:
        major, _, minor = self.firmware.partition(".")
        lan = (f'name "{self.name}"\nset_working_mc 0x20\n  startlan 1\n'
               f"    addr 127.0.0.1 {self.port}\n    priv_limit admin\n"
               "    allowed_auths_callback none md2 md5 straight\n"
               "    allowed_auths_user none md2 md5 straight\n"
               "    allowed_auths_operator none md2 md5 straight\n"
               "    allowed_auths_admin none md2 md5 straight\n"
               "    guid a123456789abcdefa123456789abcdef\n  endlan\n"
               f'  user 2 true "{self.username}" "{self.password}" admin 10 none md2 md5 straight\n')
        cmds = ("mc_setbmc 0x20\n"
                f"mc_add 0x20 0 no-device-sdrs 0x23 0x{int(major or 1):x} 0x{int(minor or '0', 16):02x} "
                "0x9f 0x1291 0xf02 persist_sdr\n"
                "sel_enable 0x20 1000 0x0a\nmc_enable 0x20\n")
        state = self.dir / "state"
        safeio.make_folder(state)
        lan_path, cmd_path = self.dir / "lan.conf", self.dir / "cmds.emu"
        safeio.write_text(lan_path, lan, mode=0o600)
        safeio.write_text(cmd_path, cmds)
        return lan_path, cmd_path, state

    def start(self, timeout_s: float = 15.0) -> IpmiSim:
        self.spawn()
        return self.wait_ready(timeout_s)

    def spawn(self) -> None:
        """Start the process. It is sent SIGTERM when the thread that spawned it ends: spawn from
        a thread that lives as long as the BMC should (not a pool's worker)."""
        lan, cmds, state = self._files()
        with safeio.append(self.dir / "ipmi_sim.log") as log:
            self.proc = subprocess.Popen([self.exe, "-c", str(lan), "-f", str(cmds), "-n", "-s",
                                          str(state)], stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, start_new_session=True,
                                         preexec_fn=_die_with_parent)

    def wait_ready(self, timeout_s: float = 15.0) -> IpmiSim:
        proc = self.proc
        if proc is None:
            raise RuntimeError("ipmi_sim was not spawned")
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"ipmi_sim exited with {proc.returncode}: "
                                   f"{(self.dir / 'ipmi_sim.log').read_text(errors='replace')[-500:]}")
            if self.answers():
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ipmi_sim did not answer on 127.0.0.1:{self.port} within "
                                   f"{timeout_s:g} s")
            time.sleep(0.05)

    def answers(self) -> bool:
        """Does it answer an RMCP/ASF presence ping?"""
        ping = bytes([0x06, 0x00, 0xFF, 0x06]) + struct.pack(">IBBBB", 4542, 0x80, 0x11, 0, 0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.2)
            try:
                s.sendto(ping, ("127.0.0.1", self.port))
                return len(s.recv(512)) >= 12
            except OSError:
                return False

    def session(self):
        """A python-ipmi RMCP+ session with this BMC (the caller closes it)."""
        import pyipmi
        import pyipmi.interfaces
        intf = pyipmi.interfaces.create_interface("rmcpplus", keep_alive_interval=0)
        ipmi = pyipmi.create_connection(intf)
        ipmi.session.set_session_type_rmcp("127.0.0.1", port=self.port)
        ipmi.session.set_auth_type_user(self.username, self.password)
        ipmi.target = pyipmi.Target(ipmb_address=0x20)
        ipmi.open()
        return ipmi

    def set_sel_time(self, seconds: int) -> None:
        ipmi = self.session()
        try:
            rsp = ipmi.send_raw(0, 0x0A, b"\x49" + struct.pack("<I", seconds))
            if bytes(rsp)[:1] != b"\x00":
                raise RuntimeError(f"Set SEL Time answered {bytes(rsp).hex(' ')}")
        finally:
            ipmi.close()

    def sel_offset_s(self, attempts: int = 50) -> int:
        """`off` in SEL = floor(mono_s) + off, from a Get SEL Time whose round trip lies inside
        one monotonic second (so floor(mono_s) at the BMC's sample is known exactly)."""
        ipmi = self.session()
        try:
            for _ in range(attempts):
                m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                rsp = bytes(ipmi.send_raw(0, 0x0A, b"\x48"))
                m2 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                if m1 // NS == m2 // NS and rsp[:1] == b"\x00" and len(rsp) == 5:
                    return struct.unpack("<I", rsp[1:5])[0] - m1 // NS
                time.sleep(0.01)
        finally:
            ipmi.close()
        raise RuntimeError("no Get SEL Time inside one monotonic second")

    def stop(self) -> None:
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def __enter__(self) -> IpmiSim:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class HostSelTruth:
    """Truth of an `ipmi_sim` SEL clock: value = CLOCK_MONOTONIC + off_s (whole seconds), shown in
    whole seconds; as the driver reports it (after reading local time in `zone`), minus the zone's
    UTC offset. Duck-types bench.sim.clock_model.ClockModel's `truth(grid)` for truth.json."""

    def __init__(self, off_s: int, counter: bool, zone=None, firmware: str = ""):
        self.off_s = int(off_s)
        self.counter = counter
        self.zone = zone
        self.firmware = firmware
        self.pairs: list[tuple[int, int]] = []
        self.note()

    def note(self) -> None:
        r, m, _ = host_clock_pair()
        self.pairs.append((r, m - r))

    def offset_ns(self, t_ns: int) -> int:
        """Device minus reference at t: mono - real (from the last pair at or before t) + off."""
        d = self.pairs[0][1]
        for r, dd in self.pairs:
            if r <= t_ns:
                d = dd
        off = d + self.off_s * NS
        if self.zone is not None and not self.counter:
            from bench.model.logformats import ns_to_sel_seconds
            off -= (ns_to_sel_seconds(t_ns, self.zone) - t_ns // NS) * NS
        return off

    def truth(self, t_grid_ns) -> dict:
        ts = [int(t) for t in t_grid_ns]
        return {"t_ns": ts, "offset_ns": [self.offset_ns(t) for t in ts],
                "drift_ppm": [0.0] * len(ts), "resolution_ns": NS, "counter": self.counter,
                "tz_error_ns": 0, "firmware": self.firmware, "breaks": [],
                **({"exact": exact_truth(self, self.knots(ts[0], ts[-1]))}
                   if ts and self._zone_s(ts[0]) == self._zone_s(ts[-1]) else {})}

    def _zone_s(self, t_ns: int) -> int:
        """The zone's UTC offset the driver removes at t, s (0 without a zone or for a counter)."""
        if self.zone is None or self.counter:
            return 0
        from bench.model.logformats import ns_to_sel_seconds
        return ns_to_sel_seconds(t_ns, self.zone) - t_ns // NS

    def knots(self, t_lo: int, t_hi: int) -> list[int]:
        """Both sides of every pair noted: between them the offset is constant (the zone's
        offset the same at both ends: `truth` gives no exact truth across a change of it)."""
        xs = {t_lo, t_hi, *(t for r, _ in self.pairs for t in (r - 1, r))}
        return sorted(x for x in xs if t_lo <= x <= t_hi)


async def serve(devices: list[DeviceConfig], ctx) -> dict[str, dict]:
    """Start one `ipmi_sim` per device; raises (so the rack leaves these devices out, with the
    reason) when ipmi_sim is not installed."""
    if ipmi_sim_path() is None:
        raise RuntimeError("ipmi_sim is not installed (Debian package openipmi): IPMI devices "
                           "are left out of this run")
    from bench.model.logformats import ns_to_sel_seconds, sel_zone
    out: dict[str, dict] = {}
    sims: list[IpmiSim] = []
    truths: list[HostSelTruth] = []

    async def stop_all():
        for s in sims:
            await asyncio.to_thread(s.stop)

    ctx.add_cleanup(stop_all)
    for d in devices:
        sim = dict(d.sim or {})
        password = d.secret() or ""
        ipmi = IpmiSim(d.username or "admin", password, firmware=str(sim.get("firmware", "1.00")),
                       workdir=ctx.workdir / f"ipmi-{d.name}")
        ipmi.spawn()
        sims.append(ipmi)
        await asyncio.to_thread(ipmi.wait_ready)
        mode = str(sim.get("sel_set", "none")).lower()
        declared = sel_zone(d.options.get("sel_timezone"))
        if mode != "none":
            zone = declared if mode == "local" else None
            now = ctx.now_ns()
            await asyncio.to_thread(ipmi.set_sel_time, ns_to_sel_seconds(now, zone)
                                    + int(sim.get("sel_offset_s", 0)))
        off = await asyncio.to_thread(ipmi.sel_offset_s)
        truth = HostSelTruth(off, counter=mode == "none", zone=declared,
                             firmware=str(sim.get("firmware", "1.00")))
        truths.append(truth)
        clock = "sel_init" if mode == "none" else "sel"
        ctx.models(d, ())[clock] = truth
        ctx.record_event(d.name, "sel_offset", ctx.now_ns(), off_s=off, mode=mode)
        out[d.name] = {"address": f"ipmi://127.0.0.1:{ipmi.port}"}

    note_every_second(ctx, truths)
    return out


def note_every_second(ctx, truths: list) -> None:
    """Sample each host-clock truth (`.note()`) once a second while the rack is served."""
    async def watch_host_clocks():
        while True:
            await asyncio.sleep(1.0)
            for t in truths:
                t.note()

    task = asyncio.get_running_loop().create_task(watch_host_clocks())
    ctx.add_cleanup(task.cancel)
