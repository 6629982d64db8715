"""An NTP-disciplined wall clock for the simulated devices (BMC, CDU), with known truth.

The client polls its server every `poll_s` while enabled and the server is reachable; at each poll
it measures the clock's UTC offset o (exactly: the simulated server is the reference) and
  |o| >  step_threshold_s : steps the clock by -o at once (ntpd/chrony `makestep`);
  |o| <= step_threshold_s : slews at `slew_ppm` towards 0 (ntpd's 500 ppm limit, chrony's
                            maxslewrate), until o is removed or the next poll decides again.
Unreachable server (the configured servers all in `unreachable`): the poll changes nothing.
The first poll comes `first_poll_s` after the client is enabled.

Written by hand: the model must be a pure function of reference time (real or virtual) with its
decisions recorded as truth, which no NTP implementation offers. It hooks into
bench.sim.clock_model.ClockModel through `corrections` (a term added to the wall reading); decisions are
made lazily in time order, and those after a manual set (a step added later) are made again.

Sim keys (a device's `[sim.ntp_model]` table): poll_s, step_threshold_s, slew_ppm, first_poll_s,
unreachable (server names that never answer), manual_set ("refuse": a DateTime set while NTP is on
is refused, as OpenBMC does; "accept": it is applied and the client pulls it back).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from bench.config.schema import TEXT, choice, list_of, num, table

# the [sim] table's `ntp_model` (bench/sim/simtable.py): the NtpParams below
SERVERS = list_of(TEXT, 16)
NTP_KEYS = table({"poll_s": num(0.1, 86400.0, "s"), "step_threshold_s": num(0.0, 1e6, "s"),
                  "slew_ppm": num(0.0, 100_000.0, "ppm"), "first_poll_s": num(0.0, 86400.0, "s"),
                  "unreachable": SERVERS, "manual_set": choice("refuse", "accept")})

NS = 1_000_000_000


@dataclass(frozen=True)
class NtpParams:
    poll_s: float = 4.0
    step_threshold_s: float = 1.0
    slew_ppm: float = 5000.0
    first_poll_s: float = 1.0
    unreachable: tuple = ("192.0.2.1",)       # TEST-NET-1: never answers
    manual_set: str = "refuse"                # refuse | accept

    @classmethod
    def from_table(cls, t: Mapping[str, Any]) -> NtpParams:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in t.items() if k in known}
        if "unreachable" in kw:
            kw["unreachable"] = tuple(str(x) for x in kw["unreachable"])
        return cls(**kw)


@dataclass
class Decision:
    t_ns: int
    offset_ns: int            # measured UTC offset at the poll, before acting
    action: str               # step | slew | none | unreachable
    rate: float = 0.0         # slew: fractional rate applied (negative pulls a fast clock back)
    until_ns: int = 0         # slew: when it would end (the next poll may cut it short)


class NtpDiscipline:
    """The correction (ns) the client has applied to `model`'s wall reading by instant t."""

    def __init__(self, model, params: NtpParams, enabled: bool, servers: list[str], t0_ns: int,
                 record: Callable[..., None] | None = None):
        self.model = model
        self.p = params
        self.record = record
        self._switches: list[tuple[int, bool, bool]] = []     # (t, enabled, reachable)
        self._switch(t0_ns, enabled, servers)
        self.decisions: list[Decision] = []
        self._steps_seen = len(model._steps)
        self._busy = False
        model.corrections = tuple(getattr(model, "corrections", ())) + (self.correction_ns,)
        model.correction_rates = tuple(getattr(model, "correction_rates", ())) + (self.rate_ppm,)
        model.correction_breaks = tuple(getattr(model, "correction_breaks", ())) + (self.breaks,)
        model.correction_knots = tuple(getattr(model, "correction_knots", ())) + (self.knots,)

    # -- commands (the emulator calls these) -----------------------------------------------------
    def _reachable(self, servers) -> bool:
        return any(s not in self.p.unreachable for s in servers)

    def _switch(self, t_ns: int, enabled: bool, servers) -> None:
        self._switches.append((int(t_ns), bool(enabled), self._reachable(servers)))
        self._forget_after(int(t_ns))

    def set_enabled(self, t_ns: int, enabled: bool, servers: list[str]) -> None:
        self._switch(t_ns, enabled, servers)

    def set_servers(self, t_ns: int, enabled: bool, servers: list[str]) -> None:
        self._switch(t_ns, enabled, servers)

    def enabled_at(self, t_ns: int) -> bool:
        return [s for s in self._switches if s[0] <= t_ns][-1][1]

    def _forget_after(self, t_ns: int) -> None:
        if hasattr(self, "decisions"):
            self.decisions = [d for d in self.decisions if d.t_ns < t_ns]

    # -- the polls -------------------------------------------------------------------------------
    def _polls(self, t_end: int):
        """Poll instants up to t_end: every poll_s from first_poll_s after each enable."""
        for k, (t, on, _) in enumerate(self._switches):
            if not on or (k and self._switches[k - 1][1]):
                continue                     # only an off->on switch (or the start) restarts
            stop = next((s[0] for s in self._switches[k + 1:] if not s[1]), None)
            tp = t + round(self.p.first_poll_s * NS)
            while tp <= t_end and (stop is None or tp < stop):
                yield tp
                tp += round(self.p.poll_s * NS)

    def _reachable_at(self, t_ns: int) -> bool:
        return [s for s in self._switches if s[0] <= t_ns][-1][2]

    def _advance(self, t_ns: int) -> None:
        steps = self.model._steps
        if len(steps) != self._steps_seen:           # a manual set: decide again from there
            self._steps_seen = len(steps)
            self._forget_after(max(a for a, _ in steps))
        done = self.decisions[-1].t_ns if self.decisions else None
        self._busy = True
        try:
            for tp in self._polls(t_ns):
                if done is not None and tp <= done:
                    continue
                o = self.model.true_ns(tp) - self.model.p.tz_error_ns - tp
                d = self._decide(tp, o)
                self.decisions.append(d)
                if self.record:
                    self.record("ntp_poll", tp, offset_ns=o, action=d.action,
                                rate_ppm=d.rate * 1e6, until_ns=d.until_ns)
        finally:
            self._busy = False

    def _decide(self, tp: int, o: int) -> Decision:
        """What the client does at poll `tp` seeing offset `o` ns: nothing, step, or slew."""
        if not self._reachable_at(tp):
            return Decision(tp, o, "unreachable")
        if abs(o) > self.p.step_threshold_s * NS:
            return Decision(tp, o, "step")
        if o:
            r = self.p.slew_ppm * 1e-6
            return Decision(tp, o, "slew", -r if o > 0 else r, tp + round(abs(o) / r))
        return Decision(tp, o, "none")

    def correction_ns(self, t_ns: int) -> int:
        if not self._busy:
            self._advance(int(t_ns))
        c = 0
        ds = [d for d in self.decisions if d.t_ns <= t_ns]
        for k, d in enumerate(ds):
            if d.action == "step":
                c -= d.offset_ns
            elif d.action == "slew":
                nxt = ds[k + 1].t_ns if k + 1 < len(ds) else None
                # a slew runs until done, or until the next poll decides again
                end = min(d.until_ns, t_ns, *(() if nxt is None else (nxt,)))
                c += round(d.rate * (end - d.t_ns))
        return c


    def breaks(self) -> list[dict]:
        """The client's steps decided so far, as truth breaks (ClockModel.breaks): at the poll,
        by minus the offset it measured. The truth is made when the run stops, after every read,
        so the decisions then cover the run."""
        return [{"t_ns": d.t_ns, "kind": "step", "size_ns": -d.offset_ns, "source": "ntp"}
                for d in self.decisions if d.action == "step"]

    def knots(self) -> list[int]:
        """Where the corrections decided so far change rate or step (ClockModel.knots)."""
        return [t for d in self.decisions for t in (d.t_ns - 1, d.t_ns)
                + ((d.until_ns,) if d.action == "slew" else ())]

    def rate_ppm(self, t_ns: int) -> float:
        """The slew rate in force at t (ppm; 0 when not slewing)."""
        if not self._busy:
            self._advance(int(t_ns))
        ds = [d for d in self.decisions if d.t_ns <= t_ns]
        d = ds[-1] if ds else None
        return d.rate * 1e6 if d is not None and d.action == "slew" and t_ns < d.until_ns else 0.0


def converged_at(decisions: list[dict], t_from_ns: int, bound_ns: int) -> int | None:
    """Truth: the first instant at or after `t_from_ns` at which the client has brought |offset|
    within `bound_ns`, from its recorded decisions (ntp_poll events; the device's own drift
    between polls, sub-ppm here, is neglected); None if it never does."""
    ds = sorted((d for d in decisions if d["t_ns"] >= t_from_ns), key=lambda d: d["t_ns"])
    for k, d in enumerate(ds):
        o = d["offset_ns"]
        if abs(o) <= bound_ns or d["action"] == "step":
            return d["t_ns"]
        if d["action"] == "slew":
            t = d["t_ns"] + round((abs(o) - bound_ns) / abs(d["rate_ppm"] * 1e-6))
            if k + 1 == len(ds) or t <= ds[k + 1]["t_ns"]:
                return t
    return None
