"""SNMPv2c requests on one device's own stamped UDP socket, without pysnmp's engine.

Why not pysnmp's command generator for v2c: its high-level `get_cmd` redoes per call what a
clock read does not need (MIB resolution of the varbinds, LCD lookup, the rfc3412 dispatcher's
state, rfc2576 message processing decoding each answer twice, once for its version)
(benchmarks/README.md, "CPU per SNMP read"). What is kept here is only the bookkeeping a command
generator keeps: one request outstanding, an answer taken when it is a Response-PDU with the
request's request-id and community; anything else that arrives is counted (by the transport)
and ignored, as pysnmp drops it. SNMPv3 (USM) stays on pysnmp's engine (drivers/snmp_engine).

Written by hand, because pyasn1 does it slowly: the messages' envelopes (RFC 3416: SEQUENCE
{version 1, community, PDU {request-id, error-status, error-index, SEQUENCE OF {name,
value}}}, definite lengths). With pysnmp's message API (`pysnmp.proto.api.v2c`) and pyasn1
for whole messages most of a read's CPU went to decoding the GetResponse (the nested CHOICEs
of a varbind's value).
Requests: the names and values are encoded by pyasn1 (pysnmp's types), once per distinct GET
or GETNEXT, and only the request-id and the envelope are written per request.
`decode_response` reads an answer into the same pysnmp value types pyasn1 gives; a datagram it
does not take is handed to pyasn1 with pysnmp's v2c message spec, so nothing valid is refused
for its form. tests/test_snmp_v2c.py checks both directions against pysnmp's message API on
every SMIv2 type.
"""
from __future__ import annotations

import asyncio
import random

from pyasn1.codec.ber import decoder, encoder
from pyasn1.error import PyAsn1Error
from pyasn1.type import univ
from pysnmp.proto import errind, rfc1902, rfc1905
from pysnmp.proto.api import v2c

PDU_TAGS = {"get": 0xA0, "next": 0xA1, "set": 0xA3}
_NULL = b"\x05\x00"
_RESPONSE = v2c.ResponsePDU.tagSet


_VALUES = {0x02: rfc1902.Integer, 0x04: rfc1902.OctetString, 0x40: rfc1902.IpAddress,
           0x41: rfc1902.Counter32, 0x42: rfc1902.Gauge32, 0x43: rfc1902.TimeTicks,
           0x44: rfc1902.Opaque, 0x46: rfc1902.Counter64}
_UNSIGNED = (0x41, 0x42, 0x43, 0x46)
_EXCEPTIONS = {0x80: rfc1905.noSuchObject, 0x81: rfc1905.noSuchInstance,
               0x82: rfc1905.endOfMibView}


def _tlv(buf: bytes, i: int, end: int) -> tuple[int, int, int]:
    """(tag, start of value, end of value) of the BER element at i; definite lengths only."""
    if i + 2 > end:
        raise ValueError("truncated")
    tag, n = buf[i], buf[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7F
        if not 1 <= k <= 4 or i + k > end:
            raise ValueError("length form")
        n = int.from_bytes(buf[i:i + k], "big")
        i += k
    if i + n > end:
        raise ValueError("truncated")
    return tag, i, i + n


def _wrap(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes((tag, n)) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(size))) + size + body


def encode_request(kind: str, community: bytes, request_id: int, varbind_list: bytes) -> bytes:
    """A v2c request message; `varbind_list` from encode_varbinds."""
    rid = request_id.to_bytes(request_id.bit_length() // 8 + 1, "big", signed=True)
    pdu = _wrap(PDU_TAGS[kind], b"\x02" + bytes((len(rid),)) + rid + b"\x02\x01\x00\x02\x01\x00"
                + varbind_list)
    return _wrap(0x30, b"\x02\x01\x01" + _wrap(0x04, community) + pdu)


def encode_varbinds(varbinds) -> bytes:
    """(oid, pysnmp value or None for NULL) pairs -> the encoded VarBindList."""
    return _wrap(0x30, b"".join(
        _wrap(0x30, encoder.encode(univ.ObjectIdentifier(oid))
              + (_NULL if val is None else encoder.encode(val))) for oid, val in varbinds))


def _int(buf: bytes, i: int, j: int) -> int:
    if j == i:
        raise ValueError("empty integer")
    return int.from_bytes(buf[i:j], "big", signed=True)


def _oid(buf: bytes, i: int, j: int) -> tuple[int, ...]:
    arcs, v = [], 0
    for b in buf[i:j]:
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(v)
            v = 0
    if not arcs or buf[j - 1] & 0x80:
        raise ValueError("object identifier")
    first = arcs[0]
    return (*divmod(first, 40), *arcs[1:]) if first < 80 else (2, first - 80, *arcs[1:])


def decode_response(buf: bytes):
    """A v2c Response message -> (community bytes, request-id, error-status, error-index,
    [(ObjectName, value)]) in pysnmp's types; ValueError for anything else."""
    tag, i, end = _tlv(buf, 0, len(buf))
    if tag != 0x30 or end != len(buf):
        raise ValueError("not one SEQUENCE")
    community, i = _version_and_community(buf, i, end)
    tag, i, end = _tlv(buf, i, end)
    if tag != 0xA2 or end != len(buf):
        raise ValueError("not a Response-PDU")
    head, i = _pdu_header(buf, i, end)
    varbinds = _decode_varbinds(buf, i, end)
    return community, head[0], rfc1905.errorStatus.clone(head[1]), univ.Integer(head[2]), varbinds


def _version_and_community(buf: bytes, i: int, end: int) -> tuple[bytes, int]:
    """The version (must be v2c) and the community at buf[i:]: (community, where next)."""
    tag, a, b = _tlv(buf, i, end)
    if tag != 0x02 or _int(buf, a, b) != 1:
        raise ValueError("not SNMPv2c")
    tag, a, i = _tlv(buf, b, end)
    if tag != 0x04:
        raise ValueError("community")
    return buf[a:i], i


def _pdu_header(buf: bytes, i: int, end: int) -> tuple[list[int], int]:
    """request-id, error-status and error-index at buf[i:]: ([three integers], where next)."""
    head = []
    for _ in range(3):
        tag, a, i = _tlv(buf, i, end)
        if tag != 0x02:
            raise ValueError("PDU header")
        head.append(_int(buf, a, i))
    return head, i


def _decode_varbinds(buf: bytes, i: int, end: int) -> list:
    """The varbind list filling buf[i:end] -> [(ObjectName, value)]."""
    tag, i, end2 = _tlv(buf, i, end)
    if tag != 0x30 or end2 != end:
        raise ValueError("varbind list")
    varbinds = []
    while i < end:
        tag, i, vb_end = _tlv(buf, i, end)
        tag_n, a, b = _tlv(buf, i, vb_end)
        tag_v, c, i = _tlv(buf, b, vb_end)
        if tag != 0x30 or tag_n != 0x06 or i != vb_end:
            raise ValueError("varbind")
        varbinds.append((rfc1902.ObjectName(_oid(buf, a, b)), _value(buf, tag_v, c, i)))
    return varbinds


def _value(buf: bytes, tag_v: int, c: int, i: int) -> object:
    """A varbind's value (tag `tag_v`, content buf[c:i]) in pysnmp's types; ValueError if bad."""
    if tag_v in _EXCEPTIONS or tag_v == 0x05:
        if c != i:
            raise ValueError("NULL with content")
        return _EXCEPTIONS[tag_v] if tag_v != 0x05 else univ.Null("")
    if tag_v == 0x06:
        return univ.ObjectIdentifier(_oid(buf, c, i))
    if tag_v not in _VALUES:
        raise ValueError(f"value tag {tag_v:#x}")
    if tag_v in (0x04, 0x40, 0x44):
        return _VALUES[tag_v](buf[c:i])
    n = _int(buf, c, i)
    if n < 0 and tag_v in _UNSIGNED:
        raise ValueError("negative unsigned")
    return _VALUES[tag_v](n)


class V2cClient:
    """One outstanding request at a time on `transport` (a pysnmp UDP transport, stamped at the
    wire, opened in client mode) to the agent at `address` (ip, port)."""

    def __init__(self, transport, address: tuple[str, int]):
        self.transport = transport
        self.address = address
        self._request_id = random.randrange(1, 2 ** 30)
        self._waiting: tuple[int, bytes, asyncio.Future] | None = None
        self._encoded: dict[tuple, bytes] = {}        # varbind lists of GET/GETNEXT, by OIDs
        transport.register_callback(self._received)

    def _varbind_list(self, kind: str, varbinds) -> bytes:
        """The encoded varbinds; a GET or GETNEXT of the same OIDs encodes them once."""
        if kind == "set":
            return encode_varbinds(varbinds)
        key = tuple(oid for oid, _ in varbinds)
        out = self._encoded.get(key)
        if out is None:
            if len(self._encoded) >= 32:        # a log walk's OIDs move on
                self._encoded.clear()
            out = self._encoded[key] = encode_varbinds(varbinds)
        return out

    async def request(self, kind: str, community: str, varbinds, timeout_s: float):
        """Send one request ("get" | "next" | "set"; varbinds: (oid, value or None)) and wait
        for its answer: (error indication, error-status, error-index, varbinds) as pysnmp's
        commands give them (errind.requestTimedOut after `timeout_s`)."""
        comm = community.encode() if isinstance(community, str) else bytes(community)
        self._request_id = self._request_id % (2 ** 31 - 1) + 1
        wire = encode_request(kind, comm, self._request_id, self._varbind_list(kind, varbinds))
        future = asyncio.get_running_loop().create_future()
        self._waiting = (self._request_id, comm, future)
        try:
            self.transport.send_message(wire, self.address)
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return errind.requestTimedOut, 0, 0, ()
        finally:
            self._waiting = None

    def _received(self, transport, address, datagram: bytes) -> None:
        waiting = self._waiting
        if waiting is None or waiting[2].done():
            return
        try:
            community, request_id, status, index, varbinds = decode_response(datagram)
        except ValueError:
            try:
                community, request_id, status, index, varbinds = _decode_with_pyasn1(datagram)
            except (PyAsn1Error, ValueError, TypeError, AttributeError):
                return                  # not an SNMPv2c answer: counted by the transport only
        if request_id == waiting[0] and community == waiting[1]:
            waiting[2].set_result((None, status, index, varbinds))

    def close(self) -> None:
        self.transport.unregister_callback()
        self.transport.close_transport()


def _decode_with_pyasn1(datagram: bytes):
    """decode_response by pyasn1 and pysnmp's v2c message spec."""
    msg, rest = decoder.decode(datagram, asn1Spec=v2c.Message())
    pdu = v2c.apiMessage.get_pdu(msg)
    if rest or int(v2c.apiMessage.get_version(msg)) != 1 or pdu.tagSet != _RESPONSE:
        raise ValueError("not an SNMPv2c Response")
    return (bytes(v2c.apiMessage.get_community(msg)), int(v2c.apiPDU.get_request_id(pdu)),
            v2c.apiPDU.get_error_status(pdu), v2c.apiPDU.get_error_index(pdu),
            v2c.apiPDU.get_varbinds(pdu))
