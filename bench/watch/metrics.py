"""The watch's state as Prometheus/OpenMetrics metrics (prometheus_client), read at each scrape.

Names follow Prometheus' conventions: base units in the name (`_seconds`, `_ratio`), counters
end in `_total`, labels `device`, `clock`, `plane` (and `kind`, `grade`, `status`, `measure`).
The offset is device clock minus reference time at the current segment's epoch; for a counter
clock it is minus its zero instant (large and negative), as in summary.json.
"""
from __future__ import annotations

import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from bench.analysis.statuses import BreakKind
from bench.model.run_statuses import ErrorKind
from bench.units import PER_PPM, PER_S, scaled_out
from bench.watch.estimator import bound_now
from bench.watch.state import MEASURED_NS

NS = 1e9
GRADES = ("ok", "warn", "unverified", "fail")
BASES = ("linuxptp", "allowance", "simulated", "virtual")
STATUSES = ("proven", "assumed", "undecided")
PFX = "rackclock_"
ERROR_KINDS = {str(k) for k in ErrorKind if k not in (ErrorKind.NOT_STARTED, ErrorKind.SUMMARY)}
WORKER_STATES = ("starting", "connecting", "unreachable", "measuring", "reconnecting", "failed",
                 "stopped", "hung", "done")


def _g(name, doc, labels):
    return GaugeMetricFamily(PFX + name, doc, labels=labels)


def _c(name, doc, labels):
    return CounterMetricFamily(PFX + name, doc, labels=labels)


class WatchCollector:
    def __init__(self, state, alerts=None):
        self.state, self.alerts = state, alerts

    def collect(self):
        yield from self._clocks()
        yield from self._devices()
        yield from self._health()
        yield from self._reference()

    def _clocks(self):
        L = ["device", "clock", "plane"]
        fam = {**self._clock_families(L), **self._now_families(L)}
        now = self.state.now_ns()
        with self.state.lock:
            for dn, d in self.state.devices.items():
                for cn, c in d.clocks.items():
                    self._add_clock(fam, [dn, cn, d.plane], c, now)
        yield from fam.values()

    @staticmethod
    def _clock_families(L: list[str]) -> dict:
        """The per-clock families but the bound now's, in the order they are served."""
        return {
            "lo": _g("clock_offset_lo_seconds", "proven lower bound of device clock minus "
                     "reference at the current segment's epoch", L),
            "hi": _g("clock_offset_hi_seconds", "upper bound of device clock minus reference", L),
            "st": _g("clock_offset_status", "the offset bound's status (1 for the current one)",
                     L + ["status"]),
            "md": _g("clock_mean_drift_ratio", "the current segment's mean drift (point; s/s)", L),
            "dl": _g("clock_drift_lo_ratio", "lower bound of the drift at the epoch (s/s)", L),
            "dh": _g("clock_drift_hi_ratio", "upper bound of the drift at the epoch (s/s)", L),
            "br": _c("clock_breaks", "breaks (steps, reboots...) detected while watching",
                     L + ["kind"]),
            "age": _g("clock_last_read_age_seconds", "reference time since the last good read",
                      L),
            "stuck": _g("clock_stuck", "1 when the clock's value stopped advancing", L),
            "lim": _g("clock_limit_crossed", "1 when the bounds are beyond a [limits] entry",
                      L + ["measure"]),
            "reads": _c("clock_reads", "good reads of the clock", L)}

    def _add_clock(self, fam: dict, lab: list, c, now: int) -> None:
        """One clock's samples: its reads, breaks, stuck and limit flags, read age, and its
        bounds when it has a fit."""
        fam["reads"].add_metric(lab, c.taken)
        for k in BreakKind:
            fam["br"].add_metric(lab + [str(k)], c.breaks.get(str(k), 0))
        fam["stuck"].add_metric(lab, 1.0 if c.stuck else 0.0)
        for m in ("offset", "drift"):
            fam["lim"].add_metric(lab + [m], 1.0 if m in c.limits_failed else 0.0)
        if c.last_read_ns is not None:
            fam["age"].add_metric(lab, max(0, now - c.last_read_ns) / NS)
        if c.bounds:
            self._add_bounds(fam, lab, c.bounds, now, c.window.meta.counter)

    def _add_bounds(self, fam: dict, lab: list, b: dict, now: int, counter: bool) -> None:
        """A clock's offset and drift bounds at the epoch, its status, and the bound now."""
        fam["lo"].add_metric(lab, scaled_out(b["offset_lo_ns"], PER_S, False))
        fam["hi"].add_metric(lab, scaled_out(b["offset_hi_ns"], PER_S, True))
        self._add_now(fam, lab, b, now, counter)
        for s in STATUSES:
            fam["st"].add_metric(lab + [s], 1.0 if b["offset_status"] == s else 0.0)
        fam["dl"].add_metric(lab, scaled_out(b["drift_lo_ppm"], PER_PPM, False))
        fam["dh"].add_metric(lab, scaled_out(b["drift_hi_ppm"], PER_PPM, True))
        if b["mean_drift_ppm"] is not None:
            fam["md"].add_metric(lab, b["mean_drift_ppm"] * 1e-6)

    @staticmethod
    def _now_families(L: list[str]) -> dict:
        return {
            "epoch": _g("clock_epoch_timestamp_seconds", "the reference instant (Unix time) at "
                        "which rackclock_clock_offset_lo/hi_seconds hold", L),
            "now_lo": _g("clock_offset_now_lo_seconds", "lower bound of device clock minus "
                         "reference at this scrape: the bound at the last read widened by the "
                         "model's rate bound (ClockBound's clock error bound)", L),
            "now_hi": _g("clock_offset_now_hi_seconds", "upper bound of the offset at this "
                         "scrape", L),
            "zero_s": _g("clock_zero_seconds", "a counter clock's zero instant (Unix time) "
                         "at this scrape, whole seconds of its bound's end (exact)",
                         L + ["bound"]),
            "zero_ns": _g("clock_zero_nanoseconds", "the nanoseconds (0-999999999) beyond "
                          "rackclock_clock_zero_seconds", L + ["bound"])}

    @staticmethod
    def _add_now(fam: dict, lab: list, b: dict, now: int, counter: bool) -> None:
        """The bound now; a counter's zero instant as seconds and nanoseconds apart (its offset,
        about -1.8e9 s, has float64 steps of 238 ns)."""
        n_lo, n_hi = bound_now(b, now)
        fam["epoch"].add_metric(lab, b["epoch_ns"] / NS)
        fam["now_lo"].add_metric(lab, scaled_out(n_lo, PER_S, False))
        fam["now_hi"].add_metric(lab, scaled_out(n_hi, PER_S, True))
        if counter:                   # zero = reference minus counter value = -offset
            for side, z in (("lo", -n_hi), ("hi", -n_lo)):
                sec, ns = divmod(z, 10**9)
                fam["zero_s"].add_metric(lab + [side], float(sec))
                fam["zero_ns"].add_metric(lab + [side], float(ns))

    def _devices(self):
        L = ["device", "plane"]
        req = _c("device_requests", "exchanges with the device (every sample row)", L)
        rpm = _g("device_requests_per_minute", "exchanges in the last 60 s (politeness)", L)
        err = _c("device_errors", "failed exchanges by error class", L + ["kind"])
        reads = _c("device_reads", "good clock reads of the device", L)
        age = _g("device_last_read_age_seconds", "reference time since the device's last good "
                 "read (since the watch began to probe it, when it never gave one)", L)
        up = _g("device_up", "1 when the device gave a good read within the last 5 minutes", L)
        st = _g("device_state", "the device's worker state (1 for the current one)",
                L + ["state"])
        now = self.state.now_ns()
        states = self.state.states()
        for dn, d in list(self.state.devices.items()):
            lab = [dn, d.plane]
            rpm.add_metric(lab, self.state.requests_last_minute(d))
            with self.state.lock:
                req.add_metric(lab, d.rows)
                reads.add_metric(lab, d.reads)
                for k in sorted(set(d.errors) | ERROR_KINDS):
                    err.add_metric(lab + [k], d.errors.get(k, 0))
                last = d.last_read_ns if d.last_read_ns is not None else d.declared_ns
                age.add_metric(lab, max(0, now - last) / NS)
                up.add_metric(lab, 1.0 if d.last_read_ns is not None
                              and now - d.last_read_ns <= MEASURED_NS else 0.0)
            cur = states.get(dn, "removed")
            for s in sorted(set(WORKER_STATES) | {cur}):
                st.add_metric(lab + [s], 1.0 if s == cur else 0.0)
        yield from (req, rpm, err, reads, age, up, st)

    def _health(self):
        declared, measured = self.state.measured()
        g = _g("watch_devices_declared", "devices of the rack file the watch probes", [])
        g.add_metric([], len(declared))
        m = _g("watch_devices_measured", "devices with a good read within the last 5 minutes",
               [])
        m.add_metric([], len(measured))
        h = _g("watch_healthy", "1 when every declared device is measured (and there is one)",
               [])
        h.add_metric([], 1.0 if declared and len(measured) == len(declared) else 0.0)
        s = _g("watch_starting", "1 while the watch starts: it serves, its devices' reads are "
               "being read back from the day folders and their probing is not yet started", [])
        s.add_metric([], 1.0 if self.state.starting else 0.0)
        yield from (g, m, h, s)

    def _reference(self):
        h = self.state.reference
        grade = _g("reference_grade", "the reference's grade (1 for the current one)", ["grade"])
        for g in GRADES:
            grade.add_metric([g], 1.0 if h is not None and h.grade == g else 0.0)
        yield grade
        basis = _g("reference_basis", "what the reference's bound rests on (1 for the current "
                   "one): linuxptp (a reference is expected), allowance (the user's stated "
                   "--reference-allowance), simulated, virtual", ["basis"])
        cur = getattr(h, "basis", None) if h is not None else None
        for b in sorted(set(BASES) | ({str(cur)} if cur else set())):
            basis.add_metric([b], 1.0 if b == cur else 0.0)
        yield basis
        gm = _c("reference_gm_identity_changes", "grandmaster identity changes seen", [])
        gm.add_metric([], self.state.gm_changes)
        yield gm
        unc = _g("reference_uncertainty_seconds", "bound on the reference's own error, added to "
                 "every bracket", [])
        unc.add_metric([], scaled_out(h.uncertainty_ns if h is not None else 0, PER_S, True))
        yield unc
        if h is not None:
            yield from self._reference_detail(h)

    @staticmethod
    def _reference_detail(h):
        """ptp4l's offset from its master and path delay (where reported), and the age of the
        last health snapshot."""
        d = h.detail
        for key, name, doc in (("offset_from_master_ns", "reference_ptp_offset_seconds",
                                "ptp4l's offset from its master"),
                               ("mean_path_delay_ns", "reference_path_delay_seconds",
                                "ptp4l's mean path delay")):
            if d.get(key) not in (None, ""):
                g = _g(name, doc, [])
                g.add_metric([], float(d[key]) / NS)
                yield g
        age = _g("reference_health_age_seconds", "time since the last health snapshot", [])
        age.add_metric([], max(0.0, time.time_ns() - h.checked_ns) / NS)
        yield age


def registry(state) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(WatchCollector(state))
    return reg
