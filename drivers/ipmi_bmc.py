"""IPMI BMC driver over LAN (RMCP+): Get Device ID, the SEL clock, the System Event Log, Add SEL Entry.

Client: `python-ipmi` (`pyipmi`, 0.6) with its native RMCP+ interface (`RmcpPlus`), not pyghmi.
Both open an RMCP+ session with OpenIPMI's `ipmi_sim` (cipher suite 3, after 17 is refused);
python-ipmi is the one whose exchanges we can stamp at the socket:

- it sends and receives on one connected UDP socket in the calling thread, serialised by a
  transaction lock, so `s` is stamped just before `sock.send` of the request datagram and `e`
  just after `sock.recv` of the answer (subclass `_StampedRmcpPlus` below). pyghmi receives in
  its own I/O thread and hands packets over a queue, so an answer's arrival cannot be stamped.
- it never re-sends on its own (`max_retries=0`); pyghmi re-sends on a timer. A re-send after
  "node busy" (`send_message`) is a new exchange: the bracket is the last one's, `raw` says so.
- Its round trip against `ipmi_sim` on loopback is the shorter (benchmarks/README.md).

The library is synchronous: every exchange runs in `asyncio.to_thread`, with the stamps taken in
that thread around the socket calls, so the event loop is never blocked.

SEL time is 32-bit seconds. Stamps below 0x20000000 are "pre-init": seconds since the controller's
initialisation (for `ipmi_sim`, its host's CLOCK_MONOTONIC), not wall time. A SEL clock read as
pre-init at open is the counter clock `sel_init` (its fitted offset is minus the init instant);
otherwise it is `sel`, wall time. SEL entries are stamped in whichever of the two their stamp
belongs to, so a pre-init entry maps through the init instant the `sel_init` fit bounds.
Wall-time SEL stamps are local time without a zone on many BMCs: `sel_timezone` says how to read
them ("UTC"; an IANA zone name, e.g. "Europe/Berlin", fold=0 in the repeated hour; or "unknown",
the default: read as UTC, and the summary reports the zone the offset suggests).

Address: `ipmi://host:port` (port 623 by default). Inventory keys: `sel_timezone`, `timeout_s`
(per exchange, default 2 s), `cipher_suite` (default: 17, then 3), `ipmb_address` (default 0x20),
`keepalive_s` (Get Device ID when idle this long, default 10; 0: never), `sel_generator_id`
(the software ID written into added SEL entries, default 0x0041).
"""
from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Callable
from zoneinfo import ZoneInfoNotFoundError

import pyipmi
import pyipmi.interfaces
from pyipmi.errors import (
    AuthenticationError,
    CompletionCodeError,
    DecodingError,
    IpmiConnectionError,
    IpmiLongPasswordError,
    MessageStatusCodeError,
    NotSupportedError,
    RetryError,
)
from pyipmi.interfaces.rmcp import RmcpMsg
from pyipmi.interfaces.rmcpplus import RmcpPlus
from pyipmi.msgs import create_request_by_name

from bench.config.inventory import DeviceConfig, Key
from bench.model.logformats import sel_seconds_to_ns, sel_zone
from drivers.base import (
    TIMEOUT_KEY,
    ClockSpec,
    DeviceError,
    Driver,
    Identity,
    LogEntry,
    Read,
    Stimulated,
    Stimulus,
    split_address,
)

NS = 1_000_000_000
PRE_INIT_MAX = 0x20000000          # SEL stamps below this count seconds since controller init
UNSPECIFIED = 0xFFFFFFFF           # "time not set" (IPMI v2.0 §37.1)
# RAKP / Open Session status codes that mean the credentials were refused (IPMI v2.0 table 13-15)
_AUTH_MSC = {0x02, 0x0D, 0x0E, 0x0F, 0x12, 0x0A}


class _StampedRmcpPlus(RmcpPlus):
    """RmcpPlus with a reference stamp at the socket: just before each datagram is sent and just
    after each is received, appended to the calling thread's `stamps` list (if it has one).
    The two methods repeat the library's own three lines around the socket call."""

    def __init__(self, now_ns: Callable[[], int], **kw):
        super().__init__(**kw)
        self._now_ns = now_ns
        self.local = threading.local()

    def _send_rmcp_msg(self, sdu, class_of_msg):
        pdu = RmcpMsg(class_of_msg).pack(sdu, self.seq_number)
        t = self._now_ns()
        self._sock.send(pdu)
        stamps = getattr(self.local, "stamps", None)
        if stamps is not None:
            stamps.append(("s", t))
        if self.seq_number != 255:
            self.seq_number = (self.seq_number + 1) % 254

    def _receive_rmcp_msg(self):
        pdu = self._sock.recv(4096)
        t = self._now_ns()
        stamps = getattr(self.local, "stamps", None)
        if stamps is not None:
            stamps.append(("e", t))
        rmcp = RmcpMsg()
        sdu = rmcp.unpack(pdu)
        return rmcp.seq_number, rmcp.class_of_msg, sdu



def _bracket(stamps: list, s0: int, e0: int, span: bool) -> tuple[int, int, str]:
    """(s, e, note) of an exchange from its socket stamps [("s" | "e", ns)]: the last request
    and its answer (`span`: the first request and the last answer); the thread's own
    [s0, e0] where the socket stamped none; the note counts re-sent requests."""
    sends = [t for k, t in stamps if k == "s"]
    s = (sends[0] if span else sends[-1]) if sends else s0
    answers = [t for k, t in stamps if k == "e" and t >= s]
    e = answers[-1] if answers else e0
    return s, e, _resent_note(len(sends), span)


def _resent_note(sends: int, span: bool) -> str:
    """The note of requests re-sent before the answer (none over a span of requests)."""
    return f"(after {sends - 1} re-sent request(s))" if sends > 1 and not span else ""

class IpmiBMC(Stimulated, Driver):
    CREDENTIALS = (("username",), ("password_env",))      # checked at load (bench.config.loader)
    OPTIONS = {"sel_timezone": Key("str"), "timeout_s": TIMEOUT_KEY,
               "cipher_suite": Key("int", 0, 255), "ipmb_address": Key("int", 0, 255),
               "keepalive_s": Key("float", 0.0, 3600.0, unit="s"),
               "sel_generator_id": Key("int", 0, 0xFFFF)}
    SEL_ENTRY = "sel_entry"

    def __init__(self, config: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config, now_ns, armed)
        o = config.options
        self.timeout_s = float(o.get("timeout_s", 2.0))
        self.cipher_suite = int(o["cipher_suite"]) if "cipher_suite" in o else None
        self.ipmb_address = int(o.get("ipmb_address", 0x20))
        self.keepalive_s = int(o.get("keepalive_s", 10))
        self.generator_id = int(o.get("sel_generator_id", 0x0041))
        self.zone_name = str(o.get("sel_timezone", "unknown"))
        _, self.host, port, _ = split_address(config.address)
        self.port = port or 623
        self._ipmi: pyipmi.Ipmi | None = None
        self._intf: _StampedRmcpPlus | None = None
        self._password: str | None = None
        self._clock = "sel"
        self._sent = 0
        try:
            self.zone = sel_zone(self.zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise self.error("error", f"unknown sel_timezone {self.zone_name!r}") from None

    # -- errors ----------------------------------------------------------------------------------
    def _map(self, exc: BaseException, what: str) -> DeviceError:
        if isinstance(exc, DeviceError):
            return exc
        where = f"{self.host}:{self.port}"
        if isinstance(exc, (AuthenticationError, IpmiLongPasswordError, MessageStatusCodeError)):
            return self._session_error(exc, what)
        if isinstance(exc, IpmiConnectionError):
            return self.error("unreachable", f"{what}: {where}: {exc}")
        if isinstance(exc, ConnectionRefusedError):
            return self.error("unreachable", f"{what}: {where}: connection refused (nothing "
                                             f"listens on that UDP port)")
        if isinstance(exc, (TimeoutError, RetryError)):
            return self.error("timeout", f"{what}: no answer from {where} within "
                                         f"{self.timeout_s:g} s")
        return self._answer_error(exc, what, where)

    def _answer_error(self, exc: BaseException, what: str, where: str) -> DeviceError:
        """An answer that did not decode or was refused, a socket error, or anything else."""
        if isinstance(exc, DecodingError):
            return self.error("malformed", f"{what}: {exc}")
        if isinstance(exc, CompletionCodeError):
            return self.error("protocol", f"{what}: completion code {exc}")
        if isinstance(exc, NotSupportedError):
            return self.error("protocol", f"{what}: {exc}")
        if isinstance(exc, OSError):
            return self.error("unreachable", f"{what}: {where}: {exc}")
        if isinstance(exc, (struct.error, IndexError, ValueError, TypeError, KeyError)):
            return self.error("malformed", f"{what}: answer cannot be decoded: {exc!r}")
        return self.error("error", f"{what}: {exc!r}")

    def _session_error(self, exc: BaseException, what: str) -> DeviceError:
        """Integrity, credentials or a refused session: malformed, auth or protocol."""
        if isinstance(exc, AuthenticationError) and what != "login":
            return self.error("malformed", f"{what}: answer fails its integrity check: {exc}")
        if isinstance(exc, MessageStatusCodeError):
            kind = "auth" if exc.msc in _AUTH_MSC else "protocol"
            return self.error(kind, f"{what}: session refused: {exc}")
        return self.error("auth", f"{what}: the BMC rejected the credentials of user "
                                  f"{self.config.username!r} ({type(exc).__name__})")

    def _clean(self, err: DeviceError) -> DeviceError:
        if self._password and self._password in err.message:
            return DeviceError(err.device, err.kind, err.message.replace(self._password, "***"))
        return err

    # -- one exchange in a worker thread ----------------------------------------------------------
    async def _call(self, fn, what: str, span: bool = False):
        """(result, s_ns, e_ns, note): `fn(ipmi)` in a thread; the bracket is the socket stamps of
        the last request and its answer (`span`: of the first request and the last answer)."""
        if self._ipmi is None:
            raise self.error("error", "not open")
        ipmi, intf = self._ipmi, self._intf

        def work():
            stamps: list = []
            intf.local.stamps = stamps
            s0 = self.now_ns()
            try:
                return fn(ipmi), stamps, s0, self.now_ns()
            finally:
                intf.local.stamps = None

        try:
            result, stamps, s0, e0 = await asyncio.to_thread(work)
        except Exception as exc:
            raise self._clean(self._map(exc, what)) from None
        return (result, *_bracket(stamps, s0, e0, span))

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        self._password = self.config.secret()
        if not self.config.username or self._password is None:
            raise self.error("auth", f"no credentials: set username and the environment variable "
                                     f"named by password_env ({self.config.password_env!r})")
        intf = _StampedRmcpPlus(self.now_ns, keep_alive_interval=self.keepalive_s, max_retries=0,
                                cipher_suite=self.cipher_suite)
        ipmi = pyipmi.create_connection(intf)
        ipmi.session.set_session_type_rmcp(self.host, port=self.port)
        ipmi.session.set_auth_type_user(self.config.username, self._password)
        ipmi.target = pyipmi.Target(ipmb_address=self.ipmb_address)

        def login():
            intf.open()
            intf.set_timeout(self.timeout_s)
            ipmi.session.establish()

        try:
            await asyncio.to_thread(login)
        except Exception as exc:
            await asyncio.to_thread(self._shut, ipmi, intf)
            raise self._clean(self._map(exc, "login")) from None
        self._ipmi, self._intf = ipmi, intf
        try:
            value, *_ = await self._sel_time()
        except BaseException:
            await self.close()
            raise
        self._clock = "sel_init" if value < PRE_INIT_MAX else "sel"

    @staticmethod
    def _shut(ipmi, intf) -> None:
        try:
            ipmi.session.close()
        except Exception:
            pass
        try:
            intf.close()
        except Exception:
            pass

    async def close(self) -> None:
        ipmi, intf = self._ipmi, self._intf
        self._ipmi = self._intf = None
        if ipmi is not None:
            await asyncio.to_thread(self._shut, ipmi, intf)

    # -- the contract ----------------------------------------------------------------------------
    async def identity(self) -> Identity:
        d, *_ = await self._call(lambda i: i.get_device_id(), "Get Device ID")
        fw = d.fw_revision
        return Identity(vendor=f"IANA {d.manufacturer_id}", model=f"product 0x{d.product_id:04x}",
                        serial="", firmware=f"{fw.major}.{fw.minor:02d}",
                        extra={"device_id": d.device_id, "revision": d.revision,
                               "ipmi_version": str(d.ipmi_version),
                               "sel_timezone": self.zone_name, "sel_clock": self._clock})

    def clocks(self) -> list[ClockSpec]:
        return [ClockSpec(self._clock, NS, counter=self._clock == "sel_init")]

    async def _sel_time(self) -> tuple[int, int, int, str]:
        rsp, s, e, note = await self._call(lambda i: i.send_raw(0, 0x0A, b"\x48"), "Get SEL Time")
        raw = bytes(rsp)
        if len(raw) < 1 or raw[0] != 0:
            raise self.error("protocol", f"Get SEL Time: completion code "
                                         f"0x{raw[0]:02x}" if raw else "Get SEL Time: empty answer")
        if len(raw) != 5:
            raise self.error("malformed", f"Get SEL Time: {len(raw) - 1} data bytes, not 4: "
                                          f"{raw.hex(' ')}")
        return struct.unpack("<I", raw[1:5])[0], s, e, note

    def stamp_ns(self, seconds: int) -> tuple[str, int]:
        """(clock, ns) of a SEL stamp: pre-init seconds count from init; wall time per the zone."""
        if seconds < PRE_INIT_MAX:
            return "sel_init", seconds * NS
        return "sel", sel_seconds_to_ns(seconds, self.zone)

    async def read_clock(self, clock: str) -> Read:
        if clock not in ("sel", "sel_init"):
            raise self.error("error", f"no clock {clock!r} (this driver reads 'sel' or 'sel_init')")
        value, s, e, note = await self._sel_time()
        if value == UNSPECIFIED:
            raise self.error("malformed", "Get SEL Time: 0xFFFFFFFF (time not set)")
        kind, v = self.stamp_ns(value)
        raw = f"0x{value:08x}" + (" pre-init" if kind == "sel_init" else "") + \
            (f" {note}" if note else "")
        # a mode change (SEL time set or lost mid-run) is a step of the clock asked for
        return Read(clock, s, e, v, NS, stamp="socket", raw=raw)

    def stimuli(self) -> list[str]:
        return [self.SEL_ENTRY]

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        if name != self.SEL_ENTRY:
            return await super()._stimulate(name, target)
        self._sent += 1
        # a system event record (type 0x02); the BMC overwrites the timestamp with its SEL time.
        # Sensor type 0x12 (System Event), event type 0x6F, offset 0x00, data 2 = our sequence
        record = struct.pack("<HBIHBBBBBBB", 0, 0x02, 0, self.generator_id, 0x04, 0x12, 0x00,
                             0x6F, 0x00, self._sent & 0xFF, 0xFF)
        req = create_request_by_name("AddSelEntry")
        req.record_data = record

        def add(i):
            rsp = i.send_message(req, retry=1)
            if rsp.completion_code != 0:
                raise CompletionCodeError(rsp.completion_code)
            return rsp.record_id

        record_id, s, e, note = await self._call(add, "Add SEL Entry")
        return Stimulus(name, None, s, e, sent=True, stamp="socket",
                        raw=f"record 0x{record_id:04x} seq {self._sent}" + (f" {note}" if note else ""))

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """SEL records newer than `cursor` (the last record ID seen, hex; None: all present)."""
        after = int(cursor, 16) if cursor else -1

        def fetch(i):
            # from the cursor's record on (Get SEL Entry names the next one); the whole SEL when
            # there is no cursor or its record is gone (SEL cleared)
            if after >= 0:
                try:
                    _, nxt = i.get_sel_entry(after)
                except CompletionCodeError:
                    nxt = None
                if nxt is not None:
                    out = []
                    while nxt != 0xFFFF and len(out) < 0xFFFF:
                        en, nxt = i.get_sel_entry(nxt)
                        out.append(en)
                    return out
            return list(i.sel_entries())

        entries, s, e, _ = await self._call(fetch, "read SEL", span=True)
        if entries and max(en.record_id for en in entries) < after:
            after = -1                                  # the SEL was cleared: all are new
        out = [self._entry(en, s, e) for en in entries if en.record_id > after]
        return out, (out[-1].cursor if out else cursor)

    def _entry(self, en, s: int, e: int) -> LogEntry:
        raw = bytes(en.data).hex(" ")
        msg = (f"type 0x{en.type:02x} generator 0x{en.generator_id:04x} sensor type "
               f"0x{en.sensor_type:02x} #{en.sensor_number} event type 0x{en.event_type:02x} "
               f"data {' '.join(f'{b:02x}' for b in en.event_data)}")
        if en.type >= 0xE0 or en.timestamp == UNSPECIFIED:       # OEM records without a stamp
            return LogEntry(f"{en.record_id:04x}", "sel", None, NS, s, e, msg, raw)
        clock, v = self.stamp_ns(en.timestamp)
        return LogEntry(f"{en.record_id:04x}", clock, v, NS, s, e,
                        msg + (" (pre-init stamp)" if clock == "sel_init" else ""), raw)


DRIVER = IpmiBMC
