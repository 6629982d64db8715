"""What the emulated BMC tolerates, and what it was sent: its rate limit, session table and
session timeout (the profile's, bench/sim/redfish_profiles.py), and a count of every request.

- A request beyond `rate_limit_hz` in the last second is answered 429 with `Retry-After` (the
  profile's `retry_after_s`), and not served; so is every request until that time has passed.
- A login beyond `max_sessions` is answered 503 `SessionLimitExceeded` with `Retry-After`.
- A session idle for `session_timeout_s` (reference time) is gone: its token gets 401.
- The counts are one `traffic` record in `ctx.events[device]` (updated in place, so its size
  does not grow with the run): `requests`, `logins`, `failed_logins`, `throttled`, and per
  minute of the simulation's reference time `per_minute` {minute: requests}, and per method and
  path `by_path` {"GET /redfish/v1/...": requests} (at most `PATHS_KEPT` paths; the rest under
  "other"), so a test can say what a client asked for and how often.
"""
from __future__ import annotations

from collections import deque

from aiohttp import web

NS = 1_000_000_000
PATHS_KEPT = 256


class Limits:
    def __init__(self, profile, ctx, name: str, error):
        self.p = profile
        self.ctx = ctx
        self._error = error
        self.recent: deque[int] = deque()          # instants of the last second's requests
        self.held_until = 0
        self.last_used: dict[str, int] = {}        # token -> reference ns of its last use
        self.traffic = {"kind": "traffic", "t_ns": ctx.now_ns(), "requests": 0, "logins": 0,
                        "failed_logins": 0, "throttled": 0, "per_minute": {}, "by_path": {}}
        ctx.events[name].append(self.traffic)

    def count(self, kind: str) -> None:
        self.traffic[kind] = self.traffic.get(kind, 0) + 1

    def request(self, request: web.BaseRequest) -> web.Response | None:
        """Count the request; a 429 when it is over the rate limit (or inside a pause)."""
        t = self.ctx.now_ns()
        self.count("requests")
        minute = (t - self.ctx.t0_ns) // (60 * NS)
        pm = self.traffic["per_minute"]
        pm[minute] = pm.get(minute, 0) + 1
        bp = self.traffic["by_path"]
        key = f"{request.method} {request.path.rstrip('/') or '/'}"
        key = key if key in bp or len(bp) < PATHS_KEPT else "other"
        bp[key] = bp.get(key, 0) + 1
        if self.p.rate_limit_hz <= 0:
            return None
        while self.recent and self.recent[0] <= t - NS:
            self.recent.popleft()
        if t < self.held_until or len(self.recent) >= self.p.rate_limit_hz:
            if t >= self.held_until:
                self.held_until = t + self.p.retry_after_s * NS
            self.count("throttled")
            return self._error(429, "ServiceTemporarilyUnavailable", "The service is temporarily "
                               f"unavailable. Retry in {self.p.retry_after_s} seconds.",
                               [str(self.p.retry_after_s)],
                               {"Retry-After": str(self.p.retry_after_s)})
        self.recent.append(t)
        return None

    def session_full(self, sessions: dict) -> web.Response | None:
        self._expire(sessions)
        if len(sessions) < self.p.max_sessions:
            return None
        return self._error(503, "SessionLimitExceeded", "The session establishment failed due "
                           "to the number of simultaneous sessions exceeding the limit of the "
                           "implementation.", [], {"Retry-After": str(self.p.retry_after_s)})

    def touch(self, token: str, sessions: dict) -> bool:
        """Whether the session is still live (idle less than the timeout); marks it used."""
        self._expire(sessions)
        if token not in sessions:
            return False
        self.last_used[token] = self.ctx.now_ns()
        return True

    def forget(self, token: str) -> None:
        self.last_used.pop(token, None)

    def _expire(self, sessions: dict) -> None:
        t = self.ctx.now_ns()
        limit = self.p.session_timeout_s * NS
        for token in [k for k, u in self.last_used.items() if t - u > limit]:
            sessions.pop(token, None)
            self.last_used.pop(token, None)
