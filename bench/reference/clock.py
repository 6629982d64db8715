"""The reference clock: integer-nanosecond UTC time, and what is known of its discipline.

Every bracket the bench records is two reads of this clock. `Reference.now_ns` is the hot path;
keep it a bare clock call.

Sources (the rack file's `reference` key):
  realtime        CLOCK_REALTIME (on a lab rack disciplined by ptp4l, or by phc2sys from a PHC)
  phc:/dev/ptpN   the PHC itself, read through its dynamic POSIX clock id (TAI -> UTC corrected)
  virtual         a clock advanced by hand (or running at a set rate) for simulations

What bounds the reference's own error (`Health.uncertainty_ns`, added to every bracket):
  linuxptp        ptp4l answers pmc and grades ok/warn: the bound is computed from its figures
                  (bench/reference/ptp_health.py: |offset| + path-delay asymmetry + system-clock term + extra)
  allowance       no usable linuxptp source: the user's explicit allowance, and the run is marked
                  unverified; without one, `reference_for_run` refuses on a non-simulated rack
  simulated       the emulators sample this very clock: the reference is exact by construction
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field, replace

from bench.errors import RackclockError
from bench.reference.ptp_health import (
    DEFAULT_UDS,
    NS,
    Pmc,
    PtpHealthError,
    PtpThresholds,
    UncertaintyPolicy,
    find_uds,
    grade,
    kernel_clock_status,
    take_snapshot,
    uncertainty_ns,
)
from bench.units import fmt_ns


@dataclass(frozen=True)
class Health:
    """What is known about the reference's discipline at one instant.

    `verified` is true only when the bound holds for a reason the bench checked: a discipline
    source (linuxptp) was read and graded ok or warn, or the rack is simulated (exact by
    construction). `uncertainty_ns` is the bound on the reference's own error that the bench adds
    to every bracket. `basis` says where that bound comes from: linuxptp | allowance | simulated |
    virtual | none.
    """

    source: str                      # "realtime", "phc:/dev/ptp0", "virtual"
    checked_ns: int                  # reference time of this snapshot
    verified: bool = False
    grade: str = "unverified"        # ok | warn | fail | unverified
    uncertainty_ns: int = 0
    detail: dict = field(default_factory=dict)
    note: str = "no discipline source was checked (linuxptp health not read)"
    basis: str = "none"
    problems: tuple = ()

    def as_dict(self) -> dict:
        return asdict(self)


GRADE_ORDER = ("ok", "warn", "unverified", "fail")


def worse_grade(a: str, b: str) -> str:
    rank = {g: i for i, g in enumerate(GRADE_ORDER)}
    return a if rank.get(a, 3) >= rank.get(b, 3) else b


class ReferenceRefused(RackclockError, RuntimeError):
    """The run cannot state a bound on the reference's error; the message says what to do."""


@dataclass(frozen=True)
class Discipline:
    """Where the reference's discipline is read from, and how it is graded (no I/O here)."""

    uds: str = DEFAULT_UDS[0]
    domain: int = 0
    thresholds: PtpThresholds = PtpThresholds()
    policy: UncertaintyPolicy = UncertaintyPolicy()


class Reference:
    """CLOCK_REALTIME as the reference (disciplined by phc2sys on a lab rack)."""

    source = "realtime"

    def __init__(self, allowance_ns: int | None = 0, discipline: Discipline | None = None,
                 simulated: bool = False):
        self.allowance_ns = None if allowance_ns is None else int(allowance_ns)
        self.discipline = discipline
        self.simulated = simulated
        self._pmc = Pmc(discipline.uds, discipline.domain) if discipline else None

    @staticmethod
    def now_ns() -> int:
        return time.clock_gettime_ns(time.CLOCK_REALTIME)

    def resolution_ns(self) -> int:
        return max(1, int(round(time.clock_getres(time.CLOCK_REALTIME) * 1e9)))

    def close(self) -> None:
        pass

    # -- health ------------------------------------------------------------------------------------
    def health(self) -> Health:
        """One graded snapshot of the reference's discipline (takes ~0.1 s when pmc is asked)."""
        t = self.now_ns()
        allowance = self.allowance_ns or 0
        if self.simulated:
            return Health(self.source, t, verified=True, grade="ok", uncertainty_ns=allowance,
                          basis="simulated",
                          note="simulated rack: the emulators sample this same clock, so the "
                               "reference is exact against their truth (uncertainty 0"
                               + (f", plus the given allowance {fmt_ns(allowance)})" if allowance else ")"))
        if self._pmc is None or self.discipline is None:   # both set, or neither (__init__)
            return Health(self.source, t, uncertainty_ns=allowance, basis="allowance",
                          detail={"kernel": kernel_clock_status()},
                          note=f"reference unverified: no linuxptp health source; its error is "
                               f"bounded only by the user's allowance of {fmt_ns(allowance)}")
        return self._ptp_health(t, self._pmc, self.discipline)

    def _ptp_health(self, t: int, pmc: Pmc, d: Discipline) -> Health:
        try:
            snap = take_snapshot(pmc, self._utc_now)
        except PtpHealthError as exc:
            return Health(self.source, t, verified=False, grade="fail",
                          uncertainty_ns=self.allowance_ns or 0, basis="allowance",
                          problems=(f"fail: {exc}",),
                          note=f"reference unverified: linuxptp could not be read ({exc})")
        g = grade(snap, d.thresholds, self._utc_now())
        bound, terms = uncertainty_ns(snap, d.policy, reference_is_phc=self.source.startswith("phc:"))
        detail = {"abs_offset_ns": snap.abs_offset_ns, "master_offset_ns": snap.master_offset_ns,
                  "offset_from_master_ns": snap.offset_from_master_ns,
                  "mean_path_delay_ns": snap.mean_path_delay_ns, "sync_age_ns": g.sync_age_ns,
                  "gm_present": snap.gm_present, "gm_identity": snap.gm_identity,
                  "port_states": list(snap.port_states), "steps_removed": snap.steps_removed,
                  "rx_sync": sum(p.get("rx_sync", 0) or 0 for p in snap.ports),
                  "timestamping": sorted({p.get("timestamping", "") for p in snap.ports}),
                  "interfaces": [p.get("interface", "") for p in snap.ports],
                  "phc": snap.phc, "phc_sys_offset_ns": snap.phc_sys_offset_ns,
                  "phc_sys_bracket_ns": snap.phc_sys_bracket_ns,
                  "phc2sys": [{"pid": p["pid"], "args": p["args"]} for p in snap.phc2sys],
                  "kernel": snap.kernel, "unsupported": list(snap.unsupported),
                  "uds": snap.uds, "uncertainty_terms": terms}
        if g.grade == "fail":
            if self.allowance_ns is not None:
                return Health(self.source, t, verified=False, grade="fail",
                              uncertainty_ns=max(self.allowance_ns, bound), detail=detail,
                              basis="allowance",
                              problems=g.problems,
                              note=f"reference unverified: linuxptp grades fail; its error is bounded "
                                   f"only by the user's allowance of {fmt_ns(self.allowance_ns)}")
            return Health(self.source, t, verified=False, grade="fail", uncertainty_ns=bound,
                          detail=detail, basis="linuxptp", problems=g.problems,
                          note="reference unverified: linuxptp grades fail, the figure is not a bound")
        return Health(self.source, t, verified=True, grade=g.grade, uncertainty_ns=bound,
                      detail=detail, basis="linuxptp", problems=g.problems,
                      note=f"linuxptp via pmc at {snap.uds}: bound = |offset| {terms['offset_ns']} ns"
                           f" + asymmetry {terms['asymmetry_ns']} ns + system clock "
                           f"{terms['system_clock_ns']} ns + extra {terms['extra_ns']} ns")

    def _utc_now(self) -> int:
        return time.clock_gettime_ns(time.CLOCK_REALTIME)


class PhcReference(Reference):
    """A PHC read directly: `now_ns` is clock_gettime on its dynamic clock id, minus the
    TAI-UTC offset when the PHC runs on the PTP timescale."""

    def __init__(self, path: str, allowance_ns: int | None = 0, discipline: Discipline | None = None,
                 utc_offset_s: int | None = None):
        from bench.reference.phc import Phc

        self.phc = Phc(path)                     # raises PhcError with a clear message
        self.source = f"phc:{path}"
        super().__init__(allowance_ns, discipline)
        self._clockid = self.phc.clockid
        self.utc_offset_source = "given"
        if utc_offset_s is None:
            utc_offset_s, self.utc_offset_source = self._find_utc_offset()
        self.utc_offset_s = int(utc_offset_s)
        self._utc_ns = self.utc_offset_s * NS

    # The base's now_ns is static so that `Reference.now_ns` is a bare clock callable; this one
    # reads its own clock, so it needs self.
    def now_ns(self) -> int:  # type: ignore[override]
        return time.clock_gettime_ns(self._clockid) - self._utc_ns

    def resolution_ns(self) -> int:
        return 1

    def close(self) -> None:
        self.phc.close()

    def _find_utc_offset(self) -> tuple[int, str]:
        if self._pmc is not None:
            try:
                tp = self._pmc.query("TIME_PROPERTIES_DATA_SET")["TIME_PROPERTIES_DATA_SET"]
                f = tp[0].fields if tp else {}
                if f.get("ptpTimescale") == "1" and f.get("currentUtcOffsetValid") == "1":
                    return int(f["currentUtcOffset"]), "ptp4l TIME_PROPERTIES_DATA_SET"
                if f.get("ptpTimescale") == "0":
                    return 0, "ptp4l TIME_PROPERTIES_DATA_SET (ARB timescale)"
            except (PtpHealthError, KeyError, ValueError):
                pass
        # TAI - UTC is whole seconds: take the whole seconds by which the PHC leads CLOCK_REALTIME.
        so = self.phc.sys_offset()
        k = round(so.offset_ns / NS)
        if 0 <= k <= 100:
            return k, f"inferred: PHC leads CLOCK_REALTIME by {so.offset_ns} ns"
        raise ReferenceRefused(
            f"{self.phc.path} reads {so.offset_ns / NS:.3f} s away from CLOCK_REALTIME: neither UTC "
            f"nor TAI, so it is not disciplined to a usable timescale (give utc_offset_s to "
            f"override)")

    def health(self) -> Health:
        from bench.reference.phc import phc_of_interface

        h = super().health()
        found = {phc_of_interface(i) for i in h.detail.get("interfaces", []) if i}
        disciplined = {p for p in found if p is not None}
        if disciplined and self.phc.path not in disciplined and os.path.realpath(
                self.phc.path) not in {os.path.realpath(d) for d in disciplined}:
            h = replace(h, grade="fail", verified=False, problems=h.problems + (
                f"fail: the reference {self.phc.path} is not the clock ptp4l disciplines "
                f"({', '.join(sorted(disciplined))})",))
        so = self.phc.sys_offset()
        detail = {**h.detail, "phc_read": {"method": so.method, "bracket_ns": so.bracket_ns,
                                           "phc_minus_realtime_ns": so.offset_ns - self._utc_ns,
                                           "utc_offset_s": self.utc_offset_s,
                                           "utc_offset_source": self.utc_offset_source}}
        return replace(h, detail=detail)

    def _utc_now(self) -> int:
        return self.now_ns()


class VirtualReference(Reference):
    """Simulated time: stands still until `advance(ns)` unless `rate` > 0, in which case it also
    runs at `rate` times the machine's monotonic clock. Exact by construction."""

    source = "virtual"

    def __init__(self, start_ns: int = 0, rate: float = 0.0, allowance_ns: int | None = 0):
        super().__init__(allowance_ns)
        self.rate = float(rate)
        self._base = int(start_ns)
        self._m0 = time.monotonic_ns()
        self._lock = threading.Lock()

    def now_ns(self) -> int:  # type: ignore[override]  # needs self, as PhcReference.now_ns
        if self.rate:
            return self._base + int((time.monotonic_ns() - self._m0) * self.rate)
        return self._base

    def advance(self, ns: int) -> int:
        if ns < 0:
            raise ValueError("virtual time only moves forward")
        with self._lock:
            self._base += int(ns)
        return self.now_ns()

    def resolution_ns(self) -> int:
        return 1

    def health(self) -> Health:
        return Health(self.source, self.now_ns(), verified=True, grade="ok",
                      uncertainty_ns=self.allowance_ns or 0, basis="virtual",
                      note="virtual time: the reference is the simulation's own clock, exact by "
                           "construction")


def _discipline(ptp_uds: str | None, domain: int, thresholds, policy) -> Discipline | None:
    uds = find_uds() if ptp_uds == "auto" else ptp_uds
    if not uds:
        return None
    return Discipline(uds, domain, thresholds or PtpThresholds(), policy or UncertaintyPolicy())


def open_reference(spec: str = "realtime", allowance_ns: int | None = 0, *,
                   ptp_uds: str | None = "auto", domain: int = 0,
                   thresholds: PtpThresholds | None = None, policy: UncertaintyPolicy | None = None,
                   utc_offset_s: int | None = None, simulated: bool = False) -> Reference:
    """Reference named by the rack file's `reference` key.

    `ptp_uds`: ptp4l's management socket; "auto" takes the first default that exists
    (/var/run/ptp4l, /var/run/ptp/ptp4l), None reads no linuxptp health.
    """
    spec = (spec or "realtime").strip()
    disc = None if simulated else _discipline(ptp_uds, domain, thresholds, policy)
    if spec == "realtime":
        return Reference(allowance_ns, disc, simulated=simulated)
    if spec.startswith("phc:"):
        path = spec[4:]
        if not path.startswith("/dev/"):
            raise ValueError(f"reference {spec!r}: expected phc:/dev/ptpN")
        ref = PhcReference(path, allowance_ns, disc, utc_offset_s)
        ref.simulated = simulated
        return ref
    if spec == "virtual" or spec.startswith("virtual:"):
        start = int(spec.split(":", 1)[1]) if ":" in spec else 0
        return VirtualReference(start, allowance_ns=allowance_ns)
    raise ValueError(f"reference {spec!r} is not supported (known: realtime, phc:/dev/ptpN, virtual)")


def _unverified_why(ref: Reference, health: Health, where: str) -> str:
    """Why a reference cannot be verified: no linuxptp to read (and what the kernel says), or
    linuxptp grading it as failing."""
    if ref.discipline is not None:
        return "linuxptp grades the reference as failing: " + "; ".join(health.problems)
    looked = " or ".join(DEFAULT_UDS) if where == "auto" else where
    why = f"no linuxptp health source (no ptp4l management socket at {looked})"
    k = health.detail.get("kernel") or {}
    if k.get("synchronized"):
        why += (f"; the kernel marks CLOCK_REALTIME synchronized by another daemon with "
                f"maxerror {fmt_ns(k['maxerror_ns'])}")
    elif k:
        why += "; the kernel marks CLOCK_REALTIME unsynchronized"
    return why


def reference_for_run(spec: str = "realtime", allowance_ns: int | None = None,
                      simulated: bool = False, **kw) -> tuple[Reference, Health]:
    """The reference for a run and its health at the start, or ReferenceRefused.

    Every reason to refuse (unknown spec, missing PHC, no linuxptp and no allowance, linuxptp
    failing and no allowance) is a ReferenceRefused whose message says what to do.
    `allowance_ns` is the user's `--reference-allowance` (None when not given). On a simulated
    rack the reference is exact by construction. Otherwise linuxptp must answer and grade ok or
    warn, or the user must give an allowance, which then is the bound and the run is unverified.
    """
    from bench.reference.phc import PhcError

    try:
        ref = open_reference(spec, allowance_ns, simulated=simulated, **kw)
    except (PhcError, ValueError) as exc:
        raise ReferenceRefused(f"reference {spec!r}: {exc}") from exc
    health = ref.health()
    if simulated or health.verified or isinstance(ref, VirtualReference):
        return ref, health
    if allowance_ns is None:
        ref.close()
        why = _unverified_why(ref, health, kw.get("ptp_uds", "auto"))
        raise ReferenceRefused(
            f"reference {spec!r} cannot be verified: {why}. Start ptp4l (and phc2sys) so the "
            f"bench can read its health, or give an explicit bound on the reference's error, "
            f"e.g. --reference-allowance 1ms, to run with an unverified reference.")
    return ref, health
