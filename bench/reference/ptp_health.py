"""linuxptp's health as the bench sees it: ptp4l's state read with `pmc`, graded, and turned into
a bound on the reference's own error.

`pmc` is run as a subprocess (`pmc -u -b 0 -s <uds> 'GET ...' ...`, one process per snapshot) rather
than speaking the PTP management protocol over the UDS by hand: pmc is linuxptp's own client, it
tracks ptp4l's TLV layouts across versions (PORT_STATS_NP, TIME_STATUS_NP are linuxptp extensions
whose layouts have grown), and a snapshot a second costs one fork and ~100 ms of pmc's own
wait-for-stragglers, which is nothing next to a 1 s health interval. What is written here is the
parsing of pmc's text, the grading (thresholds after facebook/time's `ptpcheck diag`), the
detection of phc2sys (it serves no management socket of its own: its `-z` names ptp4l's), and the
kernel's own view of CLOCK_REALTIME's discipline (adjtimex, read-only).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field

from bench.errors import RackclockError

NS = 1_000_000_000
DEFAULT_UDS = ("/var/run/ptp4l", "/var/run/ptp/ptp4l")      # linuxptp 3.x, 4.x defaults
QUERIES = ("TIME_STATUS_NP", "PORT_DATA_SET", "CURRENT_DATA_SET", "PORT_PROPERTIES_NP",
           "PORT_STATS_NP", "TIME_PROPERTIES_DATA_SET", "PARENT_DATA_SET")
GRADES = ("ok", "warn", "fail")


class PtpHealthError(RackclockError):
    """linuxptp could not be asked (no pmc, no ptp4l answering, permission)."""


# -- configuration ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PtpThresholds:
    """When a snapshot is ok, warn or fail (after facebook/time's `ptpcheck diag`)."""

    offset_warn_ns: int = 250_000            # |offset from GM|
    offset_fail_ns: int = 1_000_000
    sync_age_warn_ns: int = 1 * NS           # time since the last Sync was received
    sync_age_fail_ns: int = 5 * NS
    path_delay_warn_ns: int = 100_000_000    # mean path delay
    path_delay_fail_ns: int = 250_000_000
    phc_sys_warn_ns: int = 250_000           # |PHC - CLOCK_REALTIME| where phc2sys disciplines it
    phc_sys_fail_ns: int = 1_000_000
    good_port_states: tuple[str, ...] = ("SLAVE", "MASTER", "GRAND_MASTER")


@dataclass(frozen=True)
class UncertaintyPolicy:
    """How a snapshot becomes a bound on the reference's own error, in ns:

        |offset from GM| + asymmetry_fraction * meanPathDelay + system-clock term + extra_ns

    With one-way delays d1, d2 >= 0 the offset error from path asymmetry is (d1 - d2) / 2, at most
    meanPathDelay = (d1 + d2) / 2: fraction 1.0 is a proof, smaller fractions are a judgement.
    The system-clock term is the measured |PHC - CLOCK_REALTIME| plus half its bracket where the
    PHC behind ptp4l can be read; where it cannot, `phc2sys_allowance_ns`. With software
    timestamping ptp4l disciplines CLOCK_REALTIME itself and the term is zero. `extra_ns` is the
    user's allowance for what PTP cannot see (the GM's own error against UTC).
    """

    asymmetry_fraction: float = 1.0
    phc2sys_allowance_ns: int = 50_000
    extra_ns: int = 0


# -- pmc ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PmcResponse:
    source: str                     # sourcePortIdentity, e.g. "b6f427.fffe.9841f1-1"
    seq: int
    action: str                     # RESPONSE | ACKNOWLEDGE ...
    tlv: str                        # e.g. TIME_STATUS_NP, or MANAGEMENT_ERROR_STATUS
    fields: dict = field(default_factory=dict)

    @property
    def port(self) -> int:
        return int(self.source.rsplit("-", 1)[1]) if "-" in self.source else 0

    @property
    def clock_identity(self) -> str:
        return self.source.rsplit("-", 1)[0]


_HEAD = re.compile(r"^\s*(\S+) seq (\d+) (\S+) (MANAGEMENT(?:_ERROR_STATUS)?|unknown-tlv)\s*(\S*)")


def parse_pmc(text: str) -> list[PmcResponse]:
    """pmc's printed responses; field values stay strings (`figures` converts them)."""
    out: list[PmcResponse] = []
    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            source, seq, action, kind, tlv = m.groups()
            if kind != "MANAGEMENT":
                tlv = kind
            out.append(PmcResponse(source, int(seq), action, tlv or "empty", {}))
            continue
        if out and line.startswith("\t\t"):
            parts = line.strip().split(None, 1)
            if parts:
                out[-1].fields[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


class Pmc:
    """One ptp4l, asked through linuxptp's `pmc` over its UNIX domain socket."""

    _counter = itertools.count()

    def __init__(self, uds: str = DEFAULT_UDS[0], domain: int = 0, timeout_s: float = 3.0,
                 pmc: str | None = None):
        self.uds = uds
        self.domain = int(domain)
        self.timeout_s = timeout_s
        self.pmc = pmc or shutil.which("pmc") or shutil.which("pmc", path="/usr/sbin:/sbin")

    def query(self, *names: str) -> dict[str, list[PmcResponse]]:
        """GET each management id; {id: responses} (one per port for port data sets, [] when
        ptp4l did not answer that id, MANAGEMENT_ERROR_STATUS responses under their id)."""
        if not self.pmc:
            raise PtpHealthError("pmc (linuxptp) is not installed")
        if not os.path.exists(self.uds):
            raise PtpHealthError(f"no ptp4l management socket at {self.uds}")
        # pmc binds its own socket; put it in a private temp dir (the default /var/run/pmc.PID
        # needs root) and remove it after.
        here = tempfile.mkdtemp(prefix="rcpmc")
        local = os.path.join(here, f"c{next(self._counter)}")
        cmd = [self.pmc, "-u", "-b", "0", "-d", str(self.domain), "-s", self.uds, "-i", local,
               *(f"GET {n}" for n in names)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise PtpHealthError(f"pmc did not finish within {self.timeout_s} s on {self.uds}") from None
        finally:
            shutil.rmtree(here, ignore_errors=True)
        responses = parse_pmc(p.stdout)
        out = _by_id(responses, names)
        if not responses:
            err = " ".join(p.stderr.split())[:300]
            raise PtpHealthError(f"ptp4l at {self.uds} did not answer pmc"
                                 + (f" (pmc said: {err})" if err else "")
                                 + f" (domain {self.domain})")
        return out


def _by_id(responses: list[PmcResponse], names: tuple[str, ...]) -> dict[str, list[PmcResponse]]:
    """{id: responses}. An error response does not name its id; pmc numbers the requests it
    sends 0, 1, 2 ... in command-line order (all of ours are ones it sends), so the sequence
    number does."""
    out: dict[str, list[PmcResponse]] = {n: [] for n in names}
    for r in responses:
        if r.tlv in out:
            name = r.tlv
        else:
            name = names[r.seq] if 0 <= r.seq < len(names) else r.tlv
        out.setdefault(name, []).append(r)
    return out


# -- phc2sys and the kernel's view -------------------------------------------------------------------
def phc2sys_processes() -> list[dict]:
    """Running phc2sys processes and their options (phc2sys serves no socket of its own)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        args = _phc2sys_args(pid)
        if not args:                 # not phc2sys, gone, mid-exec (comm set, arguments not yet) or a zombie
            continue
        opts = _phc2sys_options(args[1:])
        found.append({"pid": int(pid), "args": args[1:],
                      "source": (opts.get("-s") or [""])[0],
                      "sinks": opts.get("-c", []) or (["CLOCK_REALTIME"] if "-a" not in opts else []),
                      "automatic": "-a" in opts, "uds": (opts.get("-z") or [""])[0]})
    return found


def _phc2sys_args(pid: str) -> list[str] | None:
    """The command line of process `pid` where it is phc2sys; None where it is not (or is gone)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() != "phc2sys":
                return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


PHC2SYS_VALUED = ("-s", "-c", "-d", "-z", "-O", "-n", "-f", "-E", "-R", "-N", "-L", "-F")


def _phc2sys_options(args: list[str]) -> dict[str, list[str]]:
    """phc2sys's options, each with its values in order ("" for a flag)."""
    opts: dict[str, list[str]] = {}
    it = iter(args)
    for a in it:
        if a in PHC2SYS_VALUED:
            opts.setdefault(a, []).append(next(it, ""))
        elif a.startswith("-"):
            opts.setdefault(a, []).append("")
    return opts


class _Timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("constant", ctypes.c_long), ("precision", ctypes.c_long),
                ("tolerance", ctypes.c_long), ("time_sec", ctypes.c_long),
                ("time_usec", ctypes.c_long), ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long),
                ("jitter", ctypes.c_long), ("shift", ctypes.c_int), ("stabil", ctypes.c_long),
                ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long), ("errcnt", ctypes.c_long),
                ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int), ("_pad", ctypes.c_int * 11)]


STA_UNSYNC = 0x0040
STA_NANO = 0x2000


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """libc, loaded once (find_library runs `ldconfig -p` in a subprocess each time it is asked;
    a health sample every 5 s asked it each time)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def kernel_clock_status() -> dict | None:
    """adjtimex with modes = 0 (reads, never sets): is CLOCK_REALTIME marked synchronized, and the
    error estimates the disciplining daemon left there."""
    try:
        tx = _Timex()
        state = _libc().adjtimex(ctypes.byref(tx))
    except (OSError, AttributeError):
        return None
    if state < 0:
        return None
    return {"state": ["TIME_OK", "TIME_INS", "TIME_DEL", "TIME_OOP", "TIME_WAIT",
                      "TIME_ERROR"][state] if state <= 5 else str(state),
            "synchronized": not tx.status & STA_UNSYNC, "maxerror_ns": tx.maxerror * 1000,
            "esterror_ns": tx.esterror * 1000, "freq_ppb": round(tx.freq * 1000 / 65536),
            "tai_s": tx.tai}


# -- a snapshot ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PtpSnapshot:
    """ptp4l's state at reference instant `t_ns` as pmc reported it; figures in ns."""

    t_ns: int
    uds: str
    clock_identity: str = ""
    gm_present: bool | None = None
    gm_identity: str = ""
    master_offset_ns: int | None = None
    ingress_time_ns: int | None = None
    offset_from_master_ns: int | None = None
    mean_path_delay_ns: int | None = None
    steps_removed: int | None = None
    ports: tuple = ()                         # dicts: port, state, timestamping, interface, rx_sync...
    utc_offset_s: int | None = None
    utc_offset_valid: bool | None = None
    ptp_timescale: bool | None = None
    unsupported: tuple = ()                   # ids ptp4l refused (e.g. PORT_STATS_NP on old ones)
    phc: str | None = None                    # /dev/ptpN behind the slave port (hardware stamps)
    phc_sys_offset_ns: int | None = None      # PHC (as UTC) - CLOCK_REALTIME, measured
    phc_sys_bracket_ns: int | None = None
    phc2sys: tuple = ()                       # running phc2sys processes
    kernel: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def port_states(self) -> tuple[str, ...]:
        return tuple(p.get("state", "?") for p in self.ports)

    @property
    def hardware(self) -> bool:
        return any(p.get("timestamping", "").startswith("HARDWARE") or
                   p.get("timestamping", "") in ("ONESTEP", "P2P1STEP") for p in self.ports)

    @property
    def abs_offset_ns(self) -> int | None:
        vals = [abs(v) for v in (self.master_offset_ns, self.offset_from_master_ns) if v is not None]
        return max(vals) if vals else None


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v)                       # ingress_time needs all 19 digits
    except ValueError:
        pass
    try:
        return int(round(float(v)))         # TimeInterval printed as "310.0"
    except ValueError:
        return None


def _bool(v: str | None) -> bool | None:
    if v is None:
        return None
    return v.strip().lower() in ("true", "1", "yes")


_PORT_FIELDS = (("PORT_DATA_SET", {"portState": "state",
                                   "peerMeanPathDelay": "peer_mean_path_delay_ns"}),
                ("PORT_PROPERTIES_NP", {"portState": "state", "timestamping": "timestamping",
                                        "interface": "interface"}),
                ("PORT_STATS_NP", {"rx_Sync": "rx_sync", "rx_Announce": "rx_announce",
                                   "rx_Delay_Resp": "rx_delay_resp",
                                   "rx_Pdelay_Resp": "rx_pdelay_resp",
                                   "tx_Delay_Req": "tx_delay_req"}))


def _first(answers: dict[str, list[PmcResponse]], name: str) -> PmcResponse | None:
    for r in answers.get(name, []):
        if r.tlv == name:
            return r
    return None


def _field(r: PmcResponse | None, key: str, default: str | None = None) -> str | None:
    """A field of an answer; `default` when the answer or the field is absent."""
    return r.fields.get(key, default) if r else default


def _ports(answers: dict[str, list[PmcResponse]]) -> tuple[dict, ...]:
    """Per port, what the port TLVs say, under our names (counts and delays as int)."""
    ports: dict[int, dict] = {}
    for name, key_map in _PORT_FIELDS:
        for r in answers.get(name, []):
            if r.tlv != name:
                continue
            p = ports.setdefault(r.port, {"port": r.port})
            for src, dst in key_map.items():
                if src in r.fields:
                    v = r.fields[src]
                    p[dst] = _int(v) if dst.endswith(("_ns",)) or dst.startswith(("rx_", "tx_")) else v
    return tuple(ports[k] for k in sorted(ports))


def snapshot_from(answers: dict[str, list[PmcResponse]], t_ns: int, uds: str = "") -> PtpSnapshot:
    """Build a snapshot from pmc's answers (no I/O)."""
    unsupported = tuple(sorted(n for n, rs in answers.items()
                               if rs and all(r.tlv == "MANAGEMENT_ERROR_STATUS" for r in rs)))
    ts = _first(answers, "TIME_STATUS_NP")
    cds = _first(answers, "CURRENT_DATA_SET")
    tp = _first(answers, "TIME_PROPERTIES_DATA_SET")
    any_r = next((r for rs in answers.values() for r in rs), None)
    return PtpSnapshot(
        t_ns=int(t_ns), uds=uds,
        clock_identity=any_r.clock_identity if any_r else "",
        gm_present=_bool(_field(ts, "gmPresent")),
        gm_identity=_field(ts, "gmIdentity", "") or "",
        master_offset_ns=_int(_field(ts, "master_offset")),
        ingress_time_ns=_int(_field(ts, "ingress_time")),
        offset_from_master_ns=_int(_field(cds, "offsetFromMaster")),
        mean_path_delay_ns=_int(_field(cds, "meanPathDelay")),
        steps_removed=_int(_field(cds, "stepsRemoved")),
        ports=_ports(answers),
        utc_offset_s=_int(_field(tp, "currentUtcOffset")),
        utc_offset_valid=_bool(_field(tp, "currentUtcOffsetValid")),
        ptp_timescale=_bool(_field(tp, "ptpTimescale")),
        unsupported=unsupported,
    )


def take_snapshot(pmc: Pmc, now_ns, measure_phc: bool = True) -> PtpSnapshot:
    """Ask ptp4l (raises PtpHealthError when it cannot be asked), then add what the host shows:
    phc2sys processes, adjtimex, and |PHC - CLOCK_REALTIME| where ptp4l uses a readable PHC."""
    from dataclasses import replace

    answers = pmc.query(*QUERIES)
    snap = snapshot_from(answers, now_ns(), pmc.uds)
    extra: dict = {"phc2sys": tuple(phc2sys_processes()), "kernel": kernel_clock_status()}
    if measure_phc and snap.hardware:
        from bench.reference.phc import Phc, PhcError, phc_of_interface

        for p in snap.ports:
            dev = phc_of_interface(p.get("interface", "")) if p.get("interface") else None
            if not dev:
                continue
            try:
                with Phc(dev) as phc:
                    so = phc.sys_offset()
            except PhcError:
                continue
            tai = (snap.utc_offset_s or 0) * NS if snap.ptp_timescale else 0
            extra.update(phc=dev, phc_sys_offset_ns=so.offset_ns - tai,
                         phc_sys_bracket_ns=so.bracket_ns)
            break
    return replace(snap, **extra)


# -- grading ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grade:
    grade: str                        # ok | warn | fail
    problems: tuple[str, ...] = ()
    sync_age_ns: int | None = None


def _worse(a: str, b: str) -> str:
    return a if GRADES.index(a) >= GRADES.index(b) else b


class _Flags:
    """The grade so far and the problems, in the order they were found."""

    def __init__(self) -> None:
        self.grade = "ok"
        self.problems: list[str] = []

    def __call__(self, level: str, text: str) -> None:
        self.grade = _worse(self.grade, level)
        self.problems.append(f"{level}: {text}")


def _grade_ports(snap: PtpSnapshot, th: PtpThresholds, flag: _Flags) -> bool:
    """Port states and the grandmaster's presence; whether this host is the grandmaster."""
    states = snap.port_states
    is_gm = bool(states) and all(s in ("MASTER", "GRAND_MASTER") for s in states) and \
        snap.gm_identity in ("", snap.clock_identity)
    if not states:
        flag("fail", "ptp4l reported no port state")
    for p in snap.ports:
        if p.get("state") not in th.good_port_states:
            flag("fail", f"port {p['port']} ({p.get('interface', '?')}) is {p.get('state', '?')}, "
                         f"not SLAVE or MASTER")
    if is_gm:
        flag.problems.append("note: this host is the grandmaster; its own time source is not "
                             "checked")
    elif snap.gm_present is not True:
        flag("fail", "no grandmaster present")
    return is_gm


def _grade_offset(snap: PtpSnapshot, th: PtpThresholds, flag: _Flags) -> None:
    off = snap.abs_offset_ns
    if off is None:
        flag("fail", "no offset from master reported")
    elif off > th.offset_fail_ns:
        flag("fail", f"offset from GM {off} ns exceeds {th.offset_fail_ns} ns")
    elif off > th.offset_warn_ns:
        flag("warn", f"offset from GM {off} ns exceeds {th.offset_warn_ns} ns")


def _grade_path_delay(snap: PtpSnapshot, th: PtpThresholds, flag: _Flags) -> None:
    d = snap.mean_path_delay_ns
    if d is None or d <= 0:
        # ptp4l reports 0 until its first delay measurement: no bound on asymmetry yet
        flag("fail", f"mean path delay not measured ({d} ns)")
    elif d > th.path_delay_fail_ns:
        flag("fail", f"mean path delay {d} ns exceeds {th.path_delay_fail_ns} ns")
    elif d > th.path_delay_warn_ns:
        flag("warn", f"mean path delay {d} ns exceeds {th.path_delay_warn_ns} ns")


def _grade_sync_age(snap: PtpSnapshot, th: PtpThresholds, now_ns: int | None,
                    flag: _Flags) -> int | None:
    """How long ago the last Sync arrived (None: none did), flagged when old or in the future."""
    if not snap.ingress_time_ns:
        flag("fail", "no Sync received (ingress_time is 0)")
        return None
    # ingress_time is in ptp4l's clock: UTC for software stamps, the PHC (TAI when the GM
    # uses the PTP timescale) for hardware stamps.
    now = snap.t_ns if now_ns is None else now_ns
    if snap.hardware and snap.ptp_timescale and snap.utc_offset_s:
        now += snap.utc_offset_s * NS
    age = now - snap.ingress_time_ns
    if age < -th.sync_age_warn_ns:
        flag("fail", f"last Sync is {-age} ns in the future of this host's clock")
    elif age > th.sync_age_fail_ns:
        flag("fail", f"last Sync was {age / NS:.1f} s ago (> {th.sync_age_fail_ns / NS:g} s)")
    elif age > th.sync_age_warn_ns:
        flag("warn", f"last Sync was {age / NS:.1f} s ago (> {th.sync_age_warn_ns / NS:g} s)")
    return age


def _grade_phc(snap: PtpSnapshot, th: PtpThresholds, flag: _Flags) -> None:
    if snap.phc_sys_offset_ns is not None:
        d = abs(snap.phc_sys_offset_ns)
        if d > th.phc_sys_fail_ns:
            flag("fail", f"CLOCK_REALTIME is {d} ns from the PHC {snap.phc} (phc2sys not keeping it)")
        elif d > th.phc_sys_warn_ns:
            flag("warn", f"CLOCK_REALTIME is {d} ns from the PHC {snap.phc}")
    elif snap.hardware and not snap.phc2sys:
        flag("warn", "ptp4l uses hardware stamps but no phc2sys runs to carry them to CLOCK_REALTIME")


def grade(snap: PtpSnapshot, th: PtpThresholds = PtpThresholds(), now_ns: int | None = None) -> Grade:
    """Grade a snapshot. `now_ns` is CLOCK_REALTIME (UTC) at grading, default the snapshot's."""
    flag = _Flags()
    age = None
    if not _grade_ports(snap, th, flag):
        _grade_offset(snap, th, flag)
        _grade_path_delay(snap, th, flag)
        age = _grade_sync_age(snap, th, now_ns, flag)
    _grade_phc(snap, th, flag)
    return Grade(flag.grade, tuple(flag.problems), age)


def uncertainty_ns(snap: PtpSnapshot, policy: UncertaintyPolicy = UncertaintyPolicy(),
                   reference_is_phc: bool = False) -> tuple[int, dict]:
    """The bound on the reference's own error this snapshot supports, and its terms (ns)."""
    off = snap.abs_offset_ns or 0
    asym = int(round(policy.asymmetry_fraction * max(0, snap.mean_path_delay_ns or 0)))
    if reference_is_phc or not snap.hardware:
        sysclk = 0
    elif snap.phc_sys_offset_ns is not None:
        sysclk = abs(snap.phc_sys_offset_ns) + (snap.phc_sys_bracket_ns or 0) // 2 + 1
    else:
        sysclk = int(policy.phc2sys_allowance_ns)
    terms = {"offset_ns": off, "asymmetry_ns": asym, "system_clock_ns": sysclk,
             "extra_ns": int(policy.extra_ns)}
    return sum(terms.values()), terms


def find_uds(candidates=DEFAULT_UDS) -> str | None:
    for c in candidates:
        if os.path.exists(c):
            return c
    return None
