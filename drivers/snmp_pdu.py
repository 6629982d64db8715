"""Switched PDUs over SNMP v2c or v3 (USM: SHA authentication, AES-128 privacy), with pysnmp.

Clocks: `sysUpTime.0` (TimeTicks, 10 ms, wraps at 2^32 ticks, about 497 days) and, where the
agent answers it, `hrSystemDate.0` (DateAndTime, 100 ms format; decoded to UTC with the offset
the device states, so a wrong stated offset shows up as an offset). Stimuli: `outlet_on`,
`outlet_off`, `outlet_reboot` with the outlet number as target, only as the inventory allows,
through the vendor's own MIB (drivers/pdu_backends: APC PowerNet rPDU / rPDU2 / sPDU, Raritan
PDU2, Eaton ePDU, ServerTech Sentry4), chosen by the agent's `sysObjectID` unless the inventory
names one. Log: outlet traps received on `trap_listen`, stamped in sysUpTime; no vendor MIB keeps
an outlet-change record with a stamp, so traps are the log (the simulated "rackclock" PDU adds
the project's experimental outlet log table, walked too). Where traps are received, each log
poll also reads the state of the outlets it watches (those the inventory allows stimuli on, were
commanded or trapped, at most 64, one GET): a change no trap announced within `trap_grace_s` is
a lost trap, logged as an entry "lost trap" (no stamp: the device's was lost) and counted.

The bracket is taken in pysnmp's UDP transport: `s` just before `sendto` of the request, `e`
when the answer's datagram reaches the event loop, so encoding, USM crypto and decoding stay
outside it. When the reference is CLOCK_REALTIME, `e` is the kernel's stamp of the datagram's
arrival instead (the SIOCGSTAMPNS ioctl: asyncio's datagram transport receives with recvfrom,
which gives no ancillary data; the first call turns the socket's stamps on, and SO_TIMESTAMPNS
must stay off, or the stamp goes to ancillary data only), so a busy loop does not widen the
bracket; such reads say `stamp = "kernel"`. Each exchange has a short timeout and no retries. Every device
has a UDP socket of its own, so its stamps are of its own datagrams. SNMPv2c requests go out on it through
drivers/snmp_v2c (pysnmp's message API, a fraction of the CPU of pysnmp's command generator:
benchmarks/README.md, "CPU per SNMP read"); SNMPv3 exchanges and the traps of every version go through the
pysnmp engine that the drivers on one event loop share (drivers/snmp_engine), the socket
registered there under its own transport domain.

Inventory keys (beyond the common ones):
  version = "2c" | "3"          (default "3" when `username` is set, else "2c")
  community_env, write_community_env   v2c read / write communities, by environment variable
                                       (read falls back to `password_env`, write to the read one)
  username, password_env, privacy_env  v3 user, SHA auth key, AES key (default: the auth key)
  vendor = "apc" | "apc_rpdu2" | "apc_spdu" | "raritan" | "eaton" | "sentry4" | "rackclock"
                                object map in drivers/pdu_backends (default: by sysObjectID)
  trap_grace_s = 10.0           how long after a state read shows a change its trap may come
  trap_listen = "udp://127.0.0.1:PORT" where this driver receives the PDU's traps
  trap_community_env            community of incoming traps (default: the read community)
  timeout_s = 0.5
"""
from __future__ import annotations

import asyncio
import datetime as dt
import fcntl
import logging
import os
import socket
import struct
from collections.abc import Callable

from pyasn1.type import univ
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.carrier.error import CarrierError
from pysnmp.entity import config
from pysnmp.entity.rfc3413 import cmdgen
from pysnmp.hlapi.v3arch.asyncio import CommunityData, SnmpEngine, UdpTransportTarget, UsmUserData
from pysnmp.hlapi.v3arch.asyncio.lcd import CommandGeneratorLcdConfigurator
from pysnmp.proto import errind, rfc1902, rfc1905

from bench.config.inventory import DeviceConfig, Key
from drivers import pdu_backends, snmp_engine, snmp_v2c
from drivers.base import (
    TIMEOUT_KEY,
    ClockSetting,
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
from drivers.pdu_backends.outlet_watch import OutletWatch
from drivers.tcp_rx_stamp import arrival, on_kernel_clock

SYS_DESCR = "1.3.6.1.2.1.1.1.0"
SYS_OBJECT_ID = "1.3.6.1.2.1.1.2.0"
SYS_UPTIME = "1.3.6.1.2.1.1.3.0"
SYS_NAME = "1.3.6.1.2.1.1.5.0"
HR_SYSTEM_DATE = "1.3.6.1.2.1.25.1.2.0"
SNMP_TRAP_OID = "1.3.6.1.6.3.1.1.4.1.0"

TICK_NS = 10_000_000
NS = 1_000_000_000
SYSUPTIME = ClockSpec("sysuptime", TICK_NS, counter=True, modulus_ns=2 ** 32 * TICK_NS)
# hrSystemDate's tick may flip late: net-snmp (and firmware built on it) answers it from libc
# time(), the kernel's coarse clock, which turns over 4-8 ms after the true second, by a varying
# amount (measured with 4 ms jiffies, HZ=250; a kernel at HZ=100 can lag more: set the rack
# file's `tick_lag_ms`, which overrides this). Declared as the clock's lag: the fit widens by it.
HR_DATE_LAG_NS = 10_000_000
HRSYSTEMDATE = ClockSpec("hrsystemdate", 100_000_000, lag_ns=HR_DATE_LAG_NS)
AUTH_ERRORS = (errind.unknownUserName, errind.wrongDigest, errind.decryptionError,
               errind.unknownEngineID, errind.notInTimeWindow, errind.unknownSecurityName,
               errind.unsupportedSecurityLevel, errind.authenticationFailure,
               errind.authenticationError)
LOG_ROWS_PER_POLL = 64
STIMULI = ("outlet_off", "outlet_on", "outlet_reboot")
log = logging.getLogger(__name__)
MAX_TRAPS = 10_000
END_OF_WALK = (rfc1905.EndOfMibView, rfc1905.NoSuchObject, rfc1905.NoSuchInstance)
# SNMPv3 through pysnmp's engine: its command generators, as hlapi's get_cmd etc. drive them
# but with the target configured once per driver and the varbinds given as OIDs (hlapi
# resolves them against the MIB on every call)
GENERATORS = {"get": cmdgen.GetCommandGenerator, "next": cmdgen.NextCommandGeneratorSingleRun,
              "set": cmdgen.SetCommandGenerator}
LCD = CommandGeneratorLcdConfigurator()
SIOCGSTAMPNS = 0x8907                  # linux/sockios.h: the last datagram's arrival, a timespec


class _StampedUdp(udp.UdpAsyncioTransport):
    """pysnmp's UDP transport, stamping each datagram on the reference clock as it is sent and
    as it arrives; the arrival stamp is published just before pysnmp processes that datagram."""

    def __init__(self, now_ns, *args, kernel_rx: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.now_ns = now_ns
        self.tx_ns = 0          # last send
        self.rx_ns = 0          # arrival of the datagram being (or last) processed
        self.rx_kernel = False  # ... stamped by the kernel
        self.rx_count = 0
        self.rx_bytes = 0
        self.kernel_rx = kernel_rx   # now_ns is CLOCK_REALTIME: the kernel's stamps are on it
        self._fd = -1

    def connection_made(self, transport):
        super().connection_made(transport)
        if self.kernel_rx:
            try:
                self._fd = transport.get_extra_info("socket").fileno()
            except AttributeError:
                return
            self._kernel_stamp()        # no datagram yet: turns the socket's arrival stamps on

    def _kernel_stamp(self) -> int | None:
        try:
            sec, nsec = struct.unpack("qq", fcntl.ioctl(self._fd, SIOCGSTAMPNS, bytes(16)))
        except OSError:
            return None
        return sec * NS + nsec

    def send_message(self, outgoingMessage, transportAddress):
        if self.transport is None:
            self.tx_ns = self.now_ns()
            return super().send_message(outgoingMessage, transportAddress)
        address = self.normalize_address(transportAddress)
        self.tx_ns = self.now_ns()
        self.transport.sendto(outgoingMessage, address)

    def datagram_received(self, datagram, transportAddress):
        t = self.now_ns()
        k = arrival(self._kernel_stamp() if self._fd >= 0 else None, self.tx_ns, t)
        kernel = k is not None
        self.rx_count += 1
        self.rx_bytes += len(datagram)
        self.loop.call_soon(self._deliver, k if kernel else t, transportAddress, datagram, kernel)

    def _deliver(self, t, transportAddress, datagram, kernel: bool = False):
        self.rx_ns = t
        self.rx_kernel = kernel
        if self._callback_function is not None:
            self._callback_function(self, transportAddress, datagram)


def decode_date_and_time(octets: bytes) -> tuple[int, int | None]:
    """SNMPv2-TC DateAndTime -> (UTC epoch ns, stated offset in minutes); 8-byte form: the local
    fields as UTC and offset None. Raises ValueError on a malformed value."""
    if len(octets) not in (8, 11):
        raise ValueError(f"DateAndTime of {len(octets)} bytes (expected 8 or 11)")
    year, month, day, hour, minute, sec, deci = struct.unpack(">HBBBBBB", octets[:8])
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and sec <= 60
            and deci <= 9):
        raise ValueError(f"DateAndTime fields out of range: {octets.hex(' ')}")
    local = dt.datetime(year, month, day, hour, minute, min(sec, 59), tzinfo=dt.UTC)
    ns = (int(local.timestamp()) + (sec == 60)) * 1_000_000_000 + deci * 100_000_000
    if len(octets) == 8:
        return ns, None
    offset_min = _utc_offset_min(octets[8:])
    return ns - offset_min * 60_000_000_000, offset_min


def _utc_offset_min(octets: bytes) -> int:
    """DateAndTime's last three bytes ('+' or '-', hours, minutes) as minutes east of UTC."""
    sign, oh, om = chr(octets[0]), octets[1], octets[2]
    if sign not in "+-" or oh > 13 or om > 59:
        raise ValueError(f"DateAndTime UTC offset malformed: {octets.hex(' ')}")
    return (oh * 60 + om) * (1 if sign == "+" else -1)


class SnmpPdu(Stimulated, ClockSetting, Driver):
    SCHEMES = ("udp", "snmp", "")
    OPTIONS = {"version": Key("str|int", choices=("2c", "3", "v2c", "v3", 3)),
               "vendor": Key("str", choices=pdu_backends.MODULES), "timeout_s": TIMEOUT_KEY,
               "trap_listen": Key("str"), "trap_grace_s": Key("float", 0.0, 3600.0, unit="s"),
               "trap_receiver": Key("str|list[str]"), "community_env": Key("env"),
               "privacy_env": Key("env"), "write_community_env": Key("env"),
               "trap_community_env": Key("env")}
    def __init__(self, config_: DeviceConfig, now_ns: Callable[[], int], armed: bool = False) -> None:
        super().__init__(config_, now_ns, armed)
        self.stamp = "socket"          # how the last exchange's answer was stamped (or "kernel")
        opts = self.config.options
        scheme, host, port, _ = split_address(self.config.address)
        if scheme not in ("udp", "snmp", ""):
            raise DeviceError(self.name, "error", f"address {self.config.address!r}: expected udp://")
        self.host, self.port = host, port or 161
        self.version = str(opts.get("version", "3" if self.config.username else "2c")).lower()
        self.version = self.version.removeprefix("v")
        if self.version not in ("2c", "3"):
            raise DeviceError(self.name, "error", f"SNMP version {self.version!r} (use 2c or 3)")
        self.timeout_s = float(opts.get("timeout_s", 0.5))
        self.CREDENTIALS = ((("username",), ("password_env",)) if self.version == "3" else  # at load
                            (("community_env", "password_env"),))     # (bench.config.loader)
        self.backend: pdu_backends.PduBackend | None = None
        self.chosen_by = ""                      # "inventory" | "sysObjectID <oid>" | why none
        if opts.get("vendor"):
            self.backend, self.chosen_by = self._named_backend(str(opts["vendor"]))
        self.trap_listen = opts.get("trap_listen")
        grace_ns = int(float(opts.get("trap_grace_s", 10.0)) * NS)
        self.watch = OutletWatch(grace_ns, traps_expected=bool(self.trap_listen))
        for entry in self.config.stimuli:
            name, _, target = entry.partition(":")
            if name in STIMULI and target.isdigit():
                self.watch.watch(int(target))
        self.engine: SnmpEngine | None = None
        self._share: snmp_engine.SharedEngine | None = None
        self._domains: list[tuple] = []
        self._client: _StampedUdp | None = None
        self._v2c: snmp_v2c.V2cClient | None = None
        self._read_target = None                 # v3: the read target's name in the engine
        self._trap_index: str | None = None
        self._lock = asyncio.Lock()
        self._clocks = [SYSUPTIME]
        self._traps: list[LogEntry] = []      # the newest MAX_TRAPS of them
        self._traps_base = 0                   # traps dropped from the front (size cap)
        self._traps_ignored = 0
        self._log_cursor = 0

    # -- credentials ---------------------------------------------------------------------------
    def _env(self, key: str, what: str, required: bool = True) -> str | None:
        var = self.config.options.get(key)
        if not var:
            return None
        value = os.environ.get(str(var))
        if value is None and required:
            raise DeviceError(self.name, "auth", f"{what}: environment variable {var} is not set")
        return value

    def _named_backend(self, vendor: str) -> tuple[pdu_backends.PduBackend, str]:
        try:
            return pdu_backends.load(vendor), "inventory key vendor"
        except ValueError as exc:
            raise DeviceError(self.name, "error", str(exc)) from None

    def _auth(self, write: bool = False):
        if self.version == "3":
            return self._usm()
        read = self._env("community_env", "read community")
        if read is None and self.config.password_env:
            read = self.config.secret()
            if read is None:
                raise DeviceError(self.name, "auth", f"read community: environment variable "
                                                     f"{self.config.password_env} is not set")
        if read is None:
            raise DeviceError(self.name, "auth", "SNMPv2c needs `community_env` (or "
                                                 "`password_env`) naming the variable that holds "
                                                 "the read community")
        if write:
            return CommunityData(self._env("write_community_env", "write community") or read,
                                 mpModel=1)
        return CommunityData(read, mpModel=1)

    def _usm(self) -> UsmUserData:
        """SNMPv3: the user, its authentication key and its privacy key (default: the same)."""
        key = self.config.secret()
        if not self.config.username or not key:
            raise DeviceError(self.name, "auth", "SNMPv3 needs `username` and the variable "
                              f"named by password_env ({self.config.password_env}) set")
        priv = self._env("privacy_env", "SNMPv3 privacy key") or key
        return UsmUserData(self.config.username, key, priv,
                           authProtocol=config.USM_AUTH_HMAC96_SHA,
                           privProtocol=config.USM_PRIV_CFB128_AES)

    # -- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        self._read_auth = self._auth()
        user = self._v3_user()
        share = None
        if user is not None or self.trap_listen:
            # one engine per event loop (drivers/snmp_engine): v3 exchanges and traps
            share = self._share = self._engine_for(user)
            self.engine = share.engine
        await self._open_socket(user, share)
        await self._open_target(user)
        self._host_ip = self.target.transport_address[0]
        if user is None:
            self._v2c = snmp_v2c.V2cClient(self._client, tuple(self.target.transport_address))
        try:
            if self.trap_listen and share is not None:
                self._open_trap_receiver(share, str(self.trap_listen))
            # First exchange: probes whether the agent keeps hrSystemDate and who it is (and, on
            # a new engine, loads pysnmp's MIB tables outside any later bracket).
            read = await self._get(HR_SYSTEM_DATE, SYS_OBJECT_ID, what="probe hrSystemDate")
        except BaseException:
            await self.close()
            raise
        value, oid = read[2][0][1], read[2][1][1]
        if isinstance(value, rfc1902.OctetString) and len(bytes(value)) in (8, 11):
            self._clocks = [SYSUPTIME, HRSYSTEMDATE]
        self._choose_backend(oid.prettyPrint() if isinstance(oid, univ.ObjectIdentifier) else "")

    def _v3_user(self) -> tuple | None:
        """SNMPv3's (user, authentication key, privacy key) for the shared engine; None in v2c."""
        if self.version != "3":
            return None
        return (self._read_auth.userName, self._read_auth.authentication_key,
                self._read_auth.privacy_key)

    async def _open_socket(self, user: tuple | None,
                           share: snmp_engine.SharedEngine | None) -> None:
        """This device's own UDP socket, stamped at the wire (added to the engine in v3)."""
        try:
            self._client = _StampedUdp(self.now_ns, kernel_rx=on_kernel_clock(self.now_ns)
                                       ).open_client_mode()   # this device's own socket
            if user is not None and share is not None:
                self._domains = [share.add_transport(self._client)]
        except Exception as exc:
            await self.close()
            raise DeviceError(self.name, "error", f"cannot open a UDP socket: {exc}") from None

    async def _open_target(self, user: tuple | None) -> None:
        """The agent's address resolved into pysnmp's target (keyed by this socket's domain in
        v3)."""
        try:
            self.target = await UdpTransportTarget.create((self.host, self.port),
                                                          timeout=self.timeout_s, retries=0)
            if user is not None:
                self.target.TRANSPORT_DOMAIN = self._domains[0]  # the LCD keys targets by domain
        except Exception as exc:
            await self.close()
            raise DeviceError(self.name, "unreachable", f"cannot resolve {self.host}: {exc}") from None

    def _choose_backend(self, sys_object_id: str) -> None:
        """The vendor MIB by the agent's sysObjectID, unless the inventory named one; said once
        in the driver's log."""
        if self.backend is None:
            found = pdu_backends.for_sys_object_id(sys_object_id) if sys_object_id else None
            if found is None:
                self.chosen_by = (f"none: no outlet MIB known for sysObjectID "
                                  f"{sys_object_id or '(not answered)'}")
                log.warning("%s: %s; no outlet control, traps logged as they come", self.name,
                            self.chosen_by)
                return
            self.backend, self.chosen_by = found[1], f"sysObjectID {sys_object_id}"
        log.info("%s: outlet objects from %s (chosen by %s); log: %s", self.name, self.backend.mib,
                 self.chosen_by, self.log_note())

    def log_note(self) -> str:
        """What this device's log is, for the manifest and the driver's log."""
        b = self.backend
        note = b.log_note if b else "no outlet MIB: traps are the log"
        if not self.trap_listen and (b is None or not b.log):
            note += " (no trap_listen configured: outlet changes are not logged)"
        return note

    @staticmethod
    def _engine_for(user: tuple | None) -> snmp_engine.SharedEngine:
        return snmp_engine.acquire(user)

    def _open_trap_receiver(self, share: snmp_engine.SharedEngine, address: str) -> None:
        _, host, port, _ = split_address(address)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((host or "0.0.0.0", port or 162))
        except OSError as exc:
            sock.close()
            raise DeviceError(self.name, "error", f"cannot receive traps on {address}: {exc}") from None
        sock.setblocking(False)
        self._trap_transport = _StampedUdp(self.now_ns).open_server_mode(sock=sock)
        community = self._env("trap_community_env", "trap community", required=False)
        if community is None:
            community = (self._read_auth.communityName if self.version == "2c" else
                         self._env("community_env", "read community", required=False) or "public")
        # a trap is this device's when it came with the community its own engine used to know
        self._trap_communities = {str(community)}
        if self.version == "2c":
            self._trap_communities.add(str(self._read_auth.communityName))
        self._domains.append(share.listen(self._trap_transport, self._on_trap))
        self._trap_index = f"pdu-trap-{self._domains[-1][-1]}"
        config.add_v1_system(self.engine, self._trap_index, community)

    async def close(self) -> None:
        client, self._client, v2c, self._v2c = self._client, None, self._v2c, None
        if v2c is not None:
            v2c.close()
        elif client is not None and self.version != "3":     # v3: its engine closes it
            client.close_transport()
        share, self._share, self.engine = self._share, None, None
        if share is None:
            return
        index, self._trap_index = self._trap_index, None
        try:
            if index:
                config.delete_v1_system(share.engine, index)
        except Exception:           # to the run's library.log, not into the progress display
            logging.getLogger("pysnmp").exception("%s: removing the trap community", self.name)
        try:
            snmp_engine.release(share, *self._domains)
        except Exception:
            logging.getLogger("pysnmp").exception("%s: closing the SNMP transport", self.name)

    # -- one exchange --------------------------------------------------------------------------
    async def _exchange(self, kind: str, auth, varbinds, what: str):
        """One request ("get" | "next" | "set"; varbinds: (oid, value or None)): v2c through
        drivers/snmp_v2c, v3 through pysnmp's engine. Returns (s_ns, e_ns, varbinds) or raises
        DeviceError."""
        if self._client is None:
            raise DeviceError(self.name, "error", "driver is not open")
        async with self._lock:
            tr = self._client
            tx0, rx0, bytes0 = tr.tx_ns, tr.rx_count, tr.rx_bytes
            s_user = self.now_ns()
            err, status, index, vbs = await self._send(kind, auth, varbinds, what)
            e_user = self.now_ns()
            s = tr.tx_ns if tr.tx_ns != tx0 and s_user <= tr.tx_ns <= e_user else s_user
            answered = tr.rx_count != rx0 and s <= tr.rx_ns <= e_user
            e = tr.rx_ns if answered else e_user
            self.stamp = "kernel" if answered and tr.rx_kernel else "socket"
        if err:
            raise self._request_error(err, what, tr.rx_count - rx0, tr.rx_bytes - bytes0)
        self._check_answer(status, index, vbs, len(varbinds), what)
        return s, e, [(str(n), v) for n, v in vbs]

    async def _send(self, kind: str, auth, varbinds, what: str) -> tuple:
        """(error indication, error status, error index, varbinds) of one request; a timeout is
        pysnmp's requestTimedOut, a transport failure DeviceError."""
        try:
            if self._v2c is not None:
                return await self._v2c.request(kind, auth.communityName, varbinds, self.timeout_s)
            return await asyncio.wait_for(self._engine_request(kind, auth, varbinds),
                                          self.timeout_s + 2.0)
        except TimeoutError:
            return errind.requestTimedOut, 0, 0, ()
        except (OSError, CarrierError) as exc:
            raise DeviceError(self.name, "unreachable", f"{what}: cannot send to "
                              f"{self.host}:{self.port}: {exc}") from None
        except Exception as exc:
            raise DeviceError(self.name, "error", f"{what}: pysnmp failed: {exc!r}") from None

    def _request_error(self, err, what: str, datagrams: int, nbytes: int) -> DeviceError:
        """The DeviceError of an error indication; a timeout says what came back meanwhile
        (`datagrams` of `nbytes` bytes)."""
        where = f"{self.host}:{self.port}"
        if err != errind.requestTimedOut:
            kind = "auth" if err in AUTH_ERRORS else "protocol"
            return DeviceError(self.name, kind, f"{what}: {where} answered with {err}")
        if datagrams and self.version == "3":
            # answers that fail our USM keys: pysnmp drops what it cannot decrypt
            return DeviceError(self.name, "auth", (
                f"{what}: {datagrams} datagram(s) came back from {where} "
                f"within {self.timeout_s} s, none decodable with this SNMPv3 user's "
                f"keys (wrong privacy key?)"))
        if datagrams:
            return DeviceError(self.name, "malformed", (
                f"{what}: {datagrams} datagram(s) ({nbytes} bytes) "
                f"came back from {where} within {self.timeout_s} s, none taken as the "
                f"answer (not valid SNMP, or processed only after the timeout by a "
                f"bench whose event loop was behind)"))
        return DeviceError(self.name, "timeout",
                           f"{what}: no answer from {where} within {self.timeout_s} s "
                           f"(wrong community or user, or device down)")

    def _check_answer(self, status, index, vbs, asked: int, what: str) -> None:
        """An answer with an error status, or with another count of varbinds: DeviceError."""
        where = f"{self.host}:{self.port}"
        if int(status):
            bad = vbs[int(index) - 1][0] if 0 < int(index) <= len(vbs) else "?"
            raise DeviceError(self.name, "protocol",
                              f"{what}: {where} answered error-status {status.prettyPrint()} "
                              f"at {bad}")
        if len(vbs) != asked:
            raise DeviceError(self.name, "malformed",
                              f"{what}: {len(vbs)} varbinds answered for {asked} asked")

    def _engine_request(self, kind: str, auth, varbinds) -> asyncio.Future:
        """One command through the engine; its answer as hlapi's commands give it."""
        if auth is self._read_auth:
            if self._read_target is None:
                self._read_target = LCD.configure(self.engine, auth, self.target, b"")[0]
            target = self._read_target
        else:
            target = LCD.configure(self.engine, auth, self.target, b"")[0]
        future = asyncio.get_running_loop().create_future()

        def done(engine, handle, err, status, index, vbs, ctx):
            if not future.done():
                future.set_result((err, status, index, vbs))
        GENERATORS[kind]().send_varbinds(
            self.engine, target, None, b"",
            [(rfc1902.ObjectName(o), rfc1905.unSpecified if v is None else v) for o, v in varbinds], done)
        return future

    async def _get(self, *oids: str, what: str):
        return await self._exchange("get", self._read_auth, [(o, None) for o in oids], what)

    # -- identity ------------------------------------------------------------------------------
    async def identity(self) -> Identity:
        b = self.backend
        ident = (b.model, b.serial, b.firmware) if b else ()
        _, _, vbs = await self._get(SYS_DESCR, SYS_OBJECT_ID, SYS_NAME, *ident, what="identity")

        def text(v) -> str:
            return v.prettyPrint() if isinstance(v, (univ.OctetString, univ.ObjectIdentifier)) else ""
        descr, oid, name, model, serial, fw = ([text(v) for _, v in vbs] + ["", "", ""])[:6]
        return Identity(vendor=b.vendor if b else "", model=model, serial=serial, firmware=fw,
                        extra={"sysDescr": descr, "sysObjectID": oid, "sysName": name,
                               "snmp_version": self.version, "mib": b.mib if b else "",
                               "mib_chosen_by": self.chosen_by, "log": self.log_note(),
                               "lost_traps_counted": bool(self.trap_listen and b),
                               "clocks": [c.name for c in self._clocks]})

    # -- clocks --------------------------------------------------------------------------------
    def clocks(self) -> list[ClockSpec]:
        return list(self._clocks)

    async def read_clock(self, clock: str) -> Read:
        if clock == "sysuptime":
            s, e, vbs = await self._get(SYS_UPTIME, what="read sysUpTime.0")
            v = vbs[0][1]
            if not isinstance(v, rfc1902.TimeTicks):
                raise DeviceError(self.name, "malformed",
                                  f"sysUpTime.0 answered {type(v).__name__} {v.prettyPrint()!r}, "
                                  f"not TimeTicks")
            return Read("sysuptime", s, e, int(v) * TICK_NS, TICK_NS, stamp=self.stamp, raw=str(int(v)))
        if clock == "hrsystemdate" and HRSYSTEMDATE in self._clocks:
            s, e, vbs = await self._get(HR_SYSTEM_DATE, what="read hrSystemDate.0")
            v = vbs[0][1]
            if not isinstance(v, rfc1902.OctetString):
                raise DeviceError(self.name, "malformed",
                                  f"hrSystemDate.0 answered {type(v).__name__}, not DateAndTime")
            octets = bytes(v)
            try:
                value_ns, _offset = decode_date_and_time(octets)
            except ValueError as exc:
                raise DeviceError(self.name, "malformed", f"hrSystemDate.0: {exc}") from None
            return Read("hrsystemdate", s, e, value_ns, HRSYSTEMDATE.resolution_ns, stamp=self.stamp,
                        raw=octets.hex())
        raise DeviceError(self.name, "error", f"no clock {clock!r} (has: "
                          f"{[c.name for c in self._clocks]})")

    # -- stimuli -------------------------------------------------------------------------------
    def stimuli(self) -> list[str]:
        return list(STIMULI)

    async def _stimulate(self, name: str, target: str | None) -> Stimulus:
        try:
            outlet = int(str(target))
            if outlet < 1:
                raise ValueError
        except ValueError:
            raise DeviceError(self.name, "refused", f"{name}: target {target!r} is not an outlet "
                                                    f"number") from None
        if self.backend is None or name not in self.backend.commands:
            raise DeviceError(self.name, "refused", f"{name}: no outlet control ({self.chosen_by})")
        column, value = self.backend.commands[name]
        oid = self.backend.instance(column, outlet)
        self.watch.watch(outlet)
        s, e, vbs = await self._exchange("set", self._auth(write=True),
                                         [(oid, rfc1902.Integer(value))], f"{name} outlet {outlet}")
        return Stimulus(name, str(outlet), s, e, sent=True, stamp=self.stamp,
                        raw=f"SET {oid} = {value} -> {vbs[0][1].prettyPrint()}")

    async def _set_clock(self, value_ns: int | None, offset_s: float | None) -> Stimulus:
        """SET hrSystemDate.0: the 11-byte DateAndTime in UTC (+00:00), sent at a whole tenth
        of a second of the target (the format's resolution)."""
        if HRSYSTEMDATE not in self._clocks:
            raise DeviceError(self.name, "refused", "set_clock: this agent has no hrSystemDate")
        target = self._target_ns(value_ns, offset_s)
        if value_ns is None:
            now = self.now_ns()
            await asyncio.sleep(((-target) % 100_000_000) / NS)
            target += self.now_ns() - now
        secs, rem = divmod(round(target / 100_000_000) * 100_000_000, NS)
        t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
        octets = struct.pack(">HBBBBBBcBB", t.year, t.month, t.day, t.hour, t.minute, t.second,
                             rem // 100_000_000, b"+", 0, 0)
        s, e, vbs = await self._exchange("set", self._auth(write=True),
                                         [(HR_SYSTEM_DATE, rfc1902.OctetString(octets))],
                                         "SET hrSystemDate")
        return Stimulus(self.SET_CLOCK, str(secs * NS + rem), s, e, sent=True, stamp=self.stamp,
                        raw=f"SET {HR_SYSTEM_DATE} = {octets.hex()}")

    # -- log -----------------------------------------------------------------------------------
    def _on_trap(self, source, community: str, varBinds):
        t = self._trap_transport.rx_ns
        if not self._trap_accepted(source, community):
            self._traps_ignored += 1
            return
        vbs = [(str(n), v) for n, v in varBinds]
        trap = next((str(v.prettyPrint()) for n, v in vbs if n == SNMP_TRAP_OID), "?")
        outlet, state = self._trap_outlet(trap, vbs)
        if outlet is not None:
            self.watch.trap(outlet, state, t)
        self._make_room_for_a_trap()
        self._traps.append(self._trap_entry(trap, vbs, outlet, state, t))

    def _trap_accepted(self, source, community: str) -> bool:
        """A trap from this device's own agent, with one of the communities it may send."""
        return (source is None or source[0] == self._host_ip) and \
            community in self._trap_communities

    def _make_room_for_a_trap(self) -> None:
        """A flood of traps costs at most MAX_TRAPS: the oldest are dropped (and counted)."""
        if len(self._traps) >= MAX_TRAPS:
            drop = len(self._traps) - MAX_TRAPS + 1
            del self._traps[:drop]
            self._traps_base += drop

    def _trap_entry(self, trap: str, vbs, outlet: int | None, state: str | None,
                    t: int) -> LogEntry:
        """The log entry of a trap received at `t` (its sysUpTime the device's stamp)."""
        raw = "; ".join(f"{n} = {v.prettyPrint()}" for n, v in vbs)
        ticks = next((int(v) for n, v in vbs if n == SYS_UPTIME and isinstance(v, rfc1902.TimeTicks)),
                     None)
        name = self.backend.traps.get(trap, trap) if self.backend else trap
        return LogEntry(
            cursor=f"trap:{self._traps_base + len(self._traps) + 1}", clock="sysuptime",
            value_ns=None if ticks is None else ticks * TICK_NS, resolution_ns=TICK_NS,
            s_ns=t, e_ns=t, message=f"trap {name} outlet {'?' if outlet is None else outlet}"
                                    + (f" {state}" if state else ""), raw=raw)

    def _trap_outlet(self, trap: str, vbs) -> tuple[int | None, str | None]:
        """The outlet a trap is about and the state it announces (None where it does not say)."""
        b = self.backend
        if b is None or trap not in b.traps:
            return None, None
        for n, v in vbs:
            if b.trap_outlet and n.startswith(b.trap_outlet) and isinstance(v, univ.Integer):
                return int(v), b.trap_states.get(trap)
            outlet = b.outlet_of(n, b.trap_state) if b.trap_state else None
            if outlet is not None and isinstance(v, univ.Integer):
                return outlet, b.states.get(int(v))
        return None, None

    async def log_entries(self, cursor: str | None = None) -> tuple[list[LogEntry], str | None]:
        """Traps received since the cursor, the traps a state read shows lost, then new rows of
        the outlet event log where the MIB keeps one.
        Cursor: "log=<last row index>;trap=<traps seen>"."""
        pos = dict(p.split("=", 1) for p in (cursor or "").split(";") if "=" in p)
        log_at, trap_at = int(pos.get("log", 0)), int(pos.get("trap", 0))
        entries = list(self._traps[max(0, trap_at - self._traps_base):])
        trap_at = self._traps_base + len(self._traps)
        entries += await self._lost_traps()
        if self.backend is not None and self.backend.log == "rackclock":
            log_at = await self._walk_outlet_log(log_at, entries)
        return entries, f"log={log_at};trap={trap_at}"

    async def outlet_states(self) -> tuple[int, int, dict[int, str]]:
        """One GET of the watched outlets' state through the vendor's MIB: (s_ns, e_ns,
        {outlet: "on" | "off"}); outlets in another state (pending, unknown) are left out."""
        b, outlets = self.backend, sorted(self.watch.outlets)
        if b is None or not outlets:
            return 0, 0, {}
        s, e, vbs = await self._get(*(b.instance(b.outlet_state, o) for o in outlets),
                                    what="read outlet states")
        return s, e, {o: b.states[int(v)] for o, (_, v) in zip(outlets, vbs)
                      if isinstance(v, univ.Integer) and int(v) in b.states}

    async def _lost_traps(self) -> list[LogEntry]:
        """Where traps are expected: read the watched outlets' state, and log the changes no
        trap announced within the grace period (lost traps). The changes themselves are not
        log entries: the device did not stamp them."""
        if not self.trap_listen or self.backend is None or not self.watch.outlets:
            return []
        s, e, states = await self.outlet_states()
        self.watch.states_read(states, s, e)
        out = []
        for c in self.watch.expired(self.now_ns()):
            log.warning("%s: lost trap: outlet %d turned %s (seen by a state read) and no trap "
                        "said so within %.1f s", self.name, c.outlet, c.state,
                        self.watch.grace_ns / NS)
            out.append(LogEntry(cursor=f"lost:{c.outlet}:{c.seen_ns}", clock="sysuptime",
                                value_ns=None, resolution_ns=TICK_NS, s_ns=c.after_ns,
                                e_ns=c.seen_ns, message=f"lost trap outlet {c.outlet} {c.state} "
                                f"(lost traps: {self.watch.lost})", raw=""))
        return out

    async def _walk_outlet_log(self, log_at: int, entries: list[LogEntry]) -> int:
        """New rows of the simulated PDU's experimental outlet log, appended to `entries`."""
        cols = [f"{pdu_backends.OUTLET_LOG}.{c}" for c in (2, 3, 4)]
        for _ in range(LOG_ROWS_PER_POLL):
            s, e, vbs = await self._exchange("next", self._read_auth,
                                             [(f"{c}.{log_at}", None) for c in cols],
                                             "walk outlet log")
            (n_stamp, stamp), (_, outlet), (_, state) = vbs
            if any(isinstance(v, END_OF_WALK) for _, v in vbs):
                break                # the end of the agent's view (or MIB): the normal end
            if not n_stamp.startswith(cols[0] + "."):
                break
            if not isinstance(stamp, rfc1902.TimeTicks):
                raise DeviceError(self.name, "malformed", f"outlet log {n_stamp}: "
                                  f"{type(stamp).__name__}, not TimeTicks")
            index = int(n_stamp.rsplit(".", 1)[1])
            if index <= log_at:
                raise DeviceError(self.name, "malformed", f"outlet log index not increasing at "
                                                          f"{n_stamp}")
            log_at = index
            st = pdu_backends.OUTLET_LOG_STATES.get(int(state), state.prettyPrint())
            entries.append(LogEntry(
                cursor=f"log:{index}", clock="sysuptime", value_ns=int(stamp) * TICK_NS,
                resolution_ns=TICK_NS, s_ns=s, e_ns=e,
                message=f"log outlet {outlet.prettyPrint()} {st}",
                raw=f"{index} {int(stamp)} {outlet.prettyPrint()} {state.prettyPrint()}"))
        return log_at


DRIVER = SnmpPdu
