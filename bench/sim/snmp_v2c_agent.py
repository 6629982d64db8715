"""The emulated PDU's answers to SNMPv2c GET and GETNEXT, the requests of every clock read and log
poll, without pysnmp's engine.

Why: through the engine (dispatcher, rfc2576 message processing, command responder), and with
pysnmp's message API alone still, most of a GET's CPU went to pyasn1 building, decoding and
encoding whole messages (benchmarks/README.md, "CPU per SNMP read"). Here only the message's
envelope is read and written by hand (RFC 3416: SEQUENCE {version 1, community, GetRequest [0]
or GetNextRequest [1] {request-id, 0, 0, SEQUENCE OF {name, NULL}}}, definite lengths); the
names are decoded and every name and value encoded by pyasn1 with pysnmp's types, and the
answer's values come from the agent's MIB (`PduObjects`) at the same point as before: after
the request is read, before the answer is written. The request-id goes back as it came.
What this does not take (SNMPv1 or v3, SET, GETBULK, a community it does not know, any other
form) returns False and goes to the engine. net-snmp's snmpget and snmpwalk check these answers
in tests/test_snmp_pdu.py. The few lines of BER framing are written apart from the driver's
(drivers/snmp_v2c) on purpose, as the MIB tables are: an emulator that shared its client's
codec could be wrong the same way and pass.
"""
from __future__ import annotations

import asyncio

from pyasn1.codec.ber import decoder, encoder
from pyasn1.type import univ

GET, GETNEXT, RESPONSE = 0xA0, 0xA1, 0xA2
_NULL = b"\x05\x00"


def _element(buf: bytes, i: int, end: int) -> tuple[int, int, int]:
    """(tag, start of value, end of value) of the element at i; ValueError if it is not whole."""
    if i + 2 > end:
        raise ValueError("truncated")
    tag, n = buf[i], buf[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7F
        if not 1 <= k <= 4 or i + k > end:
            raise ValueError("length form")
        n, i = int.from_bytes(buf[i:i + k], "big"), i + k
    if i + n > end:
        raise ValueError("truncated")
    return tag, i, i + n


def _wrap(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes((tag, n)) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(size))) + size + body


def read_request(buf: bytes) -> tuple[bytes, int, bytes, list[tuple[int, ...]]]:
    """An SNMPv2c GET or GETNEXT -> (community, PDU tag, request-id element, names)."""
    community, i, end = _header(buf)
    pdu, i, end2 = _element(buf, i, end)
    if pdu not in (GET, GETNEXT) or end2 != end:
        raise ValueError("not GET or GETNEXT")
    request_id, i = _request_id(buf, i, end)
    return community, pdu, request_id, _names(buf, i, end)


def _header(buf: bytes) -> tuple[bytes, int, int]:
    """(community, index after it, end) of a message: one SEQUENCE, version 2c."""
    tag, i, end = _element(buf, 0, len(buf))
    if tag != 0x30 or end != len(buf):
        raise ValueError("not one SEQUENCE")
    tag, a, i = _element(buf, i, end)
    if tag != 0x02 or buf[a:i] != b"\x01":
        raise ValueError("not SNMPv2c")
    tag, a, i = _element(buf, i, end)
    if tag != 0x04:
        raise ValueError("community")
    return buf[a:i], i, end


def _request_id(buf: bytes, i: int, end: int) -> tuple[bytes, int]:
    """(request-id element, index after error-status and error-index, both 0 in a request)."""
    start = i
    tag, a, i = _element(buf, i, end)
    if tag != 0x02 or not 1 <= i - a <= 4:
        raise ValueError("request-id")
    request_id = buf[start:i]
    for _ in range(2):
        tag, a, i = _element(buf, i, end)
        if tag != 0x02 or buf[a:i] != b"\x00":
            raise ValueError("error-status / error-index of a request")
    return request_id, i


def _names(buf: bytes, i: int, end: int) -> list[tuple[int, ...]]:
    """The OIDs of the varbind list (each with a NULL value, as a request has)."""
    tag, i, end2 = _element(buf, i, end)
    if tag != 0x30 or end2 != end:
        raise ValueError("varbind list")
    names = []
    while i < end:
        tag, a, i = _element(buf, i, end)
        tag_n, n0, n1 = _element(buf, a, i)
        if tag != 0x30 or tag_n != 0x06 or buf[n1:i] != _NULL:
            raise ValueError("varbind")
        names.append(tuple(decoder.decode(_wrap(0x06, buf[n0:n1]),
                                          asn1Spec=univ.ObjectIdentifier())[0]))
    return names


def write_response(community: bytes, request_id: bytes, varbinds) -> bytes:
    """The Response-PDU message (error-status and -index 0) for `varbinds` (name, value)."""
    vbs = b"".join(_wrap(0x30, encoder.encode(univ.ObjectIdentifier(name)) + encoder.encode(value))
                   for name, value in varbinds)
    pdu = _wrap(RESPONSE, request_id + b"\x02\x01\x00\x02\x01\x00" + _wrap(0x30, vbs))
    return _wrap(0x30, b"\x02\x01\x01" + _wrap(0x04, community) + pdu)


class V2cAnswers:
    """GET / GETNEXT from `communities`, answered from `objects` (a PduObjects); GET honours the
    model's sample and reply delays (`delays()` -> (sample_s, reply_s)) as the engine's GET
    responder does in bench/sim/snmp_pdu."""

    def __init__(self, objects, communities: set[bytes], delays, running):
        self.objects = objects
        self.communities = communities
        self.delays = delays
        self.running = running            # False once the agent stopped

    def answer(self, transport, datagram: bytes, address) -> bool:
        """True when this datagram was taken (answered now or later)."""
        try:
            community, pdu, request_id, names = read_request(datagram)
        except ValueError:
            return False
        if community not in self.communities:
            return False
        varbinds = [(n, None) for n in names]
        if pdu == GETNEXT:
            self._send(transport, community, request_id,
                       self.objects.read_next_variables(*varbinds), address)
            return True
        sample_s, reply_s = self.delays()
        if sample_s <= 0 and reply_s <= 0:
            self._send(transport, community, request_id, self.objects.read_variables(*varbinds),
                       address)
        else:
            asyncio.get_running_loop().call_later(sample_s, self._sample, transport, community,
                                                  request_id, varbinds, address, reply_s)
        return True

    def _sample(self, transport, community, request_id, varbinds, address, reply_s):
        if self.running():
            asyncio.get_running_loop().call_later(
                reply_s, self._send, transport, community, request_id,
                self.objects.read_variables(*varbinds), address)

    def _send(self, transport, community, request_id, varbinds, address):
        if self.running():
            transport.send_message(write_response(community, request_id, varbinds), address)
